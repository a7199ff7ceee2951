// The sql boundary. Every docket SQL function the client calls is named here
// and nowhere else.
#include "docket/sql.hpp"

#include <string_view>
#include <utility>

#include "docket/errors.hpp"

namespace docket::sql {

namespace {

struct StatementText {
  const char* name;
  const char* sql;
};

constexpr StatementText kStatements[] = {
    {"docket_schema_version",
     "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'docket'"},
    {"docket_spawn_task",
     "SELECT run_id, attempt, created FROM docket.spawn_task($1, $2::jsonb, $3, $4::docket.scope, "
     "$5::jsonb)"},
    {"docket_emit_event", "SELECT docket.emit_event($1, $2::jsonb, $3::docket.scope)"},
    {"docket_cancel_task", "SELECT docket.cancel_task($1::docket.scope, $2, $3)"},
    {"docket_task_result", "SELECT docket.task_result($1::docket.scope, $2)::text"},
    {"docket_fetch_run", "SELECT docket.fetch_run($1::docket.scope, $2)::text"},
    {"docket_inspect_run", "SELECT docket.inspect_run($1::docket.scope, $2)::text"},
    {"docket_list_runs",
     "SELECT docket.list_runs($1::docket.scope, $2::int, $3::timestamptz, $4, $5, $6, "
     "$7::text[])::text"},
    {"docket_retry_poisoned_run", "SELECT docket.retry_poisoned_run($1::docket.scope, $2)::text"},
    {"docket_poisoned_runs",
     "SELECT pg_catalog.jsonb_build_object('run_id', p.run_id, 'tenant_id', p.tenant_id, 'queue', "
     "p.queue, 'graph_id', p.graph_id, 'poisoned_at', p.poisoned_at, 'poison_reason', "
     "p.poison_reason)::text FROM docket.list_poisoned('system', $1::int) p"},
    {"docket_queue_stats",
     "SELECT pg_catalog.jsonb_build_object("
     "'queue', queue, 'due', due, 'scheduled', scheduled, 'running', running,"
     " 'waiting', waiting, 'poisoned', poisoned, 'oldest_due_at', oldest_due_at,"
     " 'oldest_due_age_ms', floor(1000 * extract(epoch FROM docket.now() - oldest_due_at)),"
     " 'completed_last_minute', completed_last_minute,"
     " 'failed_last_minute', failed_last_minute)::text"
     " FROM docket.queue_stats()"},
    {"docket_queue_stats_scope",
     "SELECT pg_catalog.jsonb_build_object("
     "'queue', queue, 'due', due, 'scheduled', scheduled, 'running', running,"
     " 'waiting', waiting, 'poisoned', poisoned, 'oldest_due_at', oldest_due_at,"
     " 'oldest_due_age_ms', floor(1000 * extract(epoch FROM docket.now() - oldest_due_at)),"
     " 'completed_last_minute', completed_last_minute,"
     " 'failed_last_minute', failed_last_minute)::text"
     " FROM docket.queue_stats($1::docket.scope)"},
    {"docket_list_tasks",
     "SELECT pg_catalog.to_jsonb(t)::text FROM docket.list_tasks($1::docket.scope, $2, $3, $4, "
     "$5, $6::int) t"},
    {"docket_task_history",
     "SELECT seq, type, payload::text, pg_catalog.to_jsonb(recorded_at) #>> '{}', "
     "(extract(epoch FROM recorded_at) * 1000000)::bigint FROM "
     "docket.task_history($1::docket.scope, $2, $3::bigint, $4::int)"},
    {"docket_cleanup", "SELECT docket.cleanup($1::interval, $2::int)"},
    {"docket_fire_schedules", "SELECT docket.fire_schedules()"},
    {"docket_claim_tasks",
     "SELECT run_id, claim_token::text, task_name, params::text, headers::text, attempt, "
     "checkpoint_seq, wake_reason, steps::text FROM docket.claim_tasks($1, $2::int, $3::bigint, "
     "$4::int)"},
    {"docket_await_tasks",
     "SELECT run_id, claim_token::text, task_name, params::text, headers::text, attempt, "
     "checkpoint_seq, wake_reason, steps::text FROM docket.await_tasks($1, $2::int, $3::bigint, "
     "$4::int, $5::int)"},
    {"docket_has_await_tasks",
     "SELECT to_regprocedure('docket.await_tasks(text, integer, bigint, integer, integer)') IS "
     "NOT NULL"},
    {"docket_step_states", "SELECT step_name, value::text FROM docket.step_states($1, $2::uuid)"},
    {"docket_complete_step", "SELECT docket.complete_step($1, $2::uuid, $3, $4::jsonb)::text"},
    {"docket_complete_steps",
     "SELECT run_id, step_name, outcome, value::text FROM docket.complete_steps($1::text[], "
     "$2::uuid[], $3::text[], $4::jsonb[])"},
    {"docket_complete_tasks",
     "SELECT run_id, outcome FROM docket.complete_tasks($1::text[], $2::uuid[], $3::jsonb[])"},
    // Both in one statement, the steps first (an Append runs its inputs in order).
    {"docket_complete_steps_and_tasks",
     "SELECT true, run_id, step_name, outcome, value::text FROM docket.complete_steps($1::text[], "
     "$2::uuid[], $3::text[], $4::jsonb[]) UNION ALL SELECT false, run_id, NULL, outcome, NULL "
     "FROM docket.complete_tasks($5::text[], $6::uuid[], $7::jsonb[])"},
    {"docket_heartbeat", "SELECT docket.heartbeat($1, $2::uuid)"},
    {"docket_heartbeat_extend", "SELECT docket.heartbeat($1, $2::uuid, $3::bigint)"},
    {"docket_sleep_until",
     "SELECT status, resume_at::text FROM docket.sleep_until($1, $2::uuid, $3, $4::timestamptz)"},
    {"docket_sleep_for",
     "SELECT status, resume_at::text FROM docket.sleep_until($1, $2::uuid, $3, "
     "docket.now() + $4::bigint * interval '1 millisecond')"},
    {"docket_await_event",
     "SELECT status, payload::text FROM docket.await_event($1, $2::uuid, $3, $4, $5::bigint)"},
    {"docket_await_task",
     "SELECT status, outcome::text FROM docket.await_task($1, $2::uuid, $3, $4)"},
    {"docket_complete_task", "SELECT docket.complete_task($1, $2::uuid, $3::jsonb)"},
    {"docket_fail_task",
     "SELECT disposition, retry_at::text FROM docket.fail_task($1, $2::uuid, $3::jsonb, "
     "$4::boolean)"},
    {"docket_defer_task", "SELECT docket.defer_task($1, $2::uuid)"},
    {"docket_release_claim", "SELECT docket.release_claim($1, $2::uuid)"},
    // Never poisons; due again at once; the claim attempt is handed back.
    {"docket_abandon_unstarted",
     "SELECT docket.abandon_claim($1, $2::uuid, $3::bigint, docket.now(), docket.now(), "
     "2147483647, true)"},
};

Json parse_json(const pqxx::field& field) {
  if (field.is_null()) return nullptr;
  // The empty object, as most tasks' headers and steps are, without the parser.
  if (std::string_view(field.c_str(), field.size()) == "{}") return Json::object();
  return Json::parse(field.c_str());
}

std::optional<Json> optional_json(const pqxx::result& result) {
  if (result.empty() || result[0][0].is_null()) return std::nullopt;
  return Json::parse(result[0][0].c_str());
}

// Appends one quoted element to an array literal being built ("{" so far, or
// "{...,..." with earlier elements; the caller closes it with '}').
void append_element(std::string& literal, std::string_view element) {
  if (literal.size() > 1) literal += ',';
  literal += '"';
  for (const char c : element) {
    if (c == '"' || c == '\\') literal += '\\';
    literal += c;
  }
  literal += '"';
}

const char* or_null(const std::optional<std::string>& value) {
  return value ? value->c_str() : nullptr;
}

// libpq's message is "ERROR:  <primary>\nDETAIL: ...\nCONTEXT: ..."; docket's
// messages start with the reason word, so the typed error keeps the primary
// line only (e.g. "stale_fence: task ... is not held by this claim token").
std::string primary_message(const std::string& what) {
  std::string message = what.substr(0, what.find('\n'));
  for (const char* severity : {"ERROR:  ", "FATAL:  ", "PANIC:  "}) {
    if (message.rfind(severity, 0) == 0) return message.substr(std::string(severity).size());
  }
  return message.empty() ? what : message;
}

bool connection_class(const std::string& sqlstate) {
  // 08xxx connection exceptions; 57P01..57P03 the server going away.
  return sqlstate.rfind("08", 0) == 0 || sqlstate == "57P01" || sqlstate == "57P02" ||
         sqlstate == "57P03";
}

// libpqxx 6 leaves sqlstate() empty for an error raised while it prepares a
// statement (on its first use), e.g. a missing EXECUTE privilege; its class
// still tells the SQLSTATE of the errors a PREPARE can raise.
std::string sqlstate_of(const pqxx::sql_error& e) {
  if (!e.sqlstate().empty()) return e.sqlstate();
  if (dynamic_cast<const pqxx::insufficient_privilege*>(&e) != nullptr) return "42501";
  if (dynamic_cast<const pqxx::undefined_function*>(&e) != nullptr) return "42883";
  if (dynamic_cast<const pqxx::undefined_table*>(&e) != nullptr) return "42P01";
  if (dynamic_cast<const pqxx::undefined_column*>(&e) != nullptr) return "42703";
  if (dynamic_cast<const pqxx::syntax_error*>(&e) != nullptr) return "42601";
  return "";
}

[[noreturn]] void throw_for_sqlstate(const std::string& state, const std::string& message,
                                     bool mutating) {
  if (state == "DK001") throw StaleFence(state, message);
  if (state == "DK002") throw InvalidCommit(state, message);
  if (state == "DK003") throw NotFound(state, message);
  if (state == "DK004") throw InactiveRun(state, message);
  if (state == "DK005") throw InvalidMutation(state, message);
  if (state == "DK006") throw GraphConflict(state, message);
  if (state == "DK007") throw InvalidRun(state, message);
  if (state == "DK010") throw Cancelled(state, message);
  if (state == "22023") throw BadArgument(state, message);
  if (state == "23505") throw DuplicateRun(state, message);
  if (connection_class(state)) {
    if (mutating) throw Ambiguous(state, "connection lost during a mutating call: " + message);
    throw ConnectionLost(state, message);
  }
  throw ServerError(state, message);
}

}  // namespace

void prepare(pqxx::connection_base& connection) {
  for (const StatementText& statement : kStatements) {
    connection.prepare(statement.name, statement.sql);
  }
}

void rethrow_mapped(bool mutating) {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const pqxx::in_doubt_error& e) {
    throw Ambiguous("", std::string("commit outcome unknown: ") + e.what());
  } catch (const pqxx::statement_completion_unknown& e) {
    throw Ambiguous("", std::string("statement outcome unknown: ") + e.what());
  } catch (const pqxx::broken_connection& e) {
    if (mutating)
      throw Ambiguous("", std::string("connection lost during a mutating call: ") + e.what());
    throw ConnectionLost("", e.what());
  } catch (const pqxx::sql_error& e) {
    throw_for_sqlstate(sqlstate_of(e), primary_message(e.what()), mutating);
  }
}

