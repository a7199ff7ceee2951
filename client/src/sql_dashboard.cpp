// The sql boundary's operator reads (sql_dashboard.hpp). A scope is always the
// caller's and is checked by docket's own functions (queue_stats, list_tasks,
// inspect_task, inspect_run, task_result, list_poisoned, list_schedules,
// task_history): no statement reads a table, so a role with docket_reader and
// no table privilege sees what its scope allows. Timestamps come out as JSON
// text (ISO-8601); no statement selects a claim token.
#include "docket/sql_dashboard.hpp"

#include <atomic>

#include "docket/sql.hpp"

namespace docket::sql::dashboard {

namespace {

struct StatementText {
  const char* name;
  const char* sql;
};

constexpr StatementText kStatements[] = {
    {"docket_dash_queue_stats",
     "SELECT pg_catalog.to_jsonb(docket.now()) #>> '{}', "
     "coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
     "'queue', s.queue, 'due', s.due, 'scheduled', s.scheduled, 'running', s.running,"
     " 'waiting', s.waiting, 'poisoned', s.poisoned, 'oldest_due_at', s.oldest_due_at,"
     " 'oldest_due_age_ms', floor(1000 * extract(epoch FROM docket.now() - s.oldest_due_at)),"
     " 'completed_last_minute', s.completed_last_minute,"
     " 'failed_last_minute', s.failed_last_minute) ORDER BY s.queue)"
     " FROM docket.queue_stats($1::docket.scope) s), '[]')::text"},
    // docket.list_tasks (the scope check, the state, keyset paging on a
    // run_heads index), one row more than the page to tell whether one follows.
    {"docket_dash_list_tasks",
     "SELECT pg_catalog.jsonb_build_object('run_id', t.run_id, 'tenant_id', t.tenant_id,"
     " 'task_name', t.task_name, 'queue', t.queue, 'state', t.state, 'attempts', t.attempt,"
     " 'started_at', t.started_at, 'updated_at', t.updated_at, 'wake_at', t.wake_at)::text"
     " FROM docket.list_tasks($1::docket.scope, $2, $3, $4, $5, $6::int + 1) WITH ORDINALITY t"
     " ORDER BY t.ordinality"},
    // docket.inspect_task: the task's facts and steps, NULL outside the scope.
    {"docket_dash_task_detail",
     "SELECT d::text FROM docket.inspect_task($1::docket.scope, $2) d WHERE d IS NOT NULL"},
    {"docket_dash_now", "SELECT pg_catalog.to_jsonb(docket.now()) #>> '{}'"},
    {"docket_dash_has_task_history",
     "SELECT pg_catalog.to_regprocedure("
     "'docket.task_history(docket.scope, text, bigint, integer)') IS NOT NULL"},
    {"docket_dash_task_history",
     "SELECT pg_catalog.jsonb_build_object('seq', h.seq, 'type', h.type, 'payload', h.payload,"
     " 'recorded_at', h.recorded_at)::text"
     " FROM docket.task_history($1::docket.scope, $2, $3::bigint, $4::int) h"},
    {"docket_dash_list_events",
     "SELECT pg_catalog.jsonb_build_object('seq', e.seq, 'type', e.type, 'payload', e.payload,"
     " 'recorded_at', e.recorded_at)::text"
     " FROM docket.list_events($1::docket.scope, $2, $3::bigint, $4::int) e"},
    {"docket_dash_poisoned_runs",
     "SELECT pg_catalog.to_jsonb(p)::text FROM docket.list_poisoned($1::docket.scope, $2::int) p"},
    {"docket_dash_list_schedules",
     "SELECT pg_catalog.jsonb_build_object('schedule_name', s.schedule_name, 'cron', s.cron,"
     " 'task_name', s.task_name, 'queue', s.queue, 'owner_scope', s.owner_scope,"
     " 'next_run_at', s.next_run_at)::text FROM docket.list_schedules($1::docket.scope) s"},
};

const char* or_null(const std::optional<std::string>& value) {
  return value ? value->c_str() : nullptr;
}

std::vector<Json> json_rows(const pqxx::result& result) {
  std::vector<Json> out;
  out.reserve(result.size());
  for (const pqxx::row& row : result) out.push_back(Json::parse(row[0].c_str()));
  return out;
}

// Once task_history is installed it stays: remembered for the process.
std::atomic<bool> g_has_task_history{false};

}  // namespace

void prepare(pqxx::connection_base& connection) {
  for (const StatementText& statement : kStatements) {
    connection.prepare(statement.name, statement.sql);
  }
}

std::string now(pqxx::transaction_base& tx) {
  return tx.exec_prepared1("docket_dash_now")[0].as<std::string>();
}

QueueStats queue_stats(pqxx::transaction_base& tx, const std::string& scope) {
  const pqxx::row row = tx.exec_prepared1("docket_dash_queue_stats", scope);
  QueueStats out;
  out.now = row[0].as<std::string>();
  out.queues = Json::parse(row[1].c_str()).get<std::vector<Json>>();
  return out;
}

Json list_tasks(pqxx::transaction_base& tx, const std::string& scope, const TaskQuery& query) {
  std::vector<Json> entries = json_rows(
      tx.exec_prepared("docket_dash_list_tasks", scope, or_null(query.queue), or_null(query.state),
                       or_null(query.task_name), or_null(query.after_run_id), query.page_limit));
  const bool has_more = entries.size() > static_cast<std::size_t>(query.page_limit);
  if (has_more) entries.resize(static_cast<std::size_t>(query.page_limit));
  Json next_after = nullptr;
  if (has_more) next_after = entries.back()["run_id"];
  return Json{{"entries", entries}, {"has_more", has_more}, {"next_after", next_after}};
}

std::optional<Json> task_detail(pqxx::transaction_base& tx, const std::string& scope,
                                const std::string& run_id) {
  const pqxx::result facts = tx.exec_prepared("docket_dash_task_detail", scope, run_id);
  if (facts.empty()) return std::nullopt;
  Json detail = Json::parse(facts[0][0].c_str());
  const std::optional<Json> result = sql::task_result(tx, scope, run_id);
  const std::optional<Json> info = sql::inspect_run(tx, scope, run_id);
  if (!result || !info) return std::nullopt;
  for (const char* key : {"state", "result", "error", "attempts"})
    detail[key] = result->value(key, Json());
  // The run's claim and poison facts; inspect_run never carries the token.
  for (const char* key : {"tenant_id", "checkpoint_type", "wake_at", "claimed_at", "claim_attempts",
                          "claim_abandons", "poisoned_at", "poison_reason"})
    detail[key] = info->value(key, Json());
  const Json& run = (*info)["run"];
  detail["waiting"] = run.is_object() ? run.value("waiting", Json()) : Json();
  return detail;
}

std::vector<Json> task_history(pqxx::transaction_base& tx, const std::string& scope,
                               const std::string& run_id, std::int64_t after_seq, int page_limit) {
  if (!g_has_task_history.load(std::memory_order_relaxed) &&
      tx.exec_prepared1("docket_dash_has_task_history")[0].as<bool>())
    g_has_task_history.store(true, std::memory_order_relaxed);
  const char* statement = g_has_task_history.load(std::memory_order_relaxed)
                              ? "docket_dash_task_history"
                              : "docket_dash_list_events";
  return json_rows(tx.exec_prepared(statement, scope, run_id, after_seq, page_limit));
}

std::vector<Json> poisoned_runs(pqxx::transaction_base& tx, const std::string& scope, int limit) {
  return json_rows(tx.exec_prepared("docket_dash_poisoned_runs", scope, limit));
}

std::vector<Json> list_schedules(pqxx::transaction_base& tx, const std::string& scope) {
  return json_rows(tx.exec_prepared("docket_dash_list_schedules", scope));
}

}  // namespace docket::sql::dashboard
