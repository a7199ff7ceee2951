-- Plans made while docket's tables look empty (pg/planning.hpp): a backend
-- keeps each statement's plan from its first execution, so a pool started on
-- an empty database, or after an ANALYZE of empty tables, must not keep plans
-- that read whole tables per call, sequentially or through an index. Here every
-- table is truncated and analyzed inside the test's transaction, so the
-- statistics say empty when this backend plans; the worker path then runs in
-- bulk (5,000 tasks, steps and runs the statistics do not know of), and then
-- in small calls, which may read only a few index entries each: any plan that
-- reads a whole table once shows as 5,000 entries. pg_stat_xact_user_tables
-- and _indexes count this transaction's reads.
BEGIN;
SELECT plan(17);

SET LOCAL docket.fake_now = '2040-01-01 00:00:00+00';
-- As a fresh database: empty tables and indexes of no pages (what other files
-- left is truncated, and restored by the rollback), analyzed.
TRUNCATE docket.runs, docket.run_heads, docket.run_events, docket.tasks, docket.task_steps,
  docket.task_waits;
ANALYZE docket.runs, docket.run_heads, docket.run_events, docket.tasks, docket.task_steps,
  docket.task_waits;
SELECT is((SELECT reltuples FROM pg_class WHERE oid = 'docket.task_steps'::regclass), 0::real,
  'fixture: the statistics say docket.task_steps is empty');
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');

CREATE TEMP TABLE seq0 AS
  SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'docket';
CREATE FUNCTION pg_temp.new_seq_scans() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(s.relname || ' +' || (s.seq_scan - coalesce(z.seq_scan, 0)), ', '
                             ORDER BY s.relname), '')
    FROM pg_stat_xact_user_tables s LEFT JOIN seq0 z USING (relname)
   WHERE s.schemaname = 'docket' AND s.seq_scan > coalesce(z.seq_scan, 0)
     AND s.relname IN ('runs', 'tasks', 'task_steps', 'run_events', 'run_heads') $$;
-- This transaction's index entries read, per index of docket's tables.
CREATE FUNCTION pg_temp.index_reads() RETURNS TABLE (index_name text, entries bigint) LANGUAGE sql AS $$
  SELECT i.indexrelid::regclass::text, pg_stat_get_xact_tuples_returned(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
   WHERE c.relnamespace = 'docket'::regnamespace $$;
CREATE TEMP TABLE reads0 (index_name text, entries bigint);
CREATE FUNCTION pg_temp.mark_reads() RETURNS void LANGUAGE sql AS $$
  DELETE FROM reads0;
  INSERT INTO reads0 SELECT * FROM pg_temp.index_reads() $$;
-- Index entries read since mark_reads, per index (those with more than `over`).
CREATE FUNCTION pg_temp.reads_over(over bigint) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(s.index_name || ' ' || (s.entries - coalesce(z.entries, 0)), ', '
                             ORDER BY s.index_name), '')
    FROM pg_temp.index_reads() s LEFT JOIN reads0 z USING (index_name)
   WHERE s.entries - coalesce(z.entries, 0) > over $$;

-- In bulk: these calls make the plans (the statistics say empty) and fill the tables.
-- First claims while there is nothing at all to claim (an idle pool's first polls).
SELECT is((SELECT count(*)::int FROM docket.claim_tasks('pq2', 1, 60000)), 0, 'claim_tasks planned on empty tables');
SELECT is((SELECT count(*)::int FROM docket.claim_due(claim_limit => 1, queue => 'prq')), 0,
  'claim_due with a queue planned on empty tables');
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 5000)), 'pq');
CREATE TEMP TABLE held AS SELECT run_id, claim_token FROM docket.claim_tasks('pq', 5000, 600000);
SELECT is((SELECT count(*)::int FROM docket.complete_steps(
             ARRAY(SELECT run_id FROM held ORDER BY run_id),
             ARRAY(SELECT claim_token FROM held ORDER BY run_id),
             ARRAY(SELECT 'a' FROM held), ARRAY(SELECT '1'::jsonb FROM held))
           WHERE outcome = 'stored'), 5000, 'complete_steps stored a step of each of 5,000 tasks');
SELECT count(docket.insert_run('tenantless',
         jsonb_build_object('id', 'pr' || g, 'graph_id', 'g', 'graph_hash', 'h1', 'status', 'running',
                            'checkpoint_seq', 1, 'started_at', '2040-01-01T00:00:00Z'),
         'run_initialized', '2039-12-31 23:00:00+00', 'prq'))
  FROM generate_series(1, 5000) g;
