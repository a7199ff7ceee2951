// Plans of docket's statements never depend on how empty a table looked.
//
// A statement is prepared once per backend and its plan kept (spi.hpp); the
// plan is made at its first execution, with the statistics of that moment. A
// pool that starts against an empty database (or one whose tables were just
// analyzed while empty) would keep plans that scan docket.runs and
// docket.task_steps sequentially, and every call would then read whole tables
// as they grow, until something invalidated the plan. Every statement docket
// runs is planned with sequential and bitmap scans off: the planner keeps the
// index paths the statements are written for (each hot one is pinned by a
// plans_*.sql or task_explain test), whatever the statistics say, and an
// index scan on a unique key reads an array condition's keys in order.
// A statement that joins a batch's arrays (unnest) to the rows they name
// (Statement::nested_loops: complete_tasks, complete_steps) is planned with
// hash and merge joins off too: it must stay a nested loop of index probes in
// the arrays' order, their lock order, never a pass over a whole index. Only
// planning is affected: executing a kept plan costs nothing more. (What a
// statement calls is planned under the same settings while it runs: the
// plpgsql bodies behind docket's guarded wrappers, a mutation function.)
//
// Switches alone do not cover a join: a table believed empty can be read
// whole through its index (a full index scan, materialized) as cheaply, on
// paper, as probed. So a statement that looks rows of another table up by
// the rows it already has writes the lookup as a scalar or a LATERAL ... LIMIT 1
// subquery, which the planner cannot turn into a join: it stays one
// parameterized index probe per row. pgTAP plans_empty_stats checks both.
#pragma once

namespace docket::pg {

// Installs the planner hook (from _PG_init, once).
void register_planner_hook();

// While one of these lives, statements planned in this backend are planned
// with sequential and bitmap scans off, and with hash and merge joins off too
// while one made with nested_loops lives (nesting is counted).
class IndexPlanning {
 public:
  explicit IndexPlanning(bool nested_loops = false) noexcept;
  ~IndexPlanning();
  IndexPlanning(const IndexPlanning&) = delete;
  IndexPlanning& operator=(const IndexPlanning&) = delete;

 private:
  bool nested_loops_;
};

}  // namespace docket::pg
