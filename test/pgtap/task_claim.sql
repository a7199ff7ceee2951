-- claim_tasks: bad input, the rows a runner gets, due times, queues, every
-- wake_reason (new, retry, sleep, event, timeout, child, recovered), poisoned
-- tasks, and the deadlines enforced on the claim path (cancel_after_ms,
-- max_duration_ms). Times are in 2040, passed as `now` and set as docket.fake_now.
BEGIN;
SELECT plan(115);

CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2040-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
CREATE FUNCTION pg_temp.at(s double precision) RETURNS text
  LANGUAGE sql AS $$ SELECT set_config('docket.fake_now', pg_temp.t(s)::text, true) $$;

CREATE TEMP TABLE ids (name text PRIMARY KEY, run_id text, token uuid);
CREATE FUNCTION pg_temp.spawn(name text, q text, opts jsonb DEFAULT '{}', task text DEFAULT 'job',
                              params jsonb DEFAULT '{}', owner text DEFAULT 'tenantless')
  RETURNS text LANGUAGE plpgsql AS $$
DECLARE id text;
BEGIN
  SELECT s.run_id INTO STRICT id FROM docket.spawn_task(task, params, q, owner::docket.scope, opts) s;
  INSERT INTO ids VALUES (name, id, NULL);
  RETURN id;
END $$;
CREATE FUNCTION pg_temp.id(name text) RETURNS text
  LANGUAGE sql AS $$ SELECT run_id FROM ids WHERE ids.name = id.name $$;
CREATE FUNCTION pg_temp.tok(name text) RETURNS uuid
  LANGUAGE sql AS $$ SELECT token FROM ids WHERE ids.name = tok.name $$;
CREATE FUNCTION pg_temp.run(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT to_jsonb(r) FROM docket.runs r WHERE r.run_id = pg_temp.id(name) $$;
CREATE FUNCTION pg_temp.doc(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT r.document FROM docket.runs r WHERE r.run_id = pg_temp.id(name) $$;
CREATE FUNCTION pg_temp.task(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT to_jsonb(t) FROM docket.tasks t WHERE t.run_id = pg_temp.id(name) $$;
CREATE FUNCTION pg_temp.state(name text) RETURNS text
  LANGUAGE sql AS $$ SELECT docket.task_result('system', pg_temp.id(name)) ->> 'state' $$;
-- Everything stored about one task.
CREATE FUNCTION pg_temp.snap(name text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'run', pg_temp.run(name), 'task', pg_temp.task(name),
    'steps', (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.step_name), '[]')
                FROM docket.task_steps s WHERE s.run_id = pg_temp.id(name)),
    'waits', (SELECT coalesce(jsonb_agg(to_jsonb(w) ORDER BY w.step_name), '[]')
                FROM docket.task_waits w WHERE w.run_id = pg_temp.id(name)),
    'events', (SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.tenant_key, e.event_name), '[]')
                 FROM docket.task_events e)) $$;
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);

-- The last claim batch, in returned order.
CREATE TEMP TABLE last (run_id text, claim_token uuid, task_name text, params jsonb, headers jsonb,
                        attempt int, checkpoint_seq bigint, wake_reason text, steps jsonb,
                        ord bigint);
-- Claims queue q at t(s) (also docket.now()), keeps the batch in `last`, records the
-- tokens, and returns 'name:wake_reason ...' in returned order ('' for none).
CREATE FUNCTION pg_temp.claim(q text, s double precision, lim int DEFAULT 10,
                              lease bigint DEFAULT 30000, mca int DEFAULT 10) RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE out text;
BEGIN
  PERFORM pg_temp.at(s);
  DELETE FROM last;
  INSERT INTO last
    SELECT c.*, row_number() OVER () FROM docket.claim_tasks(q, lim, lease, mca, pg_temp.t(s)) c;
  UPDATE ids SET token = l.claim_token FROM last l WHERE ids.run_id = l.run_id;
  SELECT coalesce(string_agg(coalesce(i.name, l.run_id) || ':' || l.wake_reason, ' ' ORDER BY l.ord), '')
    INTO out FROM last l LEFT JOIN ids i ON i.run_id = l.run_id;
  RETURN out;
END $$;

SELECT pg_temp.at(0);

