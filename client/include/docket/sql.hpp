// The sql boundary: the only code of the client that names docket's SQL
// functions. Every statement is prepared once per connection; server errors are
// mapped to the typed errors of errors.hpp; a broken connection during a
// mutating call (including libpqxx's in_doubt_error on commit) becomes
// Ambiguous, during a read ConnectionLost.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/json.hpp"

namespace docket::sql {

// The extension versions this client speaks.
constexpr const char* kSupportedSchemaVersion = "0.3.0";

// Registers every statement on the connection (idempotent).
void prepare(pqxx::connection_base& connection);

// The installed extension's version, or "" when docket is not installed.
std::string schema_version(pqxx::transaction_base& tx);
// Throws SchemaMismatch unless the installed version is supported.
void require_supported_schema(pqxx::transaction_base& tx);

// Runs `fn(tx)` in its own transaction on `connection` and commits, mapping
// errors (mutating: a lost connection is Ambiguous; otherwise ConnectionLost).
template <typename Fn>
auto in_transaction(pqxx::connection_base& connection, bool mutating, Fn&& fn);

// Maps the exception in flight (call from a catch block) and throws the typed error.
[[noreturn]] void rethrow_mapped(bool mutating);

// --- producer ---------------------------------------------------------------
struct SpawnResult {
  std::string run_id;
  int attempt = 0;
  bool created = false;
};
SpawnResult spawn_task(pqxx::transaction_base& tx, const std::string& task_name, const Json& params,
                       const std::string& queue, const std::string& owner_scope,
                       const Json& options);
bool emit_event(pqxx::transaction_base& tx, const std::string& event_name, const Json& payload,
                const std::string& owner_scope);
bool cancel_task(pqxx::transaction_base& tx, const std::string& scope, const std::string& run_id,
                 const std::optional<std::string>& reason);
std::optional<Json> task_result(pqxx::transaction_base& tx, const std::string& scope,
                                const std::string& run_id);
std::optional<Json> fetch_run(pqxx::transaction_base& tx, const std::string& scope,
                              const std::string& run_id);
std::optional<Json> inspect_run(pqxx::transaction_base& tx, const std::string& scope,
                                const std::string& run_id);
struct ListQuery {
  int page_limit = 50;
  std::optional<std::string> before_started_at;  // with before_run_id
  std::optional<std::string> before_run_id;
  std::optional<std::string> graph_id;
  std::optional<std::string> graph_hash;
  std::vector<std::string> statuses;  // empty = any
};
Json list_runs(pqxx::transaction_base& tx, const std::string& scope, const ListQuery& query);
Json retry_poisoned_run(pqxx::transaction_base& tx, const std::string& scope,
                        const std::string& run_id);
// Poisoned runs (run_id, tenant_id, queue, poisoned_at, poison_reason), oldest first.
std::vector<Json> poisoned_runs(pqxx::transaction_base& tx, int limit);
// docket.queue_stats() (system scope), one object per queue: the unfinished runs by
// state (due, scheduled, running, waiting, poisoned), oldest_due_at and its age
// (oldest_due_age_ms), completed_last_minute and failed_last_minute.
std::vector<Json> queue_stats(pqxx::transaction_base& tx);
// The same for the runs visible in `scope` (system, tenantless, tenant:<id>).
std::vector<Json> queue_stats(pqxx::transaction_base& tx, const std::string& scope);
// docket.list_tasks: one object per task (run_id, task_name, queue, tenant_id,
// state, attempt, started_at, updated_at, wake_at), newest first.
struct TaskListQuery {
  std::optional<std::string> queue;
  std::optional<std::string> state;  // a task_result state
  std::optional<std::string> task_name;
  std::optional<std::string> after_run_id;  // the last run_id of the previous page
  int page_limit = 100;
};
std::vector<Json> list_tasks(pqxx::transaction_base& tx, const std::string& scope,
                             const TaskListQuery& query);
// docket.task_history: one page of a task's event log, oldest first; empty
// when the task is not visible in scope.
struct HistoryEvent {
  std::int64_t seq = 0;
  std::string type;
  Json payload;
  std::string recorded_at;          // ISO-8601
  std::int64_t recorded_at_us = 0;  // the same, microseconds since the epoch
};
std::vector<HistoryEvent> task_history(pqxx::transaction_base& tx, const std::string& scope,
                                       const std::string& run_id, std::int64_t after_seq,
                                       int page_limit);
// docket.cleanup(older_than, batch): deletes up to `batch` finished runs last
// written before now - older_than (an interval, e.g. "7 days"); returns how many.
std::int64_t cleanup(pqxx::transaction_base& tx, const std::string& older_than, int batch);
// Spawns one task per due schedule (docket.fire_schedules); returns how many fired.
int fire_schedules(pqxx::transaction_base& tx);

// --- worker -----------------------------------------------------------------
struct ClaimedTask {
  std::string run_id;
  std::string claim_token;
  std::string task_name;
  Json params;
  Json headers;
  int attempt = 0;
  std::int64_t checkpoint_seq = 0;
  std::string wake_reason;
  std::map<std::string, Json> steps;  // completed steps (name -> value), read under the claim
};
std::vector<ClaimedTask> claim_tasks(pqxx::transaction_base& tx, const std::string& queue,
                                     int claim_limit, std::int64_t lease_ms,
                                     int max_claim_attempts);
// docket.await_tasks: claim_tasks once work of the queue is ready, waiting up
// to timeout_ms for a commit that makes some due (no rows at the timeout).
std::vector<ClaimedTask> await_tasks(pqxx::transaction_base& tx, const std::string& queue,
                                     int claim_limit, std::int64_t lease_ms, int max_claim_attempts,
                                     int timeout_ms);
// Whether the server's docket has await_tasks (0.3.0 and later).
bool has_await_tasks(pqxx::transaction_base& tx);
std::map<std::string, Json> step_states(pqxx::transaction_base& tx, const std::string& run_id,
                                        const std::string& token);
Json complete_step(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token,
                   const std::string& step_name, const Json& value);
// Batched worker calls (DESIGN.md "Batched worker calls"): each element fenced
// on its own; one outcome per element, in input order. The caller keeps run ids
// (steps: run id and step name) distinct within one call.
struct StepCheckpoint {
  std::string run_id;
  std::string claim_token;
  std::string step_name;
  Json value;
};
struct StepOutcome {
  std::string run_id;
  std::string step_name;
  std::string outcome;  // stored | kept | stale | cancelled | not_found
  Json value;           // stored or kept: the step's value (kept: the first stored value)
};
std::vector<StepOutcome> complete_steps(pqxx::transaction_base& tx,
                                        const std::vector<StepCheckpoint>& steps);
struct TaskCompletion {
  std::string run_id;
  std::string claim_token;
  Json result;
};
struct CompletionOutcome {
  std::string run_id;
  std::string outcome;  // completed | stale | cancelled | not_found
};
std::vector<CompletionOutcome> complete_tasks(pqxx::transaction_base& tx,
                                              const std::vector<TaskCompletion>& completions);
// Both in one statement (the steps first): on a pqxx::nontransaction, one round
// trip and one commit for the lot, as the WorkerPool's flusher sends them.
struct StepsAndTasksOutcome {
  std::vector<StepOutcome> steps;
  std::vector<CompletionOutcome> completions;
};
StepsAndTasksOutcome complete_steps_and_tasks(pqxx::transaction_base& tx,
                                              const std::vector<StepCheckpoint>& steps,
                                              const std::vector<TaskCompletion>& completions);
// The arguments of one such call, built item by item without a copy of any
// item (the WorkerPool's flusher builds its group commits so): commit() sends
// the steps and completions added in one statement, with one outcome each in
// the order they were added (as complete_steps_and_tasks does; the one call
// that has items when the other has none; nothing at all when both are empty).
class GroupCommit {
 public:
  GroupCommit();
  void add_step(const std::string& run_id, const std::string& claim_token,
                const std::string& step_name, const Json& value);
  void add_completion(const std::string& run_id, const std::string& claim_token,
                      const Json& result);

