-- Progress resets the claim-attempt (poison) counter: a stored step (complete_step,
-- complete_steps outcome `stored`) resets the run's claim_attempts in the same
-- fenced statement, as a commit does, so a long task whose worker crashes now and
-- then is not poisoned while it makes progress. A replayed (kept) step, a
-- heartbeat or a stale call is not progress: a task that crashes before storing
-- a new step is still poisoned after max_claim_attempts claims. Times in 2041
-- (docket.fake_now), leases of 1 s, max_claim_attempts 2.
BEGIN;
SELECT plan(30);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql

-- claim2(n, s): claims task n's queue at t(s) with a 1 s lease and max_claim_attempts
-- 2; keeps the token; 'wake_reason', or '' when nothing was returned.
CREATE FUNCTION pg_temp.claim2(n text, s double precision) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  PERFORM pg_temp.at(s);
  SELECT * INTO c FROM docket.claim_tasks(n, 1, 1000, 2, pg_temp.t(s)) x;
  IF NOT FOUND THEN
    RETURN '';
  END IF;
  INSERT INTO toks VALUES (n, c.claim_token) ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token;
  RETURN c.wake_reason;
END $$;
CREATE FUNCTION pg_temp.attempts(n text) RETURNS int LANGUAGE sql AS
  $$ SELECT claim_attempts FROM docket.runs WHERE run_id = pg_temp.id(n) $$;
CREATE FUNCTION pg_temp.poison(n text) RETURNS text LANGUAGE sql AS
  $$ SELECT coalesce(poison_reason, '-') FROM docket.runs WHERE run_id = pg_temp.id(n) $$;

-------------------------------------------------------------------------------
-- complete_step: a stored step resets the counter
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('p');
SELECT is(pg_temp.claim2('p', 0), 'new', 'p: claim 1');
SELECT is(pg_temp.attempts('p'), 1, 'the claim counts one attempt');
SELECT pg_temp.at(0.5);
SELECT is(docket.complete_step(pg_temp.id('p'), pg_temp.tok('p'), 's1', '1'), '1'::jsonb, 'p: step s1 stored');
SELECT is(pg_temp.attempts('p'), 0, 'a stored step resets claim_attempts');
SELECT is(pg_temp.claim2('p', 2), 'recovered', 'p: the worker crashed; claim 2 recovers it');
SELECT pg_temp.at(2.5);
SELECT is(docket.complete_step(pg_temp.id('p'), pg_temp.tok('p'), 's2', '2'), '2'::jsonb, 'p: step s2 stored');
SELECT is(pg_temp.claim2('p', 4), 'recovered', 'p: crashed again; claim 3');
SELECT pg_temp.at(4.5);
SELECT is(docket.complete_step(pg_temp.id('p'), pg_temp.tok('p'), 's3', '3'), '3'::jsonb, 'p: step s3 stored');
SELECT is(pg_temp.claim2('p', 6), 'recovered',
  'p: a fourth claim with max_claim_attempts 2: progress kept the task from being poisoned');
SELECT is(pg_temp.poison('p'), '-', 'p: not poisoned');
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('p'), pg_temp.tok('p'), '"done"')$$, 'p: completes');

-------------------------------------------------------------------------------
-- No new step since the last stored one: poisoned after max_claim_attempts
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('k');
SELECT is(pg_temp.claim2('k', 100), 'new', 'k: claim 1');
SELECT pg_temp.at(100.5);
SELECT docket.complete_step(pg_temp.id('k'), pg_temp.tok('k'), 's1', '1');
SELECT is(pg_temp.attempts('k'), 0, 'k: step s1 stored, counter reset');
SELECT is(pg_temp.claim2('k', 102), 'recovered', 'k: claim 1 after the step');
SELECT pg_temp.at(102.5);
SELECT is(docket.complete_step(pg_temp.id('k'), pg_temp.tok('k'), 's1', '9'), '1'::jsonb, 'k: s1 replayed (kept)');
SELECT lives_ok($$SELECT docket.heartbeat(pg_temp.id('k'), pg_temp.tok('k'))$$, 'k: a heartbeat');
SELECT is(pg_temp.attempts('k'), 1, 'a kept step and a heartbeat do not reset the counter');
SELECT is(pg_temp.claim2('k', 104), 'recovered', 'k: claim 2 after the step');
SELECT is(pg_temp.claim2('k', 106), '', 'k: the third claim without a new step poisons it');
SELECT is(pg_temp.poison('k'), 'max_claim_attempts_exceeded', 'k: poisoned');

