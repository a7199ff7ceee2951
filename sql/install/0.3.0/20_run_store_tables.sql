
-------------------------------------------------------------------------------
-- The run store: tables and indexes (see docs/run-store.md, "Storage and cost")
-------------------------------------------------------------------------------

CREATE TABLE docket.graphs (
  graph_id    text NOT NULL CHECK (graph_id <> ''),
  graph_hash  text NOT NULL CHECK (graph_hash <> ''),
  definition  jsonb NOT NULL,
  saved_at    timestamptz NOT NULL,
  PRIMARY KEY (graph_id, graph_hash)
);
COMMENT ON TABLE docket.graphs IS 'published graph versions; a run references one by (graph_id, graph_hash)';

-- The columns a run never changes (run_id, tenant_id, queue, graph_id,
-- graph_hash, started_at) are checked on docket.run_heads, which insert_run
-- writes from the same parameters in the same statement: a CHECK here would run
-- again, re-read from the catalog, on every claim and every commit.
--
-- The columns after poison_reason came with 0.3.0 and stand in the order the
-- upgrade added them, so that an installed and an upgraded database agree
-- column by column.
--
-- Room on each page (fillfactor) for the in-place (HOT) versions of refreshes
-- and step stores. A lease widens a spawned row by its claim columns (208 to
-- 264 bytes for a task): at 85 a page of leased rows has no room left for a
-- step's version, which then goes to another page with two index entries
-- (48% of the step refreshes of 300 leased 3-step tasks); at 60, 8% (bench/
-- README.md, "Twentieth session": -9% instructions per 3-step task, a spawn's
-- throughput unchanged within noise). And autovacuum that keeps up with a
-- queue's churn: by default a table is vacuumed after 20% of it is dead, by
-- which time the heads of the claim indexes are long runs of dead entries
-- that every claim walks. Here 2% (and at least 1000 rows), without the
-- cost-based pauses that let a vacuum of a large table fall behind.
CREATE FUNCTION docket._run_row_valid(status text, checkpoint_seq bigint, claim_attempts integer,
                                      claim_abandons integer, claim_token uuid, claimed_at timestamptz,
                                      poisoned_at timestamptz, poison_reason text) RETURNS boolean
  LANGUAGE c IMMUTABLE PARALLEL SAFE
  AS 'MODULE_PATHNAME', 'docket_run_row_valid';
COMMENT ON FUNCTION docket._run_row_valid(text, bigint, integer, integer, uuid, timestamptz, timestamptz, text) IS
  'Internal: the CHECK of docket.runs (runs_row_valid): a known status, counters >= 0, claim token and claimed_at together, poison time and reason together.';
REVOKE ALL ON FUNCTION docket._run_row_valid(text, bigint, integer, integer, uuid, timestamptz, timestamptz, text) FROM PUBLIC;

