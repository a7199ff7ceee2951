-- Children: await_task returns a finished child's outcome {state, result, error}
-- at once, or suspends the parent (claim released) until the child completes,
-- fails for good or is cancelled, which wakes it with wake_reason child. The
-- outcome is stored as the parent's step, so replays agree. A child must be a
-- task of the parent's scope. The clock is docket.fake_now in 2041.
BEGIN;
SELECT plan(98);
SET LOCAL timezone = 'UTC';

-------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------
-- Shared fixtures: task spawning and claiming by name, clock, snapshots.
\ir lib/task_helpers.sql

CREATE FUNCTION pg_temp.state(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', x.status, 'checkpoint_seq', x.checkpoint_seq,
                            'checkpoint_type', x.checkpoint_type, 'wake_at', x.wake_at,
                            'claimed', x.claim_token IS NOT NULL,
                            'wake_reason', x.document -> 'wake_reason',
                            'waiting', x.document -> 'waiting')
    FROM docket.runs x WHERE x.run_id = pg_temp.id(n) $$;
-- join(n, step, child[, token key]) -> {status, outcome}
CREATE FUNCTION pg_temp.join(n text, step text, child text, k text DEFAULT NULL) RETURNS jsonb
  LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', a.status, 'outcome', a.outcome)
    FROM docket.await_task(pg_temp.id(n), pg_temp.tok(coalesce(k, n)), step, pg_temp.id(child)) a $$;
CREATE FUNCTION pg_temp.waits(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('step', w.step_name, 'kind', w.kind,
                                               'tenant_key', w.tenant_key, 'target', w.target,
                                               'timeout_at', w.timeout_at) ORDER BY w.step_name), '[]')
    FROM docket.task_waits w WHERE w.run_id = pg_temp.id(n) $$;
\ir lib/err.sql
CREATE FUNCTION pg_temp.no_child(child text) RETURNS text LANGUAGE sql AS
  $$ SELECT format('not_found: child task %s does not exist in this task''s scope', child) $$;

SELECT pg_temp.at(0);

-------------------------------------------------------------------------------
-- A finished child's outcome is returned at once
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('p');
SELECT pg_temp.spawn('k1');
SELECT pg_temp.spawn('k2', opts => '{"max_attempts": 1}');
SELECT pg_temp.spawn('k3');
SELECT is(pg_temp.claim('p', 1) ->> 'wake_reason', 'new', 'p: claimed');
SELECT is(pg_temp.claim('k1', 1) ->> 'wake_reason', 'new', 'k1: claimed');
SELECT is(pg_temp.claim('k2', 1) ->> 'wake_reason', 'new', 'k2: claimed');
SELECT pg_temp.at(2);
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('k1'), pg_temp.tok('k1'), '{"r": 1}')$$, 'k1 completes');
SELECT results_eq($$SELECT disposition FROM docket.fail_task(pg_temp.id('k2'), pg_temp.tok('k2'), '{"e": 2}')$$,
  $$VALUES ('failed')$$, 'k2 fails for good');
SELECT is(docket.cancel_task('tenantless', pg_temp.id('k3'), 'nope'), true, 'k3 is cancelled');

SELECT pg_temp.at(10);
SELECT is(pg_temp.join('p', 'j1', 'k1'),
  '{"status": "completed", "outcome": {"state": "completed", "result": {"r": 1}, "error": null}}',
  'a completed child: completed with its result');
SELECT is(pg_temp.join('p', 'j2', 'k2'),
  '{"status": "failed", "outcome": {"state": "failed", "result": null, "error": {"e": 2}}}',
  'a failed child: failed with its error');
SELECT is(pg_temp.join('p', 'j3', 'k3'),
  '{"status": "cancelled", "outcome": {"state": "cancelled", "result": null, "error": null}}',
  'a cancelled child: cancelled');
SELECT results_eq($$SELECT step_name, value FROM docket.task_steps WHERE run_id = pg_temp.id('p') ORDER BY step_name$$,
  $$VALUES ('j1', '{"state": "completed", "result": {"r": 1}, "error": null}'::jsonb),
           ('j2', '{"state": "failed", "result": null, "error": {"e": 2}}'::jsonb),
           ('j3', '{"state": "cancelled", "result": null, "error": null}'::jsonb)$$,
  'each outcome is stored as the parent''s step');
