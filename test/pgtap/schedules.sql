-- Periodic tasks: schedule_task (create, replace, bad input: 22023 and nothing
-- changed), unschedule_task, list_schedules by scope, fire_schedules (one task
-- per tick, one catch-up task after a gap, nothing when not due) and cron_next.
-- Times are in 2042, set through docket.fake_now.
BEGIN;
SELECT plan(65);

DELETE FROM docket.schedules;
-- t(s): s seconds after 2042-01-01 00:00:00 UTC (a Wednesday); at(s) moves docket.now() there.
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2042-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
CREATE FUNCTION pg_temp.at(s double precision) RETURNS text
  LANGUAGE sql AS $$ SELECT set_config('docket.fake_now', pg_temp.t(s)::text, true) $$;
\ir lib/err.sql
-- The tasks a schedule spawned, oldest tick first.
CREATE FUNCTION pg_temp.spawned(name text) RETURNS TABLE (tick text, params jsonb, queue text,
                                                           tenant_key text, max_attempts int,
                                                           headers jsonb)
  LANGUAGE sql AS $$
  SELECT t.headers ->> 'docket_tick', t.params, t.queue, t.tenant_key, t.max_attempts, t.headers
    FROM docket.tasks t WHERE t.headers ->> 'docket_schedule' = name
   ORDER BY t.headers ->> 'docket_tick' $$;
CREATE FUNCTION pg_temp.next_run(name text) RETURNS timestamptz
  LANGUAGE sql AS $$ SELECT next_run_at FROM docket.list_schedules() WHERE schedule_name = name $$;
CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'schedules', (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.schedule_name), '[]') FROM docket.schedules s),
    'tasks', (SELECT count(*) FROM docket.tasks),
    'graphs', (SELECT count(*) FROM docket.graphs)) $$;

SELECT pg_temp.at(30);

-------------------------------------------------------------------------------
-- cron_next
-------------------------------------------------------------------------------
SELECT is(docket.cron_next('*/15 * * * *', pg_temp.t(30)), pg_temp.t(900), 'cron_next: every 15 minutes');
SELECT is(docket.cron_next('0 9 * * mon-fri', pg_temp.t(0)), pg_temp.t(9 * 3600),
          'cron_next: weekdays by name (2042-01-01 is a Wednesday)');
SELECT is(docket.cron_next('0 0 1 jan *', pg_temp.t(0)), '2043-01-01 00:00:00+00'::timestamptz,
          'cron_next: strictly after its argument');
SELECT is(docket.cron_next('@hourly'), pg_temp.t(3600), 'cron_next: after defaults to docket.now()');

-------------------------------------------------------------------------------
-- Bad input: 22023 (scope text: its domain, 23514), nothing changed
-------------------------------------------------------------------------------
SELECT docket.schedule_task('keep', '0 * * * *', 'job_keep');
CREATE TEMP TABLE snaps AS SELECT pg_temp.snap() AS s;

SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '* * * *', 'job')$$),
          '22023 bad_argument: cron expression "* * * *": has 4 fields, expected 5 (minute hour day-of-month month day-of-week)',
          'four fields: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '61 * * * *', 'job')$$),
          '22023 bad_argument: cron expression "61 * * * *": minute 61 is out of range 0-59',
          'minute out of range: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '0 0 * * 8', 'job')$$),
          '22023 bad_argument: cron expression "0 0 * * 8": day of week 8 is out of range 0-7',
          'weekday out of range: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '0 0 * smarch *', 'job')$$),
          '22023 bad_argument: cron expression "0 0 * smarch *": "smarch" is not a valid month',
          'unknown month name: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '*/0 * * * *', 'job')$$),
          '22023 bad_argument: cron expression "*/0 * * * *": step 0 is out of range 1-60 (minute)',
          'step 0: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '10-5 * * * *', 'job')$$),
          '22023 bad_argument: cron expression "10-5 * * * *": range 10-5 runs backwards (minute)',
          'backwards range: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '1,,2 * * * *', 'job')$$),
          '22023 bad_argument: cron expression "1,,2 * * * *": empty item in the minute field',
          'empty list item: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '0 0 30 feb *', 'job')$$),
          '22023 bad_argument: cron expression "0 0 30 feb *": no allowed day exists in the allowed months, it never fires',
          'an expression that never fires: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '@reboot', 'job')$$),
          '22023 bad_argument: cron expression "@reboot": unknown macro @reboot', '@reboot: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', NULL, 'job')$$),
          '22023 bad_argument: cron must not be NULL', 'NULL cron: 22023');
SELECT is(pg_temp.err($$SELECT docket.cron_next('* * *', now())$$),
          '22023 bad_argument: cron expression "* * *": has 3 fields, expected 5 (minute hour day-of-month month day-of-week)',
          'cron_next: a bad expression raises 22023 too');
