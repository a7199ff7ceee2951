-- A step checkpoint's claim refresh (complete_steps, complete_step) is written
-- through the table and index access methods (src/pg/run_write.cpp), not an
-- UPDATE statement. It must write exactly the columns the statement wrote:
-- claimed_at only forward, claim_renewed_at once half the lease has passed,
-- the attempt counter reset only by a fresh step, the event counter advanced
-- by the fresh steps; keep every index whole; and give way to the statement
-- where the statement does more (a trigger), where a value is out of range
-- (the statement raises), and when docket.direct_writes is off.
BEGIN;
SELECT plan(23);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql
\ir lib/direct_writes.sql

-- steps(names, step, value): complete_steps of one step for each task named,
-- at the current fake time; the outcomes in order.
CREATE FUNCTION pg_temp.store(names text[], step text, value jsonb DEFAULT '1')
RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(s.outcome ORDER BY s.ord)
    FROM docket.complete_steps(ARRAY(SELECT pg_temp.id(n) FROM unnest(names) n),
                               ARRAY(SELECT pg_temp.tok(n) FROM unnest(names) n),
                               array_fill(step, ARRAY[cardinality(names)]),
                               array_fill(value, ARRAY[cardinality(names)]))
         WITH ORDINALITY AS s (run_id, step_name, outcome, value, ord) $$;
