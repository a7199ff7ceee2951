// What the task layer's entry points share: the fenced transition of a task's
// run (the fast path), the locked look at a missed row for the core's fence,
// finishing a task (its waiters and the parents awaiting it), and array and
// JSON plumbing. Every function needs an open SPI connection.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/task.hpp"
#include "pg/boundary.hpp"
#include "pg/history.hpp"

namespace docket::pg {

// The elements of a one-dimensional array argument (palloc'd; NULL array: n = -1).
struct DatumArray {
  int n = -1;
  Datum* values = nullptr;
  bool* nulls = nullptr;
};
DatumArray array_arg(FunctionCallInfo fcinfo, int index, Oid element_type);
Datum make_array(const Datum* values, const bool* nulls, int n, Oid element_type);

// The run row as the fence sees it, locked FOR UPDATE (nullopt: no run).
std::optional<TaskFacts> lock_task(Datum run_id);

// The rows of `run_ids` (a text[]) as the fence sees them, without a lock:
// stale, cancelled and not_found never change back for a given token, so
// they are judged from the committed row; a row judged held or overdue must
// be locked before anything is done with it.
std::vector<std::pair<std::string, TaskFacts>> read_tasks(Datum run_ids);

// The rows of `run_ids` (a text[]) as the fence sees them, locked FOR UPDATE
// in run_id order: a batch's misses that must be judged under their lock.
std::vector<std::pair<std::string, TaskFacts>> lock_tasks(Datum run_ids);

// Raises the core's verdict for `run_id` after a missed fast path, judged
// under the row's lock; returns normally when the row is held after all.
void judge_locked(Datum run_id, const Token& token, Micros now, bool allow_overdue);

// The fenced fast path of every task transition but complete: one UPDATE
// matching TaskMatch's facts that writes the next version ((document -
// 'waiting') || changes || {status, checkpoint_seq}), hands the claim back
// and numbers `events`, which then go to the task's history. False when no
// row matched (nothing recorded). Notifies when the task became due now.
bool apply_task_transition(Datum run_id, Datum token, Datum changes,
                           const TaskTransition& transition, Micros now, bool allow_overdue,
                           const std::vector<TaskEvent>& events);

// After tasks finished (completed, failed or cancelled): deletes their own
// waiter rows and the waiter rows of parents awaiting them, and resumes those
// parents (child before parent: the documented lock order).
void release_finished(const std::vector<std::string>& run_ids);

// Cancels a task whose claim `token` holds (past a deadline), recording
// `reason`, and releases it as finished.
void cancel_held(Datum run_id, Datum token, const char* reason, Micros now);

// A jsonb object of (key, JSON text) pairs.
Datum json_object(const std::vector<std::pair<const char*, std::string>>& members);
// JSON text of a string and of a jsonb datum.
std::string json_string(const std::string& text);
std::string json_text(Datum jsonb);

// Optional timestamp from SPI row `row`, column `column`.
std::optional<Micros> spi_timestamp(std::uint64_t row, int column);

}  // namespace docket::pg
