// docket's own vacuum of docket.runs (when: core/vacuum.hpp).
//
// A claiming backend looks at most once per docket.vacuum_naptime. When the
// table's dead rows pass its autovacuum threshold, and no vacuum of it runs,
// the backend starts a dynamic background worker ("docket vacuum") that runs
// VACUUM (SKIP_LOCKED, TRUNCATE off) on docket.runs as the table's owner and
// exits. It needs a free max_worker_processes slot and an owner that may log
// in to the database; without either, autovacuum alone vacuums the table, as
// before. After a worker that did not vacuum (it failed, say a connection
// limit), the backend's looks are put off by a doubling backoff.
#pragma once

namespace docket::pg {

// Called by every claim (claim_due, claim_tasks, await_tasks) inside its
// transaction, after the claim; a PostgreSQL error is thrown as PgError.
void vacuum_if_due();

}  // namespace docket::pg
