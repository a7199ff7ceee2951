-- await_due and await_tasks without a concurrent commit (test/suites/await_wake.sh
-- drives the wake-ups across connections): bad input, work ready at the call,
-- what counts as ready (the queue's own, unclaimed, due, the caller's tenants),
-- the claim await_tasks makes at its timeout (a poll: expired claims). That the
-- look is index-served: task_explain.sql. Times are docket.fake_now.
BEGIN;
SELECT plan(24);
SET LOCAL timezone = 'UTC';
SELECT set_config('docket.fake_now', '2042-01-01 00:00:00+00', true);
\ir lib/as_role.sql

-------------------------------------------------------------------------------
-- Bad input: 22023, nothing waits
-------------------------------------------------------------------------------
SELECT throws_ok($$SELECT docket.await_due(NULL, 0)$$, '22023', NULL, 'await_due: a NULL queue raises 22023');
SELECT throws_ok($$SELECT docket.await_due('q', NULL)$$, '22023', NULL, 'await_due: a NULL timeout raises 22023');
SELECT throws_ok($$SELECT docket.await_due('q', -1)$$, '22023', NULL, 'await_due: a negative timeout raises 22023');
SELECT throws_ok($$SELECT docket.await_due('q', 3600001)$$, '22023', NULL,
                 'await_due: a timeout over an hour raises 22023');
SELECT throws_ok($$SELECT docket.await_due('', 0)$$, '22023', NULL, 'await_due: an empty queue name raises 22023');
SELECT throws_ok($$SELECT * FROM docket.await_tasks('q', 1, 30000, 10, -1)$$, '22023', NULL,
                 'await_tasks: a negative timeout raises 22023');
SELECT throws_ok($$SELECT * FROM docket.await_tasks('q', 1, 30000, 10, NULL)$$, '22023', NULL,
                 'await_tasks: a NULL timeout raises 22023');
SELECT throws_ok($$SELECT * FROM docket.await_tasks('q', 0, 30000, 10, 0)$$, '22023', NULL,
                 'await_tasks: claim_limit 0 raises 22023, as claim_tasks');
SELECT throws_ok($$SELECT * FROM docket.await_tasks(NULL, 1, 30000, 10, 0)$$, '22023', NULL,
                 'await_tasks: a NULL queue raises 22023');

-------------------------------------------------------------------------------
-- Ready work at the call: returned at once
-------------------------------------------------------------------------------
SELECT is(docket.await_due('aq', 0), false, 'await_due: nothing ready, timeout 0: false');
SELECT count(*) FROM docket.spawn_task('job', '{"n": 1}', 'aq');
SELECT is(docket.await_due('aq', 0), true, 'a ready task of the queue: true');
SELECT is(docket.await_due('aq', 3600000), true, 'true at once, whatever the timeout');
SELECT is(docket.await_due('aq-other', 0), false, 'another queue''s task does not count');
SELECT count(*) FROM docket.spawn_task('job', '{}', 'aq-later', 'tenantless',
                                       '{"run_at": "2042-01-01T01:00:00Z"}');
SELECT is(docket.await_due('aq-later', 0), false, 'a task due later is not ready');
SELECT count(*) FROM docket.claim_tasks('aq', 10);
SELECT is(docket.await_due('aq', 0), false, 'a claimed task is not ready');

SELECT count(*) FROM docket.spawn_task('job', '{"n": 2}', 'aq2');
SELECT results_eq($$SELECT task_name, params, attempt, wake_reason, steps
                      FROM docket.await_tasks('aq2', 5, 30000, 10, 3600000)$$,
                  $$VALUES ('job'::text, '{"n": 2}'::jsonb, 1, 'new'::text, '{}'::jsonb)$$,
                  'await_tasks: ready work is claimed at once, with claim_tasks'' columns');
SELECT is((SELECT count(*) FROM docket.await_tasks('aq2', 5, 30000, 10, 0))::int, 0,
          'await_tasks: nothing left, timeout 0: no rows');

-- At its timeout await_tasks claims anyway: the expired claim of aq3 (taken at
-- 00:00 with a 1 s lease) is recovered an hour later, though no commit woke it.
SELECT count(*) FROM docket.spawn_task('job', '{"n": 3}', 'aq3');
SELECT count(*) FROM docket.claim_tasks('aq3', 1, 1000);
SELECT set_config('docket.fake_now', '2042-01-01 01:00:00+00', true);
SELECT is(docket.await_due('aq3', 0), false, 'an expired claim is not ready work for await_due');
SELECT results_eq($$SELECT params, wake_reason FROM docket.await_tasks('aq3', 5, 1000, 10, 0)$$,
                  $$VALUES ('{"n": 3}'::jsonb, 'recovered'::text)$$,
                  'await_tasks at its timeout claims as a poll: the expired claim is recovered');
SELECT is(docket.await_due('aq-later', 0), true, 'the later task is ready once its time has come');

-------------------------------------------------------------------------------
-- Tenant binding: a bound caller waits for its tenants' work only
-------------------------------------------------------------------------------
SELECT count(*) FROM docket.spawn_task('job', '{}', 'tq', 'tenant:b');
CREATE ROLE tap_await_a LOGIN;
GRANT docket_worker TO tap_await_a;
SELECT docket.bind_tenant('tap_await_a', 'a');
SELECT is(pg_temp.as_role('tap_await_a', $q$SELECT docket.await_due('tq', 0)::text$q$), 'false',
          'a worker bound to tenant a does not see tenant b''s ready task');
SELECT is(pg_temp.as_role('tap_await_a', $q$SELECT count(*)::text FROM docket.await_tasks('tq', 5, 30000, 10, 0)$q$),
          '0', 'nor claims it through await_tasks');
SELECT count(*) FROM docket.spawn_task('job', '{}', 'tq', 'tenant:a');
SELECT is(pg_temp.as_role('tap_await_a', $q$SELECT docket.await_due('tq', 0)::text$q$), 'true',
          'its own tenant''s task is ready work');
SELECT is(docket.await_due('tq', 0), true, 'an unbound caller sees every tenant''s');

SELECT * FROM finish();
ROLLBACK;