 private:
  friend StepsAndTasksOutcome commit(pqxx::transaction_base& tx, const GroupCommit& batch);
  // Array literals being built: "{" and the elements so far, not closed.
  std::string step_runs_, step_tokens_, step_names_, step_values_;
  std::string task_runs_, task_tokens_, task_results_;
  std::size_t steps_ = 0;
  std::size_t completions_ = 0;
};
StepsAndTasksOutcome commit(pqxx::transaction_base& tx, const GroupCommit& batch);
void heartbeat(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token);
// heartbeat(run_id, token, extend_ms): the claim does not expire before now + extend.
void heartbeat(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token,
               std::chrono::milliseconds extend);
struct Suspension {
  bool suspended = false;  // true: the task was suspended, unwind the handler
  Json payload;            // await_event: the event payload; await_task: the outcome
  std::string status;      // the function's status column
};
// sleep_until: status "suspended" | "elapsed"; wake_at as an ISO-8601 string.
Suspension sleep_until(pqxx::transaction_base& tx, const std::string& run_id,
                       const std::string& token, const std::string& step_name,
                       const std::string& wake_at);
// sleep for a duration measured on the database clock: wake_at = docket.now() + ms,
// recorded once (the step keeps the first wake time on replay).
Suspension sleep_for(pqxx::transaction_base& tx, const std::string& run_id,
                     const std::string& token, const std::string& step_name, std::int64_t ms);
Suspension await_event(pqxx::transaction_base& tx, const std::string& run_id,
                       const std::string& token, const std::string& step_name,
                       const std::string& event_name, std::optional<std::int64_t> timeout_ms);
Suspension await_task(pqxx::transaction_base& tx, const std::string& run_id,
                      const std::string& token, const std::string& step_name,
                      const std::string& child_run_id);
void complete_task(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token,
                   const Json& result);
struct FailOutcome {
  std::string disposition;  // retry_scheduled | failed | cancelled
  std::optional<std::string> retry_at;
};
// retry = false: failed for good, whatever attempts remain.
FailOutcome fail_task(pqxx::transaction_base& tx, const std::string& run_id,
                      const std::string& token, const Json& error, bool retry = true);
std::string defer_task(pqxx::transaction_base& tx, const std::string& run_id,
                       const std::string& token);
void release_claim(pqxx::transaction_base& tx, const std::string& run_id, const std::string& token);
// Hands back a claim whose task never started (a prefetched claim): due again at
// once, the claim attempt handed back, never poisoning (abandon_claim).
// Returns rescheduled or stale.
std::string abandon_unstarted_claim(pqxx::transaction_base& tx, const std::string& run_id,
                                    const std::string& token, std::int64_t checkpoint_seq);

}  // namespace docket::sql

#include "docket/sql_inl.hpp"
