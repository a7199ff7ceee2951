-- Events: await_event resolves an emitted event at once or suspends the task
-- (claim released) until the event or its timeout; emit_event stores the first
-- emit of a name in a scope and wakes every waiter of that scope. The outcome of
-- an await is stored as its step, so replays agree. The clock is
-- docket.fake_now in 2041, far from the real one.
BEGIN;
SELECT plan(143);
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
-- await(n, step, event, timeout_ms[, token key]) -> {status, payload}
CREATE FUNCTION pg_temp.await(n text, step text, ev text, timeout_ms bigint DEFAULT NULL,
                              k text DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', a.status, 'payload', a.payload)
    FROM docket.await_event(pg_temp.id(n), pg_temp.tok(coalesce(k, n)), step, ev, timeout_ms) a $$;
CREATE FUNCTION pg_temp.waits(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('step', w.step_name, 'kind', w.kind,
                                               'tenant_key', w.tenant_key, 'target', w.target,
                                               'timeout_at', w.timeout_at) ORDER BY w.step_name), '[]')
    FROM docket.task_waits w WHERE w.run_id = pg_temp.id(n) $$;
CREATE FUNCTION pg_temp.slot(tenant text, ev text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('payload', e.payload, 'emitted_at', e.emitted_at)
    FROM docket.task_events e WHERE e.tenant_key = tenant AND e.event_name = ev $$;
\ir lib/err.sql

SELECT pg_temp.at(0);

-------------------------------------------------------------------------------
-- An event emitted before the await is received at once
-------------------------------------------------------------------------------
SELECT is(docket.emit_event('ready', '{"n": 1}'), true, 'the first emit of ready returns true');
SELECT is(pg_temp.slot('', 'ready'), jsonb_build_object('payload', '{"n": 1}'::jsonb, 'emitted_at', pg_temp.t(0)),
  'the event is stored with its payload and emit time');
SELECT pg_temp.spawn('a');
SELECT is(pg_temp.claim('a', 10), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}', 'a: claimed');
SELECT pg_temp.at(12);
SELECT is(pg_temp.await('a', 'w', 'ready'), '{"status": "received", "payload": {"n": 1}}',
  'await of an emitted event: received with its payload');
SELECT is(pg_temp.steps('a'), jsonb_build_array(jsonb_build_object('step', 'w',
    'value', '{"status": "received", "payload": {"n": 1}}'::jsonb, 'at', pg_temp.t(12))),
  'the outcome is stored as the step');
SELECT is(pg_temp.state('a'), jsonb_build_object('status', 'running', 'checkpoint_seq', 0,
    'checkpoint_type', 'run_initialized', 'wake_at', NULL, 'claimed', true, 'wake_reason', 'new',
    'waiting', NULL), 'the task keeps running under its claim, nothing committed');
SELECT is((pg_temp.r('a')).claimed_at, pg_temp.t(12), 'and its claim is refreshed');
SELECT is(pg_temp.waits('a'), '[]', 'no waiter is left behind');
SELECT is(pg_temp.await('a', 'w', 'other', 0), '{"status": "received", "payload": {"n": 1}}',
  'a replay returns the stored outcome whatever it is called with');
SELECT is(docket.emit_event('ready', '{"n": 2}'), false, 'a second emit of ready returns false');
SELECT is(pg_temp.slot('', 'ready'), jsonb_build_object('payload', '{"n": 1}'::jsonb, 'emitted_at', pg_temp.t(0)),
  'and changes nothing: the first payload and time stay');

-------------------------------------------------------------------------------
-- Otherwise the task waits (claim released) and the emit wakes it
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('b', opts => '{"retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT is(pg_temp.claim('b', 100), '{"attempt": 1, "wake_reason": "new", "checkpoint_seq": 0}', 'b: claimed');
SELECT pg_temp.keep('b', 'b_1');
SELECT pg_temp.at(101);
SELECT results_eq($$SELECT * FROM docket.await_event(pg_temp.id('b'), pg_temp.tok('b'), 'w', 'go')$$,
  $$VALUES ('suspended', NULL::jsonb)$$, 'await of an event not yet emitted: suspended, no payload');
SELECT is(pg_temp.state('b'), jsonb_build_object('status', 'waiting', 'checkpoint_seq', 1,
    'checkpoint_type', 'suspended', 'wake_at', NULL, 'claimed', false, 'wake_reason', 'event',
    'waiting', '{"kind": "event", "step": "w", "event": "go"}'::jsonb),
  'the task is committed as waiting for the event, its claim released');
SELECT is(pg_temp.waits('b'), jsonb_build_array(jsonb_build_object('step', 'w', 'kind', 'event',
    'tenant_key', '', 'target', 'go', 'timeout_at', NULL)), 'a waiter is recorded');
SELECT is(pg_temp.slot('', 'go'), '{"payload": null, "emitted_at": null}', 'the event slot exists, not emitted');
SELECT is(pg_temp.steps('b'), '[]', 'no step is stored while waiting');
SELECT is(docket.task_result('system', pg_temp.id('b')) ->> 'state', 'waiting', 'task_result: waiting');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('b'), pg_temp.tok('b_1'), 'w', 'go')$$,
  'DK001', pg_temp.stale('b'), 'the released token cannot await again');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('b'), pg_temp.tok('b_1'), 'x', '1')$$,
  'DK001', pg_temp.stale('b'), 'nor complete a step');
