// sleep_until, await_event and await_task: suspensions stored as steps. A
// replay of the step returns its first outcome; a wait that cannot be
// settled now hands the claim back with the task's next version. Lock order:
// an event slot before the run; a child before its parent.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/task.hpp"
#include "pg/claim.hpp"
#include "pg/datum.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"

namespace docket::pg {

namespace {

// A stored step and the facts its kind rules look at.
Statement step_statement{
    "SELECT value, jsonb_typeof(value) = 'object', jsonb_typeof(value) = 'object' AND value ? "
    "'wake_at',"
    " CASE WHEN jsonb_typeof(value) = 'object' THEN value ->> 'status' END,"
    " jsonb_typeof(value) = 'object' AND value ? 'state',"
    " CASE WHEN jsonb_typeof(value) = 'object' AND value ? 'wake_at'"
    " THEN (value ->> 'wake_at')::timestamptz END,"
    " CASE WHEN jsonb_typeof(value) = 'object' THEN value -> 'payload' END,"
    " CASE WHEN jsonb_typeof(value) = 'object' THEN value ->> 'state' END"
    " FROM docket.task_steps WHERE run_id = $1 AND step_name = $2",
    2,
    {TEXTOID, TEXTOID},
    nullptr};

Statement sleep_step_statement{
    "INSERT INTO docket.task_steps (run_id, step_name, value, completed_at)"
    " VALUES ($1, $2, jsonb_build_object('wake_at', $3::timestamptz), $4)",
    4,
    {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
    nullptr};

// The fenced claim refresh: only forward.
Statement refresh_statement{
    "UPDATE docket.runs SET claimed_at = greatest(claimed_at, $3)"
    " WHERE run_id = $1 AND claim_token = $2",
    3,
    {TEXTOID, UUIDOID, TIMESTAMPTZOID},
    nullptr};

// A wait's outcome becomes its step's result; the waiter row goes; the claim
// is refreshed (the caller holds the run's lock and its claim).
Statement settle_statement{
    "WITH ins AS (INSERT INTO docket.task_steps (run_id, step_name, value, completed_at)"
    " VALUES ($1, $2, $3, $4)),"
    " del AS (DELETE FROM docket.task_waits WHERE run_id = $1 AND step_name = $2)"
    " UPDATE docket.runs SET claimed_at = greatest(claimed_at, $4)"
    " WHERE run_id = $1 AND claim_token = $5",
    5,
    {TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID, UUIDOID},
    nullptr};

Statement tenant_statement{
    "SELECT tenant_id FROM docket.runs WHERE run_id = $1", 1, {TEXTOID}, nullptr};

Statement slot_statement{
    "WITH ins AS (INSERT INTO docket.task_events (tenant_key, event_name, created_at)"
    " VALUES ($1, $2, $3) ON CONFLICT ON CONSTRAINT task_events_pkey DO NOTHING)"
    " SELECT 1",
    3,
    {TEXTOID, TEXTOID, TIMESTAMPTZOID},
    nullptr};

Statement lock_slot_statement{
    "SELECT payload, emitted_at FROM docket.task_events"
    " WHERE tenant_key = $1 AND event_name = $2 FOR UPDATE",
    2,
    {TEXTOID, TEXTOID},
    nullptr};

Statement wait_timeout_statement{
    "SELECT timeout_at FROM docket.task_waits WHERE run_id = $1 AND step_name = $2",
    2,
    {TEXTOID, TEXTOID},
    nullptr};

Statement insert_wait_statement{
    "INSERT INTO docket.task_waits (run_id, step_name, kind, tenant_key, target, timeout_at)"
    " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT ON CONSTRAINT task_waits_pkey DO NOTHING",
    6,
    {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID},
    nullptr};

Statement event_outcome_statement{
    "SELECT o, o -> 'payload' FROM jsonb_build_object('status', $1::text, 'payload', $2::jsonb) o",
    2,
    {TEXTOID, JSONBOID},
    nullptr};

Statement child_statement{
    "SELECT status, jsonb_build_object('state', status, 'result', document -> 'result',"
    " 'error', document -> 'error') FROM docket.runs"
    " WHERE run_id = $1 AND graph_hash = 'task' AND tenant_id IS NOT DISTINCT FROM $2 FOR SHARE",
    2,
    {TEXTOID, TEXTOID},
    nullptr};

struct StoredStep {
  bool found = false;
  Datum value = Datum(0);
  StepShape shape;
  std::optional<Micros> wake_at;
  bool payload_null = true;
  Datum payload = Datum(0);
  bool state_null = true;
  Datum state = Datum(0);
};

StoredStep stored_step(Datum run_id, Datum step_name) {
  const Datum key[2] = {run_id, step_name};
  StoredStep out;
  if (spi_execute(step_statement, key, nullptr) == 0) return out;
  out.found = true;
  bool isnull = false;
  out.value = spi_value(0, 1, &isnull);
  out.shape.is_object = DatumGetBool(spi_value(0, 2, &isnull));
  out.shape.has_wake_at = DatumGetBool(spi_value(0, 3, &isnull));
  const Datum status = spi_value(0, 4, &isnull);
  if (!isnull) out.shape.status = text_value(status);
  out.shape.has_state = DatumGetBool(spi_value(0, 5, &isnull));
  out.wake_at = spi_timestamp(0, 6);
  out.payload = spi_value(0, 7, &out.payload_null);
  out.state = spi_value(0, 8, &out.state_null);
  return out;
}

// Locks the task and raises the fence's verdict unless the claim holds;
// returns the task's max-duration deadline.
std::optional<Micros> hold(Datum run_id, Datum token, Micros now) {
  const std::optional<TaskFacts> facts = lock_task(run_id);
  raise_task_verdict(judge_task(facts, token_value(token), now, false), text_value(run_id));
  return facts->deadline_at;
}

// Raises the fence's verdict when the committed row already shows that
// `token` does not hold the task, before anything about the task's steps,
// events or children is looked at: a caller without the claim learns nothing
// else, and an event slot is never touched for it. Unlocked, and final:
// stale, cancelled and not_found never change back for a token. A task the
// token holds (or one past its deadline) is judged again under its lock.
void precheck(Datum run_id, Datum token, Micros now) {
  const auto rows = read_tasks(text_array({text_value(run_id)}));
  const std::optional<TaskFacts> facts =
      rows.empty() ? std::nullopt : std::optional<TaskFacts>(rows.front().second);
  const TaskVerdict verdict = judge_task(facts, token_value(token), now, false);
  if (verdict != TaskVerdict::held && verdict != TaskVerdict::overdue)
    raise_task_verdict(verdict, text_value(run_id));
}

// Writes the suspended version, woken at the task's deadline at the latest
// (eager deadlines), and records `event` (sleeping or waiting); the caller
// holds the run's lock and claim. The version carries wake_pending, so the
// claim that resumes the task records that it woke (claim.cpp).
void suspend(Datum run_id, Datum token, std::vector<std::pair<const char*, std::string>> changes,
             const TaskTransition& transition, std::optional<Micros> deadline_at, Micros now,
             const TaskEvent& event) {
  changes.emplace_back("wake_pending", "true");
  if (!apply_task_transition(run_id, token, json_object(changes),
                             bound_by_deadline(transition, deadline_at), now, false, {event}))
    throw std::logic_error("a locked, held task could not be suspended");
}

void settle(Datum run_id, Datum step_name, Datum outcome, Micros now, Datum token) {
  const Datum values[5] = {run_id, step_name, outcome, TimestampTzGetDatum(now), token};
  spi_execute(settle_statement, values, nullptr);
}

Datum two_columns(FunctionCallInfo fcinfo, Datum a, Datum b, bool b_null) {
  Datum values[2] = {a, b};
  bool nulls[2] = {false, b_null};
  return call([&] {
    TupleDesc desc = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
      elog(ERROR, "docket: a task wait must return a row");
    desc = BlessTupleDesc(desc);
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
  });
}

std::string waiting(const char* kind, const std::string& step, const char* target_key,
                    const std::string& target) {
  std::string text = "{\"kind\": " + json_string(kind) + ", \"step\": " + json_string(step);
  if (target_key != nullptr) text += ", " + json_string(target_key) + ": " + json_string(target);
  return text + "}";
}

Datum sleep_until(FunctionCallInfo fcinfo) {
  check_name("step_name", optional_text_arg(fcinfo, 2));
  if (arg_is_null(fcinfo, 3) || TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(3)))
    fail(Reason::bad_argument, "wake_at must be a finite timestamp");
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  const Datum run_id = PG_GETARG_DATUM(0);
  const Datum token = PG_GETARG_DATUM(1);
  const Datum step_name = PG_GETARG_DATUM(2);
  const std::string step = text_value(step_name);
  const Micros now = store_now();

  spi_connect();
  const std::optional<Micros> deadline_at = hold(run_id, token, now);
  const StoredStep stored = stored_step(run_id, step_name);
  Micros wake = PG_GETARG_TIMESTAMPTZ(3);
  if (stored.found) {
    check_step_kind(step, stored.shape, StepKind::sleep);
    wake = *stored.wake_at;
  } else {
    const Datum values[4] = {run_id, step_name, TimestampTzGetDatum(wake),
                             TimestampTzGetDatum(now)};
    spi_execute(sleep_step_statement, values, nullptr);
  }
  const char* status = "suspended";
  if (wake <= now) {
    const Datum values[3] = {run_id, token, TimestampTzGetDatum(now)};
    spi_execute(refresh_statement, values, nullptr);
    status = "elapsed";
  } else {
    suspend(
        run_id, token,
        {{"wake_reason", json_string("sleep")}, {"waiting", waiting("sleep", step, nullptr, "")}},
        sleep_transition(wake), deadline_at, now,
        {"sleeping", json_object({{"until", json_timestamp(wake)}})});
  }
  spi_finish();
  return two_columns(fcinfo, text_datum(status), TimestampTzGetDatum(wake), false);
}

Datum await_event(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  check_name("step_name", optional_text_arg(fcinfo, 2));
  check_name("event_name", optional_text_arg(fcinfo, 3));
  const std::optional<std::int64_t> timeout_ms =
      arg_is_null(fcinfo, 4) ? std::nullopt : std::optional<std::int64_t>(PG_GETARG_INT64(4));
  validate_timeout_ms(timeout_ms);
  const Datum run_id = PG_GETARG_DATUM(0);
  const Datum token = PG_GETARG_DATUM(1);
  const Datum step_name = PG_GETARG_DATUM(2);
  const Datum event_name = PG_GETARG_DATUM(3);
  const std::string step = text_value(step_name);
  const Micros now = store_now();

  spi_connect();
  precheck(run_id, token, now);
  // Replay: the first outcome of this step is final.
  const StoredStep stored = stored_step(run_id, step_name);
  if (stored.found) {
    hold(run_id, token, now);
    check_step_kind(step, stored.shape, StepKind::event_wait);
    const Datum status = text_datum(*stored.shape.status);
    const Datum payload = stored.payload_null ? Datum(0) : spi_transfer(stored.payload, false, -1);
    spi_finish();
    return two_columns(fcinfo, status, payload, stored.payload_null);
  }
  bool isnull = false;
  std::string tenant;
  if (spi_execute(tenant_statement, &run_id, nullptr) == 1) {
    const Datum t = spi_value(0, 1, &isnull);
    if (!isnull) tenant = text_value(t);
  }
  const Datum tenant_key = text_datum(tenant);
  // Lock order: the event slot first, then the run.
  const Datum slot_key[3] = {tenant_key, event_name, TimestampTzGetDatum(now)};
  // The insert leaves a slot that exists alone, and cleanup may delete that one
  // before the lock reads it (READ COMMITTED: the lock takes a new snapshot).
  // Then the slot is inserted again: a row this transaction inserted is its
  // own. Two tries, and a retryable error rather than a read of a missing row.
  bool locked = false;
  for (int attempt = 0; attempt < 2 && !locked; ++attempt) {
    spi_execute(slot_statement, slot_key, nullptr);
    locked = spi_execute(lock_slot_statement, slot_key, nullptr) == 1;
  }
  if (!locked)
    fail(Reason::serialization_failure,
         "the slot of event " + text_value(event_name) + " vanished twice while locked; retry");
  bool payload_null = true;
  const Datum slot_payload = spi_value(0, 1, &payload_null);
  const std::optional<Micros> emitted_at = spi_timestamp(0, 2);
  const std::optional<Micros> deadline_at = hold(run_id, token, now);

  const Datum wait_key[2] = {run_id, step_name};
  std::optional<Micros> timeout_at;
  if (spi_execute(wait_timeout_statement, wait_key, nullptr) == 1)
    timeout_at = spi_timestamp(0, 1);
  else if (timeout_ms)
    timeout_at = add_millis(now, *timeout_ms);

  if (const std::optional<EventOutcome> outcome = event_outcome(emitted_at, timeout_at, now)) {
    const bool received = *outcome == EventOutcome::received;
    const Datum status = text_datum(received ? "received" : "timeout");
    const Datum args[2] = {status, slot_payload};
    const char nulls[3] = {' ', received && !payload_null ? ' ' : 'n', '\0'};
    spi_execute(event_outcome_statement, args, nulls);
    const Datum value = spi_value(0, 1, &isnull);
    const Datum payload = spi_transfer(spi_value(0, 2, &isnull), false, -1);
    settle(run_id, step_name, value, now, token);
    spi_finish();
    return two_columns(fcinfo, text_datum(received ? "received" : "timeout"), payload, false);
  }

  const Datum wait[6] = {run_id,     step_name,  text_datum("event"),
                         tenant_key, event_name, TimestampTzGetDatum(timeout_at.value_or(0))};
  const char wait_nulls[7] = {' ', ' ', ' ', ' ', ' ', timeout_at ? ' ' : 'n', '\0'};
  spi_execute(insert_wait_statement, wait, wait_nulls);
  std::vector<std::pair<const char*, std::string>> waited{
      {"event", json_string(text_value(event_name))}};
  if (timeout_at) waited.emplace_back("timeout_at", json_timestamp(*timeout_at));
  suspend(run_id, token,
          {{"wake_reason", json_string(timeout_at ? "timeout" : "event")},
           {"waiting", waiting("event", step, "event", text_value(event_name))}},
          event_wait_transition(timeout_at), deadline_at, now, {"waiting", json_object(waited)});
  spi_finish();
  return two_columns(fcinfo, text_datum("suspended"), Datum(0), true);
}

Datum await_task(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  check_name("step_name", optional_text_arg(fcinfo, 2));
  require(fcinfo, 3, "child_run_id");
  const Datum run_id = PG_GETARG_DATUM(0);
  const Datum token = PG_GETARG_DATUM(1);
  const Datum step_name = PG_GETARG_DATUM(2);
  const Datum child_id = PG_GETARG_DATUM(3);
  const std::string parent = text_value(run_id);
  const std::string child = text_value(child_id);
  if (child == parent) fail(Reason::bad_argument, "task " + parent + " cannot await itself");
  const std::string step = text_value(step_name);
  const Micros now = store_now();

  spi_connect();
  precheck(run_id, token, now);
  const StoredStep stored = stored_step(run_id, step_name);
  if (stored.found) {
    hold(run_id, token, now);
    check_step_kind(step, stored.shape, StepKind::child_join);
    const Datum value = spi_transfer(stored.value, false, -1);
    const Datum state = stored.state_null ? Datum(0) : spi_transfer(stored.state, false, -1);
    spi_finish();
    Datum values[2] = {state, value};
    bool nulls[2] = {stored.state_null, false};
    return call([&] {
      TupleDesc desc = nullptr;
      if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "docket: await_task must return a row");
      desc = BlessTupleDesc(desc);
      return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
  }
  bool isnull = false;
  Datum parent_tenant = Datum(0);
  bool tenant_null = true;
  std::string tenant_key;
  if (spi_execute(tenant_statement, &run_id, nullptr) == 1) {
    parent_tenant = spi_value(0, 1, &tenant_null);
    if (!tenant_null) tenant_key = text_value(parent_tenant);
  }
  // Lock order: the child before the parent.
  const Datum child_key[2] = {child_id, parent_tenant};
  const char child_nulls[3] = {' ', tenant_null ? 'n' : ' ', '\0'};
  if (spi_execute(child_statement, child_key, child_nulls) == 0)
    fail(Reason::not_found, "child task " + child + " does not exist in this task's scope");
  const std::string child_status = text_value(spi_value(0, 1, &isnull));
  const Datum outcome = spi_value(0, 2, &isnull);
  const std::optional<Micros> deadline_at = hold(run_id, token, now);
  const std::optional<Status> status = parse_status(child_status);
  if (status && is_terminal(*status)) {
    settle(run_id, step_name, outcome, now, token);
    const Datum value = spi_transfer(outcome, false, -1);
    spi_finish();
    return two_columns(fcinfo, text_datum(child_status), value, false);
  }
  const Datum wait[6] = {run_id,   step_name, text_datum("child"), text_datum(tenant_key),
                         child_id, Datum(0)};
  const char wait_nulls[7] = {' ', ' ', ' ', ' ', ' ', 'n', '\0'};
  spi_execute(insert_wait_statement, wait, wait_nulls);
  suspend(
      run_id, token,
      {{"wake_reason", json_string("child")}, {"waiting", waiting("child", step, "child", child)}},
      child_wait_transition(), deadline_at, now,
      {"waiting", json_object({{"child", json_string(child)}})});
  spi_finish();
  return two_columns(fcinfo, text_datum("suspended"), Datum(0), true);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_sleep_until, docket::pg::sleep_until)
DOCKET_FUNCTION(docket_await_event, docket::pg::await_event)
DOCKET_FUNCTION(docket_await_task, docket::pg::await_task)