-------------------------------------------------------------------------------
-- Bad input
-------------------------------------------------------------------------------
-- The checks must not depend on the plan: with docket.tasks empty, a hash join
-- that reads it first never runs claim_due (and so never checks its arguments).
-- This is the session's first claim_tasks call, so it is planned under these settings.
SET enable_nestloop = off;
SET enable_mergejoin = off;
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', 0)$$, '22023',
  'bad_argument: claim_limit must be between 1 and 10000, got 0',
  'claim_tasks: claim_limit 0 is rejected whatever plan the join gets');
RESET enable_nestloop;
RESET enable_mergejoin;
SELECT throws_ok($$SELECT * FROM docket.claim_tasks(NULL)$$, '22023',
  'bad_argument: queue must not be NULL', 'claim_tasks: NULL queue');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('')$$, '22023',
  'bad_argument: queue must be a non-empty name of at most 128 bytes', 'claim_tasks: empty queue');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks(repeat('q', 129))$$, '22023',
  'bad_argument: queue must be a non-empty name of at most 128 bytes', 'claim_tasks: a 129-byte queue');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', NULL)$$, '22023',
  'bad_argument: claim_limit must not be NULL', 'claim_tasks: NULL claim_limit');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', 0)$$, '22023',
  'bad_argument: claim_limit must be between 1 and 10000, got 0', 'claim_tasks: claim_limit 0');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', 1, NULL)$$, '22023',
  'bad_argument: orphan_ttl_ms must not be NULL', 'claim_tasks: NULL lease_ms');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', 1, -1)$$, '22023',
  'bad_argument: orphan_ttl_ms must be >= 0, got -1', 'claim_tasks: negative lease_ms');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', 1, 1000, NULL)$$, '22023',
  'bad_argument: max_claim_attempts must not be NULL', 'claim_tasks: NULL max_claim_attempts');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', 1, 1000, 0)$$, '22023',
  'bad_argument: max_claim_attempts must be >= 1, got 0', 'claim_tasks: max_claim_attempts 0');
SELECT throws_ok($$SELECT * FROM docket.claim_tasks('q', 1, 1000, 3, NULL)$$, '22023',
  'bad_argument: now must not be NULL', 'claim_tasks: NULL now');

-------------------------------------------------------------------------------
-- The rows a runner gets
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('a', 'qa', '{"headers": {"trace": "t-1"}}', 'resize', '{"w": 640}');
SELECT is(pg_temp.claim('qa', 1), 'a:new', 'a new task is claimed with wake_reason new');
SELECT is((SELECT to_jsonb(l) - 'ord' FROM last l),
  jsonb_build_object('run_id', pg_temp.id('a'), 'claim_token', pg_temp.run('a') ->> 'claim_token',
    'task_name', 'resize', 'params', '{"w": 640}'::jsonb, 'headers', '{"trace": "t-1"}'::jsonb,
    'attempt', 1, 'checkpoint_seq', 0, 'wake_reason', 'new', 'steps', '{}'::jsonb),
  'the row: run id, the stored claim token, task name, params, headers, attempt 1, checkpoint_seq 0, no steps');
SELECT is((pg_temp.run('a') ->> 'claimed_at')::timestamptz, pg_temp.t(1), 'claimed_at is the claim''s now');
SELECT is((pg_temp.run('a') ->> 'claim_attempts')::int, 1, 'one claim attempt');
SELECT is(pg_temp.run('a') ->> 'wake_at', NULL, 'a claimed task has no wake');
SELECT is(pg_temp.state('a'), 'running', 'task_result: running');
SELECT is(pg_temp.claim('qa', 2), '', 'a held task is not claimed again while its lease lasts');
SELECT is((SELECT first_started_at FROM docket.tasks WHERE run_id = pg_temp.id('a')), NULL,
  'without deadlines the first start is not recorded');

-------------------------------------------------------------------------------
-- Due times, queues, limit and order
-------------------------------------------------------------------------------
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('b-late', 'qb', '{"delay_ms": 10000}');
SELECT pg_temp.spawn('b1', 'qb');
SELECT pg_temp.spawn('b2', 'qb');
SELECT pg_temp.spawn('c', 'qc');
SELECT is(pg_temp.claim('qb', 1, lim => 1),
  (SELECT name || ':new' FROM ids WHERE name IN ('b1', 'b2') ORDER BY run_id LIMIT 1),
  'claim_limit 1: one task, ties on the due time broken by run id');