SELECT is(pg_temp.state('p') || jsonb_build_object('claimed_at', (pg_temp.r('p')).claimed_at),
  jsonb_build_object('status', 'running', 'checkpoint_seq', 0, 'checkpoint_type', 'run_initialized',
    'wake_at', NULL, 'claimed', true, 'wake_reason', 'new', 'waiting', NULL, 'claimed_at', pg_temp.t(10)),
  'the parent keeps running, its claim refreshed, nothing committed');
SELECT is(pg_temp.waits('p'), '[]', 'no waiter');
SELECT is(pg_temp.join('p', 'j1', 'k2'),
  '{"status": "completed", "outcome": {"state": "completed", "result": {"r": 1}, "error": null}}',
  'a replay returns the stored outcome whatever child it names');

-------------------------------------------------------------------------------
-- A running child suspends the parent; its completion wakes it
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('q');
SELECT pg_temp.spawn('qc');
SELECT is(pg_temp.claim('q', 100) ->> 'wake_reason', 'new', 'q: claimed');
SELECT is(pg_temp.claim('qc', 100) ->> 'wake_reason', 'new', 'qc: claimed');
SELECT pg_temp.keep('q', 'q_1');
SELECT pg_temp.at(101);
SELECT results_eq($$SELECT * FROM docket.await_task(pg_temp.id('q'), pg_temp.tok('q'), 'j', pg_temp.id('qc'))$$,
  $$VALUES ('suspended', NULL::jsonb)$$, 'await of a running child: suspended, no outcome');
SELECT is(pg_temp.state('q'), jsonb_build_object('status', 'waiting', 'checkpoint_seq', 1,
    'checkpoint_type', 'suspended', 'wake_at', NULL, 'claimed', false, 'wake_reason', 'child',
    'waiting', jsonb_build_object('kind', 'child', 'step', 'j', 'child', pg_temp.id('qc'))),
  'the parent is committed as waiting for the child, its claim released');
SELECT is(pg_temp.waits('q'), jsonb_build_array(jsonb_build_object('step', 'j', 'kind', 'child',
    'tenant_key', '', 'target', pg_temp.id('qc'), 'timeout_at', NULL)), 'a waiter is recorded');
SELECT is(pg_temp.steps('q'), '[]', 'no step while waiting');
SELECT is(docket.task_result('system', pg_temp.id('q')) ->> 'state', 'waiting', 'task_result: waiting');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('q'), pg_temp.tok('q_1'), 'j', pg_temp.id('qc'))$$,
  'DK001', pg_temp.stale('q'), 'the released token cannot await again');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('q'), pg_temp.tok('q_1'), 'x', '1')$$,
  'DK001', pg_temp.stale('q'), 'nor complete a step');
SELECT is(pg_temp.claim('q', 150), NULL, 'a waiting parent is not claimable');

SELECT pg_temp.at(160);
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('qc'), pg_temp.tok('qc'), '{"done": true}')$$,
  'the child completes');
SELECT is(pg_temp.state('q'), jsonb_build_object('status', 'running', 'checkpoint_seq', 2,
    'checkpoint_type', 'resumed', 'wake_at', pg_temp.t(160), 'claimed', false, 'wake_reason', 'child',
    'waiting', NULL), 'the parent is due at once with wake_reason child');
SELECT is(pg_temp.waits('q'), '[]', 'the waiter is gone');
SELECT is(pg_temp.claim('q', 170), '{"attempt": 1, "wake_reason": "child", "checkpoint_seq": 2}',
  'the parent is claimed with wake_reason child');
SELECT is(pg_temp.join('q', 'j', 'qc'),
  '{"status": "completed", "outcome": {"state": "completed", "result": {"done": true}, "error": null}}',
  'the replay returns the child''s result');
SELECT is(pg_temp.steps('q'), jsonb_build_array(jsonb_build_object('step', 'j',
    'value', '{"state": "completed", "result": {"done": true}, "error": null}'::jsonb, 'at', pg_temp.t(170))),
  'and stores it as the step');
SELECT is(pg_temp.join('q', 'j', 'qc'),
  '{"status": "completed", "outcome": {"state": "completed", "result": {"done": true}, "error": null}}',
  'a second replay agrees');