SELECT is(pg_temp.claim('b', 149), NULL, 'a waiting task is not claimable');

SELECT pg_temp.at(150);
SELECT is(docket.emit_event('go', '{"v": "first"}'), true, 'emit go: true');
SELECT is(pg_temp.state('b'), jsonb_build_object('status', 'running', 'checkpoint_seq', 2,
    'checkpoint_type', 'resumed', 'wake_at', pg_temp.t(150), 'claimed', false, 'wake_reason', 'event',
    'waiting', NULL), 'the emit made the task due at once with wake_reason event');
SELECT is(pg_temp.waits('b'), '[]', 'the waiter is gone');
SELECT pg_temp.at(160);
INSERT INTO snaps VALUES ('b', pg_temp.snap());
SELECT is(docket.emit_event('go', '{"v": "second"}'), false, 'a later emit of go: false');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'b'), 'and it changed nothing');
SELECT is(pg_temp.claim('b', 170), '{"attempt": 1, "wake_reason": "event", "checkpoint_seq": 2}',
  'the woken task is claimed with wake_reason event');
SELECT is(pg_temp.await('b', 'w', 'go'), '{"status": "received", "payload": {"v": "first"}}',
  'the replay receives the first payload');
SELECT is(pg_temp.steps('b'), jsonb_build_array(jsonb_build_object('step', 'w',
    'value', '{"status": "received", "payload": {"v": "first"}}'::jsonb, 'at', pg_temp.t(170))),
  'and stores it as the step');
SELECT pg_temp.at(171);
SELECT results_eq($$SELECT * FROM docket.fail_task(pg_temp.id('b'), pg_temp.tok('b'), '"e"')$$,
  $$VALUES ('retry_scheduled', pg_temp.t(172))$$, 'b: attempt 1 fails');
SELECT is(pg_temp.claim('b', 172), '{"attempt": 2, "wake_reason": "retry", "checkpoint_seq": 3}', 'b: attempt 2');
SELECT is(pg_temp.await('b', 'w', 'go', 0), '{"status": "received", "payload": {"v": "first"}}',
  'attempt 2 replays the received event');