std::string schema_version(pqxx::transaction_base& tx) {
  const pqxx::result r = tx.exec_prepared("docket_schema_version");
  return r.empty() ? std::string() : r[0][0].as<std::string>();
}

void require_supported_schema(pqxx::transaction_base& tx) {
  const std::string version = schema_version(tx);
  if (version != kSupportedSchemaVersion)
    throw SchemaMismatch("", "docket schema version \"" + version + "\" is not supported (need " +
                                 kSupportedSchemaVersion + ")");
}

SpawnResult spawn_task(pqxx::transaction_base& tx, const std::string& task_name, const Json& params,
                       const std::string& queue, const std::string& owner_scope,
                       const Json& options) {
  const pqxx::row row = tx.exec_prepared1("docket_spawn_task", task_name, params.dump(), queue,
                                          owner_scope, options.dump());
  return SpawnResult{row[0].as<std::string>(), row[1].as<int>(), row[2].as<bool>()};
}

bool emit_event(pqxx::transaction_base& tx, const std::string& event_name, const Json& payload,
                const std::string& owner_scope) {
  return tx.exec_prepared1("docket_emit_event", event_name, payload.dump(), owner_scope)[0]
      .as<bool>();
}

bool cancel_task(pqxx::transaction_base& tx, const std::string& scope, const std::string& run_id,
                 const std::optional<std::string>& reason) {
  return tx.exec_prepared1("docket_cancel_task", scope, run_id, or_null(reason))[0].as<bool>();
}