-------------------------------------------------------------------------------
-- A failing child wakes the parent only once it has failed for good
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('fp');
SELECT pg_temp.spawn('fc', opts => '{"max_attempts": 2, "retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT is(pg_temp.claim('fp', 200) ->> 'wake_reason', 'new', 'fp: claimed');
SELECT is(pg_temp.claim('fc', 200) ->> 'wake_reason', 'new', 'fc: claimed');
SELECT is(pg_temp.join('fp', 'j', 'fc') ->> 'status', 'suspended', 'fp waits for fc');
SELECT pg_temp.at(201);
SELECT results_eq($$SELECT * FROM docket.fail_task(pg_temp.id('fc'), pg_temp.tok('fc'), '{"e": "first"}')$$,
  $$VALUES ('retry_scheduled', pg_temp.t(202))$$, 'fc attempt 1 fails with a retry');
SELECT is(pg_temp.state('fp') ->> 'status', 'waiting', 'a retried child does not wake the parent');
SELECT is(jsonb_array_length(pg_temp.waits('fp')), 1, 'the parent still waits');
SELECT is(pg_temp.claim('fc', 202) ->> 'attempt', '2', 'fc attempt 2');
SELECT pg_temp.at(203);
SELECT results_eq($$SELECT * FROM docket.fail_task(pg_temp.id('fc'), pg_temp.tok('fc'), '{"e": "final"}')$$,
  $$VALUES ('failed', NULL::timestamptz)$$, 'fc attempt 2 fails for good');
SELECT is(pg_temp.state('fp') - 'waiting', jsonb_build_object('status', 'running', 'checkpoint_seq', 2,
    'checkpoint_type', 'resumed', 'wake_at', pg_temp.t(203), 'claimed', false, 'wake_reason', 'child'),
  'the final failure wakes the parent');
SELECT is(pg_temp.claim('fp', 204), '{"attempt": 1, "wake_reason": "child", "checkpoint_seq": 2}',
  'fp is claimed with wake_reason child');
SELECT is(pg_temp.join('fp', 'j', 'fc'),
  '{"status": "failed", "outcome": {"state": "failed", "result": null, "error": {"e": "final"}}}',
  'the replay returns the final error');

-------------------------------------------------------------------------------
-- A cancelled child wakes the parent
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('cp');
SELECT pg_temp.spawn('cc');
SELECT is(pg_temp.claim('cp', 300) ->> 'wake_reason', 'new', 'cp: claimed');
SELECT is(pg_temp.claim('cc', 300) ->> 'wake_reason', 'new', 'cc: claimed');
SELECT is(pg_temp.join('cp', 'j', 'cc') ->> 'status', 'suspended', 'cp waits for cc');
SELECT pg_temp.at(301);
SELECT is(docket.cancel_task('system', pg_temp.id('cc'), 'abort'), true, 'cc is cancelled while running');
SELECT is(pg_temp.state('cp') - 'waiting', jsonb_build_object('status', 'running', 'checkpoint_seq', 2,
    'checkpoint_type', 'resumed', 'wake_at', pg_temp.t(301), 'claimed', false, 'wake_reason', 'child'),
  'the cancellation wakes the parent');
SELECT is(pg_temp.claim('cp', 302), '{"attempt": 1, "wake_reason": "child", "checkpoint_seq": 2}',
  'cp is claimed with wake_reason child');
SELECT is(pg_temp.join('cp', 'j', 'cc'),
  '{"status": "cancelled", "outcome": {"state": "cancelled", "result": null, "error": null}}',
  'the replay returns cancelled');

-------------------------------------------------------------------------------
-- One child, two parents
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('m1');
SELECT pg_temp.spawn('m2');
SELECT pg_temp.spawn('mc');
SELECT is(pg_temp.claim('m1', 400) ->> 'wake_reason', 'new', 'm1: claimed');
SELECT is(pg_temp.claim('m2', 400) ->> 'wake_reason', 'new', 'm2: claimed');
SELECT is(pg_temp.claim('mc', 400) ->> 'wake_reason', 'new', 'mc: claimed');
SELECT is(pg_temp.join('m1', 'j', 'mc') ->> 'status', 'suspended', 'm1 waits for mc');
SELECT is(pg_temp.join('m2', 'j#2', 'mc') ->> 'status', 'suspended', 'm2 waits for mc');
SELECT pg_temp.at(401);
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('mc'), pg_temp.tok('mc'), '"ok"')$$, 'mc completes');
SELECT results_eq($$SELECT run_id COLLATE "default", document ->> 'wake_reason', wake_at FROM docket.runs
                    WHERE run_id IN (pg_temp.id('m1'), pg_temp.id('m2')) ORDER BY run_id$$,
  $$SELECT run_id, 'child', pg_temp.t(401) FROM ids WHERE name IN ('m1', 'm2') ORDER BY run_id$$,
  'both parents are woken');

