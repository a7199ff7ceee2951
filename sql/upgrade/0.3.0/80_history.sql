
-------------------------------------------------------------------------------
-- Task history (issue 9 item 1; DESIGN.md "History, stats, schedules")
-------------------------------------------------------------------------------
-- Every task transition appends its events to the run's event log in the
-- same transaction (src/pg/history.hpp): spawned, claimed, woke,
-- step_completed, sleeping, waiting, attempt_failed, retry_scheduled,
-- deferred, completed, failed, cancelled, poisoned. The events of a run are
-- numbered by its own counter, event_seq, which the transition's UPDATE of
-- the run advances under the row's lock (no max(seq) lookup, and no number
-- reused by writers that take turns on the row). append_events, the run
-- store's own appends, advances the same counter. It is no index key: the
-- claim, refresh and step updates stay HOT.
ALTER TABLE docket.runs ADD COLUMN event_seq bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN docket.runs.event_seq IS
  'the number of the run''s last event in docket.run_events (0: none)';
UPDATE docket.runs r SET event_seq = e.last
  FROM (SELECT run_id, max(seq) AS last FROM docket.run_events GROUP BY run_id) e
 WHERE r.run_id = e.run_id;

-- The log's foreign key checked every inserted event against docket.runs (a
-- trigger and a key-share lock per row, on the hot path now that claims and
-- completions write events). Every writer already holds the run's row lock,
-- which proves the run exists; deleting runs deletes their events in the
-- statement trigger that deletes their heads and task rows.
ALTER TABLE docket.run_events DROP CONSTRAINT run_events_run_id_fkey;
CREATE OR REPLACE FUNCTION docket._runs_deleted() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  DELETE FROM docket.run_heads h USING gone g
   WHERE h.started_at = g.started_at AND h.run_id = g.run_id;
  DELETE FROM docket.tasks t USING gone g WHERE t.run_id = g.run_id;
  DELETE FROM docket.run_events e USING gone g WHERE e.run_id = g.run_id;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION docket._runs_deleted() IS
  'Internal trigger: deleting runs deletes their heads, task rows and events (once per statement).';

-- Claims and completions now insert into the log's primary key: its run ids
-- compare bytewise, as the claim scans order them, not by the database's
-- collation (strcoll at every comparison of an insert's descent). Where a
-- log's run_id meets a run_id of the default collation, the comparison takes
-- "C"; the log's readers therefore look the run up by the argument, never by
-- a join on the two columns (src/pg/events.cpp, sql/plans_read.sql).
ALTER TABLE docket.run_events ALTER COLUMN run_id TYPE text COLLATE "C";

-- The history of a task is its run's event log; task_history pages it with
-- list_events' own code (the same visibility rule: no rows outside the scope).
CREATE FUNCTION docket.task_history(scope docket.scope, run_id text, after_seq bigint DEFAULT 0,
                                    page_limit int DEFAULT 100)
  RETURNS TABLE (seq bigint, type text, payload jsonb, recorded_at timestamptz)
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_list_events';
COMMENT ON FUNCTION docket.task_history(docket.scope, text, bigint, int) IS
  'A task''s history, oldest first: events with seq > after_seq, at most page_limit (1..10000). Types: spawned, claimed {attempt}, woke {reason}, step_completed {step_name}, sleeping {until}, waiting {event, timeout_at} or {child}, attempt_failed {attempt, error}, retry_scheduled {attempt, retry_at}, deferred {retry_at, defers}, completed, failed {error}, cancelled {reason}, poisoned {reason}. Errors longer than 8192 bytes of JSON are kept as {truncated, bytes, prefix}. No rows when the run is not visible in the scope.';
REVOKE ALL ON FUNCTION docket.task_history(docket.scope, text, bigint, int) FROM PUBLIC;

-- cancel_task records the cancellation in the history (mutate_run holds the
-- run's lock: the counter and the event are written under it).
CREATE OR REPLACE FUNCTION docket.cancel_task(scope docket.scope, run_id text, reason text DEFAULT NULL)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  outcome jsonb;
BEGIN
  IF scope IS NULL OR run_id IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope and run_id must not be NULL' USING ERRCODE = '22023';
  END IF;
  -- Same message as the run store's, so a tenant cannot tell another tenant's ids apart.
  IF NOT EXISTS (SELECT 1 FROM docket.tasks t WHERE t.run_id = cancel_task.run_id) THEN
    RAISE EXCEPTION 'not_found: run % does not exist or is not visible in this scope', run_id
      USING ERRCODE = 'DK003';
  END IF;
  outcome := docket.mutate_run(scope, run_id, 'docket.task_cancel(jsonb,jsonb)',
                               jsonb_build_object('reason', reason));
  IF outcome ->> 'outcome' <> 'committed' THEN
    RETURN false;
  END IF;
  WITH advanced AS (
    UPDATE docket.runs x SET event_seq = x.event_seq + 1
     WHERE x.run_id = cancel_task.run_id RETURNING x.run_id, x.event_seq)
  INSERT INTO docket.run_events (run_id, seq, type, payload, recorded_at)
  SELECT a.run_id, a.event_seq, 'cancelled', jsonb_build_object('reason', reason), docket.now()
    FROM advanced a;
  DELETE FROM docket.task_waits tw WHERE tw.run_id = cancel_task.run_id;
  PERFORM docket._task_wake_parents(run_id);
  RETURN true;
END $$;
COMMENT ON FUNCTION docket.cancel_task(docket.scope, text, text) IS
  'Cancels a task durably: true when this call cancelled it, false when it had already finished (idempotent). A worker still running it gets DK010 on its next fenced call.';
