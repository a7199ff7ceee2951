-- Finishing and steering tasks: complete_task, fail_task (every retry policy
-- kind, jitter bounds, the attempt budget), cancel_task, task_result in every
-- state, defer_task. Times are in 2040, passed as `now` and set as docket.fake_now.
BEGIN;
SELECT plan(165);

CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2040-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
CREATE FUNCTION pg_temp.at(s double precision) RETURNS text
  LANGUAGE sql AS $$ SELECT set_config('docket.fake_now', pg_temp.t(s)::text, true) $$;
-- Seconds since t(0) of a timestamp, and milliseconds between two.
CREATE FUNCTION pg_temp.secs(ts timestamptz) RETURNS double precision
  LANGUAGE sql IMMUTABLE AS $$ SELECT extract(epoch FROM ts - pg_temp.t(0))::double precision $$;
CREATE FUNCTION pg_temp.ms(a timestamptz, b timestamptz) RETURNS bigint
  LANGUAGE sql IMMUTABLE AS $$ SELECT round(extract(epoch FROM b - a) * 1000)::bigint $$;

CREATE TEMP TABLE ids (name text PRIMARY KEY, run_id text, token uuid);
CREATE FUNCTION pg_temp.spawn(name text, q text, opts jsonb DEFAULT '{}', owner text DEFAULT 'tenantless',
                              task text DEFAULT 'job') RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE id text;
BEGIN
  SELECT s.run_id INTO STRICT id FROM docket.spawn_task(task, '{}', q, owner::docket.scope, opts) s;
  INSERT INTO ids VALUES (name, id, NULL);
  RETURN id;
END $$;
CREATE FUNCTION pg_temp.id(name text) RETURNS text
  LANGUAGE sql AS $$ SELECT run_id FROM ids WHERE ids.name = id.name $$;
CREATE FUNCTION pg_temp.tok(name text) RETURNS uuid
  LANGUAGE sql AS $$ SELECT token FROM ids WHERE ids.name = tok.name $$;
CREATE FUNCTION pg_temp.run(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT to_jsonb(r) - 'claim_started_at' - 'claim_renewed_at' - 'event_seq' - 'completed_seq' - 'completed_at' - 'claimed_seq' - 'claimed_attempt' FROM docket.runs r WHERE r.run_id = pg_temp.id(name) $$;
-- The run's document as its readers see it (a task's row stores only what its
-- columns do not say: test/pgtap/task_document.sql).
CREATE FUNCTION pg_temp.doc(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT docket.fetch_run('system', pg_temp.id(name)) $$;
CREATE FUNCTION pg_temp.result(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT docket.task_result('system', pg_temp.id(name)) $$;
CREATE FUNCTION pg_temp.state(name text) RETURNS text
  LANGUAGE sql AS $$ SELECT pg_temp.result(name) ->> 'state' $$;
CREATE FUNCTION pg_temp.snap(name text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'run', pg_temp.run(name),
    'task', (SELECT to_jsonb(t) FROM docket.tasks t WHERE t.run_id = pg_temp.id(name)),
    'steps', (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.step_name), '[]')
                FROM docket.task_steps s WHERE s.run_id = pg_temp.id(name)),
    'waits', (SELECT coalesce(jsonb_agg(to_jsonb(w) ORDER BY w.step_name), '[]')
                FROM docket.task_waits w WHERE w.run_id = pg_temp.id(name))) $$;
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);

CREATE TEMP TABLE last (run_id text, claim_token uuid, task_name text, params jsonb, headers jsonb,
                        attempt int, checkpoint_seq bigint, wake_reason text, steps jsonb,
                        ord bigint);
-- Claims queue q at t(s) (also docket.now()); records tokens; returns
-- 'name:wake_reason:attempt ...' in returned order ('' for none).
CREATE FUNCTION pg_temp.claim(q text, s double precision, lim int DEFAULT 100,
                              lease bigint DEFAULT 30000, mca int DEFAULT 10) RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE out text;
BEGIN
  PERFORM pg_temp.at(s);
  DELETE FROM last;
  INSERT INTO last
    SELECT c.*, row_number() OVER () FROM docket.claim_tasks(q, lim, lease, mca, pg_temp.t(s)) c;
  UPDATE ids SET token = l.claim_token FROM last l WHERE ids.run_id = l.run_id;
  SELECT coalesce(string_agg(coalesce(i.name, l.run_id) || ':' || l.wake_reason || ':' || l.attempt,
                             ' ' ORDER BY l.ord), '')
    INTO out FROM last l LEFT JOIN ids i ON i.run_id = l.run_id;
  RETURN out;
END $$;
-- Fails the named task's attempt at t(s): 'disposition:delay_ms' (delay empty without retry).
CREATE FUNCTION pg_temp.fail(name text, s double precision, err jsonb DEFAULT '{"m": "boom"}') RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE f record;
BEGIN
  PERFORM pg_temp.at(s);
  SELECT * INTO STRICT f FROM docket.fail_task(pg_temp.id(name), pg_temp.tok(name), err);
  RETURN f.disposition || ':' || coalesce(pg_temp.ms(pg_temp.t(s), f.retry_at)::text, '');
END $$;
-- Runs the named task (alone in queue q) from t(s) until it stops retrying: each
-- round claims it when due and fails the attempt at once. Returns the delays.
CREATE FUNCTION pg_temp.cycle(name text, q text, s double precision) RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE
  out text := '';
  f record;
  got text;
BEGIN
  LOOP
    got := pg_temp.claim(q, s);
    IF got NOT LIKE name || ':%' THEN
      RETURN out || ' (not claimed: ' || got || ')';
    END IF;
    SELECT * INTO STRICT f FROM docket.fail_task(pg_temp.id(name), pg_temp.tok(name), '"e"');
    out := ltrim(out || ' ' || f.disposition || ':' || coalesce(pg_temp.ms(pg_temp.t(s), f.retry_at)::text, ''));
    EXIT WHEN f.retry_at IS NULL;
    s := pg_temp.secs(f.retry_at);
  END LOOP;
  RETURN out;