-- Run ids compare bytewise (COLLATE "C") in every table of docket: each
-- comparison of a key descent is a memcmp, not the database collation's
-- strcoll, and the primary keys order run ids as the claim scans, the lock
-- order of the batch calls (sorted in C++) and the run_id tie-breaks do, in
-- any database collation. All of them are "C", so that a join of two of the
-- columns keeps its indexes (a comparison of a "C" column with a column of
-- another collation takes neither's index).
CREATE TABLE docket.runs (
  run_id           text COLLATE "C" NOT NULL PRIMARY KEY,
  tenant_id        text,  -- NULL: tenantless
  queue            text NOT NULL,
  graph_id         text NOT NULL,
  graph_hash       text NOT NULL,
  status           text NOT NULL,  -- running, waiting, completed, failed or cancelled
  checkpoint_seq   bigint NOT NULL,
  checkpoint_type  docket.checkpoint_type NOT NULL,
  started_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  document         jsonb NOT NULL,
  wake_at          timestamptz,
  claim_token      uuid,
  claimed_at       timestamptz,
  claim_attempts   integer NOT NULL DEFAULT 0,
  claim_abandons   integer NOT NULL DEFAULT 0,
  poisoned_at      timestamptz,
  poison_reason    text,
  -- When the current claim started: set once per claim by a lease, never by
  -- a refresh. claim_started_at <= claimed_at always; left as it was when a
  -- claim is handed back. A task's claimed event is recorded at this time.
  claim_started_at timestamptz,
  -- The task's max-duration deadline, here so that the task fence is one
  -- statement; claim_tasks sets it at the first start (with docket.tasks').
  deadline_at      timestamptz,
  event_seq        bigint NOT NULL DEFAULT 0,
  -- The lease a claim was granted: claim_tasks stores its lease_ms (capped at
  -- ten years), claim_due NULL. A claim with a lease is expired only once now -
  -- claimed_at exceeds both the claimer's TTL and this lease (docs/tasks.md,
  -- "Leases"); checked on the rows of the runs_claimed range the expired class
  -- reads, written by the claim's own UPDATE.
  lease_ms         bigint,
  completed_seq    bigint,
  completed_at     timestamptz,
  claimed_seq      bigint,
  claimed_attempt  integer,
  -- When the claim was last renewed: by its lease, then by each heartbeat or
  -- refresh_claim (to the claimed_at they write), and by a step only once half
  -- the lease has passed since the last renewal (other steps, settled waits and
  -- retain_claim commits leave it: HOT updates). claim_renewed_at <= claimed_at
  -- while the claim is held. runs_claimed is keyed on it, so a claim that is
  -- kept alive by heartbeats leaves the expired class's range; keyed on
  -- claim_started_at, every long task that outlived the TTL was read by every
  -- claim.
  claim_renewed_at timestamptz,
  -- The row's rules, one call (src/pg/row_check.cpp): a known status,
  -- counters not negative, a claim token with its claimed_at, a poison time
  -- with its reason. (Six CHECK constraints cost every single-run UPDATE
  -- the parse and planning of six expressions.)
  CONSTRAINT runs_row_valid CHECK (docket._run_row_valid(status, checkpoint_seq, claim_attempts,
    claim_abandons, claim_token, claimed_at, poisoned_at, poison_reason))
) WITH (fillfactor = 60,
        autovacuum_vacuum_scale_factor = 0.02,
        autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0,
        autovacuum_analyze_scale_factor = 0.05);
COMMENT ON TABLE docket.runs IS
  'one row per durable run: the committed document, its schedule (wake_at), claim, counters and poison facts';
-- Every event of a run (docket.run_events) is numbered by this counter, which
-- the transition's UPDATE of the run advances under the row's lock (no
-- max(seq) lookup, no number reused); append_events advances it too. No index
-- key: the claim, refresh and step updates stay HOT.
COMMENT ON COLUMN docket.runs.event_seq IS
  'the number of the run''s last event in docket.run_events (0: none)';
-- Two events of a task are facts its row keeps anyway, read from the row
-- instead of being logged (src/pg/events.cpp merges them into the pages by
-- number): spawned (number 1, at started_at: a spawn sets event_seq to 1 and
-- logs nothing) and completed (completed_seq and completed_at, set by the
-- completion's own UPDATE; a second completion, after a mutate_run revived
-- the run, finds them taken and logs its event). Neither is an index key.
COMMENT ON COLUMN docket.runs.completed_seq IS
  'the number of the task''s completed event, which the row states instead of docket.run_events (NULL: none)';
COMMENT ON COLUMN docket.runs.completed_at IS
  'when the task layer completed the task: the completed event''s recorded_at (NULL: not completed)';
-- A task's latest claimed event, too, is stated by its row (claimed_seq,
-- claimed_attempt, at claim_started_at) rather than logged: claim_tasks sets
-- them in the lease's UPDATE, and the task's next lease (or a claim_due
-- lease, which clears them) logs the event first. A no-op task's history
-- writes no log row at all. Not index keys.
COMMENT ON COLUMN docket.runs.claimed_seq IS
  'the number of the task''s latest claimed event, which the row states instead of docket.run_events until the next lease logs it (NULL: none)';
COMMENT ON COLUMN docket.runs.claimed_attempt IS
  'the attempt of the latest claimed event (claimed_seq), its payload''s "attempt"';
COMMENT ON COLUMN docket.runs.claim_renewed_at IS
  'when the claim was last renewed (its lease, a heartbeat, refresh_claim, a step half a lease after the last renewal): the key of runs_claimed, at most claimed_at while the claim is held';

-- Every index of docket.runs costs every claim and every commit one insertion:
-- both change indexed columns (claim_token, claim_renewed_at, wake_at,
-- status), so neither update can be HOT. Only the claim path's indexes live
-- here; what never changes (the list keys) lives in docket.run_heads.
--
-- Claims: the ready class (unclaimed, due), with and without a queue, and the
-- expired class (claim older than the TTL). Partial, so a row sits in at most
-- one class and terminal runs cost nothing. The expired class has one index
-- for both statements, keyed on when the claim was last renewed: the expired
-- claims, claimed_at < cutoff, lie inside its range claim_renewed_at < cutoff
-- (claimed_at is checked on the row), so a queue is checked inside that range
-- rather than given an index that every claim would pay for. A claim whose
-- heartbeats keep it alive is renewed out of the range; only one whose steps
-- alone moved claimed_at since it was last renewed, more than a TTL ago, is
-- read there and left.
-- Every key of these indexes, and of run_heads', ends in or holds the run id:
-- no two entries are equal but the versions of one row, which bottom-up
-- deletion removes, so deduplication is off. On, it scanned each full leaf
-- page for duplicates before splitting it, in vain: 3.7% of a spawn's time,
-- 0.8% of a claim's.
CREATE INDEX runs_ready ON docket.runs (wake_at, run_id COLLATE "C")
  WITH (deduplicate_items = off) WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL;
