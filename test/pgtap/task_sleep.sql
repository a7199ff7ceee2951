-- Durable sleep: sleep_until records the wake time as a step (a replay keeps the
-- first one), releases the claim until then (suspended) or returns elapsed when
-- the time has come. The run wakes with wake_reason sleep and is not claimable
-- before its wake. The clock is docket.fake_now in 2041, far from the real one.
BEGIN;
SELECT plan(54);
SET LOCAL timezone = 'UTC';

-------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------
-- Shared fixtures: task spawning and claiming by name, clock, snapshots.
\ir lib/task_helpers.sql
-- The run facts a suspension changes.
CREATE FUNCTION pg_temp.state(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', x.status, 'checkpoint_seq', x.checkpoint_seq,
                            'checkpoint_type', x.checkpoint_type, 'wake_at', x.wake_at,
                            'claimed', x.claim_token IS NOT NULL, 'claimed_at', x.claimed_at,
                            'wake_reason', x.document -> 'wake_reason',
                            'waiting', x.document -> 'waiting')
    FROM docket.runs x WHERE x.run_id = pg_temp.id(n) $$;
CREATE FUNCTION pg_temp.sleep(n text, step text, wake timestamptz, k text DEFAULT NULL) RETURNS text
  LANGUAGE sql AS $$
  SELECT format('%s %s', s.status, docket._iso(s.resume_at))
    FROM docket.sleep_until(pg_temp.id(n), pg_temp.tok(coalesce(k, n)), step, wake) s $$;
\ir lib/err.sql

SELECT pg_temp.at(0);

-------------------------------------------------------------------------------
-- A sleep into the future suspends the task and releases its claim
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('s', opts => '{"retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT is(pg_temp.claim('s', 0), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}', 's: claimed');
SELECT pg_temp.keep('s', 's_1');
SELECT pg_temp.at(10);
SELECT results_eq($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), 'nap', pg_temp.t(3600))$$,
  $$VALUES ('suspended', pg_temp.t(3600))$$, 'sleep_until a future time: suspended until it');
SELECT is(pg_temp.steps('s'),
  jsonb_build_array(jsonb_build_object('step', 'nap', 'value', '{"wake_at": "2041-01-01T01:00:00+00:00"}'::jsonb,
                                       'at', pg_temp.t(10))),
  'the wake time is recorded as the step''s value');
SELECT is(pg_temp.state('s'), jsonb_build_object('status', 'running', 'checkpoint_seq', 1,
    'checkpoint_type', 'suspended', 'wake_at', pg_temp.t(3600), 'claimed', false, 'claimed_at', NULL,
    'wake_reason', 'sleep', 'waiting', '{"kind": "sleep", "step": "nap"}'::jsonb),
  'the run is committed as suspended, due at the wake, with its claim released');
SELECT is(docket.task_result('tenantless', pg_temp.id('s')) ->> 'state', 'sleeping', 'task_result: sleeping');

INSERT INTO snaps VALUES ('s', pg_temp.snap());
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s_1'), 'nap', pg_temp.t(3600))$$,
  'DK001', pg_temp.stale('s'), 'the released token cannot replay the sleep');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s_1'), 'nap#2', pg_temp.t(20))$$,
  'DK001', pg_temp.stale('s'), 'nor sleep again');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('s'), pg_temp.tok('s_1'), 'after', '1')$$,
  'DK001', pg_temp.stale('s'), 'nor complete a step');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('s'), pg_temp.tok('s_1'))$$,
  'DK001', pg_temp.stale('s'), 'nor heartbeat');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 's'), 'the stale calls changed nothing');

SELECT is(pg_temp.claim('s', 3599.999999), NULL, 'not claimable a microsecond before the wake');
SELECT is(pg_temp.claim('s', 3600), '{"attempt": 1, "wake_reason": "sleep", "checkpoint_seq": 1}',
  'claimable at the wake, with wake_reason sleep');
SELECT is(docket.task_result('tenantless', pg_temp.id('s')) ->> 'state', 'running', 'task_result: running');

-------------------------------------------------------------------------------
-- Replays return the first wake time
-------------------------------------------------------------------------------
SELECT pg_temp.at(3610);
SELECT is(pg_temp.sleep('s', 'nap', pg_temp.t(9999)), 'elapsed 2041-01-01T01:00:00.000000Z',
  'the replay is elapsed and returns the first wake time, not the one passed now');