-------------------------------------------------------------------------------
-- One emit wakes every waiter
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('c1');
SELECT pg_temp.spawn('c2');
SELECT is(pg_temp.claim('c1', 200) ->> 'wake_reason', 'new', 'c1: claimed');
SELECT is(pg_temp.claim('c2', 200) ->> 'wake_reason', 'new', 'c2: claimed');
SELECT is(pg_temp.await('c1', 'w', 'all') ->> 'status', 'suspended', 'c1 waits for all');
SELECT is(pg_temp.await('c2', 'w#2', 'all', 600000) ->> 'status', 'suspended', 'c2 waits for all, with a timeout');
SELECT pg_temp.at(210);
SELECT is(docket.emit_event('all', '[1]'), true, 'emit all');
SELECT is(pg_temp.state('c1') ->> 'wake_reason', 'event', 'c1 woken by the event');
SELECT is(pg_temp.state('c2') - 'waiting', jsonb_build_object('status', 'running', 'checkpoint_seq', 2,
    'checkpoint_type', 'resumed', 'wake_at', pg_temp.t(210), 'claimed', false, 'wake_reason', 'event'),
  'c2 woken by the event before its timeout, due now');
SELECT is(pg_temp.claim('c2', 210), '{"attempt": 1, "wake_reason": "event", "checkpoint_seq": 2}',
  'c2 claimed with wake_reason event');
SELECT is(pg_temp.await('c2', 'w#2', 'all', 600000), '{"status": "received", "payload": [1]}', 'c2 receives');

-------------------------------------------------------------------------------
-- Timeout
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('d');
SELECT is(pg_temp.claim('d', 300) ->> 'wake_reason', 'new', 'd: claimed');
SELECT is(pg_temp.await('d', 'w', 'late', 60000), '{"status": "suspended", "payload": null}',
  'await with a timeout: suspended');
SELECT is(pg_temp.state('d'), jsonb_build_object('status', 'running', 'checkpoint_seq', 1,
    'checkpoint_type', 'suspended', 'wake_at', pg_temp.t(360), 'claimed', false, 'wake_reason', 'timeout',
    'waiting', '{"kind": "event", "step": "w", "event": "late"}'::jsonb),
  'the task is due at the timeout with wake_reason timeout, claim released');
SELECT is(pg_temp.waits('d'), jsonb_build_array(jsonb_build_object('step', 'w', 'kind', 'event',
    'tenant_key', '', 'target', 'late', 'timeout_at', pg_temp.t(360))), 'the waiter has the timeout');
SELECT is(pg_temp.claim('d', 359.999999), NULL, 'not claimable before the timeout');
SELECT is(pg_temp.claim('d', 360), '{"attempt": 1, "wake_reason": "timeout", "checkpoint_seq": 1}',
  'claimable at the timeout with wake_reason timeout');
SELECT pg_temp.at(361);
SELECT is(pg_temp.await('d', 'w', 'late', 60000), '{"status": "timeout", "payload": null}',
  'the replay returns timeout');
SELECT is(pg_temp.steps('d'), jsonb_build_array(jsonb_build_object('step', 'w',
    'value', '{"status": "timeout", "payload": null}'::jsonb, 'at', pg_temp.t(361))),
  'the timeout is stored as the step');
SELECT is(pg_temp.waits('d'), '[]', 'the waiter is gone');
SELECT is(pg_temp.state('d') ->> 'claimed', 'true', 'the task keeps its claim');
SELECT pg_temp.at(362);
SELECT is(docket.emit_event('late', '"too late"'), true, 'late is emitted afterwards');
SELECT is(pg_temp.await('d', 'w', 'late', 60000), '{"status": "timeout", "payload": null}',
  'the replay still returns timeout');
SELECT is(pg_temp.await('d', 'w', 'late'), '{"status": "timeout", "payload": null}',
  'also when called without a timeout');

-- Emitted after the timeout passed, while the timed-out task was still unclaimed.
SELECT pg_temp.spawn('e');
SELECT is(pg_temp.claim('e', 400) ->> 'wake_reason', 'new', 'e: claimed');
SELECT is(pg_temp.await('e', 'w', 'tardy', 60000) ->> 'status', 'suspended', 'e waits for tardy until t(460)');
SELECT pg_temp.at(470);
SELECT is(docket.emit_event('tardy', '{"x": 1}'), true, 'tardy is emitted after the timeout');
SELECT is(pg_temp.claim('e', 480) ->> 'wake_reason', 'timeout', 'e still wakes for its timeout');
SELECT is(pg_temp.await('e', 'w', 'tardy', 60000), '{"status": "timeout", "payload": null}',
  'an event emitted after the timeout does not turn it into received');

