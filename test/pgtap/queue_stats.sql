-- queue_stats: exact per-queue counts of unfinished tasks, each counted once by
-- precedence (poisoned > running > waiting > due > scheduled), the oldest due
-- time, and the completions and failures of the last minute by docket.now();
-- scope-filtered; served by partial indexes, never a scan of finished history.
-- Fixtures are built with the real task calls and counted by hand. The clock
-- is docket.fake_now in 2041.
BEGIN;
SELECT plan(33);
SET LOCAL timezone = 'UTC';

-------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------
-- t(s): s seconds after 2041-01-01 00:00:00 UTC; at(s) moves docket.now() there.
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS
  $$ SELECT '2041-01-01 00:00:00+00'::timestamptz + round(s * 1e6)::bigint * interval '1 microsecond' $$;
CREATE FUNCTION pg_temp.at(s double precision) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('docket.fake_now', docket._iso(pg_temp.t(s)), true);
END $$;
CREATE TEMP TABLE ids (name text PRIMARY KEY, run_id text NOT NULL, token uuid);
-- spawn(n, q, s[, scope, opts]): at t(s), spawns task n into queue q.
CREATE FUNCTION pg_temp.spawn(n text, q text, s double precision,
                              scope docket.scope DEFAULT 'tenantless',
                              opts jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.at(s);
  INSERT INTO ids (name, run_id)
    SELECT n, x.run_id FROM docket.spawn_task('job_' || n, '{}', q, scope, opts) x;
END $$;
CREATE FUNCTION pg_temp.id(n text) RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT run_id FROM ids WHERE name = n $$;
CREATE FUNCTION pg_temp.tok(n text) RETURNS uuid LANGUAGE sql STABLE AS
  $$ SELECT token FROM ids WHERE name = n $$;
-- claim(q, s[, lim, lease, mca]): at t(s), claims from queue q; keeps the tokens;
-- returns the names claimed, sorted.
CREATE FUNCTION pg_temp.claim(q text, s double precision, lim int DEFAULT 1,
                              lease bigint DEFAULT 3600000, mca int DEFAULT 10) RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE out text;
BEGIN
  PERFORM pg_temp.at(s);
  WITH c AS (SELECT x.*
               FROM docket.claim_tasks(q, lim, lease, mca, pg_temp.t(s)) x),
       u AS (UPDATE ids SET token = c.claim_token FROM c WHERE ids.run_id = c.run_id
             RETURNING ids.name)
  SELECT coalesce(string_agg(u.name, ' ' ORDER BY u.name), '') INTO out FROM u;
  RETURN out;
END $$;
-- stats(scope, s): queue_stats at t(s) for this file's queues, as text rows.
CREATE FUNCTION pg_temp.stats(scope docket.scope, s double precision) RETURNS SETOF text
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.at(s);
  RETURN QUERY
    SELECT format('%s due=%s scheduled=%s running=%s waiting=%s poisoned=%s oldest=%s completed=%s failed=%s',
                  q.queue, q.due, q.scheduled, q.running, q.waiting, q.poisoned,
                  coalesce(extract(epoch FROM q.oldest_due_at - pg_temp.t(0))::text, '-'),
                  q.completed_last_minute, q.failed_last_minute)
      FROM docket.queue_stats(scope) q WHERE q.queue LIKE 'qs\_%' ORDER BY q.queue;
END $$;
\ir lib/err.sql

-------------------------------------------------------------------------------
-- Empty
-------------------------------------------------------------------------------
SELECT is_empty($$SELECT * FROM pg_temp.stats('system', 0)$$, 'no tasks: no rows');
SELECT is(pg_temp.err($$SELECT * FROM docket.queue_stats(NULL)$$),
  '22023 bad_argument: scope must not be NULL', 'a NULL scope raises 22023');
SELECT is((SELECT count(*) FROM docket.queue_stats()), (SELECT count(*) FROM docket.queue_stats('system')),
  'the default scope is system');

-------------------------------------------------------------------------------
-- Fixtures: queue qs_a (tenantless), queue qs_b (a tenantless child, a tenant:x task)
-------------------------------------------------------------------------------
-- Finished before the window: completed at t(-100).
SELECT pg_temp.spawn('old', 'qs_a', -100);
SELECT is(pg_temp.claim('qs_a', -100), 'old', 'old claimed');
SELECT docket.complete_task(pg_temp.id('old'), pg_temp.tok('old'), '{}');
-- poisoned: its lease expires with no attempt left.
SELECT pg_temp.spawn('poison', 'qs_a', 10);
SELECT is(pg_temp.claim('qs_a', 10, lease => 1000, mca => 1), 'poison', 'poison claimed');
SELECT is(pg_temp.claim('qs_a', 12, lease => 1000, mca => 1), '', 'the expired claim poisons it');
-- running: claimed with an hour's lease.
SELECT pg_temp.spawn('run', 'qs_a', 20);
SELECT is(pg_temp.claim('qs_a', 20), 'run', 'run claimed');
-- scheduled: asleep until t(5000).
SELECT pg_temp.spawn('sleep', 'qs_a', 21);
SELECT is(pg_temp.claim('qs_a', 21), 'sleep', 'sleep claimed');
SELECT status FROM docket.sleep_until(pg_temp.id('sleep'), pg_temp.tok('sleep'), 'nap', pg_temp.t(5000));
-- waiting: on an event (no timeout), on an event with a timeout at t(33), on a child.
SELECT pg_temp.spawn('event', 'qs_a', 22);
SELECT is(pg_temp.claim('qs_a', 22), 'event', 'event claimed');
SELECT status FROM docket.await_event(pg_temp.id('event'), pg_temp.tok('event'), 'e', 'never');
SELECT pg_temp.spawn('timed', 'qs_a', 23);
SELECT is(pg_temp.claim('qs_a', 23), 'timed', 'timed claimed');
SELECT status FROM docket.await_event(pg_temp.id('timed'), pg_temp.tok('timed'), 'e', 'never', 10000);
SELECT pg_temp.spawn('parent', 'qs_a', 24);
SELECT is(pg_temp.claim('qs_a', 24), 'parent', 'parent claimed');
SELECT pg_temp.spawn('child', 'qs_b', 24);
SELECT status FROM docket.await_task(pg_temp.id('parent'), pg_temp.tok('parent'), 'j', pg_temp.id('child'));
-- scheduled: spawned with a delay of an hour.
SELECT pg_temp.spawn('delayed', 'qs_a', 25, opts => '{"delay_ms": 3600000}');
-- completed at t(26), failed for good at t(27), cancelled at t(28) (counted nowhere).
SELECT pg_temp.spawn('ok', 'qs_a', 26);
SELECT is(pg_temp.claim('qs_a', 26), 'ok', 'ok claimed');
SELECT docket.complete_task(pg_temp.id('ok'), pg_temp.tok('ok'), '{}');
SELECT pg_temp.spawn('bad', 'qs_a', 27);
SELECT is(pg_temp.claim('qs_a', 27), 'bad', 'bad claimed');
SELECT disposition FROM docket.fail_task(pg_temp.id('bad'), pg_temp.tok('bad'), '{"message": "no"}', false);
SELECT pg_temp.spawn('gone', 'qs_a', 28);
SELECT docket.cancel_task('tenantless', pg_temp.id('gone'), 'test');
-- due: two tasks of qs_a, and a tenant:x task of qs_b.
SELECT pg_temp.spawn('due1', 'qs_a', 30);
SELECT pg_temp.spawn('due2', 'qs_a', 31);
SELECT pg_temp.spawn('x1', 'qs_b', 32, 'tenant:x');

-------------------------------------------------------------------------------
-- Counts by hand
-------------------------------------------------------------------------------
-- At t(40) 'timed' is past its timeout, due again, but still waiting: waiting
-- comes before due. qs_b: the child (due since t(24)) and x1.
SELECT results_eq($$SELECT * FROM pg_temp.stats('system', 40)$$,
  ARRAY['qs_a due=2 scheduled=2 running=1 waiting=3 poisoned=1 oldest=30.000000 completed=1 failed=1',
        'qs_b due=2 scheduled=0 running=0 waiting=0 poisoned=0 oldest=24.000000 completed=0 failed=0'],
  'system: every state of two queues, counted once');
SELECT is((SELECT wake_at <= pg_temp.t(40) AND document -> 'waiting' ->> 'kind' = 'event'
             FROM docket.runs WHERE run_id = pg_temp.id('timed')), true,
  'timed is due by its wake time and waiting by its document');
-- Agrees with task_result's state of each task (pending = due, sleeping = scheduled).
SELECT results_eq(
  $$SELECT replace(replace(docket.task_result('system', i.run_id) ->> 'state', 'pending', 'due'), 'sleeping', 'scheduled') AS state,
           count(*) FROM ids i
     WHERE docket.task_result('system', i.run_id) ->> 'state' NOT IN ('completed', 'failed', 'cancelled')
       AND (docket.task_result('system', i.run_id) ->> 'queue') = 'qs_a'
     GROUP BY 1 ORDER BY 1$$,
  $$VALUES ('due', 2::bigint), ('poisoned', 1), ('running', 1), ('scheduled', 2), ('waiting', 3)$$,
  'the counts agree with task_result''s states');

-- Scopes: tenantless sees its own tasks, tenant:x only x1, tenant:y nothing.
SELECT results_eq($$SELECT * FROM pg_temp.stats('tenantless', 40)$$,
  ARRAY['qs_a due=2 scheduled=2 running=1 waiting=3 poisoned=1 oldest=30.000000 completed=1 failed=1',
        'qs_b due=1 scheduled=0 running=0 waiting=0 poisoned=0 oldest=24.000000 completed=0 failed=0'],
  'tenantless scope: its tasks only');
SELECT results_eq($$SELECT * FROM pg_temp.stats('tenant:x', 40)$$,
  ARRAY['qs_b due=1 scheduled=0 running=0 waiting=0 poisoned=0 oldest=32.000000 completed=0 failed=0'],
  'tenant scope: its tasks only');
SELECT is_empty($$SELECT * FROM pg_temp.stats('tenant:y', 40)$$, 'another tenant: no rows');

-- Running before waiting: claiming at t(41) takes due1, due2 and timed (its
-- document still says waiting until its handler settles the step).
SELECT is(pg_temp.claim('qs_a', 41, lim => 10), 'due1 due2 timed', 'the due tasks and timed claimed');
SELECT results_eq($$SELECT * FROM pg_temp.stats('system', 41)$$,
  ARRAY['qs_a due=0 scheduled=2 running=4 waiting=2 poisoned=1 oldest=- completed=1 failed=1',
        'qs_b due=2 scheduled=0 running=0 waiting=0 poisoned=0 oldest=24.000000 completed=0 failed=0'],
  'a claimed task is running, whatever its document says');

-- The last minute is (now - 1 minute, now]: ok finished at t(26), bad at t(27).
SELECT results_eq($$SELECT * FROM pg_temp.stats('system', 85.999)$$,
  ARRAY['qs_a due=0 scheduled=2 running=4 waiting=2 poisoned=1 oldest=- completed=1 failed=1',
        'qs_b due=2 scheduled=0 running=0 waiting=0 poisoned=0 oldest=24.000000 completed=0 failed=0'],
  'just under a minute after: both counted');
SELECT results_eq($$SELECT * FROM pg_temp.stats('system', 86)$$,
  ARRAY['qs_a due=0 scheduled=2 running=4 waiting=2 poisoned=1 oldest=- completed=0 failed=1',
        'qs_b due=2 scheduled=0 running=0 waiting=0 poisoned=0 oldest=24.000000 completed=0 failed=0'],
  'exactly a minute after ok: ok no longer counted');
SELECT results_eq($$SELECT * FROM pg_temp.stats('system', 87)$$,
  ARRAY['qs_a due=0 scheduled=2 running=4 waiting=2 poisoned=1 oldest=- completed=0 failed=0',
        'qs_b due=2 scheduled=0 running=0 waiting=0 poisoned=0 oldest=24.000000 completed=0 failed=0'],
  'a minute after bad: neither');
SELECT results_eq($$SELECT * FROM pg_temp.stats('system', 25)$$,
  ARRAY['qs_a due=0 scheduled=2 running=4 waiting=2 poisoned=1 oldest=- completed=0 failed=0',
        'qs_b due=1 scheduled=1 running=0 waiting=0 poisoned=0 oldest=24.000000 completed=0 failed=0'],
  'a clock before the completions counts none of them; x1 is not due yet');

-------------------------------------------------------------------------------
-- Served by indexes: never a scan of finished history
-------------------------------------------------------------------------------
-- 30,000 finished runs over the day before (hundreds of pages), some in the window.
INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash, status, checkpoint_seq,
                         checkpoint_type, started_at, updated_at, document)
  SELECT 'hist-' || i, CASE WHEN i % 2 = 0 THEN 'x' END, 'qs_h' || (i % 3), 'job_h', 'task',
         (ARRAY['completed', 'failed', 'cancelled'])[i % 3 + 1], 1, 'run_completed',
         pg_temp.t(-86400), pg_temp.t(-86400 + i * 2.9), ('{"padding": "' || repeat('x', 200) || '"}')::jsonb
    FROM generate_series(1, 30000) i;
