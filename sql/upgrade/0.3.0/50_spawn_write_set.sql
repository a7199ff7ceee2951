
-------------------------------------------------------------------------------
-- A leaner write set per spawn (bench/spawn; bench/README.md)
-------------------------------------------------------------------------------
-- Every tuple and index entry a spawn writes is written, WAL-logged and
-- flushed once per task, so each one counts: 100,000 tasks in one statement
-- wrote 168 MB of WAL against 26 MB for the same rows in a plain table.

-- docket.run_heads needs no primary key of its own: a head is written only in
-- the statement that inserts its run (insert_run, spawn), from the same
-- values, so docket.runs' primary key already keeps run ids unique, and
-- nothing looks a head up by run id alone. Deleting runs finds their heads by
-- (started_at, run_id), a prefix of run_heads_list (started_at never changes:
-- commit fences on it). One index entry less per run.
ALTER TABLE docket.run_heads DROP CONSTRAINT run_heads_pkey;

CREATE OR REPLACE FUNCTION docket._runs_deleted() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  DELETE FROM docket.run_heads h USING gone g
   WHERE h.started_at = g.started_at AND h.run_id = g.run_id;
  DELETE FROM docket.tasks t USING gone g WHERE t.run_id = g.run_id;
  RETURN NULL;
END $$;

-- A task spawned without a retry option stores no policy (NULL: the defaults,
-- exponential, 1000 ms, x2, max 300000 ms, no jitter) instead of the same
-- 95-byte object in every row; with one, the defaults completed by it, as
-- before. fail_task reads coalesce(retry, the defaults).
ALTER TABLE docket.tasks ALTER COLUMN retry DROP NOT NULL;
COMMENT ON COLUMN docket.tasks.retry IS
  'the retry policy (the defaults completed by the retry option); NULL: the defaults, {"kind": "exponential", "base_ms": 1000, "factor": 2, "max_ms": 300000, "jitter": 0}';