SELECT is(pg_temp.claim('qb', 9.999),
  (SELECT name || ':new' FROM ids WHERE name IN ('b1', 'b2') ORDER BY run_id DESC LIMIT 1),
  'then the other due task; the delayed one is not due yet and queue qc is never touched');
SELECT is(pg_temp.claim('qb', 10), 'b-late:new', 'the delayed task is claimed once due');
SELECT is(pg_temp.run('c') ->> 'claim_token', NULL, 'the task of another queue is untouched');

SELECT pg_temp.at(20);
SELECT pg_temp.spawn('m' || i, 'qm') FROM generate_series(1, 5) i;
SELECT is(pg_temp.claim('qm', 20, lim => 3) ~ '^m\d:new m\d:new m\d:new$', true, 'claim_limit 3 of 5 due');
SELECT is((SELECT array_agg(run_id ORDER BY ord) FROM last), (SELECT array_agg(run_id ORDER BY run_id) FROM last),
  'a batch comes back in run id order');
INSERT INTO snaps SELECT 'qm-rest', to_jsonb(string_agg(i.name || ':new', ' ' ORDER BY i.run_id))
  FROM ids i WHERE i.name LIKE 'm_' AND i.token IS NULL;
SELECT is(pg_temp.claim('qm', 20), (SELECT s #>> '{}' FROM snaps WHERE name = 'qm-rest'),
  'the next claim gets the remaining two');

-- A plain run-store run sharing the queue is not a task: claim_tasks must leave it alone.
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');
SELECT docket.insert_run('tenantless',
  '{"id": "plain-run", "graph_id": "g", "graph_hash": "h1", "status": "running", "checkpoint_seq": 1, "started_at": "2040-01-01T00:00:00Z"}',
  'run_initialized', pg_temp.t(0), 'qshared');
SELECT pg_temp.spawn('shared', 'qshared');
SELECT is(pg_temp.claim('qshared', 30), 'shared:new', 'claim_tasks returns only the task of a shared queue');
SELECT is((SELECT (claim_token IS NULL, claim_attempts, wake_at <= pg_temp.t(30))::text
             FROM docket.runs WHERE run_id = 'plain-run'),
  '(t,0,t)', 'and leaves the plain run unclaimed and due (no hidden lease, no claim attempt used)');

-------------------------------------------------------------------------------
-- Wake reasons
-------------------------------------------------------------------------------
-- retry
SELECT pg_temp.at(100);
SELECT pg_temp.spawn('r', 'qr', '{"retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT is(pg_temp.claim('qr', 100), 'r:new', 'retry: first attempt');
SELECT pg_temp.at(101);
SELECT is((SELECT (disposition, retry_at)::text FROM docket.fail_task(pg_temp.id('r'), pg_temp.tok('r'), '{"m": "x"}')),
  ('retry_scheduled', pg_temp.t(102))::text, 'the attempt fails: retry at now + 1 s');
SELECT is(pg_temp.claim('qr', 101.999), '', 'not due before retry_at');
SELECT is(pg_temp.claim('qr', 102), 'r:retry', 'claimed at retry_at with wake_reason retry');
SELECT is((SELECT (attempt, checkpoint_seq)::text FROM last), '(2,1)', 'attempt 2, checkpoint_seq 1');

-- sleep
SELECT pg_temp.at(200);
SELECT pg_temp.spawn('s', 'qs');
SELECT is(pg_temp.claim('qs', 200), 's:new', 'sleep: claimed');
SELECT pg_temp.at(201);
SELECT is((SELECT (status, resume_at)::text FROM docket.sleep_until(pg_temp.id('s'), pg_temp.tok('s'), 'nap', pg_temp.t(260))),
  ('suspended', pg_temp.t(260))::text, 'sleep_until suspends');
SELECT is(pg_temp.claim('qs', 259.999), '', 'not claimed before the wake time');
SELECT is(pg_temp.claim('qs', 260), 's:sleep', 'claimed at the wake time with wake_reason sleep');
SELECT is((SELECT (attempt, checkpoint_seq)::text FROM last), '(1,1)', 'the same attempt, checkpoint_seq 1');

-- event (no timeout)
SELECT pg_temp.at(300);
SELECT pg_temp.spawn('e', 'qe');
SELECT is(pg_temp.claim('qe', 300), 'e:new', 'event: claimed');
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('e'), pg_temp.tok('e'), 'wait-paid', 'paid')),
  'suspended', 'await_event suspends');
