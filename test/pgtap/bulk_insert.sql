-- bulk_insert (src/pg/bulk_insert.cpp) writes rows as COPY does: heap tuples
-- by table_multi_insert, then each row's index entries, the table's
-- constraints checked first. Two paths use it, and both write exactly the rows
-- their INSERT statements write, falling back to those statements when a table
-- needs one (a trigger, a default for a column they leave unset):
--  - a uniform spawn (one options object, no idempotency key): task rows, runs
--    and heads;
--  - complete_steps / complete_step: the new step rows, under the run locks
--    their first statement took (no ON CONFLICT: a probe under those locks is
--    exact; test/isolation/specs/task_batch_lock_order.spec races it).
--
-- The calls whose WAL is read commit first (pg_walinspect reads only flushed
-- WAL: synchronous_commit on, whatever the cluster's default) and their rows
-- are deleted at once; everything else runs in a transaction rolled back at
-- the end.
SET synchronous_commit = on;
SELECT pg_current_wal_insert_lsn() AS before \gset
SELECT count(*) AS spawned FROM docket.spawn_tasks('bulk-task', ARRAY['{"i": 1}', '{"i": 2}', '{"i": 3}']::jsonb[],
                                                   'bulk-q', 'tenantless', '{}') \gset
SELECT pg_current_wal_insert_lsn() AS after \gset
SELECT array_agg(run_id ORDER BY run_id) AS ids, array_agg(claim_token ORDER BY run_id) AS toks
  FROM docket.claim_tasks('bulk-q', 10) \gset
SELECT pg_current_wal_insert_lsn() AS steps_before \gset
SELECT count(*) AS stored FROM docket.complete_steps(:'ids'::text[], :'toks'::uuid[], ARRAY['s', 's', 's'],
                                                     ARRAY['1', '2', '3']::jsonb[]) \gset
SELECT pg_current_wal_insert_lsn() AS steps_after \gset
DELETE FROM docket.runs WHERE queue = 'bulk-q';
DELETE FROM docket.graphs WHERE graph_id = 'bulk-task';
RESET synchronous_commit;

BEGIN;
SELECT plan(30);
CREATE EXTENSION pg_walinspect;

-------------------------------------------------------------------------------
-- The WAL of a uniform spawn: one heap record per page, not per row
-------------------------------------------------------------------------------
CREATE TEMP TABLE wal AS
  SELECT resource_manager, record_type, block_ref FROM pg_get_wal_records_info(:'before', :'after');
CREATE TEMP TABLE steps_wal AS
  SELECT resource_manager, record_type, block_ref
    FROM pg_get_wal_records_info(:'steps_before', :'steps_after');
-- Records of a kind that touch a relation.
CREATE FUNCTION pg_temp.records(rel regclass, rm text, kind text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM wal
   WHERE resource_manager = rm AND record_type LIKE kind
     AND block_ref LIKE '% rel %/%/' || pg_relation_filenode(rel) || ' fork %' $$;

SELECT is(pg_temp.records('docket.tasks', 'Heap', 'INSERT%'), 0::bigint, 'tasks: no heap record per row');
SELECT cmp_ok(pg_temp.records('docket.tasks', 'Heap2', 'MULTI_INSERT%'), '>=', 1::bigint,
              'tasks: multi-insert records');
SELECT is(pg_temp.records('docket.runs', 'Heap', 'INSERT%'), 0::bigint, 'runs: no heap record per row');
SELECT cmp_ok(pg_temp.records('docket.runs', 'Heap2', 'MULTI_INSERT%'), '>=', 1::bigint,
              'runs: multi-insert records');
SELECT is(pg_temp.records('docket.run_heads', 'Heap', 'INSERT%'), 0::bigint,
          'run_heads: no heap record per row');
SELECT cmp_ok(pg_temp.records('docket.run_heads', 'Heap2', 'MULTI_INSERT%'), '>=', 1::bigint,
              'run_heads: multi-insert records');
TRUNCATE wal;
INSERT INTO wal SELECT * FROM steps_wal;
SELECT is(:'stored'::int, 3, 'complete_steps stored three steps');
SELECT is(pg_temp.records('docket.task_steps', 'Heap', '%'), 0::bigint,
          'task_steps: no heap record per row (no speculative insert, no confirm)');
SELECT cmp_ok(pg_temp.records('docket.task_steps', 'Heap2', 'MULTI_INSERT%'), '>=', 1::bigint,
              'task_steps: multi-insert records');

-- Every index has the rows: the claim reads runs_ready_queue and the task
-- rows' primary key, list_tasks the heads' indexes.
SELECT count(*) AS spawned FROM docket.spawn_tasks('bulk-task', ARRAY['{"i": 1}', '{"i": 2}', '{"i": 3}']::jsonb[],
                                                   'bulk-q', 'tenantless', '{}') \gset
SET LOCAL enable_seqscan = off;
SELECT is((SELECT count(*) FROM docket.list_tasks('system', 'bulk-q') WHERE task_name = 'bulk-task'),
          3::bigint, 'list_tasks finds the three heads');
SELECT is((SELECT array_agg(params ORDER BY params::text) FROM docket.claim_tasks('bulk-q', 10)),
          ARRAY['{"i": 1}', '{"i": 2}', '{"i": 3}']::jsonb[], 'the claim finds the three runs and task rows');
RESET enable_seqscan;
DELETE FROM docket.runs WHERE queue = 'bulk-q';

-------------------------------------------------------------------------------
-- The same rows as the statements; the statements when a table needs them
-------------------------------------------------------------------------------
SELECT set_config('docket.fake_now', '2040-01-01 00:00:00+00', true);
CREATE FUNCTION pg_temp.spawn(q text) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(run_id ORDER BY n)
    FROM docket.spawn_tasks('bulk-rich', ARRAY['{"a": 1}', '{"a": 2}']::jsonb[], q, 'tenant:bulk',
                            '{"max_attempts": 4, "retry": {"kind": "fixed"}, "headers": {"x": "y"},
                              "run_at": "2040-01-01T00:00:07Z", "cancel_after_ms": 1000,
                              "max_duration_ms": 60000}') WITH ORDINALITY AS o(run_id, attempt, created, n) $$;
-- A batch's rows, without what differs between two batches (ids, queue).
CREATE FUNCTION pg_temp.shape(ids text[]) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_object(
    'run', (SELECT to_jsonb(r) - 'run_id' - 'queue' FROM docket.runs r WHERE r.run_id = i.id),
    'head', (SELECT to_jsonb(h) - 'run_id' - 'queue' FROM docket.run_heads h WHERE h.run_id = i.id),
    'task', (SELECT to_jsonb(t) - 'run_id' - 'queue' FROM docket.tasks t WHERE t.run_id = i.id))
    ORDER BY i.n)
  FROM unnest(ids) WITH ORDINALITY AS i(id, n) $$;

SELECT pg_temp.spawn('bulk-a') AS bulk \gset

-- Constraints are checked on this path too, and an error writes nothing.
ALTER TABLE docket.tasks ADD CONSTRAINT bulk_test_attempts CHECK (max_attempts < 4) NOT VALID;
SELECT throws_ok($$SELECT pg_temp.spawn('bulk-check')$$, '23514', NULL,
                 'a CHECK constraint of the table is enforced (23514)');
ALTER TABLE docket.tasks DROP CONSTRAINT bulk_test_attempts;
ALTER TABLE docket.run_heads ALTER COLUMN tenant_id SET NOT NULL;
SELECT throws_ok($$SELECT count(*) FROM docket.spawn_tasks('bulk-rich', ARRAY['{}']::jsonb[], 'bulk-check',
                                                           'tenantless', '{}')$$,
                 '23502', NULL, 'so is NOT NULL (23502)');
ALTER TABLE docket.run_heads ALTER COLUMN tenant_id DROP NOT NULL;
SELECT is((SELECT count(*) FROM docket.runs WHERE queue = 'bulk-check')
          + (SELECT count(*) FROM docket.tasks WHERE queue = 'bulk-check')
          + (SELECT count(*) FROM docket.run_heads WHERE queue = 'bulk-check'),
          0::bigint, 'and the failed spawns wrote nothing');

-- A trigger on each table: the INSERT statements run instead, and write what
-- the bulk path wrote.
CREATE TEMP TABLE fired (tbl text);
CREATE FUNCTION pg_temp.count_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO fired VALUES (TG_TABLE_NAME);
  RETURN NEW;
END $$;
CREATE TRIGGER bulk_test BEFORE INSERT ON docket.tasks FOR EACH ROW EXECUTE FUNCTION pg_temp.count_row();
CREATE TRIGGER bulk_test BEFORE INSERT ON docket.runs FOR EACH ROW EXECUTE FUNCTION pg_temp.count_row();
CREATE TRIGGER bulk_test BEFORE INSERT ON docket.run_heads FOR EACH ROW EXECUTE FUNCTION pg_temp.count_row();
SELECT pg_temp.spawn('bulk-b') AS statements \gset
SELECT is((SELECT array_agg(tbl || ':' || n ORDER BY tbl)
             FROM (SELECT tbl, count(*) AS n FROM fired GROUP BY tbl) f),
          ARRAY['run_heads:2', 'runs:2', 'tasks:2'], 'with triggers, the statements ran (each row fired)');
SELECT is(pg_temp.shape(:'bulk'), pg_temp.shape(:'statements'),
          'the bulk path wrote the statements'' rows: runs, heads and task rows');
SELECT is(jsonb_array_length(pg_temp.shape(:'bulk')), 2, 'two tasks each');
SELECT is((SELECT count(*) FROM docket.runs WHERE run_id = ANY(:'bulk'::text[]) AND claim_token IS NULL
             AND wake_at = '2040-01-01 00:00:07+00' AND tenant_id = 'bulk' AND queue = 'bulk-a'),
          2::bigint, 'the bulk rows: due at run_at, unclaimed, the tenant''s, in their queue');
DROP TRIGGER bulk_test ON docket.tasks;
DROP TRIGGER bulk_test ON docket.runs;
DROP TRIGGER bulk_test ON docket.run_heads;

-- A default for a column the rows leave unset: the statement applies it.
ALTER TABLE docket.tasks ALTER COLUMN first_started_at SET DEFAULT '2041-01-01 00:00:00+00';
SELECT pg_temp.spawn('bulk-c') AS defaulted \gset
SELECT is((SELECT array_agg(first_started_at) FROM docket.tasks WHERE run_id = ANY(:'defaulted'::text[])),
          ARRAY['2041-01-01 00:00:00+00', '2041-01-01 00:00:00+00']::timestamptz[],
          'a default on an unset column: the INSERT statement ran and applied it');
ALTER TABLE docket.tasks ALTER COLUMN first_started_at DROP DEFAULT;
SELECT is((SELECT count(*) FROM docket.runs WHERE run_id = ANY(:'defaulted'::text[])), 2::bigint,
          'and the runs went in beside it');

-- Steps: numbered in step name order from the run's counter, whatever the
-- input order; with a trigger on task_steps the INSERT statement writes the
-- same rows.
SELECT count(*) AS n FROM docket.spawn_tasks('bulk-steps', ARRAY['{}', '{}']::jsonb[], 'bulk-s', 'tenantless', '{}') \gset
CREATE TEMP TABLE held AS SELECT run_id, claim_token FROM docket.claim_tasks('bulk-s', 10);
CREATE FUNCTION pg_temp.store(id text) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(s.step_name || ':' || s.outcome ORDER BY s.step_name)
    FROM held h, docket.complete_steps(ARRAY[h.run_id, h.run_id, h.run_id], ARRAY[h.claim_token, h.claim_token, h.claim_token],
                                       ARRAY['b', 'a', 'c'], ARRAY['2', '1', '3']::jsonb[]) s
   WHERE h.run_id = id $$;
CREATE FUNCTION pg_temp.steps(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_array(s.step_name, s.value, s.seq - r.event_seq, s.completed_at) ORDER BY s.seq)
    FROM docket.task_steps s JOIN docket.runs r USING (run_id) WHERE s.run_id = id $$;
SELECT min(run_id) AS first, max(run_id) AS second FROM held \gset
SELECT is(pg_temp.store(:'first'), ARRAY['a:stored', 'b:stored', 'c:stored'], 'three steps stored');
SELECT is(pg_temp.steps(:'first'),
          '[["a", 1, -2, "2040-01-01T00:00:00+00:00"], ["b", 2, -1, "2040-01-01T00:00:00+00:00"],
            ["c", 3, 0, "2040-01-01T00:00:00+00:00"]]'::jsonb,
          'numbered in step name order, up to the run''s counter');