END $$;
-- For jitter: spawns n tasks with `opts` in queue q, claims them at t(s), fails each
-- once, and returns the retry delays in ms.
CREATE FUNCTION pg_temp.delays(q text, n int, opts jsonb, s double precision) RETURNS bigint[]
  LANGUAGE plpgsql AS $$
DECLARE
  i int;
  out bigint[] := '{}';
  l record;
BEGIN
  PERFORM pg_temp.at(s);
  FOR i IN 1 .. n LOOP
    PERFORM pg_temp.spawn(q || '-' || i, q, opts);
  END LOOP;
  PERFORM pg_temp.claim(q, s);
  FOR l IN SELECT * FROM last LOOP
    out := out || pg_temp.ms(pg_temp.t(s),
                             (SELECT f.retry_at FROM docket.fail_task(l.run_id, l.claim_token, '"e"') f));
  END LOOP;
  RETURN out;
END $$;

SELECT pg_temp.at(0);
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');
SELECT docket.insert_run('tenantless',
  '{"id": "plain-run", "graph_id": "g", "graph_hash": "h1", "status": "running", "checkpoint_seq": 1, "started_at": "2040-01-01T00:00:00Z"}',
  'run_initialized', pg_temp.t(0), 'q-plain');

-------------------------------------------------------------------------------
-- complete_task
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('c1', 'qc1');
SELECT is(pg_temp.claim('qc1', 0), 'c1:new:1', 'complete_task: the task is claimed');
SELECT pg_temp.at(1);
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('c1'), pg_temp.tok('c1'), '{"url": "s3://x"}')$$,
  'complete_task with a result');
SELECT is(pg_temp.run('c1') - 'run_id' - 'document' - 'started_at',
  jsonb_build_object('tenant_id', NULL, 'queue', 'qc1', 'graph_id', 'job', 'graph_hash', 'task',
    'status', 'completed', 'checkpoint_seq', 1, 'checkpoint_type', 'run_completed',
    'updated_at', pg_temp.t(1), 'wake_at', NULL, 'claim_token', NULL, 'claimed_at', NULL,
    'claim_attempts', 0, 'claim_abandons', 0, 'poisoned_at', NULL, 'poison_reason', NULL,
    'deadline_at', NULL, 'lease_ms', 30000),
  'the run: completed (run_completed, seq 1), no claim, no wake, updated at now');
SELECT is(pg_temp.doc('c1'),
  jsonb_build_object('id', pg_temp.id('c1'), 'graph_id', 'job', 'graph_hash', 'task', 'status', 'completed',
    'checkpoint_seq', 1, 'started_at', '2040-01-01T00:00:00.000000Z', 'attempt', 1, 'wake_reason', 'new',
    'result', '{"url": "s3://x"}'::jsonb),
  'the document carries the result');
SELECT is(pg_temp.result('c1'),
  '{"state": "completed", "result": {"url": "s3://x"}, "error": null, "attempts": 1, "task_name": "job", "queue": "qc1"}'::jsonb,
  'task_result: completed with its result');
INSERT INTO snaps VALUES ('c1', pg_temp.snap('c1'));
SELECT throws_ok($$SELECT docket.complete_task(pg_temp.id('c1'), pg_temp.tok('c1'), '2')$$, 'DK001',
  'stale_fence: task ' || pg_temp.id('c1') || ' is not held by this claim token',
  'completing twice: the token no longer holds the task (DK001)');
SELECT throws_ok($$SELECT * FROM docket.fail_task(pg_temp.id('c1'), pg_temp.tok('c1'), '"late"')$$, 'DK001',
  'stale_fence: task ' || pg_temp.id('c1') || ' is not held by this claim token',
  'failing a completed task: DK001');
SELECT is(pg_temp.snap('c1'), (SELECT s FROM snaps WHERE name = 'c1'), 'and the completed task is unchanged');

SELECT pg_temp.spawn('c2', 'qc2');
SELECT pg_temp.claim('qc2', 2);
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('c2'), pg_temp.tok('c2'))$$, 'complete_task without a result');
SELECT is(pg_temp.result('c2') - 'task_name' - 'queue',
  '{"state": "completed", "result": null, "error": null, "attempts": 1}'::jsonb, 'the result is null');

SELECT pg_temp.spawn('c3', 'qc3');
SELECT pg_temp.claim('qc3', 3);
INSERT INTO snaps VALUES ('c3', pg_temp.snap('c3'));
SELECT throws_ok($$SELECT docket.complete_task(NULL, pg_temp.tok('c3'))$$, '22023',
  'bad_argument: run_id must not be NULL', 'complete_task: NULL run_id');
SELECT throws_ok($$SELECT docket.complete_task(pg_temp.id('c3'), NULL)$$, '22023',
  'bad_argument: claim_token must not be NULL', 'complete_task: NULL claim_token');
SELECT throws_ok($$SELECT docket.complete_task('nope', pg_temp.tok('c3'))$$, 'DK003',
  'not_found: task nope does not exist', 'complete_task: an unknown task (DK003)');
SELECT throws_ok($$SELECT docket.complete_task('plain-run', pg_temp.tok('c3'))$$, 'DK003',
  'not_found: task plain-run does not exist', 'complete_task: a run that is not a task (DK003)');
SELECT throws_ok($$SELECT docket.complete_task(pg_temp.id('c3'), gen_random_uuid())$$, 'DK001',
  'stale_fence: task ' || pg_temp.id('c3') || ' is not held by this claim token', 'complete_task: another token (DK001)');
SELECT is(pg_temp.snap('c3'), (SELECT s FROM snaps WHERE name = 'c3'), 'the rejected calls changed nothing');