SELECT is(pg_temp.state('e'), 'waiting', 'task_result: waiting');
SELECT is(pg_temp.claim('qe', 10000), '', 'a waiting task is never due by time');
SELECT pg_temp.at(305);
SELECT is(docket.emit_event('paid', '{"amount": 3}'), true, 'the event is emitted');
SELECT is(pg_temp.claim('qe', 305), 'e:event', 'claimed with wake_reason event');
SELECT is((SELECT (attempt, checkpoint_seq)::text FROM last), '(1,2)', 'the same attempt, checkpoint_seq 2');

-- event before its timeout
SELECT pg_temp.at(400);
SELECT pg_temp.spawn('et', 'qet');
SELECT is(pg_temp.claim('qet', 400), 'et:new', 'event with timeout: claimed');
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('et'), pg_temp.tok('et'), 'w', 'shipped', 60000)),
  'suspended', 'await_event with a timeout suspends');
SELECT pg_temp.at(405);
SELECT docket.emit_event('shipped');
SELECT is(pg_temp.claim('qet', 405), 'et:event', 'an emit before the timeout wakes it with wake_reason event');

-- timeout
SELECT pg_temp.at(500);
SELECT pg_temp.spawn('to', 'qto');
SELECT is(pg_temp.claim('qto', 500), 'to:new', 'timeout: claimed');
SELECT pg_temp.at(501);
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('to'), pg_temp.tok('to'), 'w', 'never', 1000)),
  'suspended', 'await_event with timeout_ms 1000 suspends');
SELECT is(pg_temp.claim('qto', 501.999), '', 'not claimed before the timeout');
SELECT is(pg_temp.claim('qto', 502), 'to:timeout', 'claimed at the timeout with wake_reason timeout');

-- child
SELECT pg_temp.at(600);
SELECT pg_temp.spawn('parent', 'qparent');
SELECT pg_temp.spawn('child', 'qchild');
SELECT is(pg_temp.claim('qparent', 600), 'parent:new', 'child: the parent is claimed');
SELECT is((SELECT status FROM docket.await_task(pg_temp.id('parent'), pg_temp.tok('parent'), 'join', pg_temp.id('child'))),
  'suspended', 'await_task suspends the parent');
SELECT is(pg_temp.claim('qparent', 601), '', 'the parent is not due while the child runs');
SELECT is(pg_temp.claim('qchild', 601), 'child:new', 'the child is claimed');
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('child'), pg_temp.tok('child'), '{"ok": true}')$$,
  'the child completes');
SELECT is(pg_temp.claim('qparent', 602), 'parent:child', 'the parent is claimed with wake_reason child');

-- recovered: a claim that expired and was taken again
SELECT pg_temp.at(700);
SELECT pg_temp.spawn('rc', 'qrc');
SELECT is(pg_temp.claim('qrc', 700, lease => 1000), 'rc:new', 'recovered: the first claim');
INSERT INTO snaps VALUES ('rc-token', to_jsonb(pg_temp.tok('rc')));
SELECT is(pg_temp.claim('qrc', 701, lease => 1000), '', 'not taken while now - claimed_at <= lease_ms');
SELECT is(pg_temp.claim('qrc', 701.001, lease => 1000), 'rc:recovered',
  'taken again once the lease expired: wake_reason recovered');
