-- A task's completion (complete_tasks, complete_task) is written through the
-- table and index access methods (src/pg/run_write.cpp), not an UPDATE
-- statement. It must write exactly the row the statement wrote (document,
-- status, checkpoint, cleared claim, counters and the completed event stated
-- by the row), keep every index whole, and give way to the statement where the
-- statement does more: a run completed before (its completed event goes to
-- the log), a counter at its end (the statement raises), a trigger, and
-- docket.direct_writes off.
BEGIN;
SELECT plan(25);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql
\ir lib/direct_writes.sql

-- done(names, results): complete_tasks of the tasks named with those results;
-- the outcomes in order.
CREATE FUNCTION pg_temp.done(names text[], results jsonb[]) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(c.outcome ORDER BY c.ord)
    FROM docket.complete_tasks(ARRAY(SELECT pg_temp.id(n) FROM unnest(names) n),
                               ARRAY(SELECT pg_temp.tok(n) FROM unnest(names) n), results)
         WITH ORDINALITY AS c (run_id, outcome, ord) $$;
-- The row of task n without what differs between two tasks of the fixture.
CREATE FUNCTION pg_temp.row_of(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(r) - '{run_id,queue,graph_id}'::text[] FROM docket.runs r
   WHERE r.run_id = pg_temp.id(n) $$;
-- Task n's completed events in its history, logged or stated by the row.
CREATE FUNCTION pg_temp.completed_events(n text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM docket.task_history('system', pg_temp.id(n)) e WHERE e.type = 'completed' $$;

SELECT pg_temp.at(0);
SELECT pg_temp.spawn(n) FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']) n;
SELECT pg_temp.claim(n, 0) FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']) n;
CREATE TEMP TABLE keep_row AS SELECT pg_temp.row_of('a') AS claimed;

-- The same completion through this path (a, c) and through the statement
-- (b, d, direct writes off) gives the same row.
SELECT pg_temp.at(5);
SELECT is(pg_temp.done(ARRAY['a', 'c'], ARRAY['{"x": [1, 2]}', NULL]::jsonb[]),
          ARRAY['completed', 'completed'], 'a, c: completed');
SET LOCAL docket.direct_writes = off;
SELECT is(pg_temp.done(ARRAY['b', 'd'], ARRAY['{"x": [1, 2]}', NULL]::jsonb[]),
          ARRAY['completed', 'completed'], 'b, d: completed by the statement');
RESET docket.direct_writes;
SELECT is(pg_temp.row_of('a'), pg_temp.row_of('b'), 'a result: the row the statement writes');
SELECT is(pg_temp.row_of('c'), pg_temp.row_of('d'), 'a NULL result: the row the statement writes');
SELECT isnt(pg_temp.row_of('a'), (SELECT claimed FROM keep_row), 'and the row changed');

-- What that row says.
SELECT is((SELECT jsonb_build_object('status', status, 'result', document -> 'result',
                                     'checkpoint_type', checkpoint_type, 'token', claim_token,
                                     'claimed_at', claimed_at, 'wake_at', wake_at,
                                     'completed_seq', completed_seq, 'event_seq', event_seq,
                                     'completed_at', completed_at, 'updated_at', updated_at)
             FROM docket.runs WHERE run_id = pg_temp.id('a')),
          jsonb_build_object('status', 'completed', 'result', '{"x": [1, 2]}'::jsonb,
                             'checkpoint_type', 'run_completed', 'token', NULL,
                             'claimed_at', NULL, 'wake_at', NULL,
                             'completed_seq', 3, 'event_seq', 3,
                             'completed_at', pg_temp.t(5), 'updated_at', pg_temp.t(5)),
          'a: completed, its result kept, the claim cleared, the event stated by the row');
SELECT is((SELECT document -> 'result' FROM docket.runs WHERE run_id = pg_temp.id('c')),
          'null'::jsonb, 'c: a NULL result is stored as JSON null');
SELECT is(docket.task_result('system', pg_temp.id('a')) -> 'result', '{"x": [1, 2]}'::jsonb, 'task_result reads a''s result');
SELECT is(pg_temp.completed_events('a'), 1::bigint, 'a: one completed event in its history');
SELECT is((SELECT count(*) FROM docket.task_history('system', pg_temp.id('a'))),
          (SELECT count(*) FROM docket.task_history('system', pg_temp.id('b'))), 'a and b: histories of one length');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds every completed version');
SET LOCAL enable_seqscan = off;
SELECT is((SELECT count(*) FROM docket.runs WHERE status IN ('completed', 'failed', 'cancelled')
             AND run_id IN (pg_temp.id('a'), pg_temp.id('c'))), 2::bigint,
          'runs_finished finds the completed runs');
SELECT is((SELECT count(*) FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL
             AND claim_token IS NOT NULL AND run_id IN (pg_temp.id('a'), pg_temp.id('c'))), 0::bigint,
          'runs_claimed no longer does');
RESET enable_seqscan;

-- A run completed before (revived since) is completed by the statement, which
-- logs its second completed event; the items around it are written here, in
-- order.
UPDATE docket.runs SET completed_seq = 1, completed_at = pg_temp.t(0) WHERE run_id = pg_temp.id('f');
SELECT pg_temp.at(6);
SELECT is(pg_temp.done(ARRAY['e', 'f', 'g'], ARRAY['1', '2', '3']::jsonb[]),
          ARRAY['completed', 'completed', 'completed'], 'e, f (revived), g: completed');
SELECT is((SELECT jsonb_object_agg(n, jsonb_build_object('result', r.document -> 'result',
                                                          'completed_seq', r.completed_seq,
                                                          'event_seq', r.event_seq))
             FROM unnest(ARRAY['e', 'f', 'g']) n JOIN docket.runs r ON r.run_id = pg_temp.id(n)),
          '{"e": {"result": 1, "completed_seq": 3, "event_seq": 3},
            "f": {"result": 2, "completed_seq": 1, "event_seq": 3},
            "g": {"result": 3, "completed_seq": 3, "event_seq": 3}}'::jsonb,
          'each with its own result; f keeps its first completion');
SELECT is((SELECT count(*) FROM docket.run_events WHERE run_id = pg_temp.id('f') AND type = 'completed'),
          1::bigint, 'f: its second completed event is logged');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds them');

-- A wrong token and a task past its deadline change nothing through it.
SELECT pg_temp.keep('h', 'h-real');
UPDATE toks SET token = gen_random_uuid() WHERE name = 'h';
CREATE TEMP TABLE before AS SELECT pg_temp.row_of('h') AS row;
SELECT is(pg_temp.done(ARRAY['h'], ARRAY['1']::jsonb[]), ARRAY['stale'], 'a wrong token is stale');
SELECT is(pg_temp.row_of('h'), (SELECT row FROM before), 'and the row is unchanged');
UPDATE toks SET token = pg_temp.tok('h-real') WHERE name = 'h';
UPDATE docket.runs SET deadline_at = pg_temp.t(3) WHERE run_id = pg_temp.id('h');
SELECT is(pg_temp.done(ARRAY['h'], ARRAY['1']::jsonb[]), ARRAY['cancelled'],
          'past its deadline the task is cancelled');
SELECT is((SELECT document -> 'result' FROM docket.runs WHERE run_id = pg_temp.id('h')), NULL,
          'and no result is stored');

-- A counter at its end goes to the statement, which raises (22003).
UPDATE docket.runs SET event_seq = 9223372036854775807 WHERE run_id = pg_temp.id('i');
SELECT throws_ok($$ SELECT pg_temp.done(ARRAY['i'], ARRAY['1']::jsonb[]) $$, '22003', 'bigint out of range',
                 'an event counter at its end raises as the statement does');
SELECT is((SELECT status FROM docket.runs WHERE run_id = pg_temp.id('i')), 'running', 'and i still runs');

-- A BEFORE UPDATE trigger: the statement completes, and the trigger fires.
CREATE TRIGGER tap_runs_seen BEFORE UPDATE ON docket.runs FOR EACH ROW EXECUTE FUNCTION pg_temp.saw();
UPDATE docket.runs SET event_seq = 2 WHERE run_id = pg_temp.id('i');
DELETE FROM seen;
SELECT is(pg_temp.done(ARRAY['i', 'j'], ARRAY['1', '2']::jsonb[]), ARRAY['completed', 'completed'],
          'with a trigger the tasks are completed');
SELECT results_eq($$ SELECT run_id FROM seen ORDER BY 1 $$,
                  $$ SELECT pg_temp.id(n) FROM unnest(ARRAY['i', 'j']) n ORDER BY 1 $$,
                  'and the trigger fired for each');
DROP TRIGGER tap_runs_seen ON docket.runs;

SELECT * FROM finish();
ROLLBACK;
