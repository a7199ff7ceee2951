// bulk_insert: rows written into one of docket's tables the way COPY FROM
// writes them: the heap tuples of up to kBulkBatch rows at a time with
// table_multi_insert (one WAL record per heap page instead of one per row),
// then each row's index entries, every NOT NULL and CHECK constraint of the
// table checked first. For a spawn's set-based path, whose INSERT ... SELECT
// spent its time on per-row executor work and per-row heap records rather than
// on anything the statement decided.
//
// Only plain rows take this path: a table with triggers on INSERT, row level
// security, or a default on a column the caller leaves unset is not written
// (false), and the caller runs its SQL statement instead, which does all that.
#pragma once

#include <cstddef>
#include <vector>

#include "pg/postgres.hpp"

namespace docket::pg {

// One column the rows set: the same value in every row, or one value per row.
struct BulkColumn {
  const char* name;
  Datum value = Datum(0);          // every row's, unless per_row is set
  bool null = false;               // every row's value is NULL
  const Datum* per_row = nullptr;  // count values, none NULL
};

// Inserts count rows into docket.<table>, setting the columns named (every
// other column NULL), visible to the transaction's next command. False, and
// nothing written, when the table needs what only an INSERT statement does
// (see above). Raises what the INSERT would (23502, 23505, 23514, ...).
bool bulk_insert(const char* table, const std::vector<BulkColumn>& columns, std::size_t count);

}  // namespace docket::pg
