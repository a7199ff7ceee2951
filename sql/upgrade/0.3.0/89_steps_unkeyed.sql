
-------------------------------------------------------------------------------
-- Step rows without a foreign key
-------------------------------------------------------------------------------
-- The steps' foreign key checked every stored step against docket.runs: an
-- after-row trigger, a lookup and a key-share lock (a WAL record) per step, on
-- the path every checkpoint takes. Every writer of a step holds the run's row
-- lock in the same statement (the fenced claim refresh), which proves the run
-- exists; deleting runs deletes their steps in the statement trigger that
-- deletes their heads, task rows and events, as the cascade did.
ALTER TABLE docket.task_steps DROP CONSTRAINT task_steps_run_id_fkey;
CREATE OR REPLACE FUNCTION docket._runs_deleted() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  DELETE FROM docket.run_heads h USING gone g
   WHERE h.started_at = g.started_at AND h.run_id = g.run_id;
  DELETE FROM docket.tasks t USING gone g WHERE t.run_id = g.run_id;
  DELETE FROM docket.task_steps s USING gone g WHERE s.run_id = g.run_id;
  DELETE FROM docket.run_events e USING gone g WHERE e.run_id = g.run_id;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION docket._runs_deleted() IS
  'Internal trigger: deleting runs deletes their heads, task rows, steps and events (once per statement).';
