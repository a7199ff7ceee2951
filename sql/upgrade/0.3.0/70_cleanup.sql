-------------------------------------------------------------------------------
-- Retention: cleanup deletes emitted events by the ctids it locked
-------------------------------------------------------------------------------
-- The events part of cleanup selected its batch with
-- `(tenant_key, event_name) IN (subquery)`. Once plpgsql switched to the
-- generic plan, whose LIMIT is unknown, the planner could join the batch to a
-- sequential scan of docket.task_events: a call that deletes ten events read
-- the whole table (seen as an occasional failure of task_explain's buffer
-- check). `ctid = ANY(ARRAY(...))` is a TID scan whatever the plan cache
-- decides; the rows are locked by the subquery, so their ctids cannot change
-- before the DELETE reads them.
CREATE OR REPLACE FUNCTION docket.cleanup(older_than interval, batch int DEFAULT 1000) RETURNS bigint
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
  cutoff := docket.now() - older_than;
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