SELECT is(pg_temp.steps('s'),
  jsonb_build_array(jsonb_build_object('step', 'nap', 'value', '{"wake_at": "2041-01-01T01:00:00+00:00"}'::jsonb,
                                       'at', pg_temp.t(10))),
  'the recorded step is unchanged');
SELECT is(pg_temp.state('s') - 'waiting', jsonb_build_object('status', 'running', 'checkpoint_seq', 1,
    'checkpoint_type', 'suspended', 'wake_at', NULL, 'claimed', true, 'claimed_at', pg_temp.t(3610),
    'wake_reason', 'sleep'),
  'an elapsed sleep commits nothing and refreshes the claim');

SELECT is(pg_temp.sleep('s', 'nap#2', pg_temp.t(3610)), 'elapsed 2041-01-01T01:00:10.000000Z',
  'a sleep until exactly now is elapsed');
SELECT is(pg_temp.sleep('s', 'nap#3', pg_temp.t(5)), 'elapsed 2041-01-01T00:00:05.000000Z',
  'a sleep until the past is elapsed');
SELECT results_eq(
  $$SELECT step_name, value FROM docket.step_states(pg_temp.id('s'), pg_temp.tok('s'))$$,
  $$VALUES ('nap', '{"wake_at": "2041-01-01T01:00:00+00:00"}'::jsonb),
           ('nap#2', '{"wake_at": "2041-01-01T01:00:10+00:00"}'::jsonb),
           ('nap#3', '{"wake_at": "2041-01-01T00:00:05+00:00"}'::jsonb)$$,
  'elapsed sleeps are recorded as steps too');
SELECT is(pg_temp.sleep('s', 'nap#3', pg_temp.t(99999)), 'elapsed 2041-01-01T00:00:05.000000Z',
  'an elapsed sleep replays its first wake time');
SELECT is((pg_temp.r('s')).checkpoint_seq, 1::bigint, 'still no commit: the task keeps running');

-- Microsecond precision survives the step.
SELECT is(pg_temp.sleep('s', 'nap#4', '2041-01-01 02:00:00.000001+00'), 'suspended 2041-01-01T02:00:00.000001Z',
  'a sleep to a microsecond');
SELECT is(pg_temp.claim('s', 7200), NULL, 'not claimable at the whole second before it');
SELECT is(pg_temp.claim('s', 7200.000001), '{"attempt": 1, "wake_reason": "sleep", "checkpoint_seq": 2}',
  'claimable at the exact microsecond');
SELECT is(pg_temp.sleep('s', 'nap#4', pg_temp.t(1)), 'elapsed 2041-01-01T02:00:00.000001Z',
  'the replay returns the exact microsecond');

-------------------------------------------------------------------------------
-- A retry replays the sleeps
-------------------------------------------------------------------------------
SELECT pg_temp.at(7300);
SELECT results_eq($$SELECT * FROM docket.fail_task(pg_temp.id('s'), pg_temp.tok('s'), '"boom"')$$,
  $$VALUES ('retry_scheduled', pg_temp.t(7301))$$, 'attempt 1 fails after its sleeps');
SELECT is(pg_temp.claim('s', 7301), '{"attempt": 2, "wake_reason": "retry", "checkpoint_seq": 3}',
  'attempt 2 is claimed');
SELECT is(pg_temp.sleep('s', 'nap', pg_temp.t(90000)), 'elapsed 2041-01-01T01:00:00.000000Z',
  'attempt 2 replays the first sleep as elapsed');
SELECT is(pg_temp.sleep('s', 'nap#4', pg_temp.t(90000)), 'elapsed 2041-01-01T02:00:00.000001Z',
  'and the last one');
SELECT is(pg_temp.sleep('s', 'nap#5', pg_temp.t(7400)), 'suspended 2041-01-01T02:03:20.000000Z',
  'a new sleep on attempt 2 suspends');
SELECT is(pg_temp.claim('s', 7400), '{"attempt": 2, "wake_reason": "sleep", "checkpoint_seq": 4}',
  'and wakes attempt 2 with wake_reason sleep');

