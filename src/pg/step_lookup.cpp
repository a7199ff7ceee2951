// step_lookup: see step_lookup.hpp. Everything in the anonymous namespace
// runs inside the one pg::call of lookup_steps: PostgreSQL code only, no C++
// object with a destructor.
#include "pg/step_lookup.hpp"

#include <utility>

#include "pg/direct_read.hpp"

namespace docket::pg {

namespace {

// The table, its primary key (run_id, step_name) and the value's column, or
// nullptr when this path does not apply.
struct StepsTable {
  Relation rel = nullptr;
  Relation pkey = nullptr;
  AttrNumber value_attnum = InvalidAttrNumber;
};

StepsTable open_steps() {
  StepsTable t;
  Relation rel = open_for_direct_read("task_steps");
  if (rel == nullptr) return t;
  if (!OidIsValid(RelationGetPrimaryKeyIndex(rel))) {
    table_close(rel, AccessShareLock);
    return t;
  }
  Relation pkey = index_open(RelationGetPrimaryKeyIndex(rel), AccessShareLock);
  const AttrNumber run_id = column_of_type(rel, "run_id", TEXTOID);
  const AttrNumber step_name = column_of_type(rel, "step_name", TEXTOID);
  t.value_attnum = column_of_type(rel, "value", JSONBOID);
  const Form_pg_index index = pkey->rd_index;
  if (run_id == InvalidAttrNumber || step_name == InvalidAttrNumber ||
      t.value_attnum == InvalidAttrNumber || index->indnkeyatts != 2 ||
      index->indkey.values[0] != run_id || index->indkey.values[1] != step_name) {
    index_close(pkey, AccessShareLock);
    table_close(rel, AccessShareLock);
    return StepsTable{};
  }
  t.rel = rel;
  t.pkey = pkey;
  return t;
}

bool lookup_steps_pg(const Datum* ids, const Datum* names, int n, StoredStep* out, Snapshot* kept) {
  StepsTable t = open_steps();
  if (t.rel == nullptr) return false;
  // As SPI before a statement: this transaction's earlier commands visible,
  // in a snapshot taken now.
  CommandCounterIncrement();
  PushActiveSnapshot(GetTransactionSnapshot());
  IndexScanDesc scan = index_beginscan(t.rel, t.pkey, GetActiveSnapshot(), 2, 0);
  TupleTableSlot* slot = table_slot_create(t.rel, nullptr);
  const Form_pg_attribute value_attr = TupleDescAttr(RelationGetDescr(t.rel), t.value_attnum - 1);
  for (int i = 0; i < n; ++i) {
    ScanKeyData keys[2];
    ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
                           t.pkey->rd_indcollation[0], F_TEXTEQ, ids[i]);
    ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
                           t.pkey->rd_indcollation[1], F_TEXTEQ, names[i]);
    index_rescan(scan, keys, 2, nullptr, 0);
    if (!index_getnext_slot(scan, ForwardScanDirection, slot)) continue;
    bool isnull = false;
    const Datum value = slot_getattr(slot, t.value_attnum, &isnull);
    out[i].stored = true;
    out[i].value_null = isnull;
    if (!isnull) out[i].value = datumCopy(value, value_attr->attbyval, value_attr->attlen);
    ExecClearTuple(slot);
  }
  ExecDropSingleTupleTableSlot(slot);
  index_endscan(scan);
  if (kept != nullptr) *kept = RegisterSnapshot(GetActiveSnapshot());
  PopActiveSnapshot();
  index_close(t.pkey, AccessShareLock);
  table_close(t.rel, AccessShareLock);
  return true;
}

}  // namespace

bool lookup_steps(const Datum* ids, const Datum* names, int n, std::vector<StoredStep>& out,
                  Snapshot* kept) {
  std::vector<StoredStep> found(n);
  if (!call([&] { return lookup_steps_pg(ids, names, n, found.data(), kept); })) return false;
  out = std::move(found);
  return true;
}

}  // namespace docket::pg