TRUNCATE fired;
CREATE TRIGGER bulk_test BEFORE INSERT ON docket.task_steps FOR EACH ROW EXECUTE FUNCTION pg_temp.count_row();
SELECT is(pg_temp.store(:'second'), ARRAY['a:stored', 'b:stored', 'c:stored'], 'with a trigger: stored');
SELECT is((SELECT count(*) FROM fired WHERE tbl = 'task_steps'), 3::bigint, 'by the INSERT statement');
SELECT is(pg_temp.steps(:'second'), pg_temp.steps(:'first'), 'which wrote the same rows');
DROP TRIGGER bulk_test ON docket.task_steps;

-- A mixed batch: two runs given in reverse run_id order, each with a step
-- stored before (kept: its first value comes back) and a fresh one, and an
-- item of the first run under another claim token (stale). The direct paths
-- and the statements (docket.direct_writes off, a trigger on task_steps)
-- give the same outcomes and values, item by item, and store the same rows.
SELECT count(*) FROM docket.spawn_tasks('bulk-mixed', ARRAY['{}', '{}', '{}', '{}']::jsonb[], 'bulk-m', 'tenantless', '{}');
CREATE TEMP TABLE mixed_held AS
  SELECT run_id, claim_token, row_number() OVER (ORDER BY run_id) AS n FROM docket.claim_tasks('bulk-m', 10);
