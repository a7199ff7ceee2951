
-------------------------------------------------------------------------------
-- The run store's hot row (see docs/run-store.md, "Storage and cost")
-------------------------------------------------------------------------------
-- A refreshed claim or a stored step changes no index key, so PostgreSQL can
-- update the row in place (HOT): the claimed-runs index is keyed on when the
-- claim started (set once per claim, by claim_due), and a refresh only moves
-- claimed_at, which no index holds. claim_started_at <= claimed_at always
-- (refreshes only move claimed_at forward), so the expired class, claimed_at
-- < cutoff, lies inside the index range claim_started_at < cutoff; claimed_at
-- is checked on the row. claim_started_at is left as it was when a claim is
-- handed back: the index holds claimed rows only.
ALTER TABLE docket.runs ADD COLUMN claim_started_at timestamptz;
UPDATE docket.runs SET claim_started_at = claimed_at WHERE claim_token IS NOT NULL;
DROP INDEX docket.runs_claimed;
CREATE INDEX runs_claimed ON docket.runs (claim_started_at, run_id COLLATE "C", queue)
  WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;

-- Room on each page for the in-place versions of refreshes and step stores
-- (fillfactor: see sql/install/0.3.0/20_run_store_tables.sql), and autovacuum that keeps up with a queue's churn: by default a table is
-- vacuumed after 20% of it is dead, by which time the heads of the claim
-- indexes are long runs of dead entries that every claim walks. Here 2% (and
-- at least 1000 rows), without the cost-based pauses that let a vacuum of a
-- large table fall behind.
ALTER TABLE docket.runs SET (fillfactor = 60,
                             autovacuum_vacuum_scale_factor = 0.02,
                             autovacuum_vacuum_threshold = 1000,
                             autovacuum_vacuum_cost_delay = 0,
                             autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE docket.task_steps SET (autovacuum_vacuum_scale_factor = 0.05,
                                   autovacuum_vacuum_cost_delay = 0);

-- docket.now() names no object, so it needs no pinned search_path: switching
-- it costs each call (argument defaults call it on every claim and refresh).
ALTER FUNCTION docket.now() RESET search_path;
