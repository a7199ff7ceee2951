// catalog: docket's own tables, found by name in schema docket.
#pragma once

#include "pg/postgres.hpp"

namespace docket::pg {

// The oid of table docket.`name`. missing_ok: InvalidOid when the schema or
// the table is missing; otherwise that is an ERROR naming the table.
// PostgreSQL code: call it inside a pg::call.
Oid docket_table(const char* name, bool missing_ok = false);

}  // namespace docket::pg