-------------------------------------------------------------------------------
-- Scope: a child must belong to the parent's scope
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('ta', 'tenant:a');
SELECT pg_temp.spawn('tac', 'tenant:a');
SELECT pg_temp.spawn('tbc', 'tenant:b');
SELECT is(pg_temp.claim('ta', 500) ->> 'wake_reason', 'new', 'ta (tenant:a): claimed');
SELECT is(pg_temp.claim('tac', 500) ->> 'wake_reason', 'new', 'tac (tenant:a): claimed');
SELECT pg_temp.at(501);
INSERT INTO snaps VALUES ('scope', pg_temp.snap());
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('ta'), pg_temp.tok('ta'), 'j', pg_temp.id('tbc'))$$,
  'DK003', pg_temp.no_child(pg_temp.id('tbc')), 'a tenant:b child of a tenant:a parent: DK003');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('ta'), pg_temp.tok('ta'), 'j', pg_temp.id('k1'))$$,
  'DK003', pg_temp.no_child(pg_temp.id('k1')), 'a tenantless child of a tenant:a parent: DK003');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), 'j4', pg_temp.id('tac'))$$,
  'DK003', pg_temp.no_child(pg_temp.id('tac')), 'a tenant:a child of a tenantless parent: DK003');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'scope'), 'the rejected joins changed nothing');
SELECT is(pg_temp.join('ta', 'j', 'tac') ->> 'status', 'suspended', 'a child of the same tenant can be awaited');
SELECT is(pg_temp.waits('ta'), jsonb_build_array(jsonb_build_object('step', 'j', 'kind', 'child',
    'tenant_key', 'a', 'target', pg_temp.id('tac'), 'timeout_at', NULL)), 'the waiter is in tenant a');
SELECT pg_temp.at(502);
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('tac'), pg_temp.tok('tac'), '"a"')$$, 'tac completes');
SELECT is(pg_temp.claim('ta', 503), '{"attempt": 1, "wake_reason": "child", "checkpoint_seq": 2}', 'ta woke');
SELECT is(pg_temp.join('ta', 'j', 'tac'),
  '{"status": "completed", "outcome": {"state": "completed", "result": "a", "error": null}}', 'ta gets the result');

-------------------------------------------------------------------------------
-- A child cancelled by its cancel_after_ms on the claim path wakes the parent
-------------------------------------------------------------------------------
SELECT pg_temp.at(550);
SELECT pg_temp.spawn('ap');
SELECT pg_temp.spawn('ac', opts => '{"cancel_after_ms": 1000}');
SELECT is(pg_temp.claim('ap', 550) ->> 'wake_reason', 'new', 'ap: claimed');
SELECT is(pg_temp.join('ap', 'j', 'ac') ->> 'status', 'suspended', 'ap waits for ac');
SELECT is(pg_temp.claim('ac', 552), NULL, 'ac, not started within 1 s, is cancelled instead of claimed');
SELECT is(pg_temp.state('ac') ->> 'status', 'cancelled', 'ac is cancelled');
SELECT is(pg_temp.claim('ap', 553), '{"attempt": 1, "wake_reason": "child", "checkpoint_seq": 2}',
  'ap woke with wake_reason child');
SELECT is(pg_temp.join('ap', 'j', 'ac'),
  '{"status": "cancelled", "outcome": {"state": "cancelled", "result": null, "error": null}}',
  'ap gets the cancelled outcome');

-------------------------------------------------------------------------------
-- Bad input (p holds a live claim)
-------------------------------------------------------------------------------
SELECT docket.save_graph('plain', 'h1', '{}');
DO $$ BEGIN
  PERFORM docket.insert_run('tenantless', jsonb_build_object('id', 'plain-1', 'graph_id', 'plain',
    'graph_hash', 'h1', 'status', 'completed', 'checkpoint_seq', 0, 'started_at', '2041-01-01T00:00:00Z'),
    'run_initialized', pg_temp.t(0), 'plainq');
