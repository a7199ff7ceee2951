// Library entry: module magic, settings, and docket.now().
#include <malloc.h>

#include "pg/boundary.hpp"
#include "pg/datum.hpp"
#include "pg/notify.hpp"
#include "pg/planning.hpp"
#include "pg/settings.hpp"
#include "pg/wake.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);
void _PG_init(void) {
  docket::pg::settings::define();
  docket::pg::caller::register_reset();
  docket::pg::register_notify_callback();
  docket::pg::register_wake_callback();
  docket::pg::register_planner_hook();
  // A batch call (claim_tasks, complete_tasks) builds executor state of a few
  // hundred kB in SPI's memory contexts and frees it at SPI_finish. At glibc's
  // defaults (trim above 128 kB of free heap top) every call then shrank the
  // heap with brk and grew it back on the next one: page faults, and on a
  // virtual machine a TLB shootdown interrupt to every CPU per shrink, 15% of
  // a flushing backend's time (bench/README.md, "malloc trim"). Keeping up to
  // 4 MB of free heap per backend that loaded docket ends that; allocations of
  // 1 MB and more still come from mmap and go back to the system at once.
  mallopt(M_TRIM_THRESHOLD, 4 * 1024 * 1024);
  mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
}
}

namespace docket::pg {

static Datum now(FunctionCallInfo) {
  return TimestampTzGetDatum(store_now());
}

}  // namespace docket::pg

DOCKET_FUNCTION(docket_now, docket::pg::now)
