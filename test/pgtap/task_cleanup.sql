-- cleanup(older_than, batch): deletes finished tasks last written before
-- docket.now() - older_than, oldest first, at most `batch` per call, with their
-- task rows, steps, waits and run events, plus emitted events past the horizon;
-- leaves everything else. Times are in 2040, set as docket.fake_now.
BEGIN;
SELECT plan(28);

CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2040-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
CREATE FUNCTION pg_temp.at(s double precision) RETURNS text
  LANGUAGE sql AS $$ SELECT set_config('docket.fake_now', pg_temp.t(s)::text, true) $$;

CREATE TEMP TABLE ids (name text PRIMARY KEY, run_id text, token uuid);
-- Spawns `name` at t(s) in its own queue and claims it there (unless claim is false).
CREATE FUNCTION pg_temp.start(name text, s double precision, claim boolean DEFAULT true,
                              opts jsonb DEFAULT '{}', lease bigint DEFAULT 30000,
                              mca int DEFAULT 10) RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE
  id text;
  tok uuid;
BEGIN
  PERFORM pg_temp.at(s);
  SELECT x.run_id INTO STRICT id FROM docket.spawn_task('job', '{}', 'q-' || name, options => opts) x;
  IF claim THEN
    SELECT c.claim_token INTO STRICT tok
      FROM docket.claim_tasks('q-' || name, 1, lease, mca, pg_temp.t(s)) c;
  END IF;
  INSERT INTO ids VALUES (name, id, tok);
  RETURN id;
END $$;
CREATE FUNCTION pg_temp.id(name text) RETURNS text
  LANGUAGE sql AS $$ SELECT run_id FROM ids WHERE ids.name = id.name $$;
CREATE FUNCTION pg_temp.tok(name text) RETURNS uuid
  LANGUAGE sql AS $$ SELECT token FROM ids WHERE ids.name = tok.name $$;
-- Every row stored for one task ({} when it is gone entirely).
CREATE FUNCTION pg_temp.rows(name text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_strip_nulls(jsonb_build_object(
    'run', (SELECT to_jsonb(r) FROM docket.runs r WHERE r.run_id = pg_temp.id(name)),
    'task', (SELECT to_jsonb(t) FROM docket.tasks t WHERE t.run_id = pg_temp.id(name)),
    'steps', (SELECT jsonb_agg(to_jsonb(s) ORDER BY s.step_name)
                FROM docket.task_steps s WHERE s.run_id = pg_temp.id(name)),
    'waits', (SELECT jsonb_agg(to_jsonb(w) ORDER BY w.step_name)
                FROM docket.task_waits w WHERE w.run_id = pg_temp.id(name)),
    'run_events', (SELECT jsonb_agg(to_jsonb(e) ORDER BY e.seq)
                     FROM docket.run_events e WHERE e.run_id = pg_temp.id(name)))) $$;
-- Which kinds of rows a task still has, e.g. 'run,steps,task'.
CREATE FUNCTION pg_temp.kinds(name text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(k, ',' ORDER BY k), '') FROM jsonb_object_keys(pg_temp.rows(name)) k $$;
CREATE FUNCTION pg_temp.rows_of(names text[]) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_object_agg(n, pg_temp.rows(n)) FROM unnest(names) n $$;
CREATE FUNCTION pg_temp.event_names() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(e.tenant_key || '/' || e.event_name, ' ' ORDER BY e.tenant_key, e.event_name), '')
    FROM docket.task_events e $$;
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);

-------------------------------------------------------------------------------
-- Bad input
-------------------------------------------------------------------------------
SELECT throws_ok($$SELECT docket.cleanup(NULL)$$, '22023',
  'bad_argument: older_than must be a non-negative interval', 'cleanup: NULL older_than');
SELECT throws_ok($$SELECT docket.cleanup(interval '-1 second')$$, '22023',
  'bad_argument: older_than must be a non-negative interval', 'cleanup: a negative older_than');
SELECT throws_ok($$SELECT docket.cleanup(interval '1 day', NULL)$$, '22023',
  'bad_argument: batch must be between 1 and 100000', 'cleanup: NULL batch');
SELECT throws_ok($$SELECT docket.cleanup(interval '1 day', 0)$$, '22023',
  'bad_argument: batch must be between 1 and 100000', 'cleanup: batch 0');
SELECT throws_ok($$SELECT docket.cleanup(interval '1 day', 100001)$$, '22023',
  'bad_argument: batch must be between 1 and 100000', 'cleanup: batch 100001');
SELECT is(docket.cleanup(interval '1 day', 100000), 0::bigint, 'cleanup of an empty store: 0');

