
-------------------------------------------------------------------------------
-- The expired class keyed on the claim's last renewal
-------------------------------------------------------------------------------
-- runs_claimed was keyed on claim_started_at, which no heartbeat moves: every
-- task that ran longer than a claimer's TTL, however alive, sat in the range
-- every claim_due and claim_tasks of their queue read, and was fetched and
-- left by each (3,000 such tasks: a claim of 10 took 1.6 ms instead of
-- 0.85 ms). claim_renewed_at is set by the lease and moved by each heartbeat
-- and refresh_claim, and by a step half a lease after the last renewal, so a
-- live claim leaves the range.
ALTER TABLE docket.runs ADD COLUMN claim_renewed_at timestamptz;
COMMENT ON COLUMN docket.runs.claim_renewed_at IS
  'when the claim was last renewed (its lease, a heartbeat, refresh_claim, a step half a lease after the last renewal): the key of runs_claimed, at most claimed_at while the claim is held';
UPDATE docket.runs SET claim_renewed_at = claimed_at WHERE claim_token IS NOT NULL;
DROP INDEX docket.runs_claimed;
CREATE INDEX runs_claimed ON docket.runs (claim_renewed_at, run_id COLLATE "C", queue)
  WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;
