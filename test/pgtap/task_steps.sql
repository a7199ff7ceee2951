-- Task steps: step_states, complete_step and heartbeat. A step's first value wins,
-- completing a step refreshes the claim, and every call is fenced by the claim
-- token (DK001 stale, DK010 cancelled or overdue, DK003 unknown). Steps survive
-- retries and recoveries and replay on the next attempt. The clock is
-- docket.fake_now in 2041, far from the real one; claims pass the same `now`.
BEGIN;
SELECT plan(87);
SET LOCAL timezone = 'UTC';

-------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------
-- Shared fixtures: task spawning and claiming by name, clock, snapshots.
\ir lib/task_helpers.sql

SELECT pg_temp.at(0);

-------------------------------------------------------------------------------
-- complete_step and step_states under a live claim
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('a');
SELECT is(pg_temp.claim('a', 0), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}',
  'a: claimed as a new task');
SELECT is((SELECT count(*) FROM docket.step_states(pg_temp.id('a'), pg_temp.tok('a'))), 0::bigint,
  'step_states: no steps yet');

SELECT pg_temp.at(5);
SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), 'charge', '{"amount": 5}'),
  '{"amount": 5}'::jsonb, 'complete_step returns the stored value');
SELECT is((pg_temp.r('a')).claimed_at, pg_temp.t(5), 'complete_step refreshed claimed_at to now');
SELECT is(pg_temp.steps('a'),
  jsonb_build_array(jsonb_build_object('step', 'charge', 'value', '{"amount": 5}'::jsonb, 'at', pg_temp.t(5))),
  'the step is stored with its completion time');

SELECT pg_temp.at(8);
SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), 'charge', '{"amount": 9}'),
  '{"amount": 5}'::jsonb, 'completing a step twice returns the first value');
SELECT is(pg_temp.steps('a'),
  jsonb_build_array(jsonb_build_object('step', 'charge', 'value', '{"amount": 5}'::jsonb, 'at', pg_temp.t(5))),
  'the first value and its completion time are kept');
SELECT is((pg_temp.r('a')).claimed_at, pg_temp.t(8), 'the repeated completion still refreshed the claim');

SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), 'charge#2', 'null'),
  'null'::jsonb, 'a JSON null value is a value');
SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), 'charge#2', '7'),
  'null'::jsonb, 'and it wins over a later value');
SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), repeat('s', 255), '[1, "x"]'),
  '[1, "x"]'::jsonb, 'a step name of 255 bytes is accepted');
SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), repeat('é', 127) || 'x', '"e"'),
  '"e"'::jsonb, 'a step name of 255 bytes in multibyte characters is accepted');

SELECT results_eq(
  $$SELECT step_name, value FROM docket.step_states(pg_temp.id('a'), pg_temp.tok('a'))$$,
  $$VALUES ('charge', '{"amount": 5}'::jsonb), ('charge#2', 'null'::jsonb),
           (repeat('s', 255), '[1, "x"]'::jsonb), (repeat('é', 127) || 'x', '"e"'::jsonb)$$,
  'step_states: every completed step with its first value, by step name');

SELECT is((pg_temp.r('a')).checkpoint_seq, 0::bigint, 'steps do not commit a new run version');
SELECT is((pg_temp.r('a')).status, 'running', 'the task is still running');

SELECT pg_temp.at(3);
SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), 'late', '1'), '1'::jsonb,
  'complete_step with the clock behind the claim');
SELECT is((pg_temp.r('a')).claimed_at, pg_temp.t(8), 'claimed_at never moves backward');

-------------------------------------------------------------------------------
-- heartbeat
-------------------------------------------------------------------------------
SELECT pg_temp.at(20);
SELECT lives_ok($$SELECT docket.heartbeat(pg_temp.id('a'), pg_temp.tok('a'))$$, 'heartbeat under the claim');
SELECT is((pg_temp.r('a')).claimed_at, pg_temp.t(20), 'heartbeat moved claimed_at to now');
SELECT is((pg_temp.r('a')).checkpoint_seq, 0::bigint, 'heartbeat commits nothing');
SELECT pg_temp.at(15);
SELECT docket.heartbeat(pg_temp.id('a'), pg_temp.tok('a'));
SELECT is((pg_temp.r('a')).claimed_at, pg_temp.t(20), 'a heartbeat with the clock behind keeps claimed_at');
SELECT is(pg_temp.claim('a', 49.999999), NULL, 'a heartbeat extends the lease: not expired 30 s after it');

-------------------------------------------------------------------------------
-- A recovered claim: the old token is stale, the steps replay
-------------------------------------------------------------------------------
SELECT pg_temp.keep('a', 'a_old');
SELECT is(pg_temp.claim('a', 50.000001), '{"attempt": 1, "wake_reason": "recovered", "checkpoint_seq": 0}',
  'a: the expired claim is recovered by another worker');
