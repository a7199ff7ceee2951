// docket's own vacuum of docket.runs: the claiming backend's look, and the
// background worker that vacuums.
#include "pg/vacuum.hpp"

#include <cstdint>
#include <cstring>

#include "core/vacuum.hpp"
#include "pg/boundary.hpp"
#include "pg/catalog.hpp"
#include "pg/settings.hpp"

namespace docket::pg {

namespace {

// What the worker is given in bgw_extra (its database is bgw_main_arg).
struct WorkerExtra {
  Oid relid;
  Oid owner;
};

std::int64_t last_look_ms = -1;
std::int64_t backoff_ms = 0;  // core/vacuum.hpp: vacuum_backoff_ms
// This backend's last worker, allocated in TopMemoryContext: while it lives,
// this backend starts no other. vacuums_at_start: the table's vacuum count
// (docket's and autovacuum's) when it was started; -1 once that was weighed.
BackgroundWorkerHandle* own_worker = nullptr;
std::int64_t vacuums_at_start = -1;

bool own_worker_alive() {
  if (own_worker == nullptr) return false;
  pid_t pid = 0;
  const BgwHandleStatus status = GetBackgroundWorkerPid(own_worker, &pid);
  if (status == BGWH_STARTED || status == BGWH_NOT_YET_STARTED) return true;
  pfree(own_worker);
  own_worker = nullptr;
  return false;
}

// Whether `role` may log in to this database, as the worker does: LOGIN, and
// CONNECT on the database unless a superuser (connection limits aside: a
// worker refused for them fails, and the backoff spaces the next ones).
bool may_connect(Oid role) {
  HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
  if (!HeapTupleIsValid(tuple)) return false;
  const bool login = reinterpret_cast<Form_pg_authid>(GETSTRUCT(tuple))->rolcanlogin;
  ReleaseSysCache(tuple);
  return login && (superuser_arg(role) ||
                   pg_database_aclcheck(MyDatabaseId, role, ACL_CONNECT) == ACLCHECK_OK);
}

void start_worker(Oid relid, Oid owner, std::int64_t vacuums) {
  BackgroundWorker worker;
  std::memset(&worker, 0, sizeof worker);
  worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
  worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
  worker.bgw_restart_time = BGW_NEVER_RESTART;
  strlcpy(worker.bgw_library_name, "docket", BGW_MAXLEN);
  strlcpy(worker.bgw_function_name, "docket_vacuum_main", BGW_MAXLEN);
  strlcpy(worker.bgw_name, "docket vacuum of docket.runs", BGW_MAXLEN);
  strlcpy(worker.bgw_type, "docket vacuum", BGW_MAXLEN);
  worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
  const WorkerExtra extra{relid, owner};
  std::memcpy(worker.bgw_extra, &extra, sizeof extra);
  BackgroundWorkerHandle* handle = nullptr;
  const MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
  // No free slot: autovacuum alone, as without docket.vacuum_naptime.
  const bool started = RegisterDynamicBackgroundWorker(&worker, &handle);
  MemoryContextSwitchTo(old);
  if (started) {
    own_worker = handle;
    vacuums_at_start = vacuums;
  }
  elog(DEBUG1, started ? "docket: starting a vacuum of docket.runs"
                       : "docket: no free background worker slot for a vacuum of docket.runs");
}

void look() {
  if (own_worker_alive()) return;
  const Oid relid = docket_table("runs", true);
  if (!OidIsValid(relid)) return;

  VacuumFacts facts;
  facts.autovacuum_on = AutoVacuumingActive();
  facts.naptime_ms = settings::vacuum_naptime_ms();
  Relation rel = table_open(relid, AccessShareLock);  // the claim holds a stronger one
  const auto* options = reinterpret_cast<const StdRdOptions*>(rel->rd_options);
  facts.table_enabled = options == nullptr || options->autovacuum.enabled;
  facts.threshold = options != nullptr && options->autovacuum.vacuum_threshold >= 0
                        ? options->autovacuum.vacuum_threshold
                        : autovacuum_vac_thresh;
  facts.scale_factor = options != nullptr && options->autovacuum.vacuum_scale_factor >= 0
                           ? options->autovacuum.vacuum_scale_factor
                           : autovacuum_vac_scale;
  facts.rows = rel->rd_rel->reltuples;
  const Oid owner = rel->rd_rel->relowner;
  table_close(rel, NoLock);
  const PgStat_StatTabEntry* stats = pgstat_fetch_stat_tabentry(relid);
  facts.dead_rows = stats != nullptr ? static_cast<double>(stats->n_dead_tuples) : 0;
  const std::int64_t vacuums =
      stats != nullptr ? stats->vacuum_count + stats->autovac_vacuum_count : 0;
  if (vacuums_at_start >= 0) {  // this backend's last worker has ended since
    backoff_ms = vacuum_backoff_ms(backoff_ms, facts.naptime_ms, vacuums > vacuums_at_start);
    vacuums_at_start = -1;
  }
  if (!vacuum_needed(facts)) return;
  if (!may_connect(owner)) {
    elog(DEBUG1,
         "docket: the owner of docket.runs may not log in to this database, so docket does not "
         "vacuum it");
    return;
  }

  // A vacuum (docket's or autovacuum's) holds this lock while it runs; the
  // probe waits for nothing and is let go at once.
  if (!ConditionalLockRelationOid(relid, ShareUpdateExclusiveLock)) return;
  UnlockRelationOid(relid, ShareUpdateExclusiveLock);
  start_worker(relid, owner, vacuums);
}

}  // namespace

void vacuum_if_due() {
  const std::int64_t now_ms = call([] { return GetCurrentTimestamp(); }) / 1000;
  if (!vacuum_look_due(settings::vacuum_naptime_ms(), now_ms, last_look_ms, backoff_ms)) return;
  last_look_ms = now_ms;
  call_void(look);
}

}  // namespace docket::pg

