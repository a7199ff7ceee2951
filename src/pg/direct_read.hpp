// direct_read: a docket table opened to be read through the index access
// method instead of a SELECT statement (pg/step_lookup.hpp,
// pg/wait_probe.hpp).
#pragma once

#include "pg/postgres.hpp"

namespace docket::pg {

// docket.`table`, opened with AccessShareLock, when a read through its
// indexes does all that a SELECT would: docket.direct_writes is on (off, the
// statements run, for audit hooks), the caller may select the table, and it
// is a plain table without row security, rules or children. nullptr
// otherwise. PostgreSQL code: call it inside a pg::call.
Relation open_for_direct_read(const char* table);

// The number of column `name` of `rel` when it has type `type`;
// InvalidAttrNumber otherwise (missing, dropped, or of another type).
AttrNumber column_of_type(Relation rel, const char* name, Oid type);

}  // namespace docket::pg
