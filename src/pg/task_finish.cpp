// heartbeat, fail_task and defer_task: keeping a claim, recording a failed
// attempt (the core decides retry, failure or cancellation), and handing a
// task back without using an attempt (the run store's abandon).
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/task.hpp"
#include "pg/abandon.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/history.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"

namespace docket::pg {

namespace {

// The fenced claim refresh, only forward, fenced at $3 (now): to now, or with
// extend_ms to $4 - lease ($4 = now + extend_ms), so that the claim, expired
// only once now - claimed_at exceeds both a claimer's TTL and its lease
// (core/claim.hpp), lives at least until $4 whatever TTL a claimer passes.
// A heartbeat renews the claim: claim_renewed_at (runs_claimed's key) moves to
// the new claimed_at, out of the range the expired class reads (see
// claim_state.cpp).
Statement refresh_statement{
    "UPDATE docket.runs SET claimed_at = greatest(claimed_at, $3,"
    " $4 - coalesce(lease_ms, 0) * interval '1 millisecond'),"
    " claim_renewed_at = greatest(claimed_at, $3,"
    " $4 - coalesce(lease_ms, 0) * interval '1 millisecond')"
    " WHERE run_id = $1 AND claim_token = $2 AND graph_hash = 'task'"
    " AND (deadline_at IS NULL OR deadline_at > $3)",
    4,
    {TEXTOID, UUIDOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
    nullptr};

// fail_task's look at the locked run: the fence's facts, the failed attempt
// and the task's budget and retry policy (filled in at spawn; NULL: the
// defaults, kDefaultRetryPolicy). The task row by a probe (pg/planning.hpp).
Statement failing_statement{
    "SELECT r.graph_hash = 'task', r.status, r.claim_token, r.deadline_at,"
    " (r.document ->> 'attempt')::int, t.max_attempts, p.retry ->> 'kind',"
    " (p.retry ->> 'base_ms')::float8, (p.retry ->> 'factor')::float8,"
    " (p.retry ->> 'max_ms')::float8, (p.retry ->> 'jitter')::float8"
    " FROM docket.runs r LEFT JOIN LATERAL (SELECT t.max_attempts, t.retry FROM docket.tasks t"
    " WHERE t.run_id = r.run_id LIMIT 1) t ON true,"
    " LATERAL (SELECT coalesce(t.retry, '{\"kind\": \"exponential\", \"base_ms\": 1000,"
    " \"factor\": 2, \"max_ms\": 300000, \"jitter\": 0}'::jsonb) AS retry) p"
    " WHERE r.run_id = $1 FOR UPDATE OF r",
    1,
    {TEXTOID},
    nullptr};

// defer_task's jitter comes from the run id and the defer count.
Statement defer_statement{
    "SELECT checkpoint_seq, claim_abandons, hashtext(run_id || ':' || claim_abandons) & 1023,"
    " deadline_at FROM docket.runs WHERE run_id = $1",
    1,
    {TEXTOID},
    nullptr};

double random_fraction() {
  static thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

Datum heartbeat(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  std::optional<std::int64_t> extend_ms;
  if (!arg_is_null(fcinfo, 2)) extend_ms = PG_GETARG_INT64(2);
  validate_extend_ms(extend_ms);
  const Micros now = store_now();
  const Datum values[4] = {PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), TimestampTzGetDatum(now),
                           TimestampTzGetDatum(heartbeat_claimed_at(now, extend_ms))};
  spi_connect();
  if (spi_execute(refresh_statement, values, nullptr) == 0) {
    judge_locked(values[0], token_value(values[1]), now, false);
    spi_execute(refresh_statement, values, nullptr);  // held after all
  }
  spi_finish();
  PG_RETURN_VOID();
}

std::optional<double> optional_float(std::uint64_t row, int column) {
  bool isnull = false;
  const Datum v = spi_value(row, column, &isnull);
  if (isnull) return std::nullopt;
  return DatumGetFloat8(v);
}

Datum fail_task(FunctionCallInfo fcinfo) {
  require(fcinfo, 2, "error");
  check_jsonb_size(settings::SizeCap::error, "error", PG_GETARG_DATUM(2));
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  require(fcinfo, 3, "retry");
  const bool retry_allowed = PG_GETARG_BOOL(3);
  const Datum run_id = PG_GETARG_DATUM(0);
  const Datum token = PG_GETARG_DATUM(1);
  const Datum error = PG_GETARG_DATUM(2);
  const Micros now = store_now();

  spi_connect();
  std::optional<TaskFacts> facts;
  int failed_attempt = 1;
  int max_attempts = 1;
  RetryPolicy policy;
  if (spi_execute(failing_statement, &run_id, nullptr) == 1) {
    facts = TaskFacts{};
    bool isnull = false;
    facts->is_task = DatumGetBool(spi_value(0, 1, &isnull));
    facts->status = parse_status(text_value(spi_value(0, 2, &isnull))).value_or(Status::running);
    const Datum stored = spi_value(0, 3, &isnull);
    if (!isnull) facts->claim_token = token_value(stored);
    facts->deadline_at = spi_timestamp(0, 4);
    const Datum attempt = spi_value(0, 5, &isnull);
    if (!isnull) failed_attempt = DatumGetInt32(attempt);
    const Datum budget = spi_value(0, 6, &isnull);
    if (!isnull) max_attempts = DatumGetInt32(budget);
    const Datum kind = spi_value(0, 7, &isnull);
    const std::string kind_text = isnull ? "exponential" : text_value(kind);
    policy.kind = kind_text == "none"    ? RetryKind::none
                  : kind_text == "fixed" ? RetryKind::fixed
                                         : RetryKind::exponential;
    policy.base_ms = optional_float(0, 8).value_or(1000);
    policy.factor = optional_float(0, 9).value_or(2);
    policy.max_ms = optional_float(0, 10);
    policy.jitter = optional_float(0, 11).value_or(0);
  }
  raise_task_verdict(judge_task(facts, token_value(token), now, /*allow_overdue=*/true),
                     text_value(run_id));
  const bool overdue = facts->deadline_at && *facts->deadline_at <= now;
  FailDecision d = decide_failure(failed_attempt, max_attempts, overdue, retry_allowed, now,
                                  retry_delay_ms(policy, failed_attempt, random_fraction()));
  const std::string error_json = json_text(error);
  const std::string kept_error = history_error(error_json);
  Datum changes = Datum(0);
  TaskTransition transition;
  // The history keeps every failed attempt's error, then what follows.
  std::vector<TaskEvent> events{
      {"attempt_failed",
       json_object({{"attempt", std::to_string(failed_attempt)}, {"error", kept_error}})}};
  switch (d.kind) {
    case FailDecision::Kind::cancelled:
      changes = json_object({{"error", error_json}, {"cancel_reason", json_string(kMaxDuration)}});
      transition = cancelled_transition();
      events.push_back({"cancelled", json_object({{"reason", json_string(kMaxDuration)}})});
      break;
    case FailDecision::Kind::retry_scheduled:
      changes = json_object({{"attempt", std::to_string(failed_attempt + 1)},
                             {"wake_reason", json_string("retry")},
                             {"last_error", error_json}});
      // Not past the deadline (eager deadlines): due then, and cancelled.
      transition = bound_by_deadline(retry_transition(*d.retry_at), facts->deadline_at);
      d.retry_at = transition.wake_at;
      events.push_back(
          {"retry_scheduled", json_object({{"attempt", std::to_string(failed_attempt + 1)},
                                           {"retry_at", json_timestamp(*d.retry_at)}})});
      break;
    case FailDecision::Kind::failed:
      changes = json_object({{"error", error_json}});
      transition = failed_transition();
      events.push_back({"failed", json_object({{"error", kept_error}})});
      break;
  }
  if (!apply_task_transition(run_id, token, changes, transition, now, true, events))
    throw std::logic_error("a locked, held task could not be failed");
  if (d.kind != FailDecision::Kind::retry_scheduled) release_finished({text_value(run_id)});
  spi_finish();

  Datum result[2] = {text_datum(fail_disposition(d.kind)),
                     TimestampTzGetDatum(d.retry_at.value_or(0))};
  bool nulls[2] = {false, !d.retry_at};
  TupleDesc desc = nullptr;
  call([&] {
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
      elog(ERROR, "docket: fail_task must return a row");
    desc = BlessTupleDesc(desc);
  });
  return call([&] { return HeapTupleGetDatum(heap_form_tuple(desc, result, nulls)); });
}

Datum defer_task(FunctionCallInfo fcinfo) {
  for (int i = 0; i < 5; ++i)
    if (arg_is_null(fcinfo, i))
      fail(Reason::bad_argument, "arguments of defer_task must not be NULL");
  const int max_defers = PG_GETARG_INT32(2);
  const int base_ms = PG_GETARG_INT32(3);
  const int cap_ms = PG_GETARG_INT32(4);
  validate_defer(max_defers, base_ms, cap_ms);
  const Datum run_id = PG_GETARG_DATUM(0);
  const Micros now = store_now();

  spi_connect();
  const char* disposition = "stale";
  if (spi_execute(defer_statement, &run_id, nullptr) == 1) {
    bool isnull = false;
    AbandonPolicy policy;
    policy.expected_checkpoint_seq = DatumGetInt64(spi_value(0, 1, &isnull));
    const int defers = DatumGetInt32(spi_value(0, 2, &isnull));
    const int hash10 = DatumGetInt32(spi_value(0, 3, &isnull));
    policy.now = now;
    // Not past the task's deadline (eager deadlines): due then, and cancelled.
    policy.retry_at = bound_wake(add_millis(now, defer_delay_ms(base_ms, cap_ms, defers, hash10)),
                                 spi_timestamp(0, 4));
    policy.max_claim_abandons = max_defers;
    validate_abandon_policy(policy);
    disposition = abandon_run(run_id, token_value(PG_GETARG_DATUM(1)), policy);
    if (std::string(disposition) == "rescheduled")
      record_task_event(run_id,
                        {"deferred", json_object({{"retry_at", json_timestamp(policy.retry_at)},
                                                  {"defers", std::to_string(defers + 1)}})},
                        now);
    else if (std::string(disposition) == "poisoned")
      record_task_event(
          run_id,
          {"poisoned", json_object({{"reason", json_string("max_claim_abandons_exceeded")}})}, now);
  }
  spi_finish();
  return text_datum(disposition);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_heartbeat, docket::pg::heartbeat)
DOCKET_FUNCTION(docket_fail_task, docket::pg::fail_task)
DOCKET_FUNCTION(docket_defer_task, docket::pg::defer_task)