// The background worker: connects to the database as the table's owner,
// vacuums docket.runs if no other vacuum holds it, and exits. An error ends
// the process (the postmaster's handler for a background worker reports it);
// it is not restarted: a later look starts a new one, after the backoff.
extern "C" PGDLLEXPORT void docket_vacuum_main(Datum main_arg);
extern "C" void docket_vacuum_main(Datum main_arg) {
  docket::pg::WorkerExtra extra{};
  std::memcpy(&extra, MyBgworkerEntry->bgw_extra, sizeof extra);
  BackgroundWorkerUnblockSignals();
  BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(main_arg), extra.owner, 0);

  StartTransactionCommand();
  if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(extra.relid)) ||
      !ConditionalLockRelationOid(extra.relid, ShareUpdateExclusiveLock)) {
    CommitTransactionCommand();  // dropped, or another vacuum has it
    proc_exit(0);
  }
  UnlockRelationOid(extra.relid, ShareUpdateExclusiveLock);
  pgstat_report_activity(STATE_RUNNING, "VACUUM (SKIP_LOCKED, TRUNCATE false) docket.runs");

  VacuumParams params;
  std::memset(&params, 0, sizeof params);
  params.options = VACOPT_VACUUM | VACOPT_SKIP_LOCKED | VACOPT_PROCESS_TOAST;
  params.freeze_min_age = -1;
  params.freeze_table_age = -1;
  params.multixact_freeze_min_age = -1;
  params.multixact_freeze_table_age = -1;
  params.is_wraparound = false;
  params.log_min_duration = -1;
  params.index_cleanup = VACOPTVALUE_AUTO;
  // Truncating takes an ACCESS EXCLUSIVE lock, which would stop every claim
  // for its while; the tail of a queue's table fills again soon anyway.
  params.truncate = VACOPTVALUE_DISABLED;
  params.nworkers = -1;
  // vacuum() makes its memory under PortalContext, which only a backend that
  // runs statements has. It keeps the relation list given, and commits the
  // transaction whose memory is current here: the list lives in PortalContext.
  // No RangeVar: a vacuum that took the lock since the probe above makes this
  // one skip the table without a WARNING in the server's log.
  PortalContext = AllocSetContextCreate(TopMemoryContext, "docket vacuum", ALLOCSET_DEFAULT_SIZES);
  const MemoryContext old = MemoryContextSwitchTo(PortalContext);
  List* relations = list_make1(makeVacuumRelation(nullptr, extra.relid, NIL));
  MemoryContextSwitchTo(old);
  // vacuum() commits this transaction, runs its own, and starts one again.
  vacuum(relations, &params, nullptr, true);
  CommitTransactionCommand();
  pgstat_report_activity(STATE_IDLE, nullptr);
  proc_exit(0);
}
