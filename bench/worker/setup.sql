-- bench/worker setup, loaded after bench/claim/setup.sql (the raw SKIP LOCKED
-- baseline) and bench/tasks/setup.sql. The bench's own objects live in schema
-- bench, never in the extension.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- bench/tasks' task_cycle on a queue of the caller's choice: one transaction
-- claims up to n tasks of queue q and completes each. The SQL the pool runs per
-- task, without a client: the ceiling a worker in any language can approach.
CREATE OR REPLACE FUNCTION bench.task_cycle_in(q text, n int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  t record;
  done int := 0;
BEGIN
  FOR t IN SELECT c.run_id, c.claim_token FROM docket.claim_tasks(q, n) c LOOP
    PERFORM docket.complete_task(t.run_id, t.claim_token, NULL);
    done := done + 1;
  END LOOP;
  RETURN done;
END $$;