SELECT is(pg_temp.err($$SELECT docket.schedule_task(NULL, '* * * * *', 'job')$$),
          '22023 bad_argument: schedule_name must be non-empty text of at most 200 bytes', 'NULL name: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('', '* * * * *', 'job')$$),
          '22023 bad_argument: schedule_name must be non-empty text of at most 200 bytes', 'empty name: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task(repeat('n', 201), '* * * * *', 'job')$$),
          '22023 bad_argument: schedule_name must be non-empty text of at most 200 bytes', 'long name: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '* * * * *', 'job', owner_scope => 'system')$$),
          '22023 bad_argument: owner_scope must be ''tenantless'' or ''tenant:<id>'', not ''system''',
          'system owner scope: 22023');
SELECT is(left(pg_temp.err($$SELECT docket.schedule_task('x', '* * * * *', 'job', owner_scope => 'nobody')$$), 5),
          '23514', 'a malformed scope: the domain''s check violation');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '* * * * *', 'job', queue => '')$$),
          '22023 bad_argument: queue must be a non-empty name of at most 128 bytes', 'empty queue: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '* * * * *', NULL)$$),
          '22023 bad_argument: task_name must not be NULL', 'NULL task name: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '* * * * *', 'job', options => '{"max_attempts": 0}')$$),
          '22023 bad_argument: option max_attempts must be an integer between 1 and 1000, got 0',
          'options spawn_task refuses: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '* * * * *', 'job', options => '{"idempotency_key": "k"}')$$),
          '22023 bad_argument: options of a schedule must not set idempotency_key or run_at (each tick sets them)',
          'an idempotency key in the options: 22023');
SELECT is(pg_temp.err($$SELECT docket.schedule_task('x', '* * * * *', 'job', options => '{"run_at": "2042-02-01T00:00:00Z"}')$$),
          '22023 bad_argument: options of a schedule must not set idempotency_key or run_at (each tick sets them)',
          'run_at in the options: 22023');
SELECT is(pg_temp.err($$SELECT docket.unschedule_task(NULL)$$),
          '22023 bad_argument: schedule_name must not be NULL', 'unschedule_task(NULL): 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.list_schedules(NULL)$$),
          '22023 bad_argument: scope must not be NULL', 'list_schedules(NULL): 22023');
SELECT is(pg_temp.err($$SELECT docket.fire_schedules(0)$$),
          '22023 bad_argument: max_schedules must be positive', 'fire_schedules(0): 22023');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps), 'the refused calls changed nothing (no schedule, task or graph)');
SELECT is(current_setting('docket.notify'), 'on', 'checking the options leaves docket.notify as it was');

-------------------------------------------------------------------------------
-- Create, fire, catch up
-------------------------------------------------------------------------------
SELECT unschedule_task FROM docket.unschedule_task('keep');
SELECT docket.schedule_task('minutely', '* * * * *', 'job_tick', '{"n": 1}', 'ticks',
                            options => '{"max_attempts": 3, "headers": {"trace": "t"}}');
SELECT is(pg_temp.next_run('minutely'), pg_temp.t(60), 'a new schedule is next due at its first tick after now');
SELECT is(docket.fire_schedules(), 0, 'nothing is due before the first tick');
SELECT is((SELECT count(*) FROM docket.tasks), 0::bigint, 'and nothing was spawned');

SELECT pg_temp.at(60);
SELECT is(docket.fire_schedules(), 1, 'at the tick: fired');
SELECT is(docket.fire_schedules(), 0, 'firing again at the same time fires nothing');
SELECT results_eq($$SELECT tick, params, queue, tenant_key, max_attempts, headers FROM pg_temp.spawned('minutely')$$,
  $$VALUES ('2042-01-01T00:01:00Z', '{"n": 1}'::jsonb, 'ticks', '', 3,
            '{"trace": "t", "docket_tick": "2042-01-01T00:01:00Z", "docket_schedule": "minutely"}'::jsonb)$$,
  'one task for the tick: params, queue, owner and options of the schedule, headers name the schedule and tick');
SELECT is((SELECT idempotency_key FROM docket.tasks WHERE headers ->> 'docket_schedule' = 'minutely'),
          'schedule:minutely@2042-01-01T00:01:00Z', 'its idempotency key is the schedule and the tick');
SELECT is(pg_temp.next_run('minutely'), pg_temp.t(120), 'next_run_at moved to the next tick');
SELECT is((SELECT count(*) FROM docket.claim_tasks('ticks', 10, now => pg_temp.t(60))), 1::bigint,
          'the task is due at once and claimable from its queue');

-- A gap: nothing ran from 00:01:30 until 03:00:10 (178 ticks missed).
SELECT pg_temp.at(3 * 3600 + 10);
SELECT is(docket.fire_schedules(), 1, 'after a gap: fired once');
SELECT is(docket.fire_schedules(), 0, 'and only once');
SELECT is((SELECT array_agg(tick) FROM pg_temp.spawned('minutely')),
          ARRAY['2042-01-01T00:01:00Z', '2042-01-01T00:02:00Z'],
          'one catch-up task for the missed ticks (the oldest one), not one per tick');