std::optional<Json> task_result(pqxx::transaction_base& tx, const std::string& scope,
                                const std::string& run_id) {
  return optional_json(tx.exec_prepared("docket_task_result", scope, run_id));
}

std::optional<Json> fetch_run(pqxx::transaction_base& tx, const std::string& scope,
                              const std::string& run_id) {
  return optional_json(tx.exec_prepared("docket_fetch_run", scope, run_id));
}

std::optional<Json> inspect_run(pqxx::transaction_base& tx, const std::string& scope,
                                const std::string& run_id) {
  return optional_json(tx.exec_prepared("docket_inspect_run", scope, run_id));
}

Json list_runs(pqxx::transaction_base& tx, const std::string& scope, const ListQuery& query) {
  std::optional<std::string> statuses;
  if (!query.statuses.empty()) {
    std::string array = "{";
    for (std::size_t i = 0; i < query.statuses.size(); ++i) {
      if (i > 0) array += ',';
      array += '"';
      for (const char c : query.statuses[i]) {
        if (c == '"' || c == '\\') array += '\\';
        array += c;
      }
      array += '"';
    }
    statuses = array + "}";
  }
  const pqxx::row row =
      tx.exec_prepared1("docket_list_runs", scope, query.page_limit,
                        or_null(query.before_started_at), or_null(query.before_run_id),
                        or_null(query.graph_id), or_null(query.graph_hash), or_null(statuses));
  return parse_json(row[0]);
}