ANALYZE docket.runs;

-- The function's own statement (from its source, its variables as parameters),
-- as PL/pgSQL caches it: a generic plan. The plpgsql body is
-- docket._queue_stats_impl (docket.queue_stats is its guarded wrapper).
CREATE FUNCTION pg_temp.body() RETURNS text LANGUAGE sql AS $$
  SELECT regexp_replace(regexp_replace(regexp_replace(
           substring(prosrc FROM 'RETURN QUERY(.*?);\s*END'),
           '\mt\M', '$1', 'g'), '\meveryone\M', '$2', 'g'), '\mtenant\M', '$3', 'g')
    FROM pg_proc WHERE oid = 'docket._queue_stats_impl(docket.scope)'::regprocedure $$;
SELECT ok(pg_temp.body() LIKE '%$1%$2%$3%', 'the statement is found in the function''s source');
SELECT lives_ok(format('PREPARE stats_q (timestamptz, boolean, text) AS %s', pg_temp.body()), 'it prepares');
SET LOCAL plan_cache_mode = force_generic_plan;
CREATE FUNCTION pg_temp.nodes(args text) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE p json;
BEGIN
  EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) EXECUTE stats_q ' || args INTO p;
  RETURN QUERY SELECT n FROM jsonb_path_query(p::jsonb, 'strict $.** ? (exists (@."Node Type"))') n;