-- max_duration_ms: a completion before the deadline counts, one after it does not.
SELECT pg_temp.at(10);
SELECT pg_temp.spawn('dl-ok', 'qdl-ok', '{"max_duration_ms": 1000}');
SELECT pg_temp.spawn('dl-late', 'qdl-late', '{"max_duration_ms": 1000}');
SELECT is(pg_temp.claim('qdl-ok', 10) || ' ' || pg_temp.claim('qdl-late', 10), 'dl-ok:new:1 dl-late:new:1',
  'two tasks with max_duration_ms 1 s start');
SELECT pg_temp.at(10.999);
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('dl-ok'), pg_temp.tok('dl-ok'), '1')$$,
  'complete_task before the deadline');
SELECT is(pg_temp.state('dl-ok'), 'completed', 'completes the task');
SELECT pg_temp.at(11);
INSERT INTO snaps VALUES ('dl-late', pg_temp.snap('dl-late'));
SELECT throws_ok($$SELECT docket.complete_task(pg_temp.id('dl-late'), pg_temp.tok('dl-late'), '1')$$, 'DK010',
  'cancelled: task ' || pg_temp.id('dl-late') || ' exceeded its max_duration_ms',
  'complete_task at the deadline is a fenced call past max_duration_ms: DK010');
SELECT is(pg_temp.snap('dl-late'), (SELECT s FROM snaps WHERE name = 'dl-late'), 'and changes nothing');

-------------------------------------------------------------------------------
-- fail_task: the retry policy and the attempt budget
-------------------------------------------------------------------------------
SELECT pg_temp.at(100);
SELECT pg_temp.spawn('f', 'qf', '{"max_attempts": 3, "retry": {"kind": "fixed", "base_ms": 2500}}');
SELECT is(pg_temp.claim('qf', 100), 'f:new:1', 'fail_task: attempt 1');
SELECT is(pg_temp.fail('f', 101, '{"m": "first"}'), 'retry_scheduled:2500', 'fails: retry in base_ms');
SELECT is(pg_temp.run('f') - 'run_id' - 'document' - 'started_at',
  jsonb_build_object('tenant_id', NULL, 'queue', 'qf', 'graph_id', 'job', 'graph_hash', 'task',
    'status', 'running', 'checkpoint_seq', 1, 'checkpoint_type', 'retried',
    'updated_at', pg_temp.t(101), 'wake_at', pg_temp.t(103.5), 'claim_token', NULL, 'claimed_at', NULL,
    'claim_attempts', 0, 'claim_abandons', 0, 'poisoned_at', NULL, 'poison_reason', NULL,
    'deadline_at', NULL, 'lease_ms', 30000),
  'the run: still running (retried, seq 1), claim released, due at retry_at');
SELECT is(pg_temp.doc('f'),
  jsonb_build_object('id', pg_temp.id('f'), 'graph_id', 'job', 'graph_hash', 'task', 'status', 'running',
    'checkpoint_seq', 1, 'started_at', '2040-01-01T00:01:40.000000Z', 'attempt', 2, 'wake_reason', 'retry',
    'last_error', '{"m": "first"}'::jsonb),
  'the document: attempt 2, wake_reason retry, last_error');
SELECT is(pg_temp.result('f'),
  jsonb_build_object('state', 'sleeping', 'result', NULL, 'error', '{"m": "first"}'::jsonb, 'attempts', 2,
    'task_name', 'job', 'queue', 'qf'),
  'task_result: sleeping until the retry, with the last error and attempt 2');
SELECT throws_ok($$SELECT * FROM docket.fail_task(pg_temp.id('f'), pg_temp.tok('f'), '"again"')$$, 'DK001',
  'stale_fence: task ' || pg_temp.id('f') || ' is not held by this claim token',
  'the failed attempt''s token is stale');
SELECT is(pg_temp.claim('qf', 103.5), 'f:retry:2', 'attempt 2');
SELECT is(pg_temp.fail('f', 104, '{"m": "second"}'), 'retry_scheduled:2500', 'fails: retry in base_ms again');
SELECT is(pg_temp.claim('qf', 106.5), 'f:retry:3', 'attempt 3 (the last)');
SELECT is(pg_temp.fail('f', 107, '{"m": "third"}'), 'failed:', 'fails: the budget is used up, failed');
SELECT is((SELECT (status, checkpoint_type::text, checkpoint_seq, wake_at IS NULL, claim_token IS NULL, updated_at = pg_temp.t(107))::text
             FROM docket.runs WHERE run_id = pg_temp.id('f')),
  '(failed,run_failed,3,t,t,t)', 'the run: failed (run_failed), no wake, no claim');
SELECT is(pg_temp.doc('f') -> 'error', '{"m": "third"}'::jsonb, 'the document carries the last error');
SELECT is(pg_temp.result('f'),
  jsonb_build_object('state', 'failed', 'result', NULL, 'error', '{"m": "third"}'::jsonb, 'attempts', 3,
    'task_name', 'job', 'queue', 'qf'),
  'task_result: failed, the last error, 3 attempts');
SELECT is(pg_temp.claim('qf', 199), '', 'a failed task is never claimed again');

SELECT pg_temp.spawn('f1', 'qf1', '{"max_attempts": 1}');
SELECT pg_temp.claim('qf1', 200);
SELECT is(pg_temp.fail('f1', 200), 'failed:', 'max_attempts 1: the first failure is final');

-- retry => false: failed for good, whatever attempts remain; NULL is a bad argument.
SELECT pg_temp.spawn('f2', 'qf2', '{"max_attempts": 5}');
SELECT pg_temp.claim('qf2', 200);
SELECT throws_ok($$SELECT * FROM docket.fail_task(pg_temp.id('f2'), pg_temp.tok('f2'), '"e"', NULL)$$, '22023',
  'bad_argument: retry must not be NULL', 'fail_task: NULL retry');
SELECT is((SELECT (f.disposition, f.retry_at)::text
             FROM docket.fail_task(pg_temp.id('f2'), pg_temp.tok('f2'), '"fatal"', retry => false) f),
  '(failed,)', 'retry => false: failed at once with 4 attempts left');
SELECT is((SELECT status || ' ' || (document -> 'error')::text FROM docket.runs WHERE run_id = pg_temp.id('f2')),
  'failed "fatal"', 'the run: failed with the error');

