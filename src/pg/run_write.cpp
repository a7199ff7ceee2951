// run_write: see run_write.hpp. Everything below the public function runs
// inside one pg::call: PostgreSQL code only, no C++ object with a destructor.
#include "pg/run_write.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/run.hpp"

namespace docket::pg {

namespace {

// The columns read or written, and the type each must have.
enum Column {
  c_run_id,
  c_tenant_id,
  c_queue,
  c_graph_id,
  c_graph_hash,
  c_status,
  c_checkpoint_seq,
  c_checkpoint_type,
  c_started_at,
  c_updated_at,
  c_document,
  c_wake_at,
  c_claim_token,
  c_claimed_at,
  c_claim_attempts,
  c_claim_abandons,
  c_poisoned_at,
  c_poison_reason,
  c_count
};

struct ColumnSpec {
  const char* name;
  Oid type;  // InvalidOid: checked by name only (the enum)
  bool written;
};

const ColumnSpec kColumns[c_count] = {
    {"run_id", TEXTOID, false},
    {"tenant_id", TEXTOID, false},
    {"queue", TEXTOID, false},
    {"graph_id", TEXTOID, false},
    {"graph_hash", TEXTOID, false},
    {"status", TEXTOID, true},
    {"checkpoint_seq", INT8OID, true},
    {"checkpoint_type", InvalidOid, true},
    {"started_at", TIMESTAMPTZOID, false},
    {"updated_at", TIMESTAMPTZOID, true},
    {"document", JSONBOID, true},
    {"wake_at", TIMESTAMPTZOID, true},
    {"claim_token", UUIDOID, true},
    {"claimed_at", TIMESTAMPTZOID, true},
    {"claim_attempts", INT4OID, true},
    {"claim_abandons", INT4OID, true},
    {"poisoned_at", TIMESTAMPTZOID, true},
    {"poison_reason", TEXTOID, true},
};

struct CachedIndex {
  Oid oid;
  IndexInfo* info;
  ExprState* predicate;  // nullptr: not partial
  bool unique;
  bool unchanged;  // no key column is written: the executor's indexUnchanged hint
};

// Per backend. `valid` is cleared by a relcache invalidation of the table (or
// of everything); the next call rebuilds it.
struct Cache {
  bool valid = false;
  bool usable = false;
  Oid relid = InvalidOid;
  MemoryContext context = nullptr;
  AttrNumber attnum[c_count] = {};
  int nindexes = 0;
  CachedIndex* indexes = nullptr;
  Oid pkey = InvalidOid;
  Oid pkey_collation = InvalidOid;
  bool callback_registered = false;
};

Cache cache;

void invalidate(Datum /*arg*/, Oid relid) {
  if (relid == InvalidOid || relid == cache.relid) {
    cache.valid = false;
    return;
  }
  for (int i = 0; i < cache.nindexes; ++i)
    if (cache.indexes[i].oid == relid) cache.valid = false;
}

Oid runs_relid() {
  const Oid schema = get_namespace_oid("docket", false);
  const Oid relid = get_relname_relid("runs", schema);
  if (!OidIsValid(relid)) elog(ERROR, "docket: table docket.runs not found");
  return relid;
}

AttrNumber find_column(Relation rel, const ColumnSpec& spec) {
  const TupleDesc desc = RelationGetDescr(rel);
  for (int i = 0; i < desc->natts; ++i) {
    const Form_pg_attribute attr = TupleDescAttr(desc, i);
    if (attr->attisdropped || strcmp(NameStr(attr->attname), spec.name) != 0) continue;
    if (OidIsValid(spec.type) && attr->atttypid != spec.type) return InvalidAttrNumber;
    return attr->attnum;
  }
  return InvalidAttrNumber;
}

bool column_written(AttrNumber attnum) {
  for (int c = 0; c < c_count; ++c)
    if (kColumns[c].written && cache.attnum[c] == attnum) return true;
  return false;
}

// Whether the table has anything an UPDATE statement would do besides
// writing the row and its index entries and checking its constraints.
bool plain_table(Relation rel) {
  if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relrowsecurity ||
      rel->rd_rel->relhassubclass || rel->rd_rules != nullptr)
    return false;
  if (rel->trigdesc != nullptr) {
    for (int i = 0; i < rel->trigdesc->numtriggers; ++i) {
      const Trigger& trigger = rel->trigdesc->triggers[i];
      if (TRIGGER_FOR_UPDATE(trigger.tgtype) &&
          RI_FKey_trigger_type(trigger.tgfoid) != RI_TRIGGER_PK)
        return false;
    }
  }
  // The one CHECK constraint is the row rules this path checks itself.
  const TupleConstr* constr = RelationGetDescr(rel)->constr;
  if (constr != nullptr && constr->num_check > 0) {
    if (constr->num_check != 1 || strcmp(constr->check[0].ccname, "runs_row_valid") != 0)
      return false;
  }
  return true;
}

void build(Relation rel) {
  cache.valid = false;
  if (cache.context != nullptr) MemoryContextDelete(cache.context);
  cache.context = nullptr;
  cache.indexes = nullptr;
  cache.nindexes = 0;
  cache.pkey = InvalidOid;
  cache.context =
      AllocSetContextCreate(CacheMemoryContext, "docket run_write", ALLOCSET_SMALL_SIZES);
  const MemoryContext old = MemoryContextSwitchTo(cache.context);

  bool usable = plain_table(rel);
  for (int c = 0; c < c_count; ++c) {
    cache.attnum[c] = find_column(rel, kColumns[c]);
    if (cache.attnum[c] == InvalidAttrNumber) usable = false;
  }

  List* oids = RelationGetIndexList(rel);
  cache.indexes = static_cast<CachedIndex*>(palloc0(sizeof(CachedIndex) * (list_length(oids) + 1)));
  ListCell* cell = nullptr;
  foreach (cell, oids) {
    const Oid oid = lfirst_oid(cell);
    Relation index = index_open(oid, RowExclusiveLock);
    IndexInfo* info = BuildIndexInfo(index);
    CachedIndex& entry = cache.indexes[cache.nindexes++];
    entry.oid = oid;
    entry.info = info;
    entry.unique = index->rd_index->indisunique;
    if (info->ii_Expressions != NIL || info->ii_ExclusionOps != nullptr ||
        (entry.unique && !index->rd_index->indimmediate))
      usable = false;
    entry.predicate = info->ii_Predicate == NIL
                          ? nullptr
                          : ExecInitQual(reinterpret_cast<List*>(expression_planner(
                                             reinterpret_cast<Expr*>(info->ii_Predicate))),
                                         nullptr);
    entry.unchanged = true;
    for (int k = 0; k < info->ii_NumIndexAttrs; ++k)
      if (column_written(info->ii_IndexAttrNumbers[k])) entry.unchanged = false;
    if (index->rd_index->indisprimary) {
      if (info->ii_NumIndexKeyAttrs == 1 &&
          info->ii_IndexAttrNumbers[0] == cache.attnum[c_run_id]) {
        cache.pkey = oid;
        cache.pkey_collation = index->rd_indcollation[0];
      }
    }
    index_close(index, NoLock);
  }
  if (!OidIsValid(cache.pkey)) usable = false;

  MemoryContextSwitchTo(old);
  cache.usable = usable;
  cache.valid = true;
}

// Opens docket.runs, its cache built for the definition now visible.
Relation open_runs() {
  if (!cache.callback_registered) {
    CacheRegisterRelcacheCallback(invalidate, PointerGetDatum(nullptr));
    cache.callback_registered = true;
  }
  if (!OidIsValid(cache.relid)) cache.relid = runs_relid();
  Relation rel = try_table_open(cache.relid, RowExclusiveLock);
  if (rel == nullptr) {  // dropped since: the extension was made again
    cache.valid = false;
    cache.relid = runs_relid();
    rel = table_open(cache.relid, RowExclusiveLock);
  }
  // The lock taken, every invalidation sent before it has been processed.
  if (!cache.valid) build(rel);
  return rel;
}

bool same_text(Datum stored, Datum given) {
  const text* a = DatumGetTextPP(stored);
  const text* b = DatumGetTextPP(given);
  return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
         memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

// commit_statement's WHERE clause, on the version found.
bool fence_holds(const Datum* v, const bool* n, const RunFence& fence) {
  auto at = [](Column c) { return cache.attnum[c] - 1; };
  if (n[at(c_run_id)] || !same_text(v[at(c_run_id)], fence.run_id)) return false;
  if (!fence.any_tenant) {
    const bool stored_null = n[at(c_tenant_id)];
    if (stored_null != fence.tenant_null) return false;
    if (!stored_null && !same_text(v[at(c_tenant_id)], fence.tenant)) return false;
  }
  if (n[at(c_checkpoint_seq)] || DatumGetInt64(v[at(c_checkpoint_seq)]) != fence.checkpoint_seq)
    return false;
  if (n[at(c_claim_token)] || memcmp(DatumGetUUIDP(v[at(c_claim_token)])->data,
                                     DatumGetUUIDP(fence.claim_token)->data, UUID_LEN) != 0)
    return false;
  if (n[at(c_graph_id)] || !same_text(v[at(c_graph_id)], fence.graph_id)) return false;
  if (n[at(c_graph_hash)] || !same_text(v[at(c_graph_hash)], fence.graph_hash)) return false;
  return !n[at(c_started_at)] && DatumGetTimestampTz(v[at(c_started_at)]) == fence.started_at;
}

// The new version's columns, over a copy of the old ones.
void set_commit_values(Datum* v, bool* n, const RunCommitValues& values) {
  auto set = [&](Column c, Datum value, bool null) {
    v[cache.attnum[c] - 1] = value;
    n[cache.attnum[c] - 1] = null;
  };
  set(c_document, values.document, false);
  set(c_status, values.status, false);
  set(c_checkpoint_seq, Int64GetDatum(values.checkpoint_seq), false);
  set(c_checkpoint_type, values.checkpoint_type, false);
  set(c_updated_at, TimestampTzGetDatum(values.updated_at), false);
  if (values.keep_claim) {
    // greatest(claimed_at, $8): NULLs ignored, as greatest() does.
    const int at = cache.attnum[c_claimed_at] - 1;
    if (values.has_claimed_at && (n[at] || DatumGetTimestampTz(v[at]) < values.claimed_at))
      set(c_claimed_at, TimestampTzGetDatum(values.claimed_at), false);
  } else {
    set(c_claim_token, 0, true);
    set(c_claimed_at, 0, true);
  }
  set(c_wake_at, TimestampTzGetDatum(values.wake_at), !values.has_wake_at);
  set(c_claim_attempts, Int32GetDatum(0), false);
  set(c_claim_abandons, Int32GetDatum(0), false);
  set(c_poisoned_at, 0, true);
  set(c_poison_reason, 0, true);
}

// The constraints the executor checks on an updated row: NOT NULLs, then the
// CHECK, with the executor's SQLSTATEs and messages.
void check_row(Relation rel, const Datum* v, const bool* n) {
  const TupleDesc desc = RelationGetDescr(rel);
  for (int i = 0; i < desc->natts; ++i) {
    const Form_pg_attribute attr = TupleDescAttr(desc, i);
    if (attr->attnotnull && n[i])
      ereport(ERROR, (errcode(ERRCODE_NOT_NULL_VIOLATION),
                      errmsg("null value in column \"%s\" of relation \"%s\" violates not-null "
                             "constraint",
                             NameStr(attr->attname), RelationGetRelationName(rel))));
  }
  auto at = [](Column c) { return cache.attnum[c] - 1; };
  auto count = [&](Column c, bool wide) -> std::optional<std::int64_t> {
    if (n[at(c)]) return std::nullopt;
    return wide ? DatumGetInt64(v[at(c)]) : DatumGetInt32(v[at(c)]);
  };
  RunRowFacts row;
  if (!n[at(c_status)]) {
    const text* status = DatumGetTextPP(v[at(c_status)]);
    row.status_known =
        parse_status(std::string_view(VARDATA_ANY(status), VARSIZE_ANY_EXHDR(status))).has_value();
  }
  row.checkpoint_seq = count(c_checkpoint_seq, true);
  row.claim_attempts = count(c_claim_attempts, false);
  row.claim_abandons = count(c_claim_abandons, false);
  row.has_claim_token = !n[at(c_claim_token)];
  row.has_claimed_at = !n[at(c_claimed_at)];
  row.has_poisoned_at = !n[at(c_poisoned_at)];
  row.has_poison_reason = !n[at(c_poison_reason)];
  if (!run_row_rules_hold(row))
    ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION),
                    errmsg("new row for relation \"%s\" violates check constraint \"%s\"",
                           RelationGetRelationName(rel), "runs_row_valid")));
}

