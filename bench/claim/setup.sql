-- bench/claim setup: the bench's own schema (never part of the extension).
--   bench.docket_cycle(n): one worker transaction against docket: claim up to n
--     runs, then commit each leased run terminal (completed, seq + 1).
--   bench.raw_jobs + bench.raw_cycle(n): the baseline, a minimal hand-written
--     SKIP LOCKED queue doing the same two writes per job.
--   bench.load_*: set-based preloads.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS docket;
CREATE SCHEMA IF NOT EXISTS bench;
SELECT docket.save_graph('bench', 'h1', '{"nodes": []}');

-- Every bench run starts at this instant, so a worker can rebuild the run
-- document from its lease alone (commit checks started_at is unchanged).
CREATE OR REPLACE FUNCTION bench.run_doc(id text, status text, seq bigint) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'bench', 'graph_hash', 'h1', 'status', status,
                            'checkpoint_seq', seq, 'started_at', '2024-01-01T00:00:00Z')
$$;

-- Inserts runs prefix1..prefixN through docket.insert_run. `kind` picks the
-- mix: 'due' (running, wake in the past), 'nondue' (a third each: waiting,
-- terminal, running with a wake far in the future).
CREATE OR REPLACE FUNCTION bench.load_docket(prefix text, first bigint, last bigint, kind text)
RETURNS bigint LANGUAGE sql AS $$
  SELECT count(docket.insert_run(
           'tenantless',
           bench.run_doc(prefix || g,
                         CASE WHEN kind = 'due' THEN 'running'
                              ELSE (ARRAY['waiting', 'completed', 'running'])[g % 3 + 1] END,
                         0),
           'run_initialized',
           CASE WHEN kind = 'due' OR g % 3 <> 2
                THEN timestamptz '2024-01-01' + g * interval '1 ms'
                ELSE timestamptz '2999-01-01' + g * interval '1 ms' END))
  FROM generate_series(first, last) g
$$;

CREATE OR REPLACE FUNCTION bench.docket_cycle(n int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  lease record;
  done int := 0;
BEGIN
  FOR lease IN
    SELECT c.run_id, c.checkpoint_seq, c.claim_token
    FROM docket.claim_due(claim_limit => n) c WHERE c.outcome = 'lease'
  LOOP
    PERFORM docket.commit('system',
                          bench.run_doc(lease.run_id, 'completed', lease.checkpoint_seq + 1),
                          lease.checkpoint_seq, lease.claim_token, 'run_completed', 'terminal');
    done := done + 1;
  END LOOP;
  RETURN done;
END $$;

-- The baseline: the same columns a minimal queue needs (due time, claim
-- token and time, attempts, sequence, document), a partial index on the due
-- column, the ANY(ARRAY(... FOR UPDATE SKIP LOCKED)) claim, and a fenced
-- per-job completion, like a worker finishing each job on its own.
CREATE TABLE IF NOT EXISTS bench.raw_jobs (
  id         text PRIMARY KEY,
  status     text NOT NULL,
  due        timestamptz,
  token      uuid,
  claimed_at timestamptz,
  attempts   int NOT NULL DEFAULT 0,
  seq        bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL,
  doc        jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS raw_jobs_due ON bench.raw_jobs (due) WHERE status = 'pending';

CREATE OR REPLACE FUNCTION bench.load_raw(first bigint, last bigint) RETURNS bigint
LANGUAGE sql AS $$
  WITH ins AS (
    INSERT INTO bench.raw_jobs (id, status, due, updated_at, doc)
    SELECT 'r' || g, 'pending', timestamptz '2024-01-01' + g * interval '1 ms', now(),
           bench.run_doc('r' || g, 'running', 0)
    FROM generate_series(first, last) g
    RETURNING 1)
  SELECT count(*) FROM ins
$$;

CREATE OR REPLACE FUNCTION bench.raw_cycle(n int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  job record;
  done int := 0;
BEGIN
  FOR job IN
    UPDATE bench.raw_jobs
       SET status = 'running', token = gen_random_uuid(), claimed_at = clock_timestamp(),
           due = NULL, attempts = attempts + 1
     WHERE id = ANY(ARRAY(SELECT id FROM bench.raw_jobs
                           WHERE status = 'pending' AND due <= clock_timestamp()
                           ORDER BY due LIMIT n FOR UPDATE SKIP LOCKED))
    RETURNING id, seq, token
  LOOP
    UPDATE bench.raw_jobs
       SET status = 'done', seq = job.seq + 1, token = NULL, claimed_at = NULL,
           updated_at = clock_timestamp(), doc = bench.run_doc(job.id, 'completed', job.seq + 1)
     WHERE id = job.id AND token = job.token AND seq = job.seq;
    done := done + 1;
  END LOOP;
  RETURN done;
END $$;

-- The same rows as load_docket(prefix, first, last, kind) stores, written
-- with one INSERT ... SELECT instead of one insert_run call per row (3-5x
-- faster). Column values mirror insert_run's; the runs are then claimed and
-- committed through the API like any other. A preload shortcut only.
CREATE OR REPLACE FUNCTION bench.load_direct(prefix text, first bigint, last bigint, kind text)
RETURNS bigint LANGUAGE sql AS $$
  WITH rows AS (
    SELECT prefix || g AS id,
           CASE WHEN kind = 'due' THEN 'running'
                ELSE (ARRAY['waiting', 'completed', 'running'])[g % 3 + 1] END AS status,
           CASE WHEN kind = 'due' OR g % 3 <> 2
                THEN timestamptz '2024-01-01' + g * interval '1 ms'
                ELSE timestamptz '2999-01-01' + g * interval '1 ms' END AS wake_at
    FROM generate_series(first, last) g),
  ins AS (
    INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash, status,
                             checkpoint_seq, checkpoint_type, started_at, updated_at, document,
                             wake_at, claim_attempts, claim_abandons)
    SELECT id, NULL, 'default', 'bench', 'h1', status, 0, 'run_initialized',
           timestamptz '2024-01-01T00:00:00Z', docket.now(), bench.run_doc(id, status, 0),
           wake_at, 0, 0
    FROM rows
    RETURNING 1)
  SELECT count(*) FROM ins
$$;

-- The steady drain of bench/claim's drain phase: bench.feed(n) inserts n more due
-- runs (through docket.insert_run, due in id order after every earlier one), and
-- drain_cycle.pgbench then claims and commits as many (bench.docket_cycle).
CREATE SEQUENCE IF NOT EXISTS bench.feed_seq;
CREATE OR REPLACE FUNCTION bench.feed(n int) RETURNS bigint
LANGUAGE sql AS $$
  SELECT count(docket.insert_run('tenantless', bench.run_doc('f' || i, 'running', 0),
                                 'run_initialized',
                                 timestamptz '2024-06-01' + i * interval '1 ms'))
  FROM (SELECT nextval('bench.feed_seq') AS i FROM generate_series(1, n)) s
$$;