-- The refresh's columns of task n.
CREATE FUNCTION pg_temp.cols(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('claimed_at', r.claimed_at, 'renewed', r.claim_renewed_at,
                            'attempts', r.claim_attempts, 'event_seq', r.event_seq)
    FROM docket.runs r WHERE r.run_id = pg_temp.id(n) $$;
CREATE FUNCTION pg_temp.cols(claimed double precision, renewed double precision, attempts int,
                             event_seq bigint) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('claimed_at', pg_temp.t(claimed), 'renewed', pg_temp.t(renewed),
                            'attempts', attempts, 'event_seq', event_seq) $$;

SELECT pg_temp.at(0);
SELECT pg_temp.spawn(n) FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e']) n;
SELECT pg_temp.claim(n, 0) FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e']) n;
SELECT is(pg_temp.cols('a'), pg_temp.cols(0, 0, 1, 2), 'a: claimed at 0, one attempt, two events (spawned, claimed)');

-- A fresh step: claimed_at forward, attempts reset, one event more; the claim
-- is not renewed before half its lease (15 s of 30) has passed.
SELECT pg_temp.at(5);
SELECT is(pg_temp.store(ARRAY['a', 'b', 'c'], 's1'), ARRAY['stored', 'stored', 'stored'],
          'three fresh steps are stored');
SELECT is(pg_temp.cols('a'), pg_temp.cols(5, 0, 0, 3),
          'a fresh step moves claimed_at, resets the attempts, counts one event');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds every refreshed version');

-- A replayed step (kept) refreshes the claim but is not progress: the
-- attempts stay and no event is counted.
UPDATE docket.runs SET claim_attempts = 3 WHERE run_id = pg_temp.id('b');
SELECT pg_temp.at(7);
SELECT is(pg_temp.store(ARRAY['b'], 's1', '2'), ARRAY['kept'], 'b: the step is kept');
SELECT is(pg_temp.cols('b'), pg_temp.cols(7, 0, 3, 3),
          'a kept step moves claimed_at only');

-- Past half the lease, the claim is renewed: claim_renewed_at (the key of
-- runs_claimed) moves to the new claimed_at, a non-HOT version whose index
-- entries amcheck finds.
SELECT pg_temp.at(20);
SELECT is(pg_temp.store(ARRAY['a', 'c'], 's2'), ARRAY['stored', 'stored'], 'a, c: second steps stored');
SELECT is(pg_temp.cols('a'), pg_temp.cols(20, 20, 0, 4), 'past half the lease the claim is renewed');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds the renewed versions');
SET LOCAL enable_seqscan = off;
SELECT is((SELECT count(*) FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL
             AND claim_token IS NOT NULL AND claim_renewed_at >= pg_temp.t(20)
             AND run_id IN (pg_temp.id('a'), pg_temp.id('c'))), 2::bigint,
          'runs_claimed finds the renewed claims at their new key');
RESET enable_seqscan;

-- claimed_at never moves back.
UPDATE docket.runs SET claimed_at = pg_temp.t(25) WHERE run_id = pg_temp.id('c');
SELECT pg_temp.at(21);
SELECT is(pg_temp.store(ARRAY['c'], 's3'), ARRAY['stored'], 'c: third step stored');
SELECT is(pg_temp.cols('c'), pg_temp.cols(25, 20, 0, 5), 'claimed_at stays ahead of now');

-- A wrong token, and a task past its deadline, change nothing through it.
SELECT pg_temp.keep('d', 'd-real');
UPDATE toks SET token = gen_random_uuid() WHERE name = 'd';
CREATE TEMP TABLE before AS SELECT to_jsonb(r) AS row FROM docket.runs r WHERE r.run_id = pg_temp.id('d');
SELECT is(pg_temp.store(ARRAY['d'], 's1'), ARRAY['stale'], 'a wrong token is stale');
SELECT is((SELECT to_jsonb(r) FROM docket.runs r WHERE r.run_id = pg_temp.id('d')), (SELECT row FROM before),
          'and the row is unchanged');
UPDATE toks SET token = pg_temp.tok('d-real') WHERE name = 'd';
UPDATE docket.runs SET deadline_at = pg_temp.t(10) WHERE run_id = pg_temp.id('d');
SELECT is(pg_temp.store(ARRAY['d'], 's1'), ARRAY['cancelled'], 'past its deadline the task is cancelled');
SELECT is((SELECT count(*) FROM docket.task_steps WHERE run_id = pg_temp.id('d')), 0::bigint,
          'and no step is stored');

-- A value out of range goes to the statement, which raises (22003) and
-- stores nothing.
UPDATE docket.runs SET event_seq = 9223372036854775807 WHERE run_id = pg_temp.id('e');
SELECT throws_ok($$ SELECT pg_temp.store(ARRAY['e'], 's1') $$, '22003', 'bigint out of range',
                 'an event counter at its end raises as the statement does');

-- A lease too long for this path is refreshed by the statement, to the same
-- columns.
UPDATE docket.runs SET event_seq = 1, lease_ms = 2199023255552 WHERE run_id = pg_temp.id('e');
SELECT is(pg_temp.store(ARRAY['e'], 's1'), ARRAY['stored'], 'e: a step of a very long lease is stored');
SELECT is(pg_temp.cols('e'), pg_temp.cols(21, 0, 0, 2), 'and the claim refreshed, not renewed');

-- A BEFORE UPDATE trigger: the statement refreshes, and the trigger fires.
CREATE TRIGGER tap_runs_seen BEFORE UPDATE ON docket.runs FOR EACH ROW EXECUTE FUNCTION pg_temp.saw();
SELECT pg_temp.at(22);
SELECT is(pg_temp.store(ARRAY['a', 'b'], 's9'), ARRAY['stored', 'stored'], 'with a trigger the steps are stored');
SELECT results_eq($$ SELECT run_id FROM seen ORDER BY 1 $$,
                  $$ SELECT pg_temp.id(n) FROM unnest(ARRAY['a', 'b']) n ORDER BY 1 $$,
                  'and the trigger fired for each refreshed run');
DROP TRIGGER tap_runs_seen ON docket.runs;

-- docket.direct_writes off: the statement, to the same columns.
SET LOCAL docket.direct_writes = off;
SELECT pg_temp.at(23);
SELECT is(pg_temp.store(ARRAY['c'], 's10'), ARRAY['stored'], 'with direct writes off the step is stored');
SELECT is(pg_temp.cols('c'), pg_temp.cols(25, 20, 0, 6), 'and the claim refreshed as before');
RESET docket.direct_writes;

SELECT * FROM finish();
ROLLBACK;