SELECT count(*) FROM mixed_held h, docket.complete_steps(ARRAY[h.run_id], ARRAY[h.claim_token], ARRAY['k'], ARRAY['1']::jsonb[]);
CREATE FUNCTION pg_temp.mixed(lo int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_array(s.ord, s.step_name, s.outcome, s.value) ORDER BY s.ord)
    FROM mixed_held a, mixed_held b,
         docket.complete_steps(ARRAY[b.run_id, b.run_id, a.run_id, a.run_id, a.run_id],
                               ARRAY[b.claim_token, b.claim_token, a.claim_token, a.claim_token, gen_random_uuid()],
                               ARRAY['k', 'f', 'f', 'k', 'z'], ARRAY['9', '2', '3', '9', '4']::jsonb[])
         WITH ORDINALITY AS s (run_id, step_name, outcome, value, ord)
   WHERE a.n = lo AND b.n = lo + 1 $$;
CREATE FUNCTION pg_temp.mixed_rows(lo int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_array(h.n - lo, s.step_name, s.value, s.seq - r.event_seq) ORDER BY h.n, s.seq)
    FROM mixed_held h JOIN docket.task_steps s USING (run_id) JOIN docket.runs r USING (run_id)
   WHERE h.n IN (lo, lo + 1) $$;