-- Every kind, every delay (each round claims the task when due and fails it).
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-none', 'qk-none', '{"max_attempts": 3, "retry": {"kind": "none"}}');
SELECT is(pg_temp.cycle('k-none', 'qk-none', 300), 'retry_scheduled:0 retry_scheduled:0 failed:',
  'kind none: retried at once, 3 attempts');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-fixed-cap', 'qk-fixed-cap', '{"max_attempts": 2, "retry": {"kind": "fixed", "base_ms": 2500, "max_ms": 1000}}');
SELECT is(pg_temp.cycle('k-fixed-cap', 'qk-fixed-cap', 300), 'retry_scheduled:1000 failed:',
  'kind fixed: max_ms caps base_ms');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-default', 'qk-default');
SELECT is(pg_temp.cycle('k-default', 'qk-default', 300),
  'retry_scheduled:1000 retry_scheduled:2000 retry_scheduled:4000 retry_scheduled:8000 failed:',
  'the default: exponential from 1000 ms, factor 2, 5 attempts');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-default-cap', 'qk-default-cap', '{"max_attempts": 11}');
SELECT is((SELECT retry FROM docket.tasks WHERE run_id = pg_temp.id('k-default-cap')), NULL,
  'no retry option: the task stores no policy (NULL: the defaults)');
SELECT is(pg_temp.cycle('k-default-cap', 'qk-default-cap', 300),
  'retry_scheduled:1000 retry_scheduled:2000 retry_scheduled:4000 retry_scheduled:8000 '
  'retry_scheduled:16000 retry_scheduled:32000 retry_scheduled:64000 retry_scheduled:128000 '
  'retry_scheduled:256000 retry_scheduled:300000 failed:',
  'the default policy of a NULL retry: capped at max_ms 300000');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-exp', 'qk-exp', '{"max_attempts": 6, "retry": {"kind": "exponential", "base_ms": 1000, "factor": 3, "max_ms": 20000}}');
SELECT is(pg_temp.cycle('k-exp', 'qk-exp', 300),
  'retry_scheduled:1000 retry_scheduled:3000 retry_scheduled:9000 retry_scheduled:20000 retry_scheduled:20000 failed:',
  'exponential: base_ms * factor^(attempt-1), capped at max_ms');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-frac', 'qk-frac', '{"retry": {"base_ms": 1000, "factor": 1.5}}');
SELECT is(pg_temp.cycle('k-frac', 'qk-frac', 300),
  'retry_scheduled:1000 retry_scheduled:1500 retry_scheduled:2250 retry_scheduled:3375 failed:',
  'exponential with a fractional factor');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-cap', 'qk-cap', '{"max_attempts": 4, "retry": {"base_ms": 100000}}');
SELECT is(pg_temp.cycle('k-cap', 'qk-cap', 300),
  'retry_scheduled:100000 retry_scheduled:200000 retry_scheduled:300000 failed:',
  'exponential without max_ms: capped at the default 300000 ms');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-huge', 'qk-huge', '{"max_attempts": 8, "retry": {"base_ms": 1000, "factor": 100, "max_ms": 31536000000}}');
SELECT is(pg_temp.cycle('k-huge', 'qk-huge', 300),
  'retry_scheduled:1000 retry_scheduled:100000 retry_scheduled:10000000 retry_scheduled:1000000000 '
  'retry_scheduled:31536000000 retry_scheduled:31536000000 retry_scheduled:31536000000 failed:',
  'factor 100 saturates at max_ms (one year) without overflow');
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('k-zero', 'qk-zero', '{"max_attempts": 2, "retry": {"base_ms": 0}}');
SELECT is(pg_temp.cycle('k-zero', 'qk-zero', 300), 'retry_scheduled:0 failed:', 'exponential from base_ms 0');

-- Jitter shortens each delay by up to that fraction, at random.
SELECT pg_temp.at(400);
CREATE TEMP TABLE jit AS
  SELECT unnest(pg_temp.delays('qj-fixed', 40, '{"max_attempts": 2, "retry": {"kind": "fixed", "base_ms": 10000, "jitter": 0.5}}', 400)) AS d;
SELECT is((SELECT count(*)::int FROM jit), 40, 'jitter: 40 tasks failed once');
SELECT is((SELECT min(d) >= 5000 AND max(d) <= 10000 FROM jit), true,
  'fixed 10000 ms with jitter 0.5: every delay within [5000, 10000]');
SELECT cmp_ok((SELECT count(DISTINCT d)::int FROM jit), '>', 1, 'and the delays differ');
CREATE TEMP TABLE jit1 AS
  SELECT unnest(pg_temp.delays('qj-full', 40, '{"max_attempts": 2, "retry": {"base_ms": 4000, "jitter": 1}}', 400)) AS d;
SELECT is((SELECT min(d) >= 0 AND max(d) <= 4000 FROM jit1), true,
  'exponential 4000 ms with jitter 1: every delay within [0, 4000]');
SELECT cmp_ok((SELECT count(DISTINCT d)::int FROM jit1), '>', 1, 'and the delays differ');
-- second attempt of a jittered exponential policy
SELECT pg_temp.spawn('j2', 'qj2', '{"retry": {"base_ms": 1000, "factor": 2, "jitter": 0.25}}');
SELECT pg_temp.claim('qj2', 500);
CREATE TEMP TABLE j2 AS SELECT 1 AS n, split_part(pg_temp.fail('j2', 500), ':', 2)::bigint AS d;
SELECT pg_temp.claim('qj2', 510);
INSERT INTO j2 SELECT 2, split_part(pg_temp.fail('j2', 510), ':', 2)::bigint;
SELECT ok((SELECT d BETWEEN 750 AND 1000 FROM j2 WHERE n = 1), 'jitter 0.25, attempt 1: within [750, 1000]');
SELECT ok((SELECT d BETWEEN 1500 AND 2000 FROM j2 WHERE n = 2), 'jitter 0.25, attempt 2: within [1500, 2000]');