Json retry_poisoned_run(pqxx::transaction_base& tx, const std::string& scope,
                        const std::string& run_id) {
  return parse_json(tx.exec_prepared1("docket_retry_poisoned_run", scope, run_id)[0]);
}

std::vector<Json> poisoned_runs(pqxx::transaction_base& tx, int limit) {
  std::vector<Json> out;
  for (const pqxx::row& row : tx.exec_prepared("docket_poisoned_runs", limit))
    out.push_back(parse_json(row[0]));
  return out;
}

std::vector<Json> queue_stats(pqxx::transaction_base& tx) {
  std::vector<Json> out;
  for (const pqxx::row& row : tx.exec_prepared("docket_queue_stats"))
    out.push_back(parse_json(row[0]));
  return out;
}

std::vector<Json> queue_stats(pqxx::transaction_base& tx, const std::string& scope) {
  std::vector<Json> out;
  for (const pqxx::row& row : tx.exec_prepared("docket_queue_stats_scope", scope))
    out.push_back(parse_json(row[0]));
  return out;
}

std::vector<Json> list_tasks(pqxx::transaction_base& tx, const std::string& scope,
                             const TaskListQuery& query) {
  std::vector<Json> out;
  for (const pqxx::row& row :
       tx.exec_prepared("docket_list_tasks", scope, or_null(query.queue), or_null(query.state),
                        or_null(query.task_name), or_null(query.after_run_id), query.page_limit))
    out.push_back(parse_json(row[0]));
  return out;
}

std::vector<HistoryEvent> task_history(pqxx::transaction_base& tx, const std::string& scope,
                                       const std::string& run_id, std::int64_t after_seq,
                                       int page_limit) {
  std::vector<HistoryEvent> out;
  for (const pqxx::row& row :
       tx.exec_prepared("docket_task_history", scope, run_id, after_seq, page_limit)) {
    HistoryEvent event;
    event.seq = row[0].as<std::int64_t>();
    event.type = row[1].as<std::string>();
    event.payload = parse_json(row[2]);
    event.recorded_at = row[3].as<std::string>();
    event.recorded_at_us = row[4].as<std::int64_t>();
    out.push_back(std::move(event));
  }
  return out;
}

std::int64_t cleanup(pqxx::transaction_base& tx, const std::string& older_than, int batch) {
  return tx.exec_prepared1("docket_cleanup", older_than, batch)[0].as<std::int64_t>();
}

int fire_schedules(pqxx::transaction_base& tx) {
  return tx.exec_prepared1("docket_fire_schedules")[0].as<int>();
}

bool has_await_tasks(pqxx::transaction_base& tx) {
  return tx.exec_prepared1("docket_has_await_tasks")[0].as<bool>();
}

namespace {

// The rows of claim_tasks and await_tasks (the same columns).
std::vector<ClaimedTask> claimed_tasks(const pqxx::result& rows) {
  std::vector<ClaimedTask> out;
  for (const pqxx::row& row : rows) {
    ClaimedTask task;
    task.run_id = row[0].as<std::string>();
    task.claim_token = row[1].as<std::string>();
    task.task_name = row[2].as<std::string>();
    task.params = parse_json(row[3]);
    task.headers = parse_json(row[4]);
    task.attempt = row[5].as<int>();
    task.checkpoint_seq = row[6].as<std::int64_t>();
    task.wake_reason = row[7].is_null() ? std::string() : row[7].as<std::string>();
    Json steps = parse_json(row[8]);
    if (steps.is_object()) {
      for (auto it = steps.begin(); it != steps.end(); ++it)
        task.steps.emplace(it.key(), std::move(*it));
    }
    out.push_back(std::move(task));
  }
  return out;
}

}  // namespace

