// wait_probe: see wait_probe.hpp. Everything in the anonymous namespace runs
// inside the one pg::call of waiters_may_exist: PostgreSQL code only, no C++
// object with a destructor.
#include "pg/wait_probe.hpp"

#include <cstring>

#include "pg/boundary.hpp"
#include "pg/direct_read.hpp"

namespace docket::pg {

namespace {

// Whether `predicate` (an index's, implicit AND) is exactly `column = 'value'`
// on text.
bool predicate_is(List* predicate, AttrNumber column, const char* value) {
  if (list_length(predicate) != 1 || !IsA(linitial(predicate), OpExpr)) return false;
  const OpExpr* op = static_cast<OpExpr*>(linitial(predicate));
  if (op->opno != TextEqualOperator || list_length(op->args) != 2) return false;
  const Node* left = static_cast<Node*>(linitial(op->args));
  const Node* right = static_cast<Node*>(lsecond(op->args));
  if (!IsA(left, Var) || !IsA(right, Const)) return false;
  const Var* var = reinterpret_cast<const Var*>(left);
  const Const* constant = reinterpret_cast<const Const*>(right);
  if (var->varattno != column || constant->constisnull || constant->consttype != TEXTOID)
    return false;
  const text* t = DatumGetTextPP(constant->constvalue);
  return VARSIZE_ANY_EXHDR(t) == strlen(value) &&
         memcmp(VARDATA_ANY(t), value, VARSIZE_ANY_EXHDR(t)) == 0;
}

// Opens index `name` of `rel` (AccessShareLock) when it is a valid btree
// whose first column is `column`, with `kind_column = 'child'` as its
// predicate when `kind_column` is given and none otherwise; nullptr when not.
Relation open_probe_index(Relation rel, const char* name, AttrNumber column,
                          AttrNumber kind_column) {
  const Oid oid = get_relname_relid(name, RelationGetNamespace(rel));
  if (!OidIsValid(oid)) return nullptr;
  Relation index = index_open(oid, AccessShareLock);
  const Form_pg_index form = index->rd_index;
  List* predicate = RelationGetIndexPredicate(index);
  const bool usable =
      form->indrelid == RelationGetRelid(rel) && form->indisvalid &&
      index->rd_rel->relam == BTREE_AM_OID && form->indnkeyatts >= 1 &&
      form->indkey.values[0] == column &&
      (kind_column == InvalidAttrNumber ? predicate == NIL
                                        : predicate_is(predicate, kind_column, "child"));
  if (!usable) {
    index_close(index, AccessShareLock);
    return nullptr;
  }
  return index;
}

// Whether the btree's metapage names a root page: an index without one has
// never held an entry (the first insertion makes the root before it writes).
bool has_root(Relation index) {
  const Buffer buffer = ReadBuffer(index, BTREE_METAPAGE);
  LockBuffer(buffer, BUFFER_LOCK_SHARE);
  const BTMetaPageData* meta = BTPageGetMeta(BufferGetPage(buffer));
  const bool root = meta->btm_magic != BTREE_MAGIC || meta->btm_root != P_NONE;
  UnlockReleaseBuffer(buffer);
  return root;
}

// Whether any id of `ids` (n text datums) has a row visible through `index`
// (its first column equal to the id). An index without a root page, read
// after the snapshot was taken, holds no entry at all, and none of a
// transaction that committed before the snapshot: no probe is needed.
bool any_visible(Relation rel, Relation index, const Datum* ids, int n, TupleTableSlot* slot) {
  if (!has_root(index)) return false;
  IndexScanDesc scan = index_beginscan(rel, index, GetActiveSnapshot(), 1, 0);
  bool found = false;
  for (int i = 0; i < n && !found; ++i) {
    ScanKeyData key;
    ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid, index->rd_indcollation[0],
                           F_TEXTEQ, ids[i]);
    index_rescan(scan, &key, 1, nullptr, 0);
    found = index_getnext_slot(scan, ForwardScanDirection, slot);
    ExecClearTuple(slot);
  }
  index_endscan(scan);
  return found;
}

bool waiters_may_exist_pg(const std::vector<std::string>& run_ids) {
  Relation rel = open_for_direct_read("task_waits");
  if (rel == nullptr) return true;
  const AttrNumber run_id = column_of_type(rel, "run_id", TEXTOID);
  const AttrNumber target = column_of_type(rel, "target", TEXTOID);
  const AttrNumber kind = column_of_type(rel, "kind", TEXTOID);
  Relation own = run_id == InvalidAttrNumber
                     ? nullptr
                     : open_probe_index(rel, "task_waits_pkey", run_id, InvalidAttrNumber);
  Relation child = target == InvalidAttrNumber || kind == InvalidAttrNumber
                       ? nullptr
                       : open_probe_index(rel, "task_waits_child", target, kind);
  bool may = true;
  if (own != nullptr && child != nullptr) {
    const int n = static_cast<int>(run_ids.size());
    Datum* ids = static_cast<Datum*>(palloc(sizeof(Datum) * (n + 1)));
    for (int i = 0; i < n; ++i)
      ids[i] = PointerGetDatum(
          cstring_to_text_with_len(run_ids[i].data(), static_cast<int>(run_ids[i].size())));
    // As SPI before a statement: this transaction's earlier commands visible,
    // in a snapshot taken now.
    CommandCounterIncrement();
    PushActiveSnapshot(GetTransactionSnapshot());
    TupleTableSlot* slot = table_slot_create(rel, nullptr);
    may = any_visible(rel, own, ids, n, slot) || any_visible(rel, child, ids, n, slot);
    ExecDropSingleTupleTableSlot(slot);
    PopActiveSnapshot();
  }
  if (own != nullptr) index_close(own, AccessShareLock);
  if (child != nullptr) index_close(child, AccessShareLock);
  table_close(rel, AccessShareLock);
  return may;
}

}  // namespace

bool waiters_may_exist(const std::vector<std::string>& run_ids) {
  return call([&] { return waiters_may_exist_pg(run_ids); });
}

}  // namespace docket::pg