END $$;
-- The due count may read either ready index (with or without the queue key
-- first): which one follows the table's statistics.
SELECT is((SELECT string_agg(DISTINCT regexp_replace(n ->> 'Index Name', '^runs_ready(_queue)?$', 'runs_ready*'), ',')
             FROM pg_temp.nodes($$('2041-01-01', false, 'x')$$) n),
  'runs_claimed,runs_finished,runs_poisoned,runs_ready*,runs_waiting',
  'the generic plan reads the five partial indexes');
-- A bitmap heap scan is allowed: it reads only what its bitmap index scans (on
-- the partial indexes, checked by name) found. Which of the two the planner
-- picks follows the table's size, which earlier suites' dead rows change.
SELECT is((SELECT count(*) FROM pg_temp.nodes($$('2041-01-01', true, NULL)$$) n
            WHERE n ->> 'Node Type' = 'Seq Scan'
               OR (n ->> 'Node Type' LIKE '%Index%' AND n ->> 'Index Name' NOT LIKE 'runs\_%')),
  0::bigint, 'no sequential scan, and every index scan on one of the partial indexes');
SELECT is((SELECT n ->> 'Index Cond' FROM pg_temp.nodes($$('2041-01-01', true, NULL)$$) n
            WHERE n ->> 'Index Name' = 'runs_finished'),
  '((updated_at > ($1 - ''00:01:00''::interval)) AND (updated_at <= $1))',
  'finished runs: only the last minute''s range of runs_finished');