SELECT is(pg_temp.next_run('minutely'), pg_temp.t(3 * 3600 + 60), 'next_run_at is the first tick after now');
SELECT pg_temp.at(3 * 3600 + 60);
SELECT is(docket.fire_schedules(), 1, 'the next regular tick fires');
SELECT is((SELECT count(*) FROM pg_temp.spawned('minutely')), 3::bigint, 'three tasks in all');

-------------------------------------------------------------------------------
-- Replace
-------------------------------------------------------------------------------
SELECT pg_temp.at(3 * 3600 + 90);
SELECT docket.schedule_task('minutely', '0 */6 * * *', 'job_tick', '{"n": 2}', 'ticks');
SELECT is(pg_temp.next_run('minutely'), pg_temp.t(6 * 3600), 'replacing with another cron: next run from the new expression');
SELECT is((SELECT count(*) FROM docket.schedules), 1::bigint, 'replacing keeps one row');
SELECT pg_temp.at(6 * 3600 + 5);
-- The same expression again while its tick is due and not yet fired: the tick is kept.
SELECT docket.schedule_task('minutely', '0 */6 * * *', 'job_tick', '{"n": 3}', 'ticks');
SELECT is(pg_temp.next_run('minutely'), pg_temp.t(6 * 3600), 'replacing with the same cron keeps the due tick');
SELECT is(docket.fire_schedules(), 1, 'which then fires');
SELECT is((SELECT params FROM pg_temp.spawned('minutely') WHERE tick = '2042-01-01T06:00:00Z'), '{"n": 3}'::jsonb,
          'with the replaced params');

-------------------------------------------------------------------------------
-- list_schedules by scope, unschedule
-------------------------------------------------------------------------------
SELECT docket.schedule_task('a-nightly', '@daily', 'job_a', owner_scope => 'tenant:a');
SELECT docket.schedule_task('b-weekly', '0 8 * * mon', 'job_b', queue => 'qb', owner_scope => 'tenant:b:x');
SELECT results_eq($$SELECT schedule_name, cron, task_name, queue, owner_scope::text, next_run_at FROM docket.list_schedules()$$,
  $$VALUES ('a-nightly', '@daily', 'job_a', 'default', 'tenant:a', pg_temp.t(86400)),
           ('b-weekly', '0 8 * * mon', 'job_b', 'qb', 'tenant:b:x', pg_temp.t(5 * 86400 + 8 * 3600)),
           ('minutely', '0 */6 * * *', 'job_tick', 'ticks', 'tenantless', pg_temp.t(12 * 3600))$$,
  'system sees every schedule, by name');
SELECT results_eq($$SELECT schedule_name FROM docket.list_schedules('tenantless')$$,
  $$VALUES ('minutely')$$, 'tenantless sees the tenantless ones');
SELECT results_eq($$SELECT schedule_name FROM docket.list_schedules('tenant:a')$$,
  $$VALUES ('a-nightly')$$, 'a tenant sees its own');
SELECT results_eq($$SELECT schedule_name FROM docket.list_schedules('tenant:b:x')$$,
  $$VALUES ('b-weekly')$$, 'a tenant id may contain a colon');
SELECT is_empty($$SELECT * FROM docket.list_schedules('tenant:c')$$, 'another tenant sees none');

SELECT pg_temp.at(86400);
SELECT is(docket.fire_schedules(), 2, 'the tenant''s schedule fires (with minutely''s late 12:00 tick)');
SELECT is((SELECT tenant_key FROM pg_temp.spawned('a-nightly')), 'a', 'its task belongs to its owner scope');

SELECT is(docket.unschedule_task('minutely'), true, 'unschedule_task: true when it existed');
SELECT is(docket.unschedule_task('minutely'), false, 'false the second time');
SELECT is_empty($$SELECT * FROM docket.list_schedules() WHERE schedule_name = 'minutely'$$, 'it is gone from the list');
SELECT pg_temp.at(12 * 3600 + 86400);
SELECT is(docket.fire_schedules(), 0, 'an unscheduled task fires no more');
SELECT is((SELECT count(*) FROM pg_temp.spawned('minutely')), 5::bigint, 'the tasks it spawned are kept');

-- max_schedules: the oldest ticks first, the rest at the next call.
SELECT pg_temp.at(30 * 86400);
SELECT is(docket.fire_schedules(max_schedules => 1), 1, 'max_schedules bounds one call');
SELECT is((SELECT array_agg(schedule_name ORDER BY schedule_name) FROM docket.list_schedules()
            WHERE next_run_at <= pg_temp.t(30 * 86400)), ARRAY['b-weekly'],
          'the oldest due tick went first (a-nightly''s, day 2); b-weekly''s (day 5) waits');
SELECT is(docket.fire_schedules(max_schedules => 1), 1, 'the next call fires the rest');

SELECT * FROM finish();
ROLLBACK;
