// bulk_insert: see bulk_insert.hpp. Modelled on COPY FROM's multi-insert
// buffer (src/backend/commands/copyfrom.c): the same executor state, range
// table, permission check, constraint check, table_multi_insert and index
// insertion, without the parsing, partitions, triggers and foreign tables COPY
// also handles.
#include "pg/bulk_insert.hpp"

#include <algorithm>

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/makefuncs.h"
#include "utils/rel.h"
}

#include "pg/boundary.hpp"
#include "pg/catalog.hpp"

namespace docket::pg {

namespace {

// Rows per table_multi_insert, as COPY's buffer holds at most.
constexpr std::size_t kBulkBatch = 1000;

// True when an INSERT statement into rel would do more than check and store
// the rows given: fire a trigger, apply row security, or compute a value for a
// column the rows leave unset (a default, an identity, a generated column).
bool needs_statement(Relation rel, const bool* set) {
  const TriggerDesc* triggers = rel->trigdesc;
  if (triggers != nullptr &&
      (triggers->trig_insert_before_row || triggers->trig_insert_after_row ||
       triggers->trig_insert_instead_row || triggers->trig_insert_before_statement ||
       triggers->trig_insert_after_statement || triggers->trig_insert_new_table))
    return true;
  if (rel->rd_rel->relrowsecurity) return true;
  const TupleDesc desc = RelationGetDescr(rel);
  for (int i = 0; i < desc->natts; ++i) {
    const Form_pg_attribute attr = TupleDescAttr(desc, i);
    if (attr->attisdropped || set[i]) continue;
    if (attr->atthasdef || attr->attidentity != '\0' || attr->attgenerated != '\0') return true;
  }
  return false;
}

}  // namespace

bool bulk_insert(const char* table, const std::vector<BulkColumn>& columns, std::size_t count) {
  const BulkColumn* cols = columns.data();
  const int ncols = static_cast<int>(columns.size());
  // PostgreSQL calls only from here on (pg::call): plain loops over the
  // caller's columns, no C++ object is made.
  return call([&]() -> bool {
    const Oid relid = docket_table(table);
    Relation rel = table_open(relid, RowExclusiveLock);
    const TupleDesc desc = RelationGetDescr(rel);
    auto* attno = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * (ncols > 0 ? ncols : 1)));
    auto* set = static_cast<bool*>(palloc0(sizeof(bool) * (desc->natts > 0 ? desc->natts : 1)));
    for (int c = 0; c < ncols; ++c) {
      attno[c] = get_attnum(relid, cols[c].name);
      if (attno[c] <= 0 || attno[c] > desc->natts)
        elog(ERROR, "docket: docket.%s has no column %s", table, cols[c].name);
      set[attno[c] - 1] = true;
    }
    if (needs_statement(rel, set)) {
      table_close(rel, NoLock);
      return false;
    }

    // What the executor would set up for INSERT INTO docket.<table> (cols).
    RangeTblEntry* rte = makeNode(RangeTblEntry);
    rte->rtekind = RTE_RELATION;
    rte->relid = relid;
    rte->relkind = rel->rd_rel->relkind;
    rte->rellockmode = RowExclusiveLock;
    rte->requiredPerms = ACL_INSERT;
    for (int c = 0; c < ncols; ++c)
      rte->insertedCols =
          bms_add_member(rte->insertedCols, attno[c] - FirstLowInvalidHeapAttributeNumber);
    List* range_table = list_make1(rte);
    ExecCheckRTPerms(range_table, true);
    EState* estate = CreateExecutorState();
    ExecInitRangeTable(estate, range_table);
    ResultRelInfo* info = makeNode(ResultRelInfo);
    ExecInitResultRelation(estate, info, 1);
    ExecOpenIndices(info, false);

    const bool constrained = desc->constr != nullptr;
    const CommandId cid = GetCurrentCommandId(true);
    const std::size_t batch = std::min(count, kBulkBatch);
    auto* slots =
        static_cast<TupleTableSlot**>(palloc(sizeof(TupleTableSlot*) * (batch > 0 ? batch : 1)));
    for (std::size_t i = 0; i < batch; ++i)
      slots[i] = table_slot_create(rel, &estate->es_tupleTable);
    ExprContext* per_row = GetPerTupleExprContext(estate);
    for (std::size_t done = 0; done < count;) {
      const std::size_t n = std::min(count - done, batch);
      for (std::size_t i = 0; i < n; ++i) {
        TupleTableSlot* slot = slots[i];
        ExecClearTuple(slot);
        for (int a = 0; a < desc->natts; ++a) {
          slot->tts_values[a] = Datum(0);
          slot->tts_isnull[a] = true;
        }
        for (int c = 0; c < ncols; ++c) {
          const int a = attno[c] - 1;
          if (cols[c].per_row != nullptr) {
            slot->tts_values[a] = cols[c].per_row[done + i];
            slot->tts_isnull[a] = false;
          } else {
            slot->tts_values[a] = cols[c].value;
            slot->tts_isnull[a] = cols[c].null;
          }
        }
        ExecStoreVirtualTuple(slot);
        if (constrained) ExecConstraints(info, slot, estate);  // NOT NULL and CHECK
        ResetExprContext(per_row);
      }
      // table_multi_insert leaks into the current context (COPY does the same).
      const MemoryContext outer = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
      table_multi_insert(rel, slots, static_cast<int>(n), cid, 0, nullptr);
      MemoryContextSwitchTo(outer);
      ResetExprContext(per_row);
      for (std::size_t i = 0; i < n; ++i) {
        if (info->ri_NumIndices > 0)
          list_free(ExecInsertIndexTuples(info, slots[i], estate, false, false, nullptr, NIL));
        ResetExprContext(per_row);
      }
      done += n;
    }
    ExecResetTupleTable(estate->es_tupleTable, false);
    ExecCloseResultRelations(estate);
    ExecCloseRangeTableRelations(estate);
    FreeExecutorState(estate);
    table_close(rel, NoLock);
    CommandCounterIncrement();  // the rows are the transaction's next command's to see
    return true;
  });
}

}  // namespace docket::pg
