-- Hostile input (issue 8): a worker call without the claim learns nothing
-- about the task's steps, events or children, and touches nothing. The token
-- is checked first (DK001 stale, DK003 not found, DK010 cancelled), before a
-- replayed step's kind is compared, a child is looked up or an event slot is
-- taken. Times in 2041 (docket.fake_now).
BEGIN;
SELECT plan(8);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql
\ir lib/err.sql

SELECT pg_temp.at(0);
SELECT pg_temp.spawn('w');
SELECT pg_temp.spawn('other', 'tenant:acme');
SELECT pg_temp.claim('w', 1);
-- A stored sleep step named 'nap' that a stranger could probe for.
SELECT docket.sleep_until(pg_temp.id('w'), pg_temp.tok('w'), 'nap', pg_temp.t(0));
INSERT INTO snaps VALUES ('before', pg_temp.snap());
CREATE TEMP TABLE stranger AS SELECT gen_random_uuid() AS token;

SELECT is(left(pg_temp.err(format($$SELECT docket.await_task(%L, %L, 'join', 'no-such-child')$$,
                                  pg_temp.id('w'), (SELECT token FROM stranger))), 5),
  'DK001', 'await_task with another token: stale, not "child does not exist"');
SELECT is(left(pg_temp.err(format($$SELECT docket.await_task(%L, %L, 'join', %L)$$,
                                  pg_temp.id('w'), (SELECT token FROM stranger), pg_temp.id('other'))), 5),
  'DK001', 'nor whether a task of another tenant exists');
SELECT is(left(pg_temp.err(format($$SELECT docket.await_task(%L, %L, 'nap', %L)$$,
                                  pg_temp.id('w'), (SELECT token FROM stranger), pg_temp.id('other'))), 5),
  'DK001', 'a replayed step of another kind: stale, not the kind mismatch (22023)');
SELECT is(left(pg_temp.err(format($$SELECT docket.await_event(%L, %L, 'nap', 'e')$$,
                                  pg_temp.id('w'), (SELECT token FROM stranger))), 5),
  'DK001', 'await_event on that step with another token: stale');
SELECT is(left(pg_temp.err(format($$SELECT docket.await_event(%L, %L, 'wait', 'probe-event')$$,
                                  pg_temp.id('w'), (SELECT token FROM stranger))), 5),
  'DK001', 'await_event with another token: stale');
SELECT is(left(pg_temp.err(format($$SELECT docket.await_event('no-such-task', %L, 'wait', 'probe-event')$$,
                                  (SELECT token FROM stranger))), 5),
  'DK003', 'await_event on an unknown task: not found');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'before'),
  'and nothing changed: no event slot, no wait, no step');
-- The holder still gets the kind mismatch.
SELECT is(left(pg_temp.err(format($$SELECT docket.await_task(%L, %L, 'nap', %L)$$,
                                  pg_temp.id('w'), pg_temp.tok('w'), pg_temp.id('other'))), 5),
  '22023', 'the holder replaying the step as another kind: 22023');

SELECT * FROM finish();
ROLLBACK;