INSERT INTO snaps VALUES ('a', pg_temp.snap());

SELECT pg_temp.at(51);
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), pg_temp.tok('a_old'), 'charge#3', '1')$$,
  'DK001', pg_temp.stale('a'), 'complete_step with the old token: DK001');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), pg_temp.tok('a_old'), 'charge', '1')$$,
  'DK001', pg_temp.stale('a'), 'complete_step of an existing step with the old token: DK001');
SELECT throws_ok($$SELECT * FROM docket.step_states(pg_temp.id('a'), pg_temp.tok('a_old'))$$,
  'DK001', pg_temp.stale('a'), 'step_states with the old token: DK001');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('a'), pg_temp.tok('a_old'))$$,
  'DK001', pg_temp.stale('a'), 'heartbeat with the old token: DK001');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('a'), gen_random_uuid())$$,
  'DK001', pg_temp.stale('a'), 'heartbeat with a random token: DK001');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), gen_random_uuid(), 'x', '1')$$,
  'DK001', pg_temp.stale('a'), 'complete_step with a random token: DK001');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'a'),
  'stale calls changed nothing (no step, claimed_at kept)');

SELECT results_eq(
  $$SELECT step_name, value FROM docket.step_states(pg_temp.id('a'), pg_temp.tok('a'))$$,
  $$VALUES ('charge', '{"amount": 5}'::jsonb), ('charge#2', 'null'::jsonb), ('late', '1'::jsonb),
           (repeat('s', 255), '[1, "x"]'::jsonb), (repeat('é', 127) || 'x', '"e"'::jsonb)$$,
  'the new claim replays every step');
SELECT is(docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), 'charge', '{"amount": 11}'),
  '{"amount": 5}'::jsonb, 'the new claim gets the first value of a replayed step');

-------------------------------------------------------------------------------
-- Steps survive a retry and replay on the next attempt
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('r', opts => '{"max_attempts": 3, "retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT is(pg_temp.claim('r', 200), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}', 'r: claimed');
SELECT is(docket.complete_step(pg_temp.id('r'), pg_temp.tok('r'), 'fetch', '{"v": 1}'), '{"v": 1}'::jsonb,
  'r: step fetch completed on attempt 1');
SELECT pg_temp.keep('r', 'r_old');
SELECT pg_temp.at(201);
SELECT results_eq($$SELECT * FROM docket.fail_task(pg_temp.id('r'), pg_temp.tok('r'), '{"e": 1}')$$,
  $$VALUES ('retry_scheduled', pg_temp.t(202))$$, 'r: attempt 1 fails, retry in 1 s');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('r'), pg_temp.tok('r_old'), 'late', '1')$$,
  'DK001', pg_temp.stale('r'), 'the failed attempt''s token is stale for complete_step');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('r'), pg_temp.tok('r_old'))$$,
  'DK001', pg_temp.stale('r'), 'and for heartbeat');
SELECT is(pg_temp.claim('r', 201.999999), NULL, 'r: not claimable before its retry time');
SELECT is(pg_temp.claim('r', 202), '{"attempt": 2, "wake_reason": "retry", "checkpoint_seq": 1}',
  'r: attempt 2 claimed for the retry');
SELECT results_eq(
  $$SELECT step_name, value FROM docket.step_states(pg_temp.id('r'), pg_temp.tok('r'))$$,
  $$VALUES ('fetch', '{"v": 1}'::jsonb)$$, 'attempt 2 sees the step of attempt 1');
SELECT is(docket.complete_step(pg_temp.id('r'), pg_temp.tok('r'), 'fetch', '{"v": 2}'), '{"v": 1}'::jsonb,
  'attempt 2 replays fetch with the value of attempt 1');
SELECT is(docket.complete_step(pg_temp.id('r'), pg_temp.tok('r'), 'store', '"ok"'), '"ok"'::jsonb,
  'attempt 2 completes a new step');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('r'), pg_temp.tok('r_old'), 'store', '"old"')$$,
  'DK001', pg_temp.stale('r'), 'attempt 1''s token cannot write under attempt 2');
SELECT results_eq(
  $$SELECT step_name, value FROM docket.step_states(pg_temp.id('r'), pg_temp.tok('r'))$$,
  $$VALUES ('fetch', '{"v": 1}'::jsonb), ('store', '"ok"'::jsonb)$$, 'r: both steps, first values');

