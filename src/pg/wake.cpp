#include "pg/wake.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pg/boundary.hpp"
#include "pg/caller.hpp"
#include "pg/claim.hpp"
#include "pg/datum.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "common/hashfn.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/wait_event.h"
}

namespace docket::pg {

namespace {

// Wait events of class Extension whose bits 16-23 are 0xD0 are docket's
// waiters; the low 16 bits are the queue's hash. pg_stat_activity shows them
// as wait_event_type Extension, wait_event Extension.
constexpr std::uint32_t kMarkerMask = 0xFFFF0000U;
constexpr std::uint32_t kMarkerClass = PG_WAIT_EXTENSION | 0x00D00000U;

// One read of a wait event another process may be writing (as
// pg_stat_activity reads them).
std::uint32_t read_once(const std::uint32_t* event) noexcept {
  return *static_cast<const volatile std::uint32_t*>(event);
}

std::uint32_t marker(const std::string& queue) noexcept {
  const std::uint32_t hash = hash_bytes(reinterpret_cast<const unsigned char*>(queue.data()),
                                        static_cast<int>(queue.size()));
  return kMarkerClass | (hash & 0xFFFFU);
}

// The markers of the queues the transaction in progress makes due.
std::vector<std::uint32_t>& pending() {
  static std::vector<std::uint32_t> markers;
  return markers;
}

// Sets the latch of every backend of this database waiting with one of the
// markers. Runs after the commit is visible to every new snapshot
// (XACT_EVENT_COMMIT follows ProcArrayEndTransaction): a waiter that showed
// its marker before this read is woken, and one that shows it after takes its
// snapshot after this commit (await_due checks for due work after showing it).
void wake(const std::vector<std::uint32_t>& markers) noexcept {
  pg_memory_barrier();
  const std::uint32_t count = ProcGlobal->allProcCount;
  for (std::uint32_t i = 0; i < count; ++i) {
    PGPROC* proc = &ProcGlobal->allProcs[i];
    const std::uint32_t event = read_once(&proc->wait_event_info);
    if ((event & kMarkerMask) != kMarkerClass || proc->databaseId != MyDatabaseId) continue;
    if (std::find(markers.begin(), markers.end(), event) != markers.end())
      SetLatch(&proc->procLatch);
  }
}

void on_xact(XactEvent event, void*) noexcept {
  std::vector<std::uint32_t>& markers = pending();
  if (markers.empty()) return;
  if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT) {
    wake(markers);
    markers.clear();
  } else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
             event == XACT_EVENT_PREPARE) {
    // A prepared transaction commits later, maybe elsewhere: the poll finds it.
    markers.clear();
  }
}

// Ready work of one queue (the ready class of claim_due and claim_tasks, on
// its index runs_ready_queue), and the same for a caller bound to tenants.
Statement due_statement{
    "SELECT 1 FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL"
    " AND claim_token IS NULL AND wake_at IS NOT NULL AND queue = $1 AND wake_at <= $2 LIMIT 1",
    2,
    {TEXTOID, TIMESTAMPTZOID},
    nullptr};
Statement due_bound_statement{
    "SELECT 1 FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL"
    " AND claim_token IS NULL AND wake_at IS NOT NULL AND queue = $1 AND wake_at <= $2"
    " AND tenant_id = ANY($3) LIMIT 1",
    3,
    {TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID},
    nullptr};

bool due_now(const Datum queue, const std::optional<std::vector<std::string>>& tenants) {
  const Datum values[3] = {queue, TimestampTzGetDatum(store_now()),
                           tenants ? text_array(*tenants) : Datum(0)};
  spi_connect();
  const bool due =
      spi_execute(tenants ? due_bound_statement : due_statement, values, nullptr, 1) > 0;
  spi_finish();
  return due;
}

}  // namespace

void validate_timeout(int timeout_ms) {
  if (timeout_ms < 0 || timeout_ms > kMaxAwaitMs)
    fail(Reason::bad_argument, "timeout_ms must be between 0 and " + std::to_string(kMaxAwaitMs));
}

bool await_due_work(Datum queue_text, const std::string& queue, int timeout_ms) {
  const std::optional<std::vector<std::string>> tenants = caller::bound_tenants();
  const std::uint32_t mine = marker(queue);
  const TimestampTz deadline =
      call([] { return GetCurrentTimestamp(); }) + static_cast<TimestampTz>(timeout_ms) * 1000;

  for (;;) {
    call([] { ResetLatch(MyLatch); });
    // Show the marker, then look for due work: a commit this look misses sees
    // the marker and sets the latch. The look may wait for a buffer or a lock,
    // which replaces the wait event and clears it; look again until one look
    // ran with the marker shown throughout.
    for (;;) {
      call([&] {
        CHECK_FOR_INTERRUPTS();
        pgstat_report_wait_start(mine);
        pg_memory_barrier();
      });
      if (due_now(queue_text, tenants)) {
        pgstat_report_wait_end();
        return true;
      }
      if (read_once(my_wait_event_info) == mine) break;
    }
    const long remaining_ms = call([&] {
      const TimestampTz now = GetCurrentTimestamp();
      return now >= deadline ? 0L : static_cast<long>((deadline - now + 999) / 1000);
    });
    if (remaining_ms == 0) {
      pgstat_report_wait_end();
      return false;
    }
    const int events = call([&] {
      const int rc =
          WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, remaining_ms, mine);
      CHECK_FOR_INTERRUPTS();
      return rc;
    });
    if ((events & WL_LATCH_SET) == 0) return false;
    // Woken: by a commit that made work due (the look finds it, unless another
    // claimer took it first), or for another reason (a signal sets the latch
    // too, say a cache catch-up request): look again and wait on.
  }
}

namespace {

// docket.await_due(queue, timeout_ms).
Datum await_due(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "queue");
  require(fcinfo, 1, "timeout_ms");
  const std::string queue = text_value(PG_GETARG_DATUM(0));
  validate_queue(queue);
  const int timeout_ms = PG_GETARG_INT32(1);
  validate_timeout(timeout_ms);
  PG_RETURN_BOOL(await_due_work(PG_GETARG_DATUM(0), queue, timeout_ms));
}

}  // namespace

void wake_on_commit(const std::string& queue) {
  const std::uint32_t m = marker(queue);
  std::vector<std::uint32_t>& markers = pending();
  if (std::find(markers.begin(), markers.end(), m) == markers.end()) markers.push_back(m);
}

void register_wake_callback() {
  RegisterXactCallback(on_xact, nullptr);
}

}  // namespace docket::pg

DOCKET_FUNCTION(docket_await_due, docket::pg::await_due)
