// Library entry: module magic, settings, and docket.now().
#include "pg/boundary.hpp"
#include "pg/datum.hpp"
#include "pg/notify.hpp"
#include "pg/settings.hpp"

extern "C" {
PG_MODULE_MAGIC;

void _PG_init(void);
void _PG_init(void) {
  docket::pg::settings::define();
  docket::pg::caller::register_reset();
  docket::pg::register_notify_callback();
}
}

namespace docket::pg {

static Datum now(FunctionCallInfo) {
  return TimestampTzGetDatum(store_now());
}

}  // namespace docket::pg

DOCKET_FUNCTION(docket_now, docket::pg::now)
