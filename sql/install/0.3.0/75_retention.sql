
-------------------------------------------------------------------------------
-- Retention
-------------------------------------------------------------------------------
-- Finished runs go by age, with their task rows, steps, waits and events;
-- emitted events past the horizon go by the ctids the statement locked:
-- `ctid = ANY(ARRAY(...))` is a TID scan whatever plan the plan cache picks
-- (an `IN (subquery)` under a generic plan, whose LIMIT is unknown, could join
-- the batch to a sequential scan of docket.task_events); the rows are locked
-- by the subquery, so their ctids cannot change before the DELETE reads them.
CREATE FUNCTION docket.cleanup(older_than interval, batch int DEFAULT 1000) RETURNS bigint
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.cleanup(interval, int) IS
  'Retention: deletes up to batch finished runs (completed, failed, cancelled) last written before now - older_than, with their tasks, steps, waits and events, and emitted events older than that. Skips locked rows; returns the number of runs deleted. Call it repeatedly (e.g. from pg_cron) until it returns 0.';

CREATE FUNCTION docket._cleanup_impl(older_than interval, batch int DEFAULT 1000) RETURNS bigint
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  cutoff timestamptz;
  deleted bigint;
BEGIN
  IF older_than IS NULL OR older_than < interval '0' THEN
    RAISE EXCEPTION 'bad_argument: older_than must be a non-negative interval' USING ERRCODE = '22023';
  END IF;
  IF batch IS NULL OR batch < 1 OR batch > 100000 THEN
    RAISE EXCEPTION 'bad_argument: batch must be between 1 and 100000' USING ERRCODE = '22023';
  END IF;
  BEGIN
    cutoff := docket.now() - older_than;
  EXCEPTION WHEN datetime_field_overflow THEN
    -- A horizon before the earliest timestamp: nothing is that old.
    cutoff := '-infinity';
  END;
  -- Finished runs (with their task row, steps, waits and run events, by cascade);
  -- rows a worker or operator holds are skipped, not waited for.
  DELETE FROM docket.runs x
   WHERE x.run_id = ANY (ARRAY(
     SELECT y.run_id FROM docket.runs y
      WHERE y.status IN ('completed', 'failed', 'cancelled') AND y.updated_at < cutoff
      ORDER BY y.updated_at
      LIMIT batch
      FOR UPDATE SKIP LOCKED));
  GET DIAGNOSTICS deleted = ROW_COUNT;
  -- Emitted events past the horizon (their waiters are long gone).
  DELETE FROM docket.task_events e
   WHERE e.ctid = ANY (ARRAY(
     SELECT f.ctid FROM docket.task_events f
      WHERE f.emitted_at < cutoff
      ORDER BY f.emitted_at
      LIMIT batch
      FOR UPDATE SKIP LOCKED));
  RETURN deleted;
END $$;
COMMENT ON FUNCTION docket._cleanup_impl(interval, int) IS
  'Internal: the body of docket.cleanup, called only by its guarded wrapper (see docs/security.md).';
