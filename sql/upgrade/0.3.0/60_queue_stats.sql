
-------------------------------------------------------------------------------
-- Queue stats (issue 9 item 2; DESIGN.md "History, stats, schedules")
-------------------------------------------------------------------------------
-- docket.queue_stats counts the unfinished runs of each queue from the partial
-- indexes that hold exactly them, and the last minute's finished runs from a
-- range of runs_finished: it never reads older history, however much of it
-- the table keeps (test/pgtap/queue_stats.sql checks the plan and the buffers
-- read; bench/stats measures it beside 1,000,000 finished runs).
--   poisoned   runs_poisoned     (poisoned_at IS NOT NULL)
--   running    runs_claimed      (running, claimed, not poisoned)
--   waiting    runs_waiting      (status waiting: an event wait without a
--                                 timeout, a child wait, a run store wait)
--              and runs_ready_queue for a wait with a timeout (it stays
--              running with wake_at = the timeout; its document says waiting)
--   due        runs_ready_queue  wake_at <= now
--   scheduled  runs_ready_queue  wake_at > now (a sleep, a retry backoff, a
--                                 delayed spawn)
-- The one unfinished state no index held was status = 'waiting': this small
-- partial index only takes rows entering a wait, so claims and completions
-- (issue 7's hot path) never write to it.
CREATE INDEX runs_waiting ON docket.runs (queue) WHERE status = 'waiting';

CREATE FUNCTION docket.queue_stats(scope docket.scope DEFAULT 'system')
  RETURNS TABLE (queue text, due bigint, scheduled bigint, running bigint, waiting bigint,
                 poisoned bigint, oldest_due_at timestamptz, completed_last_minute bigint,
                 failed_last_minute bigint)
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  t timestamptz := docket.now();
  everyone boolean;
  tenant text;
BEGIN
  IF scope IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope must not be NULL' USING ERRCODE = '22023';
  END IF;
  everyone := scope = 'system';
  tenant := CASE WHEN scope LIKE 'tenant:%' THEN substr(scope, 8) END;
  -- Each branch reads one partial index; the branches are disjoint, so every
  -- run counts once, by precedence: poisoned, running, waiting, due, scheduled.
  RETURN QUERY
  SELECT s.queue,
         count(*) FILTER (WHERE s.state = 'due'),
         count(*) FILTER (WHERE s.state = 'scheduled'),
         count(*) FILTER (WHERE s.state = 'running'),
         count(*) FILTER (WHERE s.state = 'waiting'),
         count(*) FILTER (WHERE s.state = 'poisoned'),
         min(s.wake_at) FILTER (WHERE s.state = 'due'),
         count(*) FILTER (WHERE s.state = 'completed'),
         count(*) FILTER (WHERE s.state = 'failed')
    FROM (
      SELECT r.queue, 'poisoned' AS state, NULL::timestamptz AS wake_at
        FROM docket.runs r
       WHERE r.poisoned_at IS NOT NULL AND r.status IN ('running', 'waiting')
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue, 'running', NULL
        FROM docket.runs r
       WHERE r.status = 'running' AND r.poisoned_at IS NULL AND r.claim_token IS NOT NULL
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue, CASE WHEN r.claim_token IS NOT NULL THEN 'running' ELSE 'waiting' END, NULL
        FROM docket.runs r
       WHERE r.status = 'waiting' AND r.poisoned_at IS NULL
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue,
             CASE WHEN r.document -> 'waiting' ->> 'kind' IN ('event', 'child') THEN 'waiting'
                  WHEN r.wake_at <= t THEN 'due'
                  ELSE 'scheduled' END,
             r.wake_at
        FROM docket.runs r
       WHERE r.status = 'running' AND r.poisoned_at IS NULL AND r.claim_token IS NULL
         AND r.wake_at IS NOT NULL
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue, r.status, NULL
        FROM docket.runs r
       WHERE r.status IN ('completed', 'failed')
         AND r.updated_at > t - interval '1 minute' AND r.updated_at <= t
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
    ) AS s
   GROUP BY s.queue
   ORDER BY s.queue;
END $$;
COMMENT ON FUNCTION docket.queue_stats(docket.scope) IS
  'Per queue with unfinished runs or completions or failures in the last minute (by docket.now()), visible in scope (system: all; tenantless or tenant:<id>: that owner''s): exact counts of unfinished runs, each once by precedence poisoned > running (claimed) > waiting (on an event or a child) > due (wake_at <= now) > scheduled; the oldest due wake_at; completed and failed runs in the last minute. Served by partial indexes, never a scan of finished history. NULL scope raises 22023.';
REVOKE ALL ON FUNCTION docket.queue_stats(docket.scope) FROM PUBLIC;
