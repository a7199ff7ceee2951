-- bench/tasks setup, loaded after bench/claim/setup.sql (which provides the raw
-- SKIP LOCKED baseline: bench.raw_jobs, bench.load_raw, bench.raw_cycle).
-- The bench's own objects live in schema bench, never in the extension.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS bench;

-- Spawns no-op tasks first..last into queue 'bench' (params differ per task so
-- every row is its own call, never one call joined many times).
CREATE OR REPLACE FUNCTION bench.spawn_tasks(first bigint, last bigint) RETURNS bigint
LANGUAGE sql AS $$
  SELECT count(*)
  FROM generate_series(first, last) g,
       LATERAL docket.spawn_task('noop', jsonb_build_object('i', g), 'bench') s
$$;

-- One worker transaction: claim up to n tasks, complete each (the same shape as
-- bench.raw_cycle: one transaction per claim batch).
CREATE OR REPLACE FUNCTION bench.task_cycle(n int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  t record;
  done int := 0;
BEGIN
  FOR t IN SELECT c.run_id, c.claim_token FROM docket.claim_tasks('bench', n) c LOOP
    PERFORM docket.complete_task(t.run_id, t.claim_token, NULL);
    done := done + 1;
  END LOOP;
  RETURN done;
END $$;

-- complete_step: each pgbench client holds one task (row client_id) and keeps
-- completing new step names on it.
CREATE TABLE IF NOT EXISTS bench.held (client int PRIMARY KEY, run_id text NOT NULL,
                                       token uuid NOT NULL);
CREATE SEQUENCE IF NOT EXISTS bench.step_seq;

-- Its baseline: the same two writes by hand (a fenced touch of the job row that
-- extends the lease, and an insert-if-absent of the step row).
CREATE TABLE IF NOT EXISTS bench.raw_steps (
  id        text NOT NULL,
  step_name text NOT NULL,
  value     jsonb,
  done_at   timestamptz NOT NULL,
  PRIMARY KEY (id, step_name)
);
CREATE TABLE IF NOT EXISTS bench.raw_held (client int PRIMARY KEY, id text NOT NULL,
                                           token uuid NOT NULL);

CREATE OR REPLACE FUNCTION bench.raw_step(c int, name text, v jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  h bench.raw_held;
  stored jsonb;
BEGIN
  SELECT * INTO h FROM bench.raw_held WHERE client = c;
  UPDATE bench.raw_jobs SET claimed_at = clock_timestamp() WHERE id = h.id AND token = h.token;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'stale token' USING ERRCODE = 'DK001';
  END IF;
  INSERT INTO bench.raw_steps VALUES (h.id, name, v, clock_timestamp()) ON CONFLICT DO NOTHING;
  SELECT s.value INTO stored FROM bench.raw_steps s WHERE s.id = h.id AND s.step_name = name;
  RETURN stored;
END $$;