SELECT is(pg_temp.mixed(1),
          '[[1, "k", "kept", 1], [2, "f", "stored", 2], [3, "f", "stored", 3], [4, "k", "kept", 1],
            [5, "z", "stale", null]]'::jsonb,
          'a mixed batch: each item''s outcome and value, in input order');
TRUNCATE fired;
SET LOCAL docket.direct_writes = off;
CREATE TRIGGER bulk_test BEFORE INSERT ON docket.task_steps FOR EACH ROW EXECUTE FUNCTION pg_temp.count_row();
SELECT is(pg_temp.mixed(3),
          '[[1, "k", "kept", 1], [2, "f", "stored", 2], [3, "f", "stored", 3], [4, "k", "kept", 1],
            [5, "z", "stale", null]]'::jsonb,
          'the same through the statements');
SELECT is((SELECT count(*) FROM fired WHERE tbl = 'task_steps'), 2::bigint, 'which inserted the two fresh steps');
DROP TRIGGER bulk_test ON docket.task_steps;
RESET docket.direct_writes;
SELECT is(pg_temp.mixed_rows(3), pg_temp.mixed_rows(1), 'and stored the same rows, numbered alike');

-- spawn_task, one task: the same path.
SELECT run_id AS one FROM docket.spawn_task('bulk-rich', '{"a": 1}', 'bulk-d', 'tenant:bulk',
  '{"max_attempts": 4, "retry": {"kind": "fixed"}, "headers": {"x": "y"}, "run_at": "2040-01-01T00:00:07Z",
    "cancel_after_ms": 1000, "max_duration_ms": 60000}') \gset
SELECT is(pg_temp.shape(ARRAY[:'one']), jsonb_build_array(pg_temp.shape(:'bulk') -> 0),
          'spawn_task writes what an element of spawn_tasks does');

SELECT * FROM finish();
ROLLBACK;