CREATE INDEX runs_ready_queue ON docket.runs (queue, wake_at, run_id COLLATE "C")
  WITH (deduplicate_items = off) WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL;
CREATE INDEX runs_claimed ON docket.runs (claim_renewed_at, run_id COLLATE "C", queue)
  WITH (deduplicate_items = off) WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;

-- Operators look for poisoned runs (list_poisoned pages this index).
CREATE INDEX runs_poisoned ON docket.runs (poisoned_at) WHERE poisoned_at IS NOT NULL;

-- Retention: finished runs by age (cleanup; queue_stats' last minute).
CREATE INDEX runs_finished ON docket.runs (updated_at)
  WHERE status IN ('completed', 'failed', 'cancelled');

-- queue_stats counts every unfinished state from a partial index that holds
-- exactly it (runs_poisoned, runs_claimed, runs_ready_queue); status =
-- 'waiting' is this small one, which only rows entering a wait write (never a
-- claim or a completion).
CREATE INDEX runs_waiting ON docket.runs (queue) WHERE status = 'waiting';

-- What a run is, fixed at insert: written once by insert_run or a spawn in the
-- statement that inserts the run, never updated, deleted with the run (by the
-- trigger runs_deleted); its checks are those of these columns of docket.runs
-- too. It has no primary key of its own: docket.runs' keeps run ids unique,
-- and nothing looks a head up by run id alone (deleting runs finds their heads
-- by (started_at, run_id), a prefix of run_heads_list): one index entry less
-- per run. No foreign keys either (a check and a row lock per spawned row, the
-- graph's row shared by every spawning transaction): the triggers of
-- 35_integrity.sql guard the rare side.
--
-- list_runs and list_tasks walk these indexes backwards (newest first by
-- (started_at, run_id), for the system scope, one tenant (tenant_id IS NULL is
-- an index condition too) and one graph) and join docket.runs by primary key
-- for the mutable columns. Every index carries every scope and filter column,
-- so whichever one the planner picks, scope and filters are index conditions.
-- They ascend: start times and time-ordered run ids grow, so a new head lands
-- at the right end of each index (or of its tenant's or graph's range), where
-- a btree fills its pages; in a descending index every new head lands at the
-- left end, where pages split in half (measured: about 1.8x the pages and 1.5x
-- the insert time).
CREATE TABLE docket.run_heads (
  run_id      text COLLATE "C" NOT NULL CHECK (run_id <> ''),
  tenant_id   text CHECK (tenant_id <> ''),  -- NULL: tenantless
  queue       text NOT NULL CHECK (queue <> '' AND octet_length(queue) <= 128),
  graph_id    text NOT NULL,
  graph_hash  text NOT NULL,
  started_at  timestamptz NOT NULL
);
COMMENT ON TABLE docket.run_heads IS
  'the immutable identity of each run (tenant, queue, graph version, start), written once at insert; list_runs reads it';
CREATE INDEX run_heads_list
  ON docket.run_heads (started_at, run_id, tenant_id, graph_id, graph_hash)
  WITH (deduplicate_items = off);
CREATE INDEX run_heads_tenant
  ON docket.run_heads (tenant_id, started_at, run_id, graph_id, graph_hash)
  WITH (deduplicate_items = off);
CREATE INDEX run_heads_graph
  ON docket.run_heads (graph_id, started_at, run_id, graph_hash, tenant_id)
  WITH (deduplicate_items = off);

-- The per-run event log (a task's history). No foreign key
-- (a trigger and a key-share lock per event, on the hot path): every writer
-- holds the run's row lock, which proves the run exists, and deleting runs
-- deletes their events (runs_deleted).
CREATE TABLE docket.run_events (
  run_id      text COLLATE "C" NOT NULL,
  seq         bigint NOT NULL CHECK (seq >= 1),
  type        text NOT NULL CHECK (type <> ''),
  payload     jsonb,
  recorded_at timestamptz NOT NULL,
  PRIMARY KEY (run_id, seq)
);
COMMENT ON TABLE docket.run_events IS 'the per-run event log: seqs 1, 2, 3 ... with no gaps';

REVOKE ALL ON docket.graphs, docket.runs, docket.run_heads, docket.run_events FROM PUBLIC;
