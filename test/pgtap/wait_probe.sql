-- A task's finish releases its waiter rows and wakes the parents awaiting it
-- (task_store.cpp's release_finished). A probe of task_waits' two indexes
-- (src/pg/wait_probe.cpp) skips the DELETE when no such row is visible; it
-- must never skip one that would delete something: a parent's wait found
-- through task_waits_child, a probe that does not apply (an index that is not
-- the one it expects, docket.direct_writes off) leaving the statement to run.
BEGIN;
SELECT plan(11);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql

-- A parent p<n> awaiting its child c<n>, both spawned and claimed at t(s),
-- the parent suspended on step 'join'.
CREATE FUNCTION pg_temp.family(n text, s double precision) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.at(s);
  PERFORM pg_temp.spawn('p' || n);
  PERFORM pg_temp.spawn('c' || n);
  PERFORM pg_temp.claim('p' || n, s);
  PERFORM pg_temp.claim('c' || n, s);
  RETURN (SELECT status FROM docket.await_task(pg_temp.id('p' || n), pg_temp.tok('p' || n), 'join',
                                               pg_temp.id('c' || n)));
END $$;
-- Whether parent p<n> was woken by its child: due, wake reason child, no
-- waiter row left.
CREATE FUNCTION pg_temp.woken(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('due', r.wake_at IS NOT NULL, 'reason', r.document ->> 'wake_reason',
                            'waits', (SELECT count(*) FROM docket.task_waits w WHERE w.run_id = r.run_id))
    FROM docket.runs r WHERE r.run_id = pg_temp.id('p' || n) $$;
CREATE FUNCTION pg_temp.done(n text) RETURNS text LANGUAGE sql AS $$
  SELECT outcome FROM docket.complete_tasks(ARRAY[pg_temp.id(n)], ARRAY[pg_temp.tok(n)], ARRAY['1']::jsonb[]) $$;

-- A lone task finishes: nothing to release, and the waits of others stay.
SELECT is(pg_temp.family('1', 0), 'suspended', 'p1 awaits c1');
SELECT pg_temp.spawn('lone');
SELECT pg_temp.claim('lone', 0);
SELECT is(pg_temp.done('lone'), 'completed', 'a task nobody awaits completes');
SELECT is((SELECT count(*) FROM docket.task_waits WHERE run_id = pg_temp.id('p1')), 1::bigint,
          'the other waits stay');

-- The child finishes: its parent is woken.
SELECT pg_temp.at(1);
SELECT is(pg_temp.done('c1'), 'completed', 'c1 completes');
SELECT is(pg_temp.woken('1'), '{"due": true, "reason": "child", "waits": 0}'::jsonb, 'p1 is woken');

-- task_waits_child replaced by an index of another predicate: the probe does
-- not apply, the statement finds the wait.
SELECT is(pg_temp.family('2', 2), 'suspended', 'p2 awaits c2');
DROP INDEX docket.task_waits_child;
CREATE INDEX task_waits_child ON docket.task_waits (target) WHERE kind = 'event';
SELECT is(pg_temp.done('c2'), 'completed', 'c2 completes');
SELECT is(pg_temp.woken('2'), '{"due": true, "reason": "child", "waits": 0}'::jsonb,
          'p2 is woken although the index would not show its wait');
DROP INDEX docket.task_waits_child;
CREATE INDEX task_waits_child ON docket.task_waits (target) WHERE kind = 'child';

-- docket.direct_writes off: the statement, always.
SELECT is(pg_temp.family('3', 3), 'suspended', 'p3 awaits c3');
SET LOCAL docket.direct_writes = off;
SELECT is(pg_temp.done('c3'), 'completed', 'c3 completes');
SELECT is(pg_temp.woken('3'), '{"due": true, "reason": "child", "waits": 0}'::jsonb, 'p3 is woken');
RESET docket.direct_writes;

SELECT * FROM finish();
ROLLBACK;