-------------------------------------------------------------------------------
-- Cancelled: DK010, nothing changes
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('c');
SELECT is(pg_temp.claim('c', 300), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}', 'c: claimed');
SELECT is(docket.complete_step(pg_temp.id('c'), pg_temp.tok('c'), 's1', '1'), '1'::jsonb, 'c: step s1');
SELECT is(docket.cancel_task('system', pg_temp.id('c'), 'stop'), true, 'c: cancelled while running');
INSERT INTO snaps VALUES ('c', pg_temp.snap());
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('c'), pg_temp.tok('c'), 's2', '2')$$,
  'DK010', pg_temp.cancelled('c'), 'complete_step on a cancelled task: DK010');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('c'), pg_temp.tok('c'), 's1', '2')$$,
  'DK010', pg_temp.cancelled('c'), 'complete_step of an existing step on a cancelled task: DK010');
SELECT throws_ok($$SELECT * FROM docket.step_states(pg_temp.id('c'), pg_temp.tok('c'))$$,
  'DK010', pg_temp.cancelled('c'), 'step_states on a cancelled task: DK010');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('c'), pg_temp.tok('c'))$$,
  'DK010', pg_temp.cancelled('c'), 'heartbeat on a cancelled task: DK010');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('c'), gen_random_uuid())$$,
  'DK010', pg_temp.cancelled('c'), 'cancelled wins over a wrong token');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'c'), 'calls on the cancelled task changed nothing');

-------------------------------------------------------------------------------
-- Past max_duration_ms: DK010
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('d', opts => '{"max_duration_ms": 10000}');
SELECT is(pg_temp.claim('d', 400), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}', 'd: claimed');
SELECT pg_temp.at(409.999999);
SELECT is(docket.complete_step(pg_temp.id('d'), pg_temp.tok('d'), 's1', '1'), '1'::jsonb,
  'd: a step just before the deadline');
SELECT lives_ok($$SELECT docket.heartbeat(pg_temp.id('d'), pg_temp.tok('d'))$$, 'd: a heartbeat just before it');
SELECT pg_temp.at(410);
INSERT INTO snaps VALUES ('d', pg_temp.snap());
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('d'), pg_temp.tok('d'))$$,
  'DK010', format('cancelled: task %s exceeded its max_duration_ms', pg_temp.id('d')),
  'heartbeat at the deadline: DK010');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('d'), pg_temp.tok('d'), 's2', '2')$$,
  'DK010', format('cancelled: task %s exceeded its max_duration_ms', pg_temp.id('d')),
  'complete_step at the deadline: DK010');
SELECT throws_ok($$SELECT * FROM docket.step_states(pg_temp.id('d'), pg_temp.tok('d'))$$,
  'DK010', format('cancelled: task %s exceeded its max_duration_ms', pg_temp.id('d')),
  'step_states at the deadline: DK010');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'd'), 'overdue calls changed nothing');

-------------------------------------------------------------------------------
-- Bad input
-------------------------------------------------------------------------------
SELECT docket.save_graph('plain', 'h1', '{}');
DO $$ BEGIN
  PERFORM docket.insert_run('tenantless', jsonb_build_object('id', 'plain-1', 'graph_id', 'plain',
    'graph_hash', 'h1', 'status', 'running', 'checkpoint_seq', 0, 'started_at', '2041-01-01T00:00:00Z'),
    'run_initialized', pg_temp.t(0), 'plainq');
END $$;
SELECT pg_temp.at(500);
INSERT INTO toks SELECT 'plain', claim_token FROM docket.claim_due(pg_temp.t(500), 1, queue => 'plainq');
INSERT INTO snaps VALUES ('bad', pg_temp.snap());

SELECT throws_ok($$SELECT * FROM docket.step_states(NULL, pg_temp.tok('a'))$$,
  '22023', 'bad_argument: run_id must not be NULL', 'step_states: NULL run_id');
SELECT throws_ok($$SELECT * FROM docket.step_states(pg_temp.id('a'), NULL)$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'step_states: NULL claim_token');
SELECT throws_ok($$SELECT * FROM docket.step_states('no-such-task', pg_temp.tok('a'))$$,
  'DK003', 'not_found: task no-such-task does not exist', 'step_states: unknown run id');
SELECT throws_ok($$SELECT * FROM docket.step_states('plain-1', pg_temp.tok('plain'))$$,
  'DK003', 'not_found: task plain-1 does not exist', 'step_states: a run that is not a task');

SELECT throws_ok($$SELECT docket.complete_step(NULL, pg_temp.tok('a'), 'x', '1')$$,
  '22023', 'bad_argument: run_id must not be NULL', 'complete_step: NULL run_id');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), NULL, 'x', '1')$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'complete_step: NULL claim_token');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), NULL, '1')$$,
  '22023', 'bad_argument: step_name must not be NULL', 'complete_step: NULL step_name');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), '', '1')$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', 'complete_step: empty step_name');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), repeat('s', 256), '1')$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', 'complete_step: 256-byte step_name');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), repeat('é', 128), '1')$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes',
  'complete_step: 128 characters but 256 bytes');