-- Emitted after the timeout passed, once the timer had woken the task.
SELECT pg_temp.spawn('f');
SELECT is(pg_temp.claim('f', 500) ->> 'wake_reason', 'new', 'f: claimed');
SELECT is(pg_temp.await('f', 'w', 'tardy2', 60000) ->> 'status', 'suspended', 'f waits for tardy2 until t(560)');
SELECT is(pg_temp.claim('f', 560), '{"attempt": 1, "wake_reason": "timeout", "checkpoint_seq": 1}',
  'f wakes for its timeout');
SELECT pg_temp.at(565);
INSERT INTO snaps VALUES ('f', pg_temp.snap() - 'events');
SELECT is(docket.emit_event('tardy2', '{"x": 2}'), true, 'tardy2 is emitted while f runs');
SELECT is(pg_temp.snap() - 'events', (SELECT s FROM snaps WHERE name = 'f'), 'the emit left f and its claim alone');
SELECT is(pg_temp.await('f', 'w', 'tardy2', 60000), '{"status": "timeout", "payload": null}',
  'f''s replay returns timeout');

-- Emitted before the timeout: received, even when the worker replays after it.
SELECT pg_temp.spawn('g');
SELECT is(pg_temp.claim('g', 600) ->> 'wake_reason', 'new', 'g: claimed');
SELECT is(pg_temp.await('g', 'w', 'soon', 60000) ->> 'status', 'suspended', 'g waits for soon until t(660)');
SELECT pg_temp.at(630);
SELECT is(docket.emit_event('soon', '{"s": 1}'), true, 'soon is emitted before the timeout');
SELECT is(pg_temp.state('g') - 'waiting', jsonb_build_object('status', 'running', 'checkpoint_seq', 2,
    'checkpoint_type', 'resumed', 'wake_at', pg_temp.t(630), 'claimed', false, 'wake_reason', 'event'),
  'g is due at once with wake_reason event');
SELECT is(pg_temp.claim('g', 700), '{"attempt": 1, "wake_reason": "event", "checkpoint_seq": 2}',
  'g is claimed after its timeout would have passed');
SELECT is(pg_temp.await('g', 'w', 'soon', 60000), '{"status": "received", "payload": {"s": 1}}',
  'an event emitted before the timeout is received');

-- Emitted at the very instant of the timeout: the event counts.
SELECT pg_temp.spawn('h');
SELECT is(pg_temp.claim('h', 800) ->> 'wake_reason', 'new', 'h: claimed');
SELECT is(pg_temp.await('h', 'w', 'edge', 60000) ->> 'status', 'suspended', 'h waits for edge until t(860)');
SELECT pg_temp.at(860);
SELECT is(docket.emit_event('edge', '"at the edge"'), true, 'edge is emitted exactly at the timeout');
SELECT is(pg_temp.claim('h', 861) ->> 'wake_reason', 'event', 'h wakes for the event');
SELECT is(pg_temp.await('h', 'w', 'edge', 60000), '{"status": "received", "payload": "at the edge"}',
  'an event emitted at the timeout instant is received');

-------------------------------------------------------------------------------
-- timeout_ms 0, negative and out of range
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('z');
SELECT is(pg_temp.claim('z', 900) ->> 'wake_reason', 'new', 'z: claimed');
SELECT pg_temp.at(901);
SELECT is(pg_temp.await('z', 'w', 'never', 0), '{"status": "timeout", "payload": null}',
  'timeout_ms 0 and no event: timeout at once');
SELECT is(pg_temp.await('z', 'w#2', 'ready', 0), '{"status": "received", "payload": {"n": 1}}',
  'timeout_ms 0 and an emitted event: received');