SELECT is((SELECT (attempt, checkpoint_seq, claim_token <> (SELECT (s #>> '{}')::uuid FROM snaps WHERE name = 'rc-token'))::text FROM last),
  '(1,0,t)', 'the same attempt and sequence, a new token');
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('rc'), (SELECT (s #>> '{}')::uuid FROM snaps WHERE name = 'rc-token'))$$,
  'DK001', NULL, 'the expired claim''s token is stale');
SELECT pg_temp.at(702);
SELECT lives_ok($$SELECT docket.complete_step(pg_temp.id('rc'), pg_temp.tok('rc'), 'one', '1')$$,
  'the new holder makes progress');
SELECT is(pg_temp.claim('qrc', 703.001, lease => 1000), 'rc:recovered',
  'a step refreshes but does not commit: the next expiry is recovered again');

-------------------------------------------------------------------------------
-- Poisoned tasks are recorded, not returned
-------------------------------------------------------------------------------
SELECT pg_temp.at(800);
SELECT pg_temp.spawn('pz', 'qpz');
SELECT is(pg_temp.claim('qpz', 800, lease => 1000, mca => 2), 'pz:new', 'poison: claim 1 of 2');
SELECT is(pg_temp.claim('qpz', 802, lease => 1000, mca => 2), 'pz:recovered', 'claim 2 of 2 (recovered)');
SELECT pg_temp.at(803);
SELECT pg_temp.spawn('pz-other', 'qpz');
SELECT is(pg_temp.claim('qpz', 804, lim => 2, lease => 1000, mca => 2), 'pz-other:new',
  'a third expiry poisons the task: not returned, the other due task is');
SELECT is((SELECT (poisoned_at = pg_temp.t(804), poison_reason, claim_token IS NULL, wake_at IS NULL)::text
             FROM docket.runs WHERE run_id = pg_temp.id('pz')),
  '(t,max_claim_attempts_exceeded,t,t)', 'the poison facts are recorded at now, without claim or wake');
SELECT is(pg_temp.state('pz'), 'poisoned', 'task_result: poisoned');
SELECT docket.complete_task(pg_temp.id('pz-other'), pg_temp.tok('pz-other'));
SELECT is(pg_temp.claim('qpz', 10000, lease => 1000, mca => 2), '', 'a poisoned task is never claimed again');

-------------------------------------------------------------------------------
-- cancel_after_ms: not started within -> cancelled at claim, not returned
-------------------------------------------------------------------------------
SELECT pg_temp.at(900);
SELECT pg_temp.spawn('ca-in', 'qca-in', '{"cancel_after_ms": 1000, "retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT is(pg_temp.claim('qca-in', 900.999), 'ca-in:new', 'cancel_after_ms: started within the time: returned');
SELECT is((SELECT (first_started_at, deadline_at)::text FROM docket.tasks WHERE run_id = pg_temp.id('ca-in')),
  (pg_temp.t(900.999), NULL::timestamptz)::text, 'the first start is recorded (no deadline without max_duration_ms)');
SELECT pg_temp.at(901);
SELECT is((SELECT disposition FROM docket.fail_task(pg_temp.id('ca-in'), pg_temp.tok('ca-in'), '"e"')),
  'retry_scheduled', 'its attempt fails');
SELECT is(pg_temp.claim('qca-in', 950), 'ca-in:retry',
  'a retry long after cancel_at is still claimed: the task had started');

SELECT pg_temp.at(900);
SELECT pg_temp.spawn('ca-late', 'qca', '{"cancel_after_ms": 1000}');
SELECT pg_temp.spawn('ca-ok', 'qca');
SELECT is(pg_temp.claim('qca', 901.5), 'ca-ok:new', 'a task not started within cancel_after_ms is not returned');
SELECT is((SELECT (status, checkpoint_type::text, claim_token IS NULL, wake_at IS NULL, updated_at = pg_temp.t(901.5))::text
             FROM docket.runs WHERE run_id = pg_temp.id('ca-late')),
  '(cancelled,run_cancelled,t,t,t)', 'it is cancelled at the claim: terminal, no claim, no wake');
SELECT is(pg_temp.doc('ca-late') ->> 'cancel_reason', 'cancel_after_ms', 'cancel_reason cancel_after_ms');
SELECT docket.complete_task(pg_temp.id('ca-ok'), pg_temp.tok('ca-ok'));
SELECT is(docket.task_result('system', pg_temp.id('ca-late')) - 'task_name' - 'queue',
  '{"state": "cancelled", "result": null, "error": null, "attempts": 1}'::jsonb, 'task_result: cancelled');
SELECT is(pg_temp.claim('qca', 2000), '', 'and never claimed again');

SELECT pg_temp.at(900);
SELECT pg_temp.spawn('ca-delayed', 'qca-delayed', '{"delay_ms": 10000, "cancel_after_ms": 1000}');
SELECT is(pg_temp.claim('qca-delayed', 910.5), 'ca-delayed:new', 'cancel_after_ms counts from the due time');

-- A child cancelled at claim wakes its parent.
SELECT pg_temp.at(950);
SELECT pg_temp.spawn('cp', 'qcp');
SELECT pg_temp.spawn('cc', 'qcc', '{"cancel_after_ms": 1000}');
SELECT is(pg_temp.claim('qcp', 950), 'cp:new', 'a parent is claimed');
SELECT is((SELECT status FROM docket.await_task(pg_temp.id('cp'), pg_temp.tok('cp'), 'join', pg_temp.id('cc'))),
  'suspended', 'and awaits a child with cancel_after_ms');
SELECT is(pg_temp.claim('qcc', 955), '', 'the child is cancelled at its late claim');
SELECT is(pg_temp.claim('qcp', 955), 'cp:child', 'which wakes the parent (wake_reason child)');
SELECT is((SELECT (status, outcome ->> 'state')::text FROM docket.await_task(pg_temp.id('cp'), pg_temp.tok('cp'), 'join', pg_temp.id('cc'))),
  '(cancelled,cancelled)', 'and the parent''s join sees the cancelled child');

-------------------------------------------------------------------------------
-- max_duration_ms: since the first start
-------------------------------------------------------------------------------
SELECT pg_temp.at(1000);
SELECT pg_temp.spawn('md', 'qmd', '{"max_duration_ms": 10000}');
SELECT is(pg_temp.claim('qmd', 1001), 'md:new', 'max_duration_ms: claimed');
SELECT is((SELECT (first_started_at, deadline_at)::text FROM docket.tasks WHERE run_id = pg_temp.id('md')),
  (pg_temp.t(1001), pg_temp.t(1011))::text, 'first start and deadline (first start + max_duration_ms) recorded');
SELECT pg_temp.at(1010.999);
SELECT lives_ok($$SELECT docket.heartbeat(pg_temp.id('md'), pg_temp.tok('md'))$$, 'a heartbeat before the deadline');
SELECT is(docket.complete_step(pg_temp.id('md'), pg_temp.tok('md'), 'before', '"v"'), '"v"'::jsonb,
  'a step before the deadline');
SELECT pg_temp.at(1011);
INSERT INTO snaps VALUES ('md', pg_temp.snap('md'));
SELECT throws_ok($$SELECT docket.heartbeat(pg_temp.id('md'), pg_temp.tok('md'))$$, 'DK010',
  'cancelled: task ' || pg_temp.id('md') || ' exceeded its max_duration_ms', 'heartbeat at the deadline: DK010');
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('md'), pg_temp.tok('md'), 'after', '1')$$, 'DK010',
  'cancelled: task ' || pg_temp.id('md') || ' exceeded its max_duration_ms', 'complete_step past the deadline: DK010');
SELECT throws_ok($$SELECT * FROM docket.step_states(pg_temp.id('md'), pg_temp.tok('md'))$$, 'DK010',
  'cancelled: task ' || pg_temp.id('md') || ' exceeded its max_duration_ms', 'step_states past the deadline: DK010');
SELECT throws_ok($$SELECT * FROM docket.sleep_until(pg_temp.id('md'), pg_temp.tok('md'), 'nap', pg_temp.t(2000))$$, 'DK010',
  'cancelled: task ' || pg_temp.id('md') || ' exceeded its max_duration_ms', 'sleep_until past the deadline: DK010');
SELECT throws_ok($$SELECT * FROM docket.await_event(pg_temp.id('md'), pg_temp.tok('md'), 'w', 'late-event')$$, 'DK010',
  'cancelled: task ' || pg_temp.id('md') || ' exceeded its max_duration_ms', 'await_event past the deadline: DK010');
SELECT is(pg_temp.snap('md'), (SELECT s FROM snaps WHERE name = 'md'),
  'the rejected calls changed nothing (run, task, steps, waits, event slots)');
SELECT pg_temp.at(1012);
SELECT is((SELECT (disposition, retry_at)::text FROM docket.fail_task(pg_temp.id('md'), pg_temp.tok('md'), '{"m": "slow"}')),
  '(cancelled,)', 'fail_task past the deadline: cancelled, no retry');
SELECT is((SELECT (status, checkpoint_type::text, claim_token IS NULL)::text FROM docket.runs WHERE run_id = pg_temp.id('md')),
  '(cancelled,run_cancelled,t)', 'the task is cancelled');
SELECT is(pg_temp.doc('md') ->> 'cancel_reason', 'max_duration_ms', 'cancel_reason max_duration_ms');

-- claimed after the deadline: a retry
SELECT pg_temp.at(1100);
SELECT pg_temp.spawn('md-retry', 'qmd-retry', '{"max_duration_ms": 10000, "retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT pg_temp.spawn('md-retry-ok', 'qmd-retry-ok', '{"max_duration_ms": 10000, "retry": {"kind": "fixed", "base_ms": 1000}}');
SELECT is(pg_temp.claim('qmd-retry', 1100) || ' ' || pg_temp.claim('qmd-retry-ok', 1100),
  'md-retry:new md-retry-ok:new', 'two tasks with max_duration_ms 10 s start');
SELECT pg_temp.at(1101);
SELECT is((SELECT string_agg(f.disposition, ',') FROM
            (SELECT (docket.fail_task(pg_temp.id('md-retry'), pg_temp.tok('md-retry'), '"e"')).disposition
             UNION ALL
             SELECT (docket.fail_task(pg_temp.id('md-retry-ok'), pg_temp.tok('md-retry-ok'), '"e"')).disposition) f),
  'retry_scheduled,retry_scheduled', 'both fail their first attempt');
SELECT is(pg_temp.claim('qmd-retry-ok', 1105), 'md-retry-ok:retry', 'a retry before the deadline is claimed');
SELECT is((SELECT (first_started_at, deadline_at)::text FROM docket.tasks WHERE run_id = pg_temp.id('md-retry-ok')),
  (pg_temp.t(1100), pg_temp.t(1110))::text, 'and keeps the deadline of the first start');
SELECT is(pg_temp.claim('qmd-retry', 1110), '', 'a retry claimed at or after the deadline is not returned');
SELECT is((SELECT (status, document ->> 'cancel_reason')::text FROM docket.runs WHERE run_id = pg_temp.id('md-retry')),
  '(cancelled,max_duration_ms)', 'it is cancelled with cancel_reason max_duration_ms');

-- claimed after the deadline: a recovery
SELECT pg_temp.at(1200);
SELECT pg_temp.spawn('md-rec', 'qmd-rec', '{"max_duration_ms": 5000}');
SELECT is(pg_temp.claim('qmd-rec', 1200, lease => 1000), 'md-rec:new', 'a task with max_duration_ms 5 s starts');
SELECT is(pg_temp.claim('qmd-rec', 1206, lease => 1000), '', 'its expired claim, taken after the deadline, is not returned');
SELECT is(pg_temp.state('md-rec'), 'cancelled', 'the task is cancelled');

-- Claims of one task alternate the preference between ready and expired work
-- (seed 000's dispatchers): the expired claim of alt-x is eligible at 1300,
-- after three ready tasks due at 1280, so age order alone would hand out the
-- ready ones first; one of two consecutive single claims takes alt-x.
SELECT pg_temp.at(1270);
SELECT pg_temp.spawn('alt-x', 'qalt');
SELECT is(pg_temp.claim('qalt', 1270, 1), 'alt-x:new', 'alt-x is claimed and then abandoned by its worker');
SELECT pg_temp.at(1280);
SELECT pg_temp.spawn('alt-r' || g, 'qalt') FROM generate_series(1, 3) g;
CREATE TEMP TABLE alt AS SELECT pg_temp.claim('qalt', 1400, 1) AS got UNION ALL SELECT pg_temp.claim('qalt', 1400, 1);
SELECT is((SELECT count(*) FROM alt WHERE got = 'alt-x:recovered'), 1::bigint,
  'under older ready work, one of two consecutive single claims recovers the expired task');
SELECT is((SELECT count(*) FROM alt WHERE got LIKE 'alt-r_:new'), 1::bigint,
  'and the other takes the oldest ready task');

-------------------------------------------------------------------------------
-- Claim tokens: one per lease, each its own random version 4 UUID (a claim
-- draws its tokens together), stored on the row it leases
-------------------------------------------------------------------------------
SELECT pg_temp.at(9000);
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 50)), 'qtok');
CREATE TEMP TABLE toks AS SELECT run_id, claim_token FROM docket.claim_tasks('qtok', 50, now => pg_temp.t(9000));
\ir lib/claim_tokens.sql
SELECT * FROM pg_temp.token_checks(50);
SELECT is((SELECT count(*)::int FROM docket.claim_due(pg_temp.t(9000), 50, queue => 'qtok')), 0,
  'fixture: nothing left to claim');
SELECT * FROM finish();
ROLLBACK;