SELECT throws_ok($$SELECT docket.complete_step('no-such-task', pg_temp.tok('a'), 'x', '1')$$,
  'DK003', 'not_found: task no-such-task does not exist', 'complete_step: unknown run id');
SELECT throws_ok($$SELECT docket.complete_step('plain-1', pg_temp.tok('plain'), 'x', '1')$$,
  'DK003', 'not_found: task plain-1 does not exist', 'complete_step: a run that is not a task');

SELECT throws_ok($$SELECT docket.heartbeat(NULL, pg_temp.tok('a'))$$,
  '22023', 'bad_argument: run_id must not be NULL', 'heartbeat: NULL run_id');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('a'), NULL)$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'heartbeat: NULL claim_token');
SELECT throws_ok($$SELECT docket.heartbeat('no-such-task', pg_temp.tok('a'))$$,
  'DK003', 'not_found: task no-such-task does not exist', 'heartbeat: unknown run id');
SELECT throws_ok($$SELECT docket.heartbeat('plain-1', pg_temp.tok('plain'))$$,
  'DK003', 'not_found: task plain-1 does not exist', 'heartbeat: a run that is not a task');

SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'bad'), 'bad input changed nothing');

-- A step value is required like every argument without a default (the caller
-- passes JSON null for "no value"); SQL NULL must not be stored as a result.
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('a'), pg_temp.tok('a'), 'x', NULL)$$,
  '22023', 'bad_argument: value must not be NULL', 'complete_step: NULL value (use JSON null)');
SELECT is((SELECT count(*) FROM docket.task_steps WHERE step_name = 'x'), 0::bigint,
  'no step was stored for the NULL value');

-------------------------------------------------------------------------------
-- heartbeat(extend_ms): the claim does not expire before now + extend_ms
-------------------------------------------------------------------------------
SELECT pg_temp.at(1000);
SELECT pg_temp.spawn('hb');
SELECT pg_temp.claim('hb', 1000);
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('hb'), pg_temp.tok('hb'), -1)$$, '22023',
  'bad_argument: extend_ms must be between 0 and 315360000000 (ten years)', 'heartbeat: negative extend_ms');
SELECT pg_temp.at(1001);
SELECT lives_ok($$SELECT docket.heartbeat(pg_temp.id('hb'), pg_temp.tok('hb'), extend_ms => 120000)$$,
  'heartbeat with extend_ms 120 s');
SELECT is(pg_temp.claim('hb', 1120), NULL, 'not expired before now + extend_ms, though the lease is 30 s');
SELECT pg_temp.at(1050);
SELECT docket.heartbeat(pg_temp.id('hb'), pg_temp.tok('hb'));
SELECT is((pg_temp.r('hb')).claimed_at, pg_temp.t(1091),
  'a plain heartbeat never shortens the extension (claimed_at stays at 1001 s + 120 s - the 30 s lease)');
SELECT is(pg_temp.claim('hb', 1151.000001) ->> 'wake_reason', 'recovered',
  'expired once extend_ms and the claimer''s TTL have passed');

-------------------------------------------------------------------------------
-- claim_tasks' steps column in a batch: a task leased before brings its steps,
-- a first lease none (it cannot have stored any), whatever the batch holds
-------------------------------------------------------------------------------
SELECT pg_temp.at(2000);
CREATE TEMP TABLE mix AS SELECT 'm1' AS name, run_id FROM docket.spawn_task('job_mix', '{}', 'mix');
SELECT pg_temp.at(2001);
INSERT INTO mix SELECT 'm2', run_id FROM docket.spawn_task('job_mix', '{}', 'mix');
CREATE TEMP TABLE mix_first AS SELECT * FROM docket.claim_tasks('mix', 1, 30000, now => pg_temp.t(2002));
SELECT is((SELECT run_id || ' ' || steps::text FROM mix_first), (SELECT run_id FROM mix WHERE name = 'm1') || ' {}',
  'a first lease alone: the older task, no steps');
SELECT pg_temp.at(2003);
SELECT is(docket.complete_step(run_id, claim_token, 's1', '{"n": 1}'), '{"n": 1}'::jsonb, 'm1 stores a step')
  FROM mix_first;
SELECT results_eq(
  $$SELECT m.name, c.steps, c.wake_reason FROM docket.claim_tasks('mix', 10, 30000, now => pg_temp.t(2100)) c
      JOIN mix m USING (run_id) ORDER BY m.name$$,
  $$VALUES ('m1', '{"s1": {"n": 1}}'::jsonb, 'recovered'), ('m2', '{}'::jsonb, 'new')$$,
  'one batch of an expired lease and a first lease: the task leased before brings its step, the new one none');

SELECT * FROM finish();
ROLLBACK;