-- bad input
SELECT pg_temp.spawn('fb', 'qfb');
SELECT pg_temp.claim('qfb', 600);
INSERT INTO snaps VALUES ('fb', pg_temp.snap('fb'));
SELECT throws_ok($$SELECT * FROM docket.fail_task(pg_temp.id('fb'), pg_temp.tok('fb'), NULL)$$, '22023',
  'bad_argument: error must not be NULL', 'fail_task: NULL error');
SELECT throws_ok($$SELECT * FROM docket.fail_task(NULL, pg_temp.tok('fb'), '"e"')$$, '22023',
  'bad_argument: run_id must not be NULL', 'fail_task: NULL run_id');
SELECT throws_ok($$SELECT * FROM docket.fail_task(pg_temp.id('fb'), NULL, '"e"')$$, '22023',
  'bad_argument: claim_token must not be NULL', 'fail_task: NULL claim_token');
SELECT throws_ok($$SELECT * FROM docket.fail_task('nope', pg_temp.tok('fb'), '"e"')$$, 'DK003',
  'not_found: task nope does not exist', 'fail_task: an unknown task');
SELECT throws_ok($$SELECT * FROM docket.fail_task(pg_temp.id('fb'), gen_random_uuid(), '"e"')$$, 'DK001',
  'stale_fence: task ' || pg_temp.id('fb') || ' is not held by this claim token', 'fail_task: another token');
SELECT is(pg_temp.snap('fb'), (SELECT s FROM snaps WHERE name = 'fb'), 'the rejected calls changed nothing');

-------------------------------------------------------------------------------
-- cancel_task
-------------------------------------------------------------------------------
SELECT pg_temp.at(1000);
SELECT throws_ok($$SELECT docket.cancel_task(NULL, 'x')$$, '22023',
  'bad_argument: scope and run_id must not be NULL', 'cancel_task: NULL scope');
SELECT throws_ok($$SELECT docket.cancel_task('system', NULL)$$, '22023',
  'bad_argument: scope and run_id must not be NULL', 'cancel_task: NULL run_id');
SELECT throws_ok($$SELECT docket.cancel_task('bogus', 'x')$$, '23514', NULL, 'cancel_task: a malformed scope');
SELECT throws_ok($$SELECT docket.cancel_task('system', 'nope')$$, 'DK003',
  'not_found: run nope does not exist or is not visible in this scope', 'cancel_task: an unknown task');
SELECT throws_ok($$SELECT docket.cancel_task('system', 'plain-run')$$, 'DK003',
  'not_found: run plain-run does not exist or is not visible in this scope', 'cancel_task: a run that is not a task');

-- a pending task
SELECT pg_temp.spawn('k1', 'qk1');
SELECT pg_temp.at(1001);
SELECT is(docket.cancel_task('tenantless', pg_temp.id('k1'), 'user request'), true, 'cancelling a pending task: true');
SELECT is((SELECT (status, checkpoint_type::text, checkpoint_seq, wake_at IS NULL, claim_token IS NULL, updated_at = pg_temp.t(1001))::text
             FROM docket.runs WHERE run_id = pg_temp.id('k1')),
  '(cancelled,run_cancelled,1,t,t,t)', 'the run: cancelled (run_cancelled, seq 1), no wake');
SELECT is(pg_temp.doc('k1') ->> 'cancel_reason', 'user request', 'the reason is kept as cancel_reason');
SELECT is(pg_temp.result('k1'),
  '{"state": "cancelled", "result": null, "error": null, "attempts": 1, "task_name": "job", "queue": "qk1"}'::jsonb,
  'task_result: cancelled');
INSERT INTO snaps VALUES ('k1', pg_temp.snap('k1'));
SELECT pg_temp.at(1002);
SELECT is(docket.cancel_task('tenantless', pg_temp.id('k1'), 'again'), false, 'cancelling it again: false');
SELECT is(pg_temp.snap('k1'), (SELECT s FROM snaps WHERE name = 'k1'), 'and nothing changes (idempotent)');
SELECT is(pg_temp.claim('qk1', 1002), '', 'a cancelled task is never claimed');

-- a running task: the worker's next fenced call gets DK010 and changes nothing
SELECT pg_temp.at(1010);
SELECT pg_temp.spawn('k2', 'qk2');
SELECT pg_temp.spawn('k2-child', 'qk2-child');
SELECT pg_temp.claim('qk2', 1010);
SELECT is(docket.complete_step(pg_temp.id('k2'), pg_temp.tok('k2'), 'charge', '{"ok": 1}'), '{"ok": 1}'::jsonb,
  'the worker completes a step');
SELECT pg_temp.at(1011);
SELECT is(docket.cancel_task('system', pg_temp.id('k2'), 'stop'), true, 'the system scope cancels the running task');
SELECT is((SELECT (status, claim_token IS NULL, claimed_at IS NULL)::text FROM docket.runs WHERE run_id = pg_temp.id('k2')),
  '(cancelled,t,t)', 'the claim is revoked');
INSERT INTO snaps VALUES ('k2', pg_temp.snap('k2'));
SELECT pg_temp.at(1012);
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('k2'), pg_temp.tok('k2'), 'ship', '1')$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'complete_step after cancel: DK010');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('k2'), pg_temp.tok('k2'))$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'heartbeat after cancel: DK010');
SELECT throws_ok($$SELECT * FROM docket.step_states(pg_temp.id('k2'), pg_temp.tok('k2'))$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'step_states after cancel: DK010');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('k2'), pg_temp.tok('k2'), 'nap', pg_temp.t(2000))$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'sleep_until after cancel: DK010');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('k2'), pg_temp.tok('k2'), 'w', 'k2-event', 1000)$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'await_event after cancel: DK010');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('k2'), pg_temp.tok('k2'), 'j', pg_temp.id('k2-child'))$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'await_task after cancel: DK010');
SELECT throws_ok($$SELECT docket.complete_task(pg_temp.id('k2'), pg_temp.tok('k2'), '"done"')$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'complete_task after cancel: DK010');
SELECT throws_ok($$SELECT * FROM docket.fail_task(pg_temp.id('k2'), pg_temp.tok('k2'), '"e"')$$, 'DK010',
  'cancelled: task ' || pg_temp.id('k2') || ' was cancelled', 'fail_task after cancel: DK010');
