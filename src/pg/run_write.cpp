// run_write: see run_write.hpp. Everything in the anonymous namespace runs
// inside the one pg::call of an entry point at the end of this file:
// PostgreSQL code only, no C++ object with a destructor.
#include "pg/run_write.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/run.hpp"
#include "pg/catalog.hpp"
#include "pg/settings.hpp"

namespace docket::pg {

namespace {

// The writes this file makes: a commit's, a claim's lease, a step
// checkpoint's claim refresh and a task's completion.
enum Write { w_commit, w_lease, w_step, w_complete, w_count };
constexpr unsigned kByCommit = 1u << w_commit;
constexpr unsigned kByLease = 1u << w_lease;
constexpr unsigned kByStep = 1u << w_step;
constexpr unsigned kByComplete = 1u << w_complete;

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
  c_claim_started_at,
  c_claim_renewed_at,
  c_lease_ms,
  c_claimed_seq,
  c_claimed_attempt,
  c_deadline_at,
  c_event_seq,
  c_completed_seq,
  c_completed_at,
  c_count
};

struct ColumnSpec {
  const char* name;
  Oid type;          // InvalidOid: checked by name only (the enum)
  unsigned written;  // by which writes (kByCommit, kByLease, kByStep, kByComplete)
};

const ColumnSpec kColumns[c_count] = {
    {"run_id", TEXTOID, 0},
    {"tenant_id", TEXTOID, 0},
    {"queue", TEXTOID, 0},
    {"graph_id", TEXTOID, 0},
    {"graph_hash", TEXTOID, 0},
    {"status", TEXTOID, kByCommit | kByComplete},
    {"checkpoint_seq", INT8OID, kByCommit | kByComplete},
    {"checkpoint_type", InvalidOid, kByCommit | kByComplete},
    {"started_at", TIMESTAMPTZOID, 0},
    {"updated_at", TIMESTAMPTZOID, kByCommit | kByComplete},
    {"document", JSONBOID, kByCommit | kByComplete},
    {"wake_at", TIMESTAMPTZOID, kByCommit | kByLease | kByComplete},
    {"claim_token", UUIDOID, kByCommit | kByLease | kByComplete},
    {"claimed_at", TIMESTAMPTZOID, kByCommit | kByLease | kByStep | kByComplete},
    {"claim_attempts", INT4OID, kByCommit | kByLease | kByStep | kByComplete},
    {"claim_abandons", INT4OID, kByCommit | kByComplete},
    {"poisoned_at", TIMESTAMPTZOID, kByCommit | kByComplete},
    {"poison_reason", TEXTOID, kByCommit | kByComplete},
    {"claim_started_at", TIMESTAMPTZOID, kByLease},
    {"claim_renewed_at", TIMESTAMPTZOID, kByLease | kByStep},
    {"lease_ms", INT8OID, kByLease},
    {"claimed_seq", INT8OID, kByLease},
    {"claimed_attempt", INT4OID, kByLease},
    {"deadline_at", TIMESTAMPTZOID, 0},
    {"event_seq", INT8OID, kByLease | kByStep | kByComplete},
    {"completed_seq", INT8OID, kByComplete},
    {"completed_at", TIMESTAMPTZOID, kByComplete},
};

struct CachedIndex {
  Oid oid;
  IndexInfo* info;
  ExprState* predicate;  // nullptr: not partial
  bool unique;
  // Per write: none of its key columns is written (the executor's
  // indexUnchanged hint, which lets btree delete older versions bottom-up).
  bool unchanged[w_count];
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

bool column_written(AttrNumber attnum, Write write) {
  for (int c = 0; c < c_count; ++c)
    if ((kColumns[c].written & (1u << write)) != 0 && cache.attnum[c] == attnum) return true;
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

  // (The name too: an invalidation processed as the lock was taken may have
  // been the table's drop, its number then another table's.)
  bool usable = strcmp(RelationGetRelationName(rel), "runs") == 0 &&
                get_namespace_oid("docket", true) == RelationGetNamespace(rel) && plain_table(rel);
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
    for (int w = 0; w < w_count; ++w) {
      entry.unchanged[w] = true;
      for (int k = 0; k < info->ii_NumIndexAttrs; ++k)
        if (column_written(info->ii_IndexAttrNumbers[k], static_cast<Write>(w)))
          entry.unchanged[w] = false;
    }
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
  if (!cache.valid) cache.relid = docket_table("runs");
  Relation rel = try_table_open(cache.relid, RowExclusiveLock);
  if (rel == nullptr) {  // dropped since: the extension was made again
    cache.valid = false;
    cache.relid = docket_table("runs");
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
void insert_index_entries(Relation rel, TupleTableSlot* slot, Write write) {
  ExprContext* econtext = CreateStandaloneExprContext();
  econtext->ecxt_scantuple = slot;
  for (int i = 0; i < cache.nindexes; ++i) {
    const CachedIndex& entry = cache.indexes[i];
    if (!entry.info->ii_ReadyForInserts) continue;
    if (entry.predicate != nullptr && !ExecQualAndReset(entry.predicate, econtext)) continue;
    Relation index = index_open(entry.oid, RowExclusiveLock);
    Datum values[INDEX_MAX_KEYS];
    bool nulls[INDEX_MAX_KEYS];
    FormIndexDatum(entry.info, slot, nullptr, values, nulls);
    index_insert(index, values, nulls, &slot->tts_tid, rel,
                 entry.unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO, entry.unchanged[write],
                 entry.info);
    index_close(index, NoLock);
  }
  FreeExprContext(econtext, true);
}

// Opens the table for a write under a fresh snapshot (pushed active), or
// returns nullptr when this path does not apply (see run_write.hpp).
Relation open_for_write(Snapshot under = nullptr) {
  // A read-only transaction (a standby's included) or parallel mode: the
  // statement raises what the executor raises there. docket.direct_writes
  // off: the statements always.
  if (XactReadOnly || IsInParallelMode() || !settings::direct_writes()) return nullptr;
  Relation rel = open_runs();
  if (!cache.usable ||
      pg_class_aclcheck(cache.relid, GetUserId(), ACL_SELECT | ACL_UPDATE) != ACLCHECK_OK) {
    table_close(rel, NoLock);
    return nullptr;
  }
  CheckCmdReplicaIdentity(rel, CMD_UPDATE);
  // As SPI does before each statement that writes: what this transaction did
  // so far is visible, in a snapshot taken now.
  // `under`: a snapshot the caller read under before, so that a row another
  // transaction changed since is not written here (TM_Updated).
  CommandCounterIncrement();
  PushActiveSnapshot(under != nullptr ? under : GetTransactionSnapshot());
  return rel;
}

void close_after_write(Relation rel) {
  PopActiveSnapshot();
  table_close(rel, NoLock);
}

// Column `c` of a slot's deformed row.
Datum& value_of(TupleTableSlot* slot, Column c) {
  return slot->tts_values[cache.attnum[c] - 1];
}
bool& null_of(TupleTableSlot* slot, Column c) {
  return slot->tts_isnull[cache.attnum[c] - 1];
}

// Starts the next version of `old_slot`'s row in `new_slot` (virtual): a
// copy of its columns, for the caller to change.
void start_version(Relation rel, TupleTableSlot* old_slot, TupleTableSlot* new_slot) {
  const int natts = RelationGetDescr(rel)->natts;
  ExecClearTuple(new_slot);
  memcpy(new_slot->tts_values, old_slot->tts_values, sizeof(Datum) * natts);
  memcpy(new_slot->tts_isnull, old_slot->tts_isnull, sizeof(bool) * natts);
}

// Writes `new_slot` as the next version of `old_slot`'s row: the row's
// constraints, the table access method's update, and the new version's index
// entries when it is not a HOT update.
TM_Result write_version(Relation rel, TupleTableSlot* old_slot, TupleTableSlot* new_slot,
                        Write write) {
  check_row(rel, new_slot->tts_values, new_slot->tts_isnull);
  ExecStoreVirtualTuple(new_slot);
  TM_FailureData failure;
  LockTupleMode lock_mode;
  bool update_indexes = false;
  const TM_Result result = table_tuple_update(
      rel, &old_slot->tts_tid, new_slot, GetCurrentCommandId(true), GetActiveSnapshot(),
      InvalidSnapshot, true, &failure, &lock_mode, &update_indexes);
  if (result == TM_Ok && update_indexes) insert_index_entries(rel, new_slot, write);
  return result;
}

RowWrite write_commit_pg(const RunFence& fence, const RunCommitValues& values, Datum* queue) {
  Relation rel = open_for_write();
  if (rel == nullptr) return RowWrite::use_statement;

  Relation pkey = index_open(cache.pkey, RowExclusiveLock);
  ScanKeyData key;
  ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid, cache.pkey_collation,
                         F_TEXTEQ, fence.run_id);
  IndexScanDesc scan = index_beginscan(rel, pkey, GetActiveSnapshot(), 1, 0);
  index_rescan(scan, &key, 1, nullptr, 0);
  TupleTableSlot* old_slot = table_slot_create(rel, nullptr);
  const bool found = index_getnext_slot(scan, ForwardScanDirection, old_slot);
  index_endscan(scan);
  index_close(pkey, NoLock);

  RowWrite outcome = RowWrite::no_match;
  if (found) {
    slot_getallattrs(old_slot);
    if (fence_holds(old_slot->tts_values, old_slot->tts_isnull, fence)) {
      TupleTableSlot* new_slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
      start_version(rel, old_slot, new_slot);
      set_commit_values(new_slot->tts_values, new_slot->tts_isnull, values);
      switch (const TM_Result result = write_version(rel, old_slot, new_slot, w_commit)) {
        case TM_Ok:
          *queue = datumCopy(value_of(old_slot, c_queue), false, -1);
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
  close_after_write(rel);
  return outcome;
}

// The lease's columns (lease_statement's SET list), over a copy of the old
// ones.
void set_lease_values(TupleTableSlot* slot, Datum token, const LeaseValues& values) {
  auto set = [&](Column c, Datum value, bool null) {
    value_of(slot, c) = value;
    null_of(slot, c) = null;
  };
  const int32 attempts = DatumGetInt32(value_of(slot, c_claim_attempts));
  if (null_of(slot, c_claim_attempts) || attempts == PG_INT32_MAX)
    ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("integer out of range")));
  const Datum now = TimestampTzGetDatum(values.now);
  set(c_claim_token, token, false);
  set(c_claimed_at, now, false);
  set(c_claim_started_at, now, false);
  set(c_claim_renewed_at, now, false);
  set(c_wake_at, 0, true);
  set(c_claim_attempts, Int32GetDatum(attempts + 1), false);
  set(c_lease_ms, Int64GetDatum(values.lease_ms), !values.has_lease_ms);
  set(c_claimed_seq, 0, true);
  set(c_claimed_attempt, 0, true);
}

// Leases the locked runs leases[0..count): set(slot, i) turns the copied
// columns into the new version (false: the statement leases this one, and
// nothing is written for it); each version written is returned in out[i].
template <typename Set>
bool lease_rows(const RunLease* leases, int count, const LeaseValues& values, LeasedRow* out,
                Set set) {
  Relation rel = open_for_write();
  if (rel == nullptr) return false;
  TupleTableSlot* old_slot = table_slot_create(rel, nullptr);
  TupleTableSlot* new_slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
  for (int i = 0; i < count; ++i) {
    const RunLease& lease = leases[i];
    ItemPointerData tid = lease.ctid;
    // The candidate scan locked this version: it is the row's latest.
    if (!table_tuple_fetch_row_version(rel, &tid, GetActiveSnapshot(), old_slot))
      elog(ERROR, "docket: a locked claim candidate is not visible");
    slot_getallattrs(old_slot);
    if (null_of(old_slot, c_run_id) || !same_text(value_of(old_slot, c_run_id), lease.run_id))
      elog(ERROR, "docket: a locked claim candidate is another run");
    start_version(rel, old_slot, new_slot);
    set_lease_values(new_slot, lease.token, values);
    if (!set(new_slot, i)) {
      ExecClearTuple(new_slot);
      ExecClearTuple(old_slot);
      continue;
    }
    const TM_Result result = write_version(rel, old_slot, new_slot, w_lease);
    if (result != TM_Ok)
      elog(ERROR, "docket: a locked claim candidate changed under its lock (%d)",
           static_cast<int>(result));
    // lease_statement's RETURNING list, into the context SPI_connect was
    // called in.
    static const Column kReturned[kLeaseColumns] = {
        c_run_id,         c_tenant_id,     c_graph_id,   c_graph_hash,
        c_checkpoint_seq, c_claim_token,   c_claimed_at, c_claim_attempts,
        c_poisoned_at,    c_poison_reason, c_queue};
    for (int k = 0; k < kLeaseColumns; ++k) {
      const Form_pg_attribute attr =
          TupleDescAttr(RelationGetDescr(rel), cache.attnum[kReturned[k]] - 1);
      out[i].nulls[k] = null_of(new_slot, kReturned[k]);
      out[i].values[k] = out[i].nulls[k] ? Datum(0)
                                         : SPI_datumTransfer(value_of(new_slot, kReturned[k]),
                                                             attr->attbyval, attr->attlen);
    }
    ExecClearTuple(new_slot);
    ExecClearTuple(old_slot);
  }
  ExecDropSingleTupleTableSlot(new_slot);
  ExecDropSingleTupleTableSlot(old_slot);
  close_after_write(rel);
  return true;
}

bool write_leases_pg(const RunLease* leases, int count, const LeaseValues& values, LeasedRow* out) {
  return lease_rows(leases, count, values, out,
                    [](TupleTableSlot* /*slot*/, int /*i*/) { return true; });
}

// A signed decimal integer as the text-to-integer casts read it, when it is
// only that (an optional '-' and digits, within [min, max]); otherwise
// nothing, and the statement's cast decides (it may read more forms, or
// raise).
std::optional<int64> plain_integer(const char* s, int len, int64 min, int64 max) {
  int i = 0;
  const bool negative = len > 0 && s[0] == '-';
  if (negative) i = 1;
  if (i == len || len - i > 18) return std::nullopt;  // 18 digits: no overflow below
  int64 value = 0;
  for (; i < len; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    value = value * 10 + (s[i] - '0');
  }
  if (negative) value = -value;
  if (value < min || value > max) return std::nullopt;
  return value;
}

// `document ->> key` read as an integer by a cast, for a value that is a
// JSON string or number holding a plain integer: the integer; a missing key
// or JSON null: SQL NULL (*null); anything else: false, for the statement.
bool document_integer(Jsonb* document, const char* key, int64 min, int64 max, int64* value,
                      bool* null) {
  JsonbValue v;
  if (getKeyJsonValueFromContainer(&document->root, key, static_cast<int>(strlen(key)), &v) ==
          nullptr ||
      v.type == jbvNull) {
    *null = true;
    return true;
  }
  std::optional<int64> parsed;
  if (v.type == jbvString) {
    parsed = plain_integer(v.val.string.val, v.val.string.len, min, max);
  } else if (v.type == jbvNumeric) {
    const char* text =
        DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
    parsed = plain_integer(text, static_cast<int>(strlen(text)), min, max);
  }
  if (!parsed) return false;
  *null = false;
  *value = *parsed;
  return true;
}

// lease_task_statement's SET list beyond the lease's columns, and its
// RETURNING list's attempt and wake_reason, over the version set_lease_values
// formed; false when the statement must lease this run (run_write.hpp).
bool set_task_lease_values(TupleTableSlot* slot, TaskLeased& facts) {
  if (null_of(slot, c_document) || null_of(slot, c_graph_hash) || null_of(slot, c_event_seq))
    return false;
  Jsonb* document = DatumGetJsonbP(value_of(slot, c_document));
  if (!JB_ROOT_IS_OBJECT(document)) return false;
  JsonbValue v;
  if (getKeyJsonValueFromContainer(&document->root, "wake_pending", 12, &v) != nullptr)
    return false;
  int64 attempt = 0;
  bool attempt_null = true;
  if (!document_integer(document, "attempt", PG_INT32_MIN, PG_INT32_MAX, &attempt, &attempt_null))
    return false;
  // document ->> 'wake_reason': a string, or NULL.
  JsonbValue reason;
  const bool reason_null =
      getKeyJsonValueFromContainer(&document->root, "wake_reason", 11, &reason) == nullptr ||
      reason.type == jbvNull;
  if (!reason_null && reason.type != jbvString) return false;
  const text* hash = DatumGetTextPP(value_of(slot, c_graph_hash));
  const bool task = VARSIZE_ANY_EXHDR(hash) == 4 && memcmp(VARDATA_ANY(hash), "task", 4) == 0;
  if (task) {
    const int64 event_seq = DatumGetInt64(value_of(slot, c_event_seq));
    int64 next = 0;
    if (pg_add_s64_overflow(event_seq, 1, &next)) return false;
    // woke: (document ->> 'woke_seq')::bigint = the new event_seq - 1, which
    // only a lease that wakes the task makes true; the statement logs it.
    int64 woke_seq = 0;
    bool woke_null = true;
    if (!document_integer(document, "woke_seq", PG_INT64_MIN, PG_INT64_MAX, &woke_seq,
                          &woke_null) ||
        (!woke_null && woke_seq == event_seq))
      return false;
    value_of(slot, c_event_seq) = Int64GetDatum(next);
    value_of(slot, c_claimed_seq) = Int64GetDatum(next);
    null_of(slot, c_claimed_seq) = false;
    value_of(slot, c_claimed_attempt) = Int32GetDatum(static_cast<int32>(attempt));
    null_of(slot, c_claimed_attempt) = attempt_null;
  }
  facts.written = true;
  facts.attempt = Int32GetDatum(static_cast<int32>(attempt));
  facts.attempt_null = attempt_null;
  facts.wake_reason_null = reason_null;
  if (!reason_null)
    facts.wake_reason = SPI_datumTransfer(
        PointerGetDatum(cstring_to_text_with_len(reason.val.string.val, reason.val.string.len)),
        false, -1);
  return true;
}

bool write_task_leases_pg(const RunLease* leases, int count, const LeaseValues& values,
                          LeasedRow* out, TaskLeased* facts) {
  for (int i = 0; i < count; ++i) facts[i] = TaskLeased{};
  return lease_rows(leases, count, values, out, [&](TupleTableSlot* slot, int i) {
    return set_task_lease_values(slot, facts[i]);
  });
}

// The fence of the task layer's fenced statements (held_statement,
// complete_statement) on the version found: the run, its token, a task, not
// past its deadline.
bool task_fence_holds(TupleTableSlot* slot, Datum run_id, Datum token, TimestampTz now) {
  if (null_of(slot, c_run_id) || !same_text(value_of(slot, c_run_id), run_id)) return false;
  if (null_of(slot, c_claim_token) || memcmp(DatumGetUUIDP(value_of(slot, c_claim_token))->data,
                                             DatumGetUUIDP(token)->data, UUID_LEN) != 0)
    return false;
  const text* hash =
      null_of(slot, c_graph_hash) ? nullptr : DatumGetTextPP(value_of(slot, c_graph_hash));
  if (hash == nullptr || VARSIZE_ANY_EXHDR(hash) != 4 || memcmp(VARDATA_ANY(hash), "task", 4) != 0)
    return false;
  return null_of(slot, c_deadline_at) || DatumGetTimestampTz(value_of(slot, c_deadline_at)) > now;
}

// Writes the held tasks items[from..count) (each with run_id and token), in
// that order, each found by primary key under one snapshot (`under`, or a
// fresh one) and fenced by task_fence_holds: set(slot, item) turns the copied
// columns into the new version (false: the statement must write this one),
// written(i, slot) reads the version written. Returns the index of the first
// item the statement must write (a set() refusal, or a row changed since the
// snapshot), count when all were decided here, or -1 when the path does not
// apply.
template <typename Item, typename Set, typename Written>
int write_held_tasks(const Item* items, int from, int count, TimestampTz now, Snapshot under,
                     Write write, Set set, Written written) {
  Relation rel = open_for_write(under);
  if (rel == nullptr) return -1;
  Relation pkey = index_open(cache.pkey, RowExclusiveLock);
  TupleTableSlot* old_slot = table_slot_create(rel, nullptr);
  TupleTableSlot* new_slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
  IndexScanDesc scan = index_beginscan(rel, pkey, GetActiveSnapshot(), 1, 0);
  int i = from;
  for (; i < count; ++i) {
    const Item& item = items[i];
    ScanKeyData key;
    ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid, cache.pkey_collation,
                           F_TEXTEQ, item.run_id);
    index_rescan(scan, &key, 1, nullptr, 0);
    if (!index_getnext_slot(scan, ForwardScanDirection, old_slot)) continue;
    slot_getallattrs(old_slot);
    if (!task_fence_holds(old_slot, item.run_id, item.token, now)) {
      ExecClearTuple(old_slot);
      continue;
    }
    start_version(rel, old_slot, new_slot);
    if (!set(new_slot, item)) break;
    const TM_Result result = write_version(rel, old_slot, new_slot, write);
    if (result == TM_SelfModified || result == TM_Updated || result == TM_Deleted) break;
    if (result != TM_Ok)
      elog(ERROR, "docket: unexpected result %d updating a task", static_cast<int>(result));
    written(i, new_slot);
    ExecClearTuple(new_slot);
    ExecClearTuple(old_slot);
  }
  index_endscan(scan);
  index_close(pkey, NoLock);
  ExecDropSingleTupleTableSlot(new_slot);
  ExecDropSingleTupleTableSlot(old_slot);
  close_after_write(rel);
  return i;
}

// The largest lease_ms whose half a lease, in microseconds, is subtracted
// from a timestamp here without overflow; beyond it (never from claim_tasks,
// whose lease is capped) the statement computes, and raises, as it would.
constexpr int64 kMaxStepLeaseMs = INT64CONST(1) << 40;

// held_statement's SET list over a copy of the old columns; false when a
// value would be out of range, which the statement raises.
bool set_step_values(TupleTableSlot* slot, const StepRefresh& item, TimestampTz now) {
  const TimestampTz claimed_at = DatumGetTimestampTz(value_of(slot, c_claimed_at));
  // greatest(claimed_at, now): NULLs ignored.
  const TimestampTz forward = null_of(slot, c_claimed_at) || claimed_at < now ? now : claimed_at;
  const int64 lease_ms =
      null_of(slot, c_lease_ms) ? 30000 : DatumGetInt64(value_of(slot, c_lease_ms));
  if (lease_ms < -kMaxStepLeaseMs || lease_ms > kMaxStepLeaseMs) return false;
  const int64 event_seq = DatumGetInt64(value_of(slot, c_event_seq));
  int64 next_seq = 0;
  if (null_of(slot, c_event_seq) || pg_add_s64_overflow(event_seq, item.fresh, &next_seq))
    return false;
  // claim_renewed_at < now - lease_ms * 0.5 ms (NULL: not renewed).
  int64 cutoff = 0;
  if (pg_sub_s64_overflow(now, lease_ms * 500, &cutoff) || !IS_VALID_TIMESTAMP(cutoff))
    return false;
  if (!null_of(slot, c_claim_renewed_at) &&
      DatumGetTimestampTz(value_of(slot, c_claim_renewed_at)) < cutoff)
    value_of(slot, c_claim_renewed_at) = TimestampTzGetDatum(forward);
  value_of(slot, c_claimed_at) = TimestampTzGetDatum(forward);
  null_of(slot, c_claimed_at) = false;
  if (item.fresh > 0) {
    value_of(slot, c_claim_attempts) = Int32GetDatum(0);
    null_of(slot, c_claim_attempts) = false;
  }
  value_of(slot, c_event_seq) = Int64GetDatum(next_seq);
  return true;
}

int write_step_refreshes_pg(const StepRefresh* items, int from, int count, TimestampTz now,
                            Snapshot under, StepRefreshed* out) {
  for (int i = from; i < count; ++i) out[i] = StepRefreshed{};
  return write_held_tasks(
      items, from, count, now, under, w_step,
      [&](TupleTableSlot* slot, const StepRefresh& item) {
        return set_step_values(slot, item, now);
      },
      [&](int i, TupleTableSlot* slot) {
        out[i].held = true;
        out[i].event_seq = DatumGetInt64(value_of(slot, c_event_seq));
      });
}

// The keys a task's transition drops from its stored document
// (DOCKET_TASK_DOCUMENT_BASE, pg/run_document.hpp), as a text[].
Datum document_base_keys() {
  static const char* const kKeys[] = {
      "waiting", "id", "graph_id", "graph_hash", "status", "checkpoint_seq", "started_at"};
  constexpr int n = sizeof(kKeys) / sizeof(kKeys[0]);
  Datum keys[n];
  for (int k = 0; k < n; ++k) keys[k] = CStringGetTextDatum(kKeys[k]);
  return PointerGetDatum(construct_array(keys, n, TEXTOID, -1, false, TYPALIGN_INT));
}

// jsonb_build_object('result', result): {"result": null} for SQL NULL.
Datum result_object(Datum result, bool result_null) {
  JsonbParseState* state = nullptr;
  pushJsonbValue(&state, WJB_BEGIN_OBJECT, nullptr);
  JsonbValue key;
  key.type = jbvString;
  key.val.string.val = const_cast<char*>("result");
  key.val.string.len = 6;
  pushJsonbValue(&state, WJB_KEY, &key);
  JsonbValue value;
  if (result_null) {
    value.type = jbvNull;
  } else {
    Jsonb* jsonb = DatumGetJsonbP(result);
    value.type = jbvBinary;
    value.val.binary.data = &jsonb->root;
    value.val.binary.len = static_cast<int>(VARSIZE(jsonb) - VARHDRSZ);
  }
  pushJsonbValue(&state, WJB_VALUE, &value);
  return JsonbPGetDatum(JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, nullptr)));
}

// complete_statement's SET list (task_complete.cpp) over a copy of the old
// columns; false when the statement must write the row: a run completed
// before (mutate_run revived it), whose completed event the statement logs,
// or a counter at its end, which the statement raises.
bool set_completion_values(TupleTableSlot* slot, const TaskCompletion& item,
                           const TaskCompletionValues& values, Datum base_keys,
                           Datum checkpoint_type) {
  if (!null_of(slot, c_completed_seq) || null_of(slot, c_document) ||
      null_of(slot, c_checkpoint_seq) || null_of(slot, c_event_seq))
    return false;
  int64 checkpoint_seq = 0;
  int64 event_seq = 0;
  if (pg_add_s64_overflow(DatumGetInt64(value_of(slot, c_checkpoint_seq)), 1, &checkpoint_seq) ||
      pg_add_s64_overflow(DatumGetInt64(value_of(slot, c_event_seq)), 1, &event_seq))
    return false;
  auto set = [&](Column c, Datum value, bool null) {
    value_of(slot, c) = value;
    null_of(slot, c) = null;
  };
  const Datum base = DirectFunctionCall2(jsonb_delete_array, value_of(slot, c_document), base_keys);
  set(c_document,
      DirectFunctionCall2(jsonb_concat, base, result_object(item.result, item.result_null)), false);
  const Datum now = TimestampTzGetDatum(values.now);
  set(c_status, values.status, false);
  set(c_checkpoint_seq, Int64GetDatum(checkpoint_seq), false);
  set(c_checkpoint_type, checkpoint_type, false);
  set(c_updated_at, now, false);
  set(c_claim_token, 0, true);
  set(c_claimed_at, 0, true);
  set(c_wake_at, 0, true);
  set(c_claim_attempts, Int32GetDatum(0), false);
  set(c_claim_abandons, Int32GetDatum(0), false);
  set(c_poisoned_at, 0, true);
  set(c_poison_reason, 0, true);
  set(c_event_seq, Int64GetDatum(event_seq), false);
  set(c_completed_seq, Int64GetDatum(event_seq), false);
  set(c_completed_at, now, false);
  return true;
}

int write_task_completions_pg(const TaskCompletion* items, int from, int count,
                              const TaskCompletionValues& values, bool* completed) {
  for (int i = from; i < count; ++i) completed[i] = false;
  // The enum's value, as the statement's cast gives it; the keys' array.
  Oid input = InvalidOid;
  Oid ioparam = InvalidOid;
  Relation rel = open_runs();
  if (!cache.usable) {
    table_close(rel, NoLock);
    return -1;
  }
  const Oid enum_type =
      TupleDescAttr(RelationGetDescr(rel), cache.attnum[c_checkpoint_type] - 1)->atttypid;
  table_close(rel, NoLock);
  getTypeInputInfo(enum_type, &input, &ioparam);
  const Datum checkpoint_type =
      OidInputFunctionCall(input, const_cast<char*>(values.checkpoint_type), ioparam, -1);
  const Datum base_keys = document_base_keys();
  return write_held_tasks(
      items, from, count, values.now, nullptr, w_complete,
      [&](TupleTableSlot* slot, const TaskCompletion& item) {
        return set_completion_values(slot, item, values, base_keys, checkpoint_type);
      },
      [&](int i, TupleTableSlot* /*slot*/) { completed[i] = true; });
}

}  // namespace

int write_step_refreshes(const StepRefresh* items, int from, int count, TimestampTz now,
                         StepRefreshed* out, Snapshot under) {
  return call([&] { return write_step_refreshes_pg(items, from, count, now, under, out); });
}

int write_task_completions(const TaskCompletion* items, int from, int count,
                           const TaskCompletionValues& values, bool* completed) {
  return call([&] { return write_task_completions_pg(items, from, count, values, completed); });
}

RowWrite write_commit(const RunFence& fence, const RunCommitValues& values, Datum* queue) {
  return call([&] { return write_commit_pg(fence, values, queue); });
}

bool write_leases(const RunLease* leases, int count, const LeaseValues& values, LeasedRow* out) {
  return call([&] { return write_leases_pg(leases, count, values, out); });
}

bool write_task_leases(const RunLease* leases, int count, const LeaseValues& values, LeasedRow* out,
                       TaskLeased* facts) {
  return call([&] { return write_task_leases_pg(leases, count, values, out, facts); });
}

}  // namespace docket::pg