std::vector<ClaimedTask> claim_tasks(pqxx::transaction_base& tx, const std::string& queue,
                                     int claim_limit, std::int64_t lease_ms,
                                     int max_claim_attempts) {
  return claimed_tasks(
      tx.exec_prepared("docket_claim_tasks", queue, claim_limit, lease_ms, max_claim_attempts));
}

std::vector<ClaimedTask> await_tasks(pqxx::transaction_base& tx, const std::string& queue,
                                     int claim_limit, std::int64_t lease_ms, int max_claim_attempts,
                                     int timeout_ms) {
  return claimed_tasks(tx.exec_prepared("docket_await_tasks", queue, claim_limit, lease_ms,
                                        max_claim_attempts, timeout_ms));
}

std::map<std::string, Json> step_states(pqxx::transaction_base& tx, const std::string& run_id,
                                        const std::string& token) {
  std::map<std::string, Json> out;
  for (const pqxx::row& row : tx.exec_prepared("docket_step_states", run_id, token))
    out.emplace(row[0].as<std::string>(), parse_json(row[1]));
  return out;
}

Json complete_step(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token,
                   const std::string& step_name, const Json& value) {
  return parse_json(
      tx.exec_prepared1("docket_complete_step", run_id, token, step_name, value.dump())[0]);
}

GroupCommit::GroupCommit() {
  for (std::string* literal : {&step_runs_, &step_tokens_, &step_names_, &step_values_, &task_runs_,
                               &task_tokens_, &task_results_})
    *literal = "{";
}

void GroupCommit::add_step(const std::string& run_id, const std::string& claim_token,
                           const std::string& step_name, const Json& value) {
  append_element(step_runs_, run_id);
  append_element(step_tokens_, claim_token);
  append_element(step_names_, step_name);
  append_element(step_values_, value.dump());
  ++steps_;
}

void GroupCommit::add_completion(const std::string& run_id, const std::string& claim_token,
                                 const Json& result) {
  append_element(task_runs_, run_id);
  append_element(task_tokens_, claim_token);
  append_element(task_results_, result.dump());  // JSON null for a null result
  ++completions_;
}

namespace {

std::string closed(const std::string& literal) {
  return literal + '}';
}

// A complete_steps row from column `at` on: run_id, step_name, outcome, value.
StepOutcome step_outcome(const pqxx::row& row, pqxx::row::size_type at) {
  StepOutcome outcome;
  outcome.run_id = row[at].as<std::string>();
  outcome.step_name = row[at + 1].as<std::string>();
  outcome.outcome = row[at + 2].as<std::string>();
  outcome.value = parse_json(row[at + 3]);
  return outcome;
}

}  // namespace

StepsAndTasksOutcome commit(pqxx::transaction_base& tx, const GroupCommit& batch) {
  StepsAndTasksOutcome out;
  if (batch.steps_ == 0 && batch.completions_ == 0) return out;
  out.steps.reserve(batch.steps_);
  out.completions.reserve(batch.completions_);
  if (batch.completions_ == 0) {
    for (const pqxx::row& row : tx.exec_prepared(
             "docket_complete_steps", closed(batch.step_runs_), closed(batch.step_tokens_),
             closed(batch.step_names_), closed(batch.step_values_)))
      out.steps.push_back(step_outcome(row, 0));
  } else if (batch.steps_ == 0) {
    for (const pqxx::row& row :
         tx.exec_prepared("docket_complete_tasks", closed(batch.task_runs_),
                          closed(batch.task_tokens_), closed(batch.task_results_)))
      out.completions.push_back(
          CompletionOutcome{row[0].as<std::string>(), row[1].as<std::string>()});
  } else {
    for (const pqxx::row& row : tx.exec_prepared(
             "docket_complete_steps_and_tasks", closed(batch.step_runs_),
             closed(batch.step_tokens_), closed(batch.step_names_), closed(batch.step_values_),
             closed(batch.task_runs_), closed(batch.task_tokens_), closed(batch.task_results_))) {
      if (row[0].as<bool>())
        out.steps.push_back(step_outcome(row, 1));
      else
        out.completions.push_back(
            CompletionOutcome{row[1].as<std::string>(), row[3].as<std::string>()});
    }
  }
  return out;
}