SELECT is(docket.defer_task(pg_temp.id('k2'), pg_temp.tok('k2')), 'stale', 'defer_task after cancel: stale');
SELECT is(pg_temp.snap('k2'), (SELECT s FROM snaps WHERE name = 'k2'),
  'nothing changed: run, task row, steps, waits');
SELECT is((SELECT count(*)::int FROM docket.task_events WHERE event_name = 'k2-event'), 0, 'no event slot was left');

-- finished tasks: false, unchanged
SELECT is(docket.cancel_task('system', pg_temp.id('c1')), false, 'cancelling a completed task: false');
SELECT is(pg_temp.snap('c1'), (SELECT s FROM snaps WHERE name = 'c1'), 'it stays completed, unchanged');
INSERT INTO snaps VALUES ('f', pg_temp.snap('f'));
SELECT is(docket.cancel_task('system', pg_temp.id('f')), false, 'cancelling a failed task: false');
SELECT is(pg_temp.snap('f'), (SELECT s FROM snaps WHERE name = 'f'), 'it stays failed, unchanged');

-- scopes
SELECT pg_temp.at(1100);
SELECT pg_temp.spawn('ka', 'qka', owner => 'tenant:a');
INSERT INTO snaps VALUES ('ka', pg_temp.snap('ka'));
SELECT throws_ok($$SELECT docket.cancel_task('tenant:b', pg_temp.id('ka'))$$, 'DK003', NULL,
  'tenant b cannot cancel tenant a''s task (DK003)');
SELECT throws_ok($$SELECT docket.cancel_task('tenantless', pg_temp.id('ka'))$$, 'DK003', NULL,
  'the tenantless scope cannot cancel it either');
SELECT is(pg_temp.snap('ka'), (SELECT s FROM snaps WHERE name = 'ka'), 'and it is unchanged');
SELECT is(docket.cancel_task('tenant:a', pg_temp.id('ka')), true, 'its own tenant cancels it');
SELECT is(pg_temp.doc('ka') -> 'cancel_reason', 'null'::jsonb, 'without a reason: cancel_reason null');
SELECT pg_temp.spawn('kt', 'qkt');
SELECT throws_ok($$SELECT docket.cancel_task('tenant:a', pg_temp.id('kt'))$$, 'DK003', NULL,
  'a tenant cannot cancel a tenantless task');

-- a waiting task: its waits go, a later emit does not bring it back
SELECT pg_temp.spawn('kw', 'qkw');
SELECT pg_temp.claim('qkw', 1100);
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('kw'), pg_temp.tok('kw'), 'w', 'kw-event')),
  'suspended', 'a task waits for an event');
SELECT is(docket.cancel_task('system', pg_temp.id('kw')), true, 'cancelling the waiting task: true');
SELECT is((SELECT count(*)::int FROM docket.task_waits WHERE run_id = pg_temp.id('kw')), 0, 'its waits are gone');
SELECT is(docket.emit_event('kw-event'), true, 'the event is emitted later');
SELECT is((pg_temp.state('kw'), pg_temp.claim('qkw', 1101))::text, '(cancelled,"")',
  'the task stays cancelled and is not claimed');

-- a poisoned task can be cancelled
SELECT pg_temp.at(1110);
SELECT pg_temp.spawn('kp', 'qkp');
SELECT pg_temp.claim('qkp', 1110, lease => 1000, mca => 1);
SELECT pg_temp.claim('qkp', 1112, lease => 1000, mca => 1);
SELECT is(pg_temp.state('kp'), 'poisoned', 'a poisoned task');
SELECT is(docket.cancel_task('system', pg_temp.id('kp')), true, 'is cancelled: true');
SELECT is(pg_temp.state('kp'), 'cancelled', 'task_result: cancelled');

-- a cancelled child wakes its parent
SELECT pg_temp.spawn('kparent', 'qkparent');
SELECT pg_temp.spawn('kchild', 'qkchild');
SELECT pg_temp.claim('qkparent', 1200);
SELECT is((SELECT status FROM docket.await_task(pg_temp.id('kparent'), pg_temp.tok('kparent'), 'j', pg_temp.id('kchild'))),
  'suspended', 'a parent awaits a child');
SELECT pg_temp.at(1201);
SELECT is(docket.cancel_task('system', pg_temp.id('kchild'), 'no longer needed'), true, 'the child is cancelled');
SELECT is(pg_temp.claim('qkparent', 1201), 'kparent:child:1', 'the parent wakes with wake_reason child');
SELECT is((SELECT outcome FROM docket.await_task(pg_temp.id('kparent'), pg_temp.tok('kparent'), 'j', pg_temp.id('kchild'))),
  '{"state": "cancelled", "result": null, "error": null}'::jsonb, 'and its join returns the cancelled outcome');

-------------------------------------------------------------------------------
-- task_result: every state, NULL when not visible
-------------------------------------------------------------------------------
SELECT pg_temp.at(2000);
SELECT throws_ok($$SELECT docket.task_result(NULL, 'x')$$, '22023', 'bad_argument: scope must not be NULL',
  'task_result: NULL scope');
SELECT throws_ok($$SELECT docket.task_result('system', NULL)$$, '22023', 'bad_argument: run_id must not be NULL',
  'task_result: NULL run_id');

SELECT pg_temp.spawn('s-pending', 'qs-pending', owner => 'tenant:a', task => 'report');
SELECT is(docket.task_result('tenant:a', pg_temp.id('s-pending')),
  '{"state": "pending", "result": null, "error": null, "attempts": 1, "task_name": "report", "queue": "qs-pending"}'::jsonb,
  'pending: due and unclaimed (every key present)');