RESET plan_cache_mode;

-- The real calls: buffers read from docket.runs and its indexes stay a handful
-- while the table spans hundreds of pages (the first calls settle the plan cache).
CREATE FUNCTION pg_temp.blocks() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint FROM pg_class c
   WHERE c.oid = 'docket.runs'::regclass
      OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = 'docket.runs'::regclass) $$;
CREATE FUNCTION pg_temp.cost(scope docket.scope) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE before bigint;
BEGIN
  FOR i IN 1 .. 6 LOOP
    PERFORM * FROM docket.queue_stats(scope);
  END LOOP;
  before := pg_temp.blocks();
  PERFORM * FROM docket.queue_stats(scope);
  RETURN pg_temp.blocks() - before;
END $$;
SELECT cmp_ok((SELECT sum(relpages)::bigint FROM pg_class WHERE oid = 'docket.runs'::regclass), '>', 500::bigint,
  'the finished history spans hundreds of pages');
SELECT pg_temp.at(87);
SELECT cmp_ok(pg_temp.cost('system'), '<', 60::bigint, 'system: a handful of buffers');
SELECT cmp_ok(pg_temp.cost('tenant:x'), '<', 60::bigint, 'tenant:x: a handful of buffers');

SELECT * FROM finish();
ROLLBACK;
