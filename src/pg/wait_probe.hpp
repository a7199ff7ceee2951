// wait_probe: whether docket.task_waits holds a row that the release of
// finished tasks (task_store.cpp's release_statement) would delete: one of
// the tasks' own waiter rows (task_waits_pkey, by run id) or a parent's wait
// for one of them (task_waits_child, by target), read through those indexes
// with the index access method.
//
// The release's DELETE of the two kinds cost 9,500 instructions per
// completed task as a statement, nearly always to delete nothing: few tasks
// wait, and fewer are awaited (bench/README.md, "Nineteenth session"). When
// no such row is visible under a snapshot taken now (after the transaction's
// earlier commands, as the statement's would be), the DELETE would delete
// nothing, and the caller skips it.
//
// It applies where reading the indexes is all the statement's search would
// do: the caller may select the table, a plain table without row security,
// rules or children; task_waits_pkey's first column is run_id and
// task_waits_child indexes target for exactly kind = 'child'; and
// docket.direct_writes is on. Otherwise it answers that rows may exist, and
// the caller runs the statement.
#pragma once

#include <string>
#include <vector>

namespace docket::pg {

// False only when no row of either kind is visible for any of `run_ids`.
bool waiters_may_exist(const std::vector<std::string>& run_ids);

}  // namespace docket::pg
