-- Plans made while docket's tables look empty (pg/planning.hpp): a backend
-- keeps each statement's plan from its first execution, so a pool started on
-- an empty database, or after an ANALYZE of empty tables, must not keep plans
-- that read docket.runs, docket.tasks or docket.task_steps sequentially (each
-- call would then read whole tables as they grow). Here every table is emptied
-- and analyzed inside the test's transaction, so its statistics say empty when
-- this backend plans; then the worker path runs on more rows than those
-- statistics promise, and no statement may have scanned those tables
-- sequentially (pg_stat_xact_user_tables counts this transaction's scans).
BEGIN;
SELECT plan(9);

SET LOCAL docket.fake_now = '2040-01-01 00:00:00+00';
DELETE FROM docket.task_waits;
DELETE FROM docket.runs;  -- with their heads, task rows, steps and events (runs_deleted)
ANALYZE docket.runs, docket.run_heads, docket.run_events, docket.tasks, docket.task_steps,
  docket.task_waits;
SELECT is((SELECT reltuples FROM pg_class WHERE oid = 'docket.runs'::regclass), 0::real,
  'fixture: the statistics say docket.runs is empty');

CREATE TEMP TABLE seq0 AS
  SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE schemaname = 'docket';
CREATE FUNCTION pg_temp.new_seq_scans() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(s.relname || ' +' || (s.seq_scan - coalesce(z.seq_scan, 0)), ', '
                             ORDER BY s.relname), '')
    FROM pg_stat_xact_user_tables s LEFT JOIN seq0 z USING (relname)
   WHERE s.schemaname = 'docket' AND s.seq_scan > coalesce(z.seq_scan, 0)
     AND s.relname IN ('runs', 'tasks', 'task_steps', 'run_events', 'run_heads') $$;

-- The task path: spawn, claim, steps, completion, failure, heartbeat.
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 300)), 'pq');
CREATE TEMP TABLE held AS SELECT run_id, claim_token FROM docket.claim_tasks('pq', 200, 60000);
SELECT is((SELECT count(*)::int FROM held), 200, 'claim_tasks leased 200 tasks');
SELECT is((SELECT count(*)::int FROM docket.complete_steps(
             ARRAY(SELECT run_id FROM held ORDER BY run_id),
             ARRAY(SELECT claim_token FROM held ORDER BY run_id),
             ARRAY(SELECT 'a' FROM held), ARRAY(SELECT '1'::jsonb FROM held))
           WHERE outcome = 'stored'), 200, 'complete_steps stored a step of each');
SELECT is((SELECT count(*)::int FROM docket.complete_steps(
             ARRAY(SELECT run_id FROM held ORDER BY run_id),
             ARRAY(SELECT claim_token FROM held ORDER BY run_id),
             ARRAY(SELECT 'a' FROM held), ARRAY(SELECT '2'::jsonb FROM held))
           WHERE outcome = 'kept'), 200, 'and kept them when stored again');
SELECT is((SELECT count(*)::int FROM held h,
             LATERAL docket.heartbeat(h.run_id, h.claim_token, 60000)), 200, 'heartbeat of each');
SELECT is((SELECT count(*)::int FROM docket.complete_tasks(
             ARRAY(SELECT run_id FROM held ORDER BY run_id LIMIT 150),
             ARRAY(SELECT claim_token FROM held ORDER BY run_id LIMIT 150),
             ARRAY(SELECT 'null'::jsonb FROM generate_series(1, 150)))
           WHERE outcome = 'completed'), 150, 'complete_tasks completed 150');
SELECT is((SELECT count(*)::int FROM (SELECT run_id, claim_token FROM held ORDER BY run_id OFFSET 150) h,
             LATERAL docket.fail_task(h.run_id, h.claim_token, '"e"')), 50, 'fail_task of the rest');

-- The run store: claim_due and commit.
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');
SELECT count(docket.insert_run('tenantless',
         jsonb_build_object('id', 'pr' || g, 'graph_id', 'g', 'graph_hash', 'h1', 'status', 'running',
                            'checkpoint_seq', 1, 'started_at', '2040-01-01T00:00:00Z'),
         'run_initialized', '2039-12-31 23:00:00+00', 'prq'))
  FROM generate_series(1, 100) g;
SELECT is((SELECT count(docket.commit('tenantless',
                    jsonb_build_object('id', c.run_id, 'graph_id', 'g', 'graph_hash', 'h1',
                                       'status', 'completed', 'checkpoint_seq', c.checkpoint_seq + 1,
                                       'started_at', '2040-01-01T00:00:00Z'),
                    c.checkpoint_seq, c.claim_token, 'run_completed', 'terminal'))::int
             FROM docket.claim_due(claim_limit => 100, queue => 'prq') c WHERE c.outcome = 'lease'),
  100, 'claim_due leased and commit completed 100 runs');

SELECT is(pg_temp.new_seq_scans(), '',
  'no statement read docket.runs, tasks, task_steps, run_events or run_heads sequentially');

SELECT * FROM finish();
ROLLBACK;