-- A stale call with a new step name changes nothing (DK001), the counter included.
SELECT pg_temp.spawn('s');
SELECT pg_temp.claim2('s', 200);
SELECT pg_temp.keep('s', 's_old');
SELECT is(pg_temp.claim2('s', 202), 'recovered', 's: claim 2, the old token is stale');
INSERT INTO snaps VALUES ('s', pg_temp.snap());
SELECT throws_ok($$SELECT docket.complete_step(pg_temp.id('s'), pg_temp.tok('s_old'), 'new', '1')$$,
  'DK001', pg_temp.stale('s'), 's: a new step under the old token: DK001');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 's'), 'and changes nothing (claim_attempts 2)');

-------------------------------------------------------------------------------
-- complete_steps: per run, only a stored element resets its run's counter
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('b1');
SELECT pg_temp.spawn('b2');
SELECT pg_temp.spawn('b3');
SELECT pg_temp.claim2('b1', 300);
SELECT pg_temp.claim2('b2', 300);
SELECT pg_temp.claim2('b3', 300);
SELECT pg_temp.at(300.5);
SELECT docket.complete_step(pg_temp.id(n), pg_temp.tok(n), 'old', '0') FROM unnest(ARRAY['b1', 'b2', 'b3']) n;
SELECT pg_temp.claim2(n, 302) FROM unnest(ARRAY['b1', 'b2', 'b3']) n;
SELECT pg_temp.keep('b3', 'b3_old');
SELECT pg_temp.claim2('b3', 304);
SELECT is((SELECT array_agg(pg_temp.attempts(n) ORDER BY n) FROM unnest(ARRAY['b1', 'b2', 'b3']) n),
  ARRAY[1, 1, 2], 'b1, b2 recovered once since their step, b3 twice');
SELECT pg_temp.at(304.5);
SELECT results_eq(
  $$SELECT outcome FROM docket.complete_steps(
      ARRAY[pg_temp.id('b2'), pg_temp.id('b1'), pg_temp.id('b1'), pg_temp.id('b3')],
      ARRAY[pg_temp.tok('b2'), pg_temp.tok('b1'), pg_temp.tok('b1'), pg_temp.tok('b3_old')],
      ARRAY['old', 'old', 'new', 'new'], ARRAY['5', '5', '6', '7']::jsonb[])$$,
  $$VALUES ('kept'), ('kept'), ('stored'), ('stale')$$,
  'a batch: b2 replays, b1 replays and stores a new step, b3 under a stale token');
SELECT is(pg_temp.attempts('b1'), 0, 'b1 stored a step: reset');
SELECT is(pg_temp.attempts('b2'), 1, 'b2 only replayed: unchanged');
SELECT is(pg_temp.attempts('b3'), 2, 'b3''s stale element: unchanged');
SELECT results_eq(
  $$SELECT outcome FROM docket.complete_steps(ARRAY[pg_temp.id('b2')], ARRAY[pg_temp.tok('b2')],
                                              ARRAY['new'], ARRAY['8']::jsonb[])$$,
  $$VALUES ('stored')$$, 'a batch of one run: b2 stores a new step');
SELECT is(pg_temp.attempts('b2'), 0, 'b2: reset');

SELECT * FROM finish();
ROLLBACK;