-- A task finishes while docket.task_waits is still empty (a pool's first
-- completion: its plan is kept); then 5,000 parents come to await a child
-- each (child waits: every finishing task looks its parents up among them).
SELECT is((SELECT count(*)::int FROM (SELECT * FROM held ORDER BY run_id DESC LIMIT 1) f,
             LATERAL docket.complete_tasks(ARRAY[f.run_id], ARRAY[f.claim_token], '{null}') c
            WHERE c.outcome = 'completed'), 1, 'complete_tasks planned while no task waits');
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 5000)), 'pw');
CREATE TEMP TABLE children AS
  SELECT run_id, row_number() OVER (ORDER BY run_id) AS n
    FROM docket.spawn_tasks('job', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 5000)), 'pc');
SELECT is((SELECT count(*)::int FROM (SELECT p.run_id, p.claim_token, row_number() OVER (ORDER BY p.run_id) AS n
                                        FROM docket.claim_tasks('pw', 5000, 600000) p) p
             JOIN children c USING (n),
             LATERAL docket.await_task(p.run_id, p.claim_token, 'join', c.run_id) w
            WHERE w.status = 'suspended'), 5000, 'fixture: 5,000 parents await a child each');
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 20)), 'pq2',
  options => (SELECT jsonb_agg(jsonb_build_object('idempotency_key', 'k' || g)) FROM generate_series(1, 20) g));

-- In small calls.
SELECT pg_temp.mark_reads();
CREATE TEMP TABLE few AS SELECT run_id, claim_token FROM held ORDER BY run_id LIMIT 20;
SELECT is((SELECT count(*)::int FROM few f, LATERAL docket.complete_steps(ARRAY[f.run_id], ARRAY[f.claim_token],
             '{b}', '{2}') s WHERE s.outcome = 'stored'), 20, 'complete_steps, one step per call: stored');
SELECT is((SELECT count(*)::int FROM few f, LATERAL docket.complete_steps(ARRAY[f.run_id], ARRAY[f.claim_token],
             '{a}', '{3}') s WHERE s.outcome = 'kept'), 20, 'one step per call: kept');
SELECT is((SELECT count(*)::int FROM few f, LATERAL docket.step_states(f.run_id, f.claim_token)), 40,
  'step_states of each');
SELECT is((SELECT count(*)::int FROM few f, LATERAL docket.heartbeat(f.run_id, f.claim_token, 60000)), 20,
  'heartbeat of each');
SELECT is((SELECT count(*)::int FROM (SELECT * FROM few LIMIT 10) f,
             LATERAL docket.complete_tasks(ARRAY[f.run_id], ARRAY[f.claim_token], '{null}') c
            WHERE c.outcome = 'completed'), 10, 'complete_tasks, one task per call');
SELECT is((SELECT count(*)::int FROM (SELECT * FROM few OFFSET 10) f,
             LATERAL docket.fail_task(f.run_id, f.claim_token, '"e"')), 10, 'fail_task of the other ten');
SELECT is((SELECT count(*)::int FROM generate_series(1, 20) g,
             LATERAL docket.claim_tasks('pq2', 1 + 0 * g, 60000) c), 20, 'claim_tasks, one task per call');
SELECT is((SELECT count(*)::int FROM generate_series(1, 20) g,
             LATERAL docket.spawn_task('job', '{}', 'pq2', options => jsonb_build_object('idempotency_key', 'k' || g)) s
            WHERE NOT s.created), 20, 'spawn_task with a taken idempotency key, one per call');
SELECT is((SELECT count(docket.commit('tenantless',
                    jsonb_build_object('id', c.run_id, 'graph_id', 'g', 'graph_hash', 'h1',
                                       'status', 'completed', 'checkpoint_seq', c.checkpoint_seq + 1,
                                       'started_at', '2040-01-01T00:00:00Z'),
                    c.checkpoint_seq, c.claim_token, 'run_completed', 'terminal'))::int
             FROM generate_series(1, 20) g, LATERAL docket.claim_due(claim_limit => 1 + 0 * g, queue => 'prq') c
            WHERE c.outcome = 'lease'),
  20, 'claim_due and commit, one run per call');

SELECT is(pg_temp.reads_over(1000), '',
  'the small calls read at most 1,000 entries of any index (a whole table is 5,000)');
SELECT is(pg_temp.new_seq_scans(), '',
  'no statement read docket.runs, tasks, task_steps, run_events or run_heads sequentially');

SELECT * FROM finish();
ROLLBACK;
