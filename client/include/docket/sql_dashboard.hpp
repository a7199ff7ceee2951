// The sql boundary's read side for operators (the dashboard, docketctl serve):
// queue stats, task listing and detail, history, poisoned runs and schedules,
// each in a scope. Part of the sql boundary: the statements live in
// client/src/sql_dashboard.cpp and nowhere else. Nothing here returns a claim
// token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/json.hpp"

namespace docket::sql::dashboard {

// Registers the statements below on the connection (idempotent); sql::prepare
// registers the rest of the boundary.
void prepare(pqxx::connection_base& connection);

// docket.now() as ISO-8601 text: the clock every age is measured against.
std::string now(pqxx::transaction_base& tx);

// docket.queue_stats(scope): one object per queue (queue, due, scheduled,
// running, waiting, poisoned, oldest_due_at, oldest_due_age_ms,
// completed_last_minute, failed_last_minute), plus the database clock
// (docket.now()) the counts were read at, in "now".
struct QueueStats {
  std::string now;
  std::vector<Json> queues;
};
QueueStats queue_stats(pqxx::transaction_base& tx, const std::string& scope);

// A page of tasks (docket.list_tasks), newest first by (started_at, run_id),
// after the cursor: the last run id of the previous page, which must still be
// visible in the scope (else 22023). state is task_result's vocabulary
// (pending, running, sleeping, waiting, poisoned, completed, failed, cancelled).
struct TaskQuery {
  std::optional<std::string> queue;
  std::optional<std::string> state;
  std::optional<std::string> task_name;
  std::optional<std::string> after_run_id;
  int page_limit = 50;
};
// {"entries": [{run_id, task_name, queue, state, attempts, tenant_id,
// started_at, updated_at, wake_at}], "has_more", "next_after": the cursor of the
// next page or null}
Json list_tasks(pqxx::transaction_base& tx, const std::string& scope, const TaskQuery& query);

// Everything a task page shows but its history: task_result's document plus
// params, headers, the run's claim facts (never its token) and the completed
// steps with their values. nullopt when the task is not visible in the scope.
std::optional<Json> task_detail(pqxx::transaction_base& tx, const std::string& scope,
                                const std::string& run_id);

// docket.task_history(scope, run_id, after_seq, page_limit): rows {seq, type,
// payload, recorded_at}, oldest first. Before task_history exists in the
// installed schema, the run's event log (docket.list_events, same shape).
std::vector<Json> task_history(pqxx::transaction_base& tx, const std::string& scope,
                               const std::string& run_id, std::int64_t after_seq, int page_limit);

// Poisoned runs visible in the scope, oldest poison first, at most `limit`:
// {run_id, tenant_id, queue, graph_id, poisoned_at, poison_reason,
// claim_attempts, claim_abandons}.
std::vector<Json> poisoned_runs(pqxx::transaction_base& tx, const std::string& scope, int limit);

// docket.list_schedules(scope): {schedule_name, cron, task_name, queue,
// owner_scope, next_run_at}.
std::vector<Json> list_schedules(pqxx::transaction_base& tx, const std::string& scope);

}  // namespace docket::sql::dashboard