SELECT is(pg_temp.steps('z'), jsonb_build_array(
    jsonb_build_object('step', 'w', 'value', '{"status": "timeout", "payload": null}'::jsonb, 'at', pg_temp.t(901)),
    jsonb_build_object('step', 'w#2', 'value', '{"status": "received", "payload": {"n": 1}}'::jsonb, 'at', pg_temp.t(901))),
  'both outcomes are stored as steps');
SELECT is(pg_temp.state('z') || jsonb_build_object('claimed_at', (pg_temp.r('z')).claimed_at),
  jsonb_build_object('status', 'running', 'checkpoint_seq', 0, 'checkpoint_type', 'run_initialized',
    'wake_at', NULL, 'claimed', true, 'wake_reason', 'new', 'waiting', NULL, 'claimed_at', pg_temp.t(901)),
  'no suspension: the claim is kept and refreshed');
SELECT is(pg_temp.waits('z'), '[]', 'no waiter');
INSERT INTO snaps VALUES ('z', pg_temp.snap());
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), 'w#3', 'never', -1)$$,
  '22023', 'bad_argument: timeout_ms must be >= 0', 'a negative timeout_ms');
SELECT alike(pg_temp.err($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), 'w#3', 'never',
                                                            9223372036854775807)$$),
  '22023 bad_argument: %', 'a timeout_ms beyond any timestamp is a bad argument');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'z'), 'the rejected timeouts changed nothing');

-------------------------------------------------------------------------------
-- Events are scoped
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('sb', 'tenant:b');
SELECT pg_temp.spawn('sl');
SELECT is(pg_temp.claim('sb', 1000) ->> 'wake_reason', 'new', 'sb (tenant:b): claimed');
SELECT is(pg_temp.claim('sl', 1000) ->> 'wake_reason', 'new', 'sl (tenantless): claimed');
SELECT is(pg_temp.await('sb', 'w', 'scoped') ->> 'status', 'suspended', 'sb waits for scoped');
SELECT is(pg_temp.await('sl', 'w', 'scoped') ->> 'status', 'suspended', 'sl waits for scoped');
SELECT is(pg_temp.waits('sb'), jsonb_build_array(jsonb_build_object('step', 'w', 'kind', 'event',
    'tenant_key', 'b', 'target', 'scoped', 'timeout_at', NULL)), 'sb''s waiter is in tenant b');
SELECT pg_temp.at(1010);
INSERT INTO snaps VALUES ('scoped', pg_temp.snap() - 'events');
SELECT is(docket.emit_event('scoped', '{"t": "a"}', 'tenant:a'), true, 'emit scoped in tenant:a: true');
SELECT is(pg_temp.snap() - 'events', (SELECT s FROM snaps WHERE name = 'scoped'),
  'neither the tenant:b task nor the tenantless one woke');
SELECT results_eq($$SELECT tenant_key, payload, emitted_at FROM docket.task_events
                    WHERE event_name = 'scoped' ORDER BY tenant_key$$,
  $$VALUES ('', NULL::jsonb, NULL::timestamptz), ('a', '{"t": "a"}', pg_temp.t(1010)), ('b', NULL, NULL)$$,
  'one slot per scope; only tenant a''s is emitted');
SELECT pg_temp.spawn('sa', 'tenant:a');
SELECT is(pg_temp.claim('sa', 1020) ->> 'wake_reason', 'new', 'sa (tenant:a): claimed');
SELECT is(pg_temp.await('sa', 'w', 'scoped'), '{"status": "received", "payload": {"t": "a"}}',
  'a tenant:a task receives tenant:a''s event at once');