// The new version's index entries (a non-HOT update), in the order
// RelationGetIndexList gave: each partial index only when its predicate holds
// on the new version, as ExecInsertIndexTuples does.
void insert_index_entries(Relation rel, TupleTableSlot* slot) {
  ExprContext* econtext = CreateStandaloneExprContext();
  econtext->ecxt_scantuple = slot;
  for (int i = 0; i < cache.nindexes; ++i) {
    const CachedIndex& entry = cache.indexes[i];
    if (!entry.info->ii_ReadyForInserts) continue;
    if (entry.predicate != nullptr && !ExecQual(entry.predicate, econtext)) {
      ResetExprContext(econtext);
      continue;
    }
    ResetExprContext(econtext);
    Relation index = index_open(entry.oid, RowExclusiveLock);
    Datum values[INDEX_MAX_KEYS];
    bool nulls[INDEX_MAX_KEYS];
    FormIndexDatum(entry.info, slot, nullptr, values, nulls);
    index_insert(index, values, nulls, &slot->tts_tid, rel,
                 entry.unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO, entry.unchanged, entry.info);
    index_close(index, NoLock);
  }
  FreeExprContext(econtext, true);
}

RowWrite write_commit_pg(const RunFence& fence, const RunCommitValues& values, Datum* queue) {
  Relation rel = open_runs();
  if (!cache.usable ||
      pg_class_aclcheck(cache.relid, GetUserId(), ACL_SELECT | ACL_UPDATE) != ACLCHECK_OK) {
    table_close(rel, NoLock);
    return RowWrite::use_statement;
  }
  CheckCmdReplicaIdentity(rel, CMD_UPDATE);

  // As SPI does before each statement that writes: what this transaction did
  // so far is visible, in a snapshot taken now.
  CommandCounterIncrement();
  PushActiveSnapshot(GetTransactionSnapshot());
  const Snapshot snapshot = GetActiveSnapshot();

  Relation pkey = index_open(cache.pkey, RowExclusiveLock);
  ScanKeyData key;
  ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid, cache.pkey_collation,
                         F_TEXTEQ, fence.run_id);
  IndexScanDesc scan = index_beginscan(rel, pkey, snapshot, 1, 0);
  index_rescan(scan, &key, 1, nullptr, 0);
  TupleTableSlot* old_slot = table_slot_create(rel, nullptr);
  const bool found = index_getnext_slot(scan, ForwardScanDirection, old_slot);
  index_endscan(scan);
  index_close(pkey, NoLock);

  RowWrite outcome = RowWrite::no_match;
  if (found) {
    slot_getallattrs(old_slot);
    if (fence_holds(old_slot->tts_values, old_slot->tts_isnull, fence)) {
      const TupleDesc desc = RelationGetDescr(rel);
      TupleTableSlot* new_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
      ExecClearTuple(new_slot);
      memcpy(new_slot->tts_values, old_slot->tts_values, sizeof(Datum) * desc->natts);
      memcpy(new_slot->tts_isnull, old_slot->tts_isnull, sizeof(bool) * desc->natts);
      set_commit_values(new_slot->tts_values, new_slot->tts_isnull, values);
      check_row(rel, new_slot->tts_values, new_slot->tts_isnull);
      ExecStoreVirtualTuple(new_slot);

      TM_FailureData failure;
      LockTupleMode lock_mode;
      bool update_indexes = false;
      const TM_Result result =
          table_tuple_update(rel, &old_slot->tts_tid, new_slot, GetCurrentCommandId(true), snapshot,
                             InvalidSnapshot, true, &failure, &lock_mode, &update_indexes);
      switch (result) {
        case TM_Ok:
          if (update_indexes) insert_index_entries(rel, new_slot);
          *queue = datumCopy(old_slot->tts_values[cache.attnum[c_queue] - 1], false, -1);
          outcome = RowWrite::applied;
          break;
        case TM_SelfModified:
        case TM_Updated:
        case TM_Deleted:
          // Changed since the snapshot: the statement's re-check decides.
          outcome = RowWrite::use_statement;
          break;
        default:
          elog(ERROR, "docket: unexpected result %d updating a run", static_cast<int>(result));
      }
      ExecDropSingleTupleTableSlot(new_slot);
    }
  }
  ExecDropSingleTupleTableSlot(old_slot);
  PopActiveSnapshot();
  table_close(rel, NoLock);
  return outcome;
}

}  // namespace

RowWrite write_commit(const RunFence& fence, const RunCommitValues& values, Datum* queue) {
  return call([&] { return write_commit_pg(fence, values, queue); });
}

}  // namespace docket::pg