-------------------------------------------------------------------------------
-- A sleeping task that is cancelled never wakes
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('k');
SELECT is(pg_temp.claim('k', 7500), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}', 'k: claimed');
SELECT is(pg_temp.sleep('k', 'nap', pg_temp.t(7600)), 'suspended 2041-01-01T02:06:40.000000Z', 'k: sleeps');
SELECT is(docket.cancel_task('tenantless', pg_temp.id('k')), true, 'k: cancelled while sleeping');
SELECT is(pg_temp.claim('k', 7600), NULL, 'k: not claimable at its wake');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('k'), pg_temp.tok('k'), 'nap', pg_temp.t(7600))$$,
  'DK010', pg_temp.cancelled('k'), 'sleep_until on a cancelled task: DK010');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('k'), pg_temp.tok('k'), 'nap#2', pg_temp.t(7600))$$,
  'DK010', pg_temp.cancelled('k'), 'a new sleep on a cancelled task: DK010');

-------------------------------------------------------------------------------
-- Bad input (s holds the claim of attempt 2 that woke at t(7400))
-------------------------------------------------------------------------------
SELECT docket.save_graph('plain', 'h1', '{}');
DO $$ BEGIN
  PERFORM docket.insert_run('tenantless', jsonb_build_object('id', 'plain-1', 'graph_id', 'plain',
    'graph_hash', 'h1', 'status', 'running', 'checkpoint_seq', 0, 'started_at', '2041-01-01T00:00:00Z'),
    'run_initialized', pg_temp.t(0), 'plainq');
END $$;
SELECT pg_temp.at(7700);
INSERT INTO toks SELECT 'plain', claim_token FROM docket.claim_due(pg_temp.t(7700), 1, queue => 'plainq');
SELECT is(pg_temp.sleep('s', repeat('s', 255), pg_temp.t(1)), 'elapsed 2041-01-01T00:00:01.000000Z',
  'a step name of 255 bytes is accepted');
INSERT INTO snaps VALUES ('bad', pg_temp.snap());

SELECT throws_ok($$SELECT * FROM docket.sleep_until(NULL, pg_temp.tok('s'), 'z', pg_temp.t(9000))$$,
  '22023', 'bad_argument: run_id must not be NULL', 'NULL run_id');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), NULL, 'z', pg_temp.t(9000))$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'NULL claim_token');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), NULL, pg_temp.t(9000))$$,
  '22023', 'bad_argument: step_name must not be NULL', 'NULL step_name');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), 'z', NULL)$$,
  '22023', 'bad_argument: wake_at must be a finite timestamp', 'NULL wake_at');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), 'z', 'infinity')$$,
  '22023', 'bad_argument: wake_at must be a finite timestamp', 'infinite wake_at');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), 'z', '-infinity')$$,
  '22023', 'bad_argument: wake_at must be a finite timestamp', '-infinite wake_at');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), '', pg_temp.t(9000))$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', 'empty step_name');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), repeat('s', 256), pg_temp.t(9000))$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', '256-byte step_name');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), repeat('ß', 128), pg_temp.t(9000))$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', '128 characters, 256 bytes');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), gen_random_uuid(), 'z', pg_temp.t(9000))$$,
  'DK001', pg_temp.stale('s'), 'a wrong token: DK001');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s_1'), 'z', pg_temp.t(9000))$$,
  'DK001', pg_temp.stale('s'), 'the token of an earlier claim: DK001');
SELECT throws_ok($$SELECT * FROM docket.sleep_until('no-such-task', pg_temp.tok('s'), 'z', pg_temp.t(9000))$$,
  'DK003', 'not_found: task no-such-task does not exist', 'an unknown run id: DK003');
SELECT throws_ok($$SELECT * FROM docket.sleep_until('plain-1', pg_temp.tok('plain'), 'z', pg_temp.t(9000))$$,
  'DK003', 'not_found: task plain-1 does not exist', 'a run that is not a task: DK003');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'bad'), 'bad input changed nothing');

-- A step name that holds another kind of step is not a sleep to replay.
SELECT is(docket.complete_step(pg_temp.id('s'), pg_temp.tok('s'), 'mixed', '1'), '1'::jsonb,
  'mixed: stored by complete_step');
SELECT alike(pg_temp.err($$SELECT * FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), 'mixed', pg_temp.t(9000))$$),
  '22023 bad_argument: %', 'sleep_until on a step that is not a sleep is a bad argument');

SELECT * FROM finish();
ROLLBACK;