-------------------------------------------------------------------------------
-- Fixture: finished tasks of several ages, and tasks in every unfinished state
-------------------------------------------------------------------------------
-- completed at t(1), with steps and run events
SELECT pg_temp.start('done-old', 0);
SELECT docket.complete_step(pg_temp.id('done-old'), pg_temp.tok('done-old'), 'a', '1');
SELECT docket.complete_step(pg_temp.id('done-old'), pg_temp.tok('done-old'), 'b', '2');
-- (after its history: spawned, claimed, step_completed a and b)
SELECT docket.append_events('system', pg_temp.id('done-old'),
  '[{"seq": 5, "type": "started", "payload": null}, {"seq": 6, "type": "note", "payload": {"x": 1}}]');
SELECT pg_temp.at(1);
SELECT docket.complete_task(pg_temp.id('done-old'), pg_temp.tok('done-old'), '"ok"');
-- failed at t(2), with a step
SELECT pg_temp.start('failed-old', 0, opts => '{"max_attempts": 1}');
SELECT docket.complete_step(pg_temp.id('failed-old'), pg_temp.tok('failed-old'), 'a', '1');
SELECT pg_temp.at(2);
SELECT disposition FROM docket.fail_task(pg_temp.id('failed-old'), pg_temp.tok('failed-old'), '"e"');
-- cancelled at t(3) while waiting for an event
SELECT pg_temp.start('cancelled-old', 0);
SELECT docket.await_event(pg_temp.id('cancelled-old'), pg_temp.tok('cancelled-old'), 'w', 'never-emitted');
SELECT pg_temp.at(3);
SELECT docket.cancel_task('system', pg_temp.id('cancelled-old'));
-- completed at t(4) after an event timeout woke it; it finished without replaying
-- the wait, so its wait row is still there
SELECT pg_temp.start('timeout-old', 0);
SELECT docket.await_event(pg_temp.id('timeout-old'), pg_temp.tok('timeout-old'), 'w', 'late-event', 1000);
UPDATE ids SET token = (SELECT c.claim_token FROM docket.claim_tasks('q-timeout-old', 1, now => pg_temp.t(1)) c)
 WHERE name = 'timeout-old';
SELECT pg_temp.at(4);
SELECT docket.complete_task(pg_temp.id('timeout-old'), pg_temp.tok('timeout-old'));
-- completed exactly at the horizon t(50), and after it at t(100)
SELECT pg_temp.start('done-at-horizon', 49);
SELECT pg_temp.at(50);
SELECT docket.complete_task(pg_temp.id('done-at-horizon'), pg_temp.tok('done-at-horizon'));
SELECT pg_temp.start('done-new', 99);
SELECT pg_temp.at(100);
SELECT docket.complete_task(pg_temp.id('done-new'), pg_temp.tok('done-new'));

-- unfinished, last written long ago
SELECT pg_temp.start('pending-old', 0, claim => false);
SELECT pg_temp.start('running-old', 0);
SELECT docket.complete_step(pg_temp.id('running-old'), pg_temp.tok('running-old'), 'a', '1');
SELECT pg_temp.start('sleeping-old', 0);
SELECT docket.sleep_until(pg_temp.id('sleeping-old'), pg_temp.tok('sleeping-old'), 'nap', pg_temp.t(100000));
SELECT pg_temp.start('waiting-old', 0);
SELECT docket.await_event(pg_temp.id('waiting-old'), pg_temp.tok('waiting-old'), 'w', 'pending-event');
SELECT pg_temp.start('retrying-old', 0, opts => '{"retry": {"kind": "fixed", "base_ms": 100000000}}');
SELECT disposition FROM docket.fail_task(pg_temp.id('retrying-old'), pg_temp.tok('retrying-old'), '"e"');
SELECT pg_temp.start('poisoned-old', 0, lease => 1000, mca => 1);
SELECT count(*) FROM docket.claim_tasks('q-poisoned-old', 1, 1000, 1, pg_temp.t(2));

-- events: emitted at t(0) (tenantless) and at t(100) (tenantless, tenant t1); the
-- unemitted slots of the waits above
SELECT pg_temp.at(0);
SELECT docket.emit_event('old-event', '{"n": 1}');
SELECT pg_temp.at(100);
SELECT docket.emit_event('new-event', '{"n": 2}');
SELECT docket.emit_event('old-event', '{"n": 3}', 'tenant:t1');

