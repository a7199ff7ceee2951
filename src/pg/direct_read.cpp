// direct_read: see direct_read.hpp.
#include "pg/direct_read.hpp"

#include <cstring>

#include "pg/catalog.hpp"
#include "pg/settings.hpp"

namespace docket::pg {

Relation open_for_direct_read(const char* table) {
  if (!settings::direct_writes()) return nullptr;
  const Oid relid = docket_table(table, true);
  if (!OidIsValid(relid) || pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
    return nullptr;
  Relation rel = table_open(relid, AccessShareLock);
  if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relrowsecurity ||
      rel->rd_rel->relhassubclass || rel->rd_rules != nullptr) {
    table_close(rel, AccessShareLock);
    return nullptr;
  }
  return rel;
}

AttrNumber column_of_type(Relation rel, const char* name, Oid type) {
  const TupleDesc desc = RelationGetDescr(rel);
  for (int i = 0; i < desc->natts; ++i) {
    const Form_pg_attribute attr = TupleDescAttr(desc, i);
    if (!attr->attisdropped && strcmp(NameStr(attr->attname), name) == 0)
      return attr->atttypid == type ? attr->attnum : InvalidAttrNumber;
  }
  return InvalidAttrNumber;
}

}  // namespace docket::pg
