// step_lookup: which (run id, step name) pairs docket.task_steps holds, and
// their values, read through its primary key with the index access method
// instead of a SELECT statement.
//
// A step checkpoint looks its items up twice (which are stored before the
// claim refresh, which are stored under the refreshed rows' locks) and once
// more for the values of kept steps. As a statement, each look cost about
// 12,500 instructions per item, most of it the executor's per-row work around
// one index probe (bench/README.md, "Eighteenth session").
//
// The lookup reads under a snapshot taken now, after the transaction's
// earlier commands, as a statement in SPI would: it finds what this
// transaction stored, and under read committed what others committed before
// it was called. It applies where a SELECT would do nothing more: the caller
// may select the table, which has no row security; docket.direct_writes is on
// (off, the statements run, for audit hooks). Otherwise the caller runs its
// statement.
#pragma once

#include <vector>

#include "pg/boundary.hpp"

namespace docket::pg {

// A pair's step: stored or not, and its value (jsonb; value_null when the
// stored value is SQL NULL), copied into the memory context current at the
// call.
struct StoredStep {
  bool stored = false;
  bool value_null = true;
  Datum value = Datum(0);
};
// Fills out[i] for each of the n pairs (ids[i], names[i], text datums).
// False, with `out` untouched, when this path does not apply. With `kept`,
// the snapshot the lookup read under is registered and returned there (the
// caller unregisters it), for a write that must see no later commit.
bool lookup_steps(const Datum* ids, const Datum* names, int n, std::vector<StoredStep>& out,
                  Snapshot* kept = nullptr);

}  // namespace docket::pg