SELECT pg_temp.at(1030);
SELECT is(docket.emit_event('scoped', '{"t": "b"}', 'tenant:b'), true, 'emit scoped in tenant:b: true');
SELECT is(pg_temp.state('sb') ->> 'wake_reason', 'event', 'the tenant:b task woke');
SELECT is(pg_temp.state('sl') ->> 'status', 'waiting', 'the tenantless task still waits');
SELECT is(docket.emit_event('scoped', '{"t": "-"}'), true, 'emit scoped tenantless: true');
SELECT is(pg_temp.state('sl') ->> 'wake_reason', 'event', 'the tenantless task woke');
SELECT is(pg_temp.claim('sb', 1040) ->> 'wake_reason', 'event', 'sb claimed');
SELECT is(pg_temp.await('sb', 'w', 'scoped'), '{"status": "received", "payload": {"t": "b"}}',
  'sb receives tenant b''s payload');
SELECT is(pg_temp.claim('sl', 1040) ->> 'wake_reason', 'event', 'sl claimed');
SELECT is(pg_temp.await('sl', 'w', 'scoped'), '{"status": "received", "payload": {"t": "-"}}',
  'sl receives the tenantless payload');

-------------------------------------------------------------------------------
-- An emit without a payload; a cancelled waiter
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('n');
SELECT is(pg_temp.claim('n', 1100) ->> 'wake_reason', 'new', 'n: claimed');
SELECT is(pg_temp.await('n', 'w', 'bare') ->> 'status', 'suspended', 'n waits for bare');
SELECT is(docket.emit_event('bare'), true, 'emit bare without a payload');
SELECT is(pg_temp.slot('', 'bare'), jsonb_build_object('payload', NULL, 'emitted_at', pg_temp.t(1100)),
  'bare is emitted with no payload');
SELECT is(pg_temp.claim('n', 1101) ->> 'wake_reason', 'event', 'n woke');
SELECT is(pg_temp.await('n', 'w', 'bare'), '{"status": "received", "payload": null}', 'n receives bare');

SELECT pg_temp.spawn('x');
SELECT is(pg_temp.claim('x', 1200) ->> 'wake_reason', 'new', 'x: claimed');
SELECT is(pg_temp.await('x', 'w', 'cx') ->> 'status', 'suspended', 'x waits for cx');
SELECT is(docket.cancel_task('system', pg_temp.id('x')), true, 'x is cancelled while waiting');
SELECT is(pg_temp.waits('x'), '[]', 'its waiter is gone');
SELECT is(docket.emit_event('cx', '1'), true, 'cx is emitted');
SELECT is(pg_temp.state('x') ->> 'status', 'cancelled', 'x stays cancelled');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('x'), pg_temp.tok('x'), 'w', 'cx')$$,
  'DK010', pg_temp.cancelled('x'), 'await_event on a cancelled task: DK010');

-------------------------------------------------------------------------------
-- Bad input (z holds a live claim)
-------------------------------------------------------------------------------
SELECT docket.save_graph('plain', 'h1', '{}');
DO $$ BEGIN
  PERFORM docket.insert_run('tenantless', jsonb_build_object('id', 'plain-1', 'graph_id', 'plain',
    'graph_hash', 'h1', 'status', 'running', 'checkpoint_seq', 0, 'started_at', '2041-01-01T00:00:00Z'),
    'run_initialized', pg_temp.t(0), 'plainq');
END $$;
SELECT pg_temp.at(1300);
INSERT INTO toks SELECT 'plain', claim_token FROM docket.claim_due(pg_temp.t(1300), 1, queue => 'plainq');
SELECT is(pg_temp.await('z', 'w#4', repeat('e', 255), 0), '{"status": "timeout", "payload": null}',
  'an event name of 255 bytes is accepted');
SELECT is(docket.emit_event(repeat('e', 255)), true, 'and can be emitted');
INSERT INTO snaps VALUES ('bad', pg_temp.snap());

