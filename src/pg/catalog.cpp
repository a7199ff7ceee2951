#include "pg/catalog.hpp"

namespace docket::pg {

Oid docket_table(const char* name, bool missing_ok) {
  const Oid schema = get_namespace_oid("docket", missing_ok);
  const Oid relid = OidIsValid(schema) ? get_relname_relid(name, schema) : InvalidOid;
  if (!OidIsValid(relid) && !missing_ok) elog(ERROR, "docket: table docket.%s is missing", name);
  return relid;
}

}  // namespace docket::pg