SELECT is((SELECT string_agg(i.name || ':' || r.status || ':' || extract(epoch FROM r.updated_at - pg_temp.t(0))::int,
                             ' ' ORDER BY r.updated_at, i.name)
             FROM ids i JOIN docket.runs r USING (run_id)),
  'pending-old:running:0 poisoned-old:running:0 retrying-old:running:0 running-old:running:0 '
  'sleeping-old:running:0 waiting-old:waiting:0 done-old:completed:1 failed-old:failed:2 '
  'cancelled-old:cancelled:3 timeout-old:completed:4 done-at-horizon:completed:50 done-new:completed:100',
  'fixture: statuses and last writes');
SELECT is(pg_temp.kinds('done-old'), 'run,run_events,steps,task', 'fixture: done-old has steps and run events');
SELECT is(pg_temp.kinds('timeout-old'), 'run,run_events,task', 'fixture: complete_task removed timeout-old''s leftover wait row');
SELECT is(pg_temp.event_names(), '/late-event /never-emitted /new-event /old-event /pending-event t1/old-event',
  'fixture: the event slots');

INSERT INTO snaps VALUES ('kept', pg_temp.rows_of(ARRAY['pending-old', 'running-old', 'sleeping-old', 'waiting-old',
  'retrying-old', 'poisoned-old', 'done-at-horizon', 'done-new']));
INSERT INTO snaps VALUES ('graphs', (SELECT jsonb_agg(to_jsonb(g)) FROM docket.graphs g));

-------------------------------------------------------------------------------
-- Cleanup: horizon t(200) - 150 s = t(50), batches of 2
-------------------------------------------------------------------------------
SELECT pg_temp.at(200);
SELECT is(docket.cleanup(interval '150 seconds', 2), 2::bigint, 'the first batch deletes 2 runs');
SELECT is(pg_temp.kinds('done-old') || '|' || pg_temp.kinds('failed-old'), '|',
  'the two oldest finished tasks are gone: run, task row, steps, run events');
SELECT is(pg_temp.kinds('cancelled-old') || '|' || pg_temp.kinds('timeout-old'), 'run,run_events,task|run,run_events,task',
  'the next ones wait for the next batch');
SELECT is(pg_temp.event_names(), '/late-event /never-emitted /new-event /pending-event t1/old-event',
  'the event emitted before the horizon is gone; later and unemitted ones stay');

SELECT is(docket.cleanup(interval '150 seconds', 2), 2::bigint, 'the second batch deletes 2 runs');
SELECT is(pg_temp.kinds('cancelled-old') || '|' || pg_temp.kinds('timeout-old'), '|',
  'the cancelled task and the completed one are gone');
SELECT is(docket.cleanup(interval '150 seconds', 2), 0::bigint, 'then nothing is left to delete: 0');

SELECT is(pg_temp.rows_of(ARRAY['pending-old', 'running-old', 'sleeping-old', 'waiting-old',
  'retrying-old', 'poisoned-old', 'done-at-horizon', 'done-new']), (SELECT s FROM snaps WHERE name = 'kept'),
  'unfinished tasks of any age, a task finished exactly at the horizon and a newer one are untouched');
SELECT is((SELECT jsonb_agg(to_jsonb(g)) FROM docket.graphs g), (SELECT s FROM snaps WHERE name = 'graphs'),
  'graphs are untouched');
SELECT is((SELECT count(*)::int FROM docket.tasks), 8, 'eight task rows remain');
SELECT is((SELECT count(*)::int FROM docket.task_steps
            WHERE run_id NOT IN (SELECT run_id FROM docket.runs)), 0, 'no orphan steps');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_constraint WHERE contype = 'f' AND conrelid = 'docket.task_steps'::regclass),
  'the steps go with their runs by the runs_deleted trigger: no foreign key is checked per stored step');

-- older_than 0: everything finished before now
SELECT is(docket.cleanup(interval '0', 100000), 2::bigint, 'older_than 0 deletes every task finished before now');
SELECT is(pg_temp.kinds('done-at-horizon') || '|' || pg_temp.kinds('done-new'), '|', 'both remaining finished tasks');
SELECT is(pg_temp.event_names(), '/late-event /never-emitted /pending-event',
  'and every emitted event; unemitted slots stay');
SELECT is(pg_temp.rows_of(ARRAY['pending-old', 'running-old', 'sleeping-old', 'waiting-old',
  'retrying-old', 'poisoned-old']),
  (SELECT s - 'done-at-horizon' - 'done-new' FROM snaps WHERE name = 'kept'),
  'the unfinished tasks are still untouched');

-- the unfinished tasks still work after a cleanup
SELECT is(docket.emit_event('pending-event'), true, 'the waiting task''s event is emitted');
SELECT is((SELECT c.wake_reason FROM docket.claim_tasks('q-waiting-old', now => pg_temp.t(200)) c), 'event',
  'and the waiting task wakes');

SELECT * FROM finish();
ROLLBACK;
