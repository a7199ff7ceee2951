#include "pg/settings.hpp"

#include "pg/postgres.hpp"

namespace docket::pg::settings {

namespace {
char* fake_now_value = nullptr;
bool notify_value = true;
int notify_interval_value = 100;
bool direct_writes_value = true;
double max_clock_skew_value = 300000;  // 5 minutes
int vacuum_naptime_value = 5000;

struct Cap {
  const char* name;
  const char* description;
  int default_bytes;
  int value;
};
// In SizeCap's order.
Cap caps[] = {
    {"docket.max_document_bytes",
     "Largest run document (insert_run, commit, a mutation's proposal) or graph definition "
     "(save_graph), in bytes of its jsonb value.",
     1048576, 1048576},
    {"docket.max_params_bytes", "Largest task params (spawn_task, spawn_tasks, schedule_task).",
     1048576, 1048576},
    {"docket.max_result_bytes",
     "Largest task result or step value (complete_task(s), complete_step(s)).", 1048576, 1048576},
    {"docket.max_payload_bytes",
     "Largest event payload (emit_event) or events array (append_events).", 1048576, 1048576},
    {"docket.max_error_bytes", "Largest task error (fail_task).", 65536, 65536},
    {"docket.max_headers_bytes", "Largest task headers object (the spawn option headers).", 65536,
     65536},
};
}  // namespace

const char* fake_now() noexcept {
  return fake_now_value;
}
bool notify() noexcept {
  return notify_value;
}
int notify_interval_ms() noexcept {
  return notify_interval_value;
}

bool direct_writes() noexcept {
  return direct_writes_value;
}

double max_clock_skew_ms() noexcept {
  return max_clock_skew_value;
}
int vacuum_naptime_ms() noexcept {
  return vacuum_naptime_value;
}
int max_bytes(SizeCap cap) noexcept {
  return caps[static_cast<int>(cap)].value;
}
const char* max_bytes_name(SizeCap cap) noexcept {
  return caps[static_cast<int>(cap)].name;
}

void define() {
  DefineCustomStringVariable(
      "docket.fake_now", "Timestamp docket.now() returns instead of the real clock ('' = real).",
      "Tests travel in time with SET docket.fake_now = '2030-01-01 00:00:00+00'. Superusers "
      "only: a role that could move docket's clock could expire other workers' claims or "
      "schedule work at infinity. docket.now() refuses a value that is not a finite timestamp.",
      &fake_now_value, "", PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("docket.notify",
                           "Send NOTIFY docket_due (payload: queue) when a run becomes due now.",
                           nullptr, &notify_value, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "docket.notify_interval_ms",
      "At most one docket_due notification per queue per this interval per backend (0: every "
      "transaction).",
      nullptr, &notify_interval_value, 100, 0, 3600000, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr,
      nullptr);
  // Superusers only: with it on, these writes are no UPDATE statements, which
  // statement-level audit hooks would log; a role must not be able to turn
  // off what an administrator turned on for an audit.
  DefineCustomBoolVariable(
      "docket.direct_writes",
      "Claims, commits, step checkpoints and task completions write run rows, read stored "
      "steps and look for waiter rows through the table and index access methods.",
      "Off: they run their UPDATE, SELECT and DELETE statements instead, as statement-level "
      "hooks (auditing, pg_stat_statements) see them. The rows written and the errors raised "
      "are the same.",
      &direct_writes_value, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  // Superusers only, like the clock: a role that could raise them could lift
  // the bounds they put on hostile input.
  DefineCustomRealVariable(
      "docket.max_clock_skew",
      "How far a caller's now argument may be from docket.now() (fake_now or the clock).",
      "claim_due, claim_tasks, refresh_claim, release_claim, abandon_claim and "
      "retry_poisoned_run refuse (22023) a now further than this, in either direction.",
      &max_clock_skew_value, 300000, 0, 1e15, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  // Superusers only: a role that could set it to 1 ms would have the claims
  // look at the statistics on every call.
  DefineCustomIntVariable(
      "docket.vacuum_naptime",
      "How often a claiming backend looks whether docket.runs needs a vacuum (0: never).",
      "When the table's dead rows pass its autovacuum threshold, the backend starts a "
      "background worker that vacuums docket.runs as the table's owner, instead of waiting "
      "for autovacuum's naptime. Off when autovacuum is off, for the server or the table.",
      &vacuum_naptime_value, 5000, 0, 3600000, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  for (Cap& cap : caps)
    DefineCustomIntVariable(
        cap.name, cap.description,
        "A larger value is refused with SQLSTATE 54000 before anything changes.", &cap.value,
        cap.default_bytes, 0, INT_MAX, PGC_SUSET, GUC_UNIT_BYTE, nullptr, nullptr, nullptr);
  MarkGUCPrefixReserved("docket");
}

}  // namespace docket::pg::settings