SELECT is(docket.task_result('system', pg_temp.id('s-pending')), docket.task_result('tenant:a', pg_temp.id('s-pending')),
  'the system scope sees the same');
SELECT is(docket.task_result('tenant:b', pg_temp.id('s-pending')), NULL, 'another tenant sees NULL');
SELECT is(docket.task_result('tenantless', pg_temp.id('s-pending')), NULL, 'the tenantless scope sees NULL');
SELECT is(docket.task_result('system', 'nope'), NULL, 'an unknown task: NULL');
SELECT is(docket.task_result('system', 'plain-run'), NULL, 'a run that is not a task: NULL');

SELECT pg_temp.spawn('s-delayed', 'qs-delayed', '{"delay_ms": 5000}');
SELECT is(pg_temp.state('s-delayed'), 'sleeping', 'sleeping: not due yet (delay_ms)');
SELECT pg_temp.at(2005);
SELECT is(pg_temp.state('s-delayed'), 'pending', 'pending once docket.now() reaches its due time');
SELECT pg_temp.claim('qs-delayed', 2005);
SELECT is(pg_temp.state('s-delayed'), 'running', 'running: claimed');
SELECT pg_temp.at(2006);
SELECT docket.sleep_until(pg_temp.id('s-delayed'), pg_temp.tok('s-delayed'), 'nap', pg_temp.t(2100));
SELECT is(pg_temp.state('s-delayed'), 'sleeping', 'sleeping: in sleep_until');

SELECT pg_temp.spawn('s-event', 'qs-event');
SELECT pg_temp.claim('qs-event', 2006);
SELECT docket.await_event(pg_temp.id('s-event'), pg_temp.tok('s-event'), 'w', 's-event-name');
SELECT is(pg_temp.state('s-event'), 'waiting', 'waiting: for an event');
SELECT pg_temp.spawn('s-event-timeout', 'qs-event-timeout');
SELECT pg_temp.claim('qs-event-timeout', 2006);
SELECT docket.await_event(pg_temp.id('s-event-timeout'), pg_temp.tok('s-event-timeout'), 'w', 's-event-name', 60000);
SELECT is(pg_temp.state('s-event-timeout'), 'waiting', 'waiting: for an event with a timeout (still an event wait)');
SELECT pg_temp.spawn('s-parent', 'qs-parent');
SELECT pg_temp.spawn('s-child', 'qs-child');
SELECT pg_temp.claim('qs-parent', 2006);
SELECT docket.await_task(pg_temp.id('s-parent'), pg_temp.tok('s-parent'), 'j', pg_temp.id('s-child'));
SELECT is(pg_temp.state('s-parent'), 'waiting', 'waiting: for a child');
SELECT is(pg_temp.state('s-child'), 'pending', 'the child: pending');

SELECT is(pg_temp.state('f'), 'failed', 'failed');
SELECT is(pg_temp.state('c1'), 'completed', 'completed');
SELECT is(pg_temp.state('k1'), 'cancelled', 'cancelled');
SELECT is(pg_temp.state('kp'), 'cancelled', 'cancelled (after poison)');

-------------------------------------------------------------------------------
-- defer_task: hand back without using an attempt
-------------------------------------------------------------------------------
SELECT pg_temp.at(3000);
SELECT pg_temp.spawn('d1', 'qd1');
SELECT pg_temp.claim('qd1', 3000);
SELECT throws_ok($$SELECT docket.defer_task(NULL, pg_temp.tok('d1'))$$, '22023',
  'bad_argument: arguments of defer_task must not be NULL', 'defer_task: NULL run_id');
SELECT throws_ok($$SELECT docket.defer_task(pg_temp.id('d1'), NULL)$$, '22023',
  'bad_argument: arguments of defer_task must not be NULL', 'defer_task: NULL claim_token');
SELECT throws_ok($$SELECT docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), NULL)$$, '22023',
  'bad_argument: arguments of defer_task must not be NULL', 'defer_task: NULL max_defers');
SELECT throws_ok($$SELECT docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), 3, NULL)$$, '22023',
  'bad_argument: arguments of defer_task must not be NULL', 'defer_task: NULL base_ms');
SELECT throws_ok($$SELECT docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), 3, 1000, NULL)$$, '22023',
  'bad_argument: arguments of defer_task must not be NULL', 'defer_task: NULL cap_ms');
SELECT throws_ok($$SELECT docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), 0)$$, '22023',
  'bad_argument: max_defers, base_ms and cap_ms must be > 0', 'defer_task: max_defers 0');
SELECT throws_ok($$SELECT docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), 3, 0)$$, '22023',
  'bad_argument: max_defers, base_ms and cap_ms must be > 0', 'defer_task: base_ms 0');
SELECT throws_ok($$SELECT docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), 3, 1000, -1)$$, '22023',
  'bad_argument: max_defers, base_ms and cap_ms must be > 0', 'defer_task: cap_ms < 0');
INSERT INTO snaps VALUES ('d1', pg_temp.snap('d1'));
SELECT is(docket.defer_task('nope', pg_temp.tok('d1')), 'stale', 'defer_task: an unknown task is stale');
SELECT is(docket.defer_task(pg_temp.id('d1'), gen_random_uuid()), 'stale', 'defer_task: another token is stale');
SELECT is(pg_temp.snap('d1'), (SELECT s FROM snaps WHERE name = 'd1'), 'and changes nothing');

SELECT pg_temp.at(3001);
SELECT is(docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), 3, 1000, 60000), 'rescheduled', 'the first defer: rescheduled');
SELECT ok(pg_temp.ms(pg_temp.t(3001), (pg_temp.run('d1') ->> 'wake_at')::timestamptz) BETWEEN 750 AND 1000,
  'due again after base_ms, jittered to 75-100%');
SELECT is((SELECT (claim_token IS NULL, claim_attempts, claim_abandons)::text FROM docket.runs WHERE run_id = pg_temp.id('d1')),
  '(t,0,1)', 'the claim is handed back with its attempt; one abandon counted');