SELECT throws_ok($$SELECT * FROM docket.await_event(NULL, pg_temp.tok('z'), 'v', 'ev')$$,
  '22023', 'bad_argument: run_id must not be NULL', 'await_event: NULL run_id');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), NULL, 'v', 'ev')$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'await_event: NULL claim_token');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), NULL, 'ev')$$,
  '22023', 'bad_argument: step_name must not be NULL', 'await_event: NULL step_name');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), 'v', NULL)$$,
  '22023', 'bad_argument: event_name must not be NULL', 'await_event: NULL event_name');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), '', 'ev')$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', 'await_event: empty step_name');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), repeat('s', 256), 'ev')$$,
  '22023', 'bad_argument: step_name must be non-empty text of at most 255 bytes', 'await_event: 256-byte step_name');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), 'v', '')$$,
  '22023', 'bad_argument: event_name must be non-empty text of at most 255 bytes', 'await_event: empty event_name');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), 'v', repeat('e', 256))$$,
  '22023', 'bad_argument: event_name must be non-empty text of at most 255 bytes', 'await_event: 256-byte event_name');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), 'v', repeat('é', 128))$$,
  '22023', 'bad_argument: event_name must be non-empty text of at most 255 bytes',
  'await_event: 128 characters, 256 bytes');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), gen_random_uuid(), 'v', 'ev')$$,
  'DK001', pg_temp.stale('z'), 'await_event: a wrong token');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), gen_random_uuid(), 'v', 'ready')$$,
  'DK001', pg_temp.stale('z'), 'await_event: a wrong token for an emitted event');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('z'), gen_random_uuid(), 'w', 'never')$$,
  'DK001', pg_temp.stale('z'), 'await_event: a wrong token for a stored step');
SELECT throws_ok($$SELECT * FROM docket.await_event('no-such-task', pg_temp.tok('z'), 'v', 'ev')$$,
  'DK003', 'not_found: task no-such-task does not exist', 'await_event: an unknown run id');
SELECT throws_ok($$SELECT * FROM docket.await_event('plain-1', pg_temp.tok('plain'), 'v', 'ev')$$,
  'DK003', 'not_found: task plain-1 does not exist', 'await_event: a run that is not a task');

SELECT throws_ok($$SELECT docket.emit_event(NULL, '1')$$,
  '22023', 'bad_argument: event_name must not be NULL', 'emit_event: NULL event_name');
SELECT throws_ok($$SELECT docket.emit_event('', '1')$$,
  '22023', 'bad_argument: event_name must be non-empty text of at most 255 bytes', 'emit_event: empty event_name');
SELECT throws_ok($$SELECT docket.emit_event(repeat('e', 256), '1')$$,
  '22023', 'bad_argument: event_name must be non-empty text of at most 255 bytes', 'emit_event: 256-byte event_name');
SELECT throws_ok($$SELECT docket.emit_event(repeat('é', 128), '1')$$,
  '22023', 'bad_argument: event_name must be non-empty text of at most 255 bytes',
  'emit_event: 128 characters, 256 bytes');
SELECT throws_ok($$SELECT docket.emit_event('ev', '1', NULL)$$,
  '22023', 'bad_argument: owner_scope must not be NULL', 'emit_event: NULL owner_scope');
SELECT throws_ok($$SELECT docket.emit_event('ev', '1', 'system')$$,
  '22023', 'bad_argument: owner_scope must be ''tenantless'' or ''tenant:<id>'', not ''system''',
  'emit_event: the system scope owns no events');
SELECT throws_ok($$SELECT docket.emit_event('ev', '1', 'tenant:')$$,
  '23514', NULL, 'emit_event: a malformed scope fails the domain check');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'bad'), 'bad input changed nothing');

-- A step name that holds another kind of step is not an await to replay.
SELECT is(docket.complete_step(pg_temp.id('z'), pg_temp.tok('z'), 'mixed', '1'), '1'::jsonb,
  'mixed: stored by complete_step');
SELECT alike(pg_temp.err($$SELECT * FROM docket.await_event(pg_temp.id('z'), pg_temp.tok('z'), 'mixed', 'ev')$$),
  '22023 bad_argument: %', 'await_event on a step that is not an event await is a bad argument');

SELECT * FROM finish();
ROLLBACK;