END $$;
SELECT pg_temp.spawn('xp');
SELECT is(pg_temp.claim('xp', 600) ->> 'wake_reason', 'new', 'xp: claimed');
SELECT is(docket.cancel_task('system', pg_temp.id('xp')), true, 'xp is cancelled while running');
SELECT pg_temp.spawn('self');
SELECT is(pg_temp.claim('self', 600) ->> 'wake_reason', 'new', 'self: claimed');
SELECT pg_temp.at(601);
SELECT is(pg_temp.join('p', repeat('s', 255), 'k1') ->> 'status', 'completed', 'a step name of 255 bytes is accepted');
INSERT INTO snaps VALUES ('bad', pg_temp.snap());

SELECT throws_ok($$SELECT * FROM docket.await_task(NULL, pg_temp.tok('p'), 'v', pg_temp.id('k1'))$$,
  '22023', 'bad_argument: run_id must not be NULL', 'NULL run_id');
SELECT throws_ok($$SELECT * FROM docket.await_task(NULL, pg_temp.tok('ta'), 'v', pg_temp.id('tac'))$$,
  '22023', 'bad_argument: run_id must not be NULL', 'NULL run_id with a child in a tenant scope');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), NULL, 'v', pg_temp.id('k1'))$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'NULL claim_token');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), NULL, pg_temp.id('k1'))$$,
  '22023', 'bad_argument: step_name must not be NULL', 'NULL step_name');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), 'v', NULL)$$,
  '22023', 'bad_argument: child_run_id must not be NULL', 'NULL child_run_id');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), '', pg_temp.id('k1'))$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', 'empty step_name');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), repeat('s', 256), pg_temp.id('k1'))$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', '256-byte step_name');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), repeat('é', 128), pg_temp.id('k1'))$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', '128 characters, 256 bytes');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), 'v', 'no-such-task')$$,
  'DK003', pg_temp.no_child('no-such-task'), 'an unknown child: DK003');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), 'v', '')$$,
  'DK003', pg_temp.no_child(''), 'an empty child id: DK003');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), 'v', 'plain-1')$$,
  'DK003', pg_temp.no_child('plain-1'), 'a child run that is not a task: DK003');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), gen_random_uuid(), 'v', pg_temp.id('k1'))$$,
  'DK001', pg_temp.stale('p'), 'a wrong token: DK001');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), gen_random_uuid(), 'v', pg_temp.id('qc'))$$,
  'DK001', pg_temp.stale('p'), 'a wrong token with a finished child: DK001');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('p'), gen_random_uuid(), 'j1', pg_temp.id('k1'))$$,
  'DK001', pg_temp.stale('p'), 'a wrong token on a stored step: DK001');
SELECT throws_ok($$SELECT * FROM docket.await_task('no-such-task', pg_temp.tok('p'), 'v', pg_temp.id('k1'))$$,
  'DK003', 'not_found: task no-such-task does not exist', 'an unknown parent: DK003');
SELECT throws_ok($$SELECT * FROM docket.await_task('plain-1', pg_temp.tok('p'), 'v', pg_temp.id('k1'))$$,
  'DK003', 'not_found: task plain-1 does not exist', 'a parent run that is not a task: DK003');
SELECT throws_ok($$SELECT * FROM docket.await_task(pg_temp.id('xp'), pg_temp.tok('xp'), 'v', pg_temp.id('k1'))$$,
  'DK010', pg_temp.cancelled('xp'), 'a cancelled parent: DK010');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'bad'), 'bad input changed nothing');

-- A task awaiting itself could never wake.
SELECT alike(pg_temp.err($$SELECT * FROM docket.await_task(pg_temp.id('self'), pg_temp.tok('self'), 'v', pg_temp.id('self'))$$),
  '22023 bad_argument: %', 'a task cannot await itself');
SELECT is(pg_temp.state('self') ->> 'status', 'running', 'and stays running under its claim');

-- A step name that holds another kind of step is not a join to replay.
SELECT is(docket.complete_step(pg_temp.id('p'), pg_temp.tok('p'), 'mixed', '1'), '1'::jsonb,
  'mixed: stored by complete_step');
SELECT alike(pg_temp.err($$SELECT * FROM docket.await_task(pg_temp.id('p'), pg_temp.tok('p'), 'mixed', pg_temp.id('k1'))$$),
  '22023 bad_argument: %', 'await_task on a step that is not a join is a bad argument');

SELECT * FROM finish();
ROLLBACK;