StepsAndTasksOutcome complete_steps_and_tasks(pqxx::transaction_base& tx,
                                              const std::vector<StepCheckpoint>& steps,
                                              const std::vector<TaskCompletion>& completions) {
  GroupCommit batch;
  for (const StepCheckpoint& step : steps)
    batch.add_step(step.run_id, step.claim_token, step.step_name, step.value);
  for (const TaskCompletion& completion : completions)
    batch.add_completion(completion.run_id, completion.claim_token, completion.result);
  return commit(tx, batch);
}

std::vector<StepOutcome> complete_steps(pqxx::transaction_base& tx,
                                        const std::vector<StepCheckpoint>& steps) {
  return complete_steps_and_tasks(tx, steps, {}).steps;
}

std::vector<CompletionOutcome> complete_tasks(pqxx::transaction_base& tx,
                                              const std::vector<TaskCompletion>& completions) {
  return complete_steps_and_tasks(tx, {}, completions).completions;
}

void heartbeat(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token) {
  tx.exec_prepared("docket_heartbeat", run_id, token);
}

void heartbeat(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token,
               std::chrono::milliseconds extend) {
  tx.exec_prepared("docket_heartbeat_extend", run_id, token,
                   static_cast<std::int64_t>(extend.count()));
}

namespace {
Suspension suspension(const pqxx::row& row) {
  Suspension s;
  s.status = row[0].as<std::string>();
  s.suspended = s.status == "suspended";
  s.payload = row[1].is_null() ? Json(nullptr) : Json::parse(row[1].c_str(), nullptr, false);
  if (s.payload.is_discarded()) s.payload = row[1].as<std::string>();  // a timestamp text
  return s;
}
}  // namespace

Suspension sleep_until(pqxx::transaction_base& tx, const std::string& run_id,
                       const std::string& token, const std::string& step_name,
                       const std::string& wake_at) {
  return suspension(tx.exec_prepared1("docket_sleep_until", run_id, token, step_name, wake_at));
}

Suspension sleep_for(pqxx::transaction_base& tx, const std::string& run_id,
                     const std::string& token, const std::string& step_name, std::int64_t ms) {
  return suspension(tx.exec_prepared1("docket_sleep_for", run_id, token, step_name, ms));
}

Suspension await_event(pqxx::transaction_base& tx, const std::string& run_id,
                       const std::string& token, const std::string& step_name,
                       const std::string& event_name, std::optional<std::int64_t> timeout_ms) {
  const std::optional<std::string> timeout =
      timeout_ms ? std::optional<std::string>(std::to_string(*timeout_ms)) : std::nullopt;
  return suspension(tx.exec_prepared1("docket_await_event", run_id, token, step_name, event_name,
                                      or_null(timeout)));
}

Suspension await_task(pqxx::transaction_base& tx, const std::string& run_id,
                      const std::string& token, const std::string& step_name,
                      const std::string& child_run_id) {
  return suspension(tx.exec_prepared1("docket_await_task", run_id, token, step_name, child_run_id));
}

void complete_task(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token,
                   const Json& result) {
  tx.exec_prepared("docket_complete_task", run_id, token, result.dump());
}

FailOutcome fail_task(pqxx::transaction_base& tx, const std::string& run_id,
                      const std::string& token, const Json& error, bool retry) {
  const pqxx::row row =
      tx.exec_prepared1("docket_fail_task", run_id, token, error.dump(), retry ? "true" : "false");
  FailOutcome out;
  out.disposition = row[0].as<std::string>();
  if (!row[1].is_null()) out.retry_at = row[1].as<std::string>();
  return out;
}

std::string defer_task(pqxx::transaction_base& tx, const std::string& run_id,
                       const std::string& token) {
  return tx.exec_prepared1("docket_defer_task", run_id, token)[0].as<std::string>();
}

void release_claim(pqxx::transaction_base& tx, const std::string& run_id,
                   const std::string& token) {
  tx.exec_prepared("docket_release_claim", run_id, token);
}

std::string abandon_unstarted_claim(pqxx::transaction_base& tx, const std::string& run_id,
                                    const std::string& token, std::int64_t checkpoint_seq) {
  return tx.exec_prepared1("docket_abandon_unstarted", run_id, token, checkpoint_seq)[0]
      .as<std::string>();
}

}  // namespace docket::sql