SELECT is(pg_temp.run('d1') - 'wake_at' - 'claim_token' - 'claimed_at' - 'claim_attempts' - 'claim_abandons',
  (SELECT s -> 'run' FROM snaps WHERE name = 'd1') - 'wake_at' - 'claim_token' - 'claimed_at' - 'claim_attempts' - 'claim_abandons',
  'the document, sequence, checkpoint type and updated_at are untouched');
SELECT is(pg_temp.state('d1'), 'sleeping', 'task_result: sleeping until then');
SELECT is(pg_temp.claim('qd1', 3002), 'd1:new:1', 'claimed again: still wake_reason new, still attempt 1');
SELECT pg_temp.at(3003);
SELECT is(docket.defer_task(pg_temp.id('d1'), pg_temp.tok('d1'), 3, 1000, 60000), 'rescheduled', 'the second defer');
SELECT ok(pg_temp.ms(pg_temp.t(3003), (pg_temp.run('d1') ->> 'wake_at')::timestamptz) BETWEEN 1500 AND 2000,
  'backs off: base_ms * 2, jittered to 75-100%');

-- the cap
SELECT pg_temp.at(3005);
SELECT pg_temp.spawn('d2', 'qd2');
SELECT pg_temp.claim('qd2', 3005);
SELECT docket.defer_task(pg_temp.id('d2'), pg_temp.tok('d2'), 10, 1000, 1500);
SELECT pg_temp.claim('qd2', 3010);
SELECT pg_temp.at(3010);
SELECT docket.defer_task(pg_temp.id('d2'), pg_temp.tok('d2'), 10, 1000, 1500);
SELECT ok(pg_temp.ms(pg_temp.t(3010), (pg_temp.run('d2') ->> 'wake_at')::timestamptz) BETWEEN 1125 AND 1500,
  'the backoff is capped at cap_ms (then jittered)');

-- the jitter is deterministic for a task and spreads tasks deferred together
SELECT pg_temp.at(3100);
SELECT pg_temp.spawn('dj' || i, 'qdj') FROM generate_series(1, 20) i;
SELECT pg_temp.claim('qdj', 3100);
-- Defers the dj tasks in a subtransaction it rolls back; returns their wakes.
CREATE FUNCTION pg_temp.defer_dry() RETURNS TABLE (run_id text, wake_at timestamptz)
  LANGUAGE plpgsql AS $$
DECLARE out jsonb;
BEGIN
  BEGIN
    PERFORM docket.defer_task(i.run_id, i.token) FROM ids i WHERE i.name LIKE 'dj%';
    SELECT jsonb_object_agg(r.run_id, r.wake_at) INTO out
      FROM docket.runs r WHERE r.run_id IN (SELECT i.run_id FROM ids i WHERE i.name LIKE 'dj%');
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT e.key, (e.value #>> '{}')::timestamptz FROM jsonb_each(out) e;
  END;
END $$;
CREATE TEMP TABLE dj_wakes AS SELECT * FROM pg_temp.defer_dry();
SELECT is((SELECT count(*)::int FROM docket.runs WHERE run_id IN (SELECT run_id FROM dj_wakes) AND claim_token IS NOT NULL),
  20, 'a rolled-back defer of 20 tasks leaves them claimed');
SELECT docket.defer_task(run_id, token) FROM ids WHERE name LIKE 'dj%';
SELECT is((SELECT count(*)::int FROM dj_wakes w JOIN docket.runs r USING (run_id) WHERE r.wake_at = w.wake_at), 20,
  'the same defer of the same task gets the same wake (jitter from the run id)');
SELECT cmp_ok((SELECT count(DISTINCT wake_at)::int FROM dj_wakes), '>', 1, 'tasks deferred together are spread out');

-- poisoned after max_defers
SELECT pg_temp.at(3200);
SELECT pg_temp.spawn('d3', 'qd3');
SELECT is(pg_temp.claim('qd3', 3200), 'd3:new:1', 'max_defers 2: claimed');
SELECT is(docket.defer_task(pg_temp.id('d3'), pg_temp.tok('d3'), 2), 'rescheduled', 'defer 1 of 2');
SELECT is(pg_temp.claim('qd3', 3210), 'd3:new:1', 'claimed');
SELECT is(docket.defer_task(pg_temp.id('d3'), pg_temp.tok('d3'), 2), 'rescheduled', 'defer 2 of 2');
SELECT is(pg_temp.claim('qd3', 3220), 'd3:new:1', 'claimed');
SELECT pg_temp.at(3221);
SELECT is(docket.defer_task(pg_temp.id('d3'), pg_temp.tok('d3'), 2), 'poisoned', 'a third defer poisons the task');
SELECT is((SELECT (poisoned_at = pg_temp.t(3221), poison_reason, claim_token IS NULL, wake_at IS NULL)::text
             FROM docket.runs WHERE run_id = pg_temp.id('d3')),
  '(t,max_claim_abandons_exceeded,t,t)', 'poison facts at now, no claim, no wake');
SELECT is(pg_temp.state('d3'), 'poisoned', 'task_result: poisoned');
SELECT is(pg_temp.claim('qd3', 9000), '', 'and it is not claimed again');

-- a defer after a retry keeps the attempt
SELECT pg_temp.at(3300);
SELECT pg_temp.spawn('d4', 'qd4', '{"retry": {"kind": "none"}}');
SELECT pg_temp.claim('qd4', 3300);
SELECT pg_temp.fail('d4', 3300);
SELECT is(pg_temp.claim('qd4', 3300), 'd4:retry:2', 'attempt 2 after a failure');
SELECT is(docket.defer_task(pg_temp.id('d4'), pg_temp.tok('d4')), 'rescheduled', 'deferred');
SELECT is(pg_temp.claim('qd4', 3400), 'd4:retry:2', 'claimed again: still attempt 2, still wake_reason retry');

SELECT * FROM finish();
ROLLBACK;
