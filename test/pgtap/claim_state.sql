-- refresh_claim and release_claim: seed 000's clauses on keeping and handing
-- back a claim under its exact token. Times are in 2030 and passed as `now`.
BEGIN;
SELECT plan(53);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

\ir lib/run_fixture.sql
CREATE FUNCTION pg_temp.mk(id text, wake timestamptz, q text DEFAULT 'default') RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM docket.insert_run('tenantless', pg_temp.doc(id), 'run_initialized', wake, q);
END $$;
-- Claims the run `id`, the oldest claimable one of its queue at `at`; returns its token.
CREATE FUNCTION pg_temp.take(id text, at timestamptz, q text DEFAULT 'default') RETURNS uuid
  LANGUAGE plpgsql AS $$
DECLARE token uuid;
BEGIN
  SELECT c.claim_token INTO STRICT token
    FROM docket.claim_due(now => at, claim_limit => 1, queue => q) c WHERE c.run_id = id;
  RETURN token;
END $$;
CREATE FUNCTION pg_temp.row(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(r) FROM docket.runs r WHERE run_id = id $$;
CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.run_id), '[]') FROM docket.runs r $$;

CREATE TEMP TABLE tok (name text PRIMARY KEY, token uuid);
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);

-------------------------------------------------------------------------------
-- refresh_claim
-------------------------------------------------------------------------------
SELECT pg_temp.mk('a', pg_temp.t(0));
INSERT INTO tok VALUES ('a1', pg_temp.take('a', pg_temp.t(0)));
INSERT INTO snaps VALUES ('a', pg_temp.row('a'));

SELECT throws_ok($$SELECT docket.refresh_claim(NULL, (SELECT token FROM tok WHERE name = 'a1'), '2030-01-01Z')$$,
  '22023', 'bad_argument: run_id must not be NULL', 'refresh: NULL run_id');
SELECT throws_ok($$SELECT docket.refresh_claim('a', NULL, '2030-01-01Z')$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'refresh: NULL claim_token');
SELECT throws_ok($$SELECT docket.refresh_claim('a', (SELECT token FROM tok WHERE name = 'a1'), NULL)$$,
  '22023', 'bad_argument: now must not be NULL', 'refresh: NULL now');
SELECT throws_ok($$SELECT docket.refresh_claim('a', (SELECT token FROM tok WHERE name = 'a1'), 'infinity')$$,
  '22023', NULL, 'refresh: infinite now');
SELECT is(pg_temp.row('a'), (SELECT s FROM snaps WHERE name = 'a'), 'rejected refreshes changed nothing');

SELECT is(docket.refresh_claim('a', gen_random_uuid(), pg_temp.t(20)), false, 'a stale token: claim lost');
SELECT is(docket.refresh_claim('nope', (SELECT token FROM tok WHERE name = 'a1'), pg_temp.t(20)), false,
  'an unknown run: claim lost');
SELECT is(pg_temp.row('a'), (SELECT s FROM snaps WHERE name = 'a'), 'and nothing changed');

SELECT is(docket.refresh_claim('a', (SELECT token FROM tok WHERE name = 'a1'), pg_temp.t(20)), true,
  'the exact token refreshes');
SELECT is((pg_temp.row('a')->>'claimed_at')::timestamptz, pg_temp.t(20),
  'claimed_at moves to now (the argument, in 2030, not the server clock)');
SELECT is(pg_temp.row('a') - '{claimed_at,claim_renewed_at}'::text[],
          (SELECT s - '{claimed_at,claim_renewed_at}'::text[] FROM snaps WHERE name = 'a'),
  'nothing but claimed_at and claim_renewed_at change (token, wake, counters, document, sequence, updated_at)');

SELECT is(docket.refresh_claim('a', (SELECT token FROM tok WHERE name = 'a1'), pg_temp.t(10)), true,
  'a delayed refresh still holds the claim');
SELECT is((pg_temp.row('a')->>'claimed_at')::timestamptz, pg_temp.t(20),
  'but claimed_at never moves backward');

SELECT is_empty($$SELECT * FROM docket.claim_due(now => pg_temp.t(50), orphan_ttl_ms => 30000)$$,
  'a refreshed claim is not expired 30 s after the refresh');
SELECT is((SELECT c.run_id FROM docket.claim_due(now => pg_temp.t(50.000001), orphan_ttl_ms => 30000) c),
  'a', 'it expires once now - refreshed claimed_at > ttl');
SELECT is(docket.refresh_claim('a', (SELECT token FROM tok WHERE name = 'a1'), pg_temp.t(51)), false,
  'after a steal the old token refreshes nothing');
INSERT INTO snaps VALUES ('a-stolen', pg_temp.row('a'));
SELECT is((pg_temp.row('a')->>'claimed_at')::timestamptz, pg_temp.t(50.000001),
  'and the winning claim keeps its claimed_at');

-- A retain_claim commit stamps claimed_at from docket.now(); a refresh delayed
-- in flight cannot move it back and re-expose the run to a steal.
SELECT pg_temp.mk('b', pg_temp.t(0));
INSERT INTO tok VALUES ('b', pg_temp.take('b', pg_temp.t(0)));
SET LOCAL docket.fake_now = '2030-01-01 00:00:20+00';
SELECT lives_ok($$SELECT docket.commit('tenantless', pg_temp.doc('b', 2), 1,
                    (SELECT token FROM tok WHERE name = 'b'), 'step_completed', 'retain_claim')$$,
  'a retain_claim commit at t20');
RESET docket.fake_now;
SELECT is((pg_temp.row('b')->>'claimed_at')::timestamptz, pg_temp.t(20), 'the commit stamped claimed_at t20');
SELECT is(docket.refresh_claim('b', (SELECT token FROM tok WHERE name = 'b'), pg_temp.t(10)), true,
  'a refresh sent at t10 arrives late');
SELECT is((pg_temp.row('b')->>'claimed_at')::timestamptz, pg_temp.t(20),
  'and leaves the fresher claimed_at of the commit');

-------------------------------------------------------------------------------
-- release_claim
-------------------------------------------------------------------------------
SELECT pg_temp.mk('c', pg_temp.t(0));
INSERT INTO tok VALUES ('c1', pg_temp.take('c', pg_temp.t(0)));
INSERT INTO snaps VALUES ('c', pg_temp.row('c'));

SELECT throws_ok($$SELECT docket.release_claim(NULL, (SELECT token FROM tok WHERE name = 'c1'), '2030-01-01Z')$$,
  '22023', 'bad_argument: run_id must not be NULL', 'release: NULL run_id');
SELECT throws_ok($$SELECT docket.release_claim('c', NULL, '2030-01-01Z')$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'release: NULL claim_token');
SELECT throws_ok($$SELECT docket.release_claim('c', (SELECT token FROM tok WHERE name = 'c1'), NULL)$$,
  '22023', 'bad_argument: now must not be NULL', 'release: NULL now');
SELECT throws_ok($$SELECT docket.release_claim('c', (SELECT token FROM tok WHERE name = 'c1'), '-infinity')$$,
  '22023', NULL, 'release: infinite now');
SELECT is(pg_temp.row('c'), (SELECT s FROM snaps WHERE name = 'c'), 'rejected releases changed nothing');

SELECT lives_ok($$SELECT docket.release_claim('c', gen_random_uuid(), '2030-01-01 00:00:05Z')$$,
  'a stale token releases nothing, without error');
SELECT lives_ok($$SELECT docket.release_claim('nope', gen_random_uuid(), '2030-01-01 00:00:05Z')$$,
  'an unknown run releases nothing, without error');
SELECT is(pg_temp.row('c'), (SELECT s FROM snaps WHERE name = 'c'), 'and nothing changed');

SELECT lives_ok($$SELECT docket.release_claim('c', (SELECT token FROM tok WHERE name = 'c1'),
                                              '2030-01-01 00:00:05Z')$$,
  'the exact token releases');
SELECT results_eq(
  $$SELECT claim_token, claimed_at, wake_at, claim_attempts, poisoned_at FROM docket.runs WHERE run_id = 'c'$$,
  $$VALUES (NULL::uuid, NULL::timestamptz, pg_temp.t(5), 1, NULL::timestamptz)$$,
  'release clears token and claimed_at, records a wake at now and keeps the attempt count');
SELECT is(pg_temp.row('c') - '{claim_token,claimed_at,wake_at}'::text[],
  (SELECT s - '{claim_token,claimed_at,wake_at}'::text[] FROM snaps WHERE name = 'c'),
  'nothing else changes (document, sequence, updated_at, counters)');
UPDATE snaps SET s = pg_temp.row('c') WHERE name = 'c';

SELECT lives_ok($$SELECT docket.release_claim('c', (SELECT token FROM tok WHERE name = 'c1'),
                                              '2030-01-01 00:00:09Z')$$,
  'releasing again is idempotent success');
SELECT is(pg_temp.row('c'), (SELECT s FROM snaps WHERE name = 'c'),
  'and changes nothing (the wake stays at the first release)');
SELECT is(docket.refresh_claim('c', (SELECT token FROM tok WHERE name = 'c1'), pg_temp.t(6)), false,
  'a released token cannot be refreshed');

SELECT is_empty($$SELECT * FROM docket.claim_due(now => pg_temp.t(4.999999))$$,
  'the released run is not due before now');
INSERT INTO tok VALUES ('c2', pg_temp.take('c', pg_temp.t(5)));
SELECT is((pg_temp.row('c')->>'claim_attempts')::int, 2, 'it is due at now: claimed again, attempt 2');
INSERT INTO snaps VALUES ('c2', pg_temp.row('c'));
SELECT lives_ok($$SELECT docket.release_claim('c', (SELECT token FROM tok WHERE name = 'c1'),
                                              '2030-01-01 00:00:07Z')$$,
  'a release with the older token');
SELECT is(pg_temp.row('c'), (SELECT s FROM snaps WHERE name = 'c2'),
  'does not disturb the newer claim or its schedule');

SELECT lives_ok($$SELECT docket.release_claim('c', (SELECT token FROM tok WHERE name = 'c2'), '1999-06-01Z')$$,
  'a release with a now far from the real clock');
SELECT is((pg_temp.row('c')->>'wake_at')::timestamptz, '1999-06-01Z'::timestamptz,
  'records that now, not the server clock');

-- The stolen run 'a' and the refreshed run 'b' are untouched by the releases above.
SELECT is(pg_temp.row('a'), (SELECT s FROM snaps WHERE name = 'a-stolen'), 'other runs are untouched');

-- A poisoned run holds no claim: neither call finds a token to match.
SELECT pg_temp.mk('p', pg_temp.t(0), 'pq');
INSERT INTO tok VALUES ('p', pg_temp.take('p', pg_temp.t(0), 'pq'));
SELECT is((SELECT outcome FROM docket.claim_due(now => pg_temp.t(31), max_claim_attempts => 1, queue => 'pq')),
  'poisoned', 'p poisoned at its second need');
INSERT INTO snaps VALUES ('p', pg_temp.row('p'));
SELECT is(docket.refresh_claim('p', (SELECT token FROM tok WHERE name = 'p'), pg_temp.t(32)), false,
  'refresh on a poisoned run: claim lost');
SELECT lives_ok($$SELECT docket.release_claim('p', (SELECT token FROM tok WHERE name = 'p'), '2030-01-01 00:00:32Z')$$,
  'release on a poisoned run');
SELECT is(pg_temp.row('p'), (SELECT s FROM snaps WHERE name = 'p'), 'leaves it poisoned and unscheduled');

-- A refresh renews the claim: claimed_at and claim_renewed_at (the key of
-- runs_claimed, the expired class's index) move to the refresh's time, so a
-- claim kept alive leaves the range every claim reads; claim_started_at, the
-- claim's start, stays. The expired class still follows claimed_at.
SELECT pg_temp.mk('h', pg_temp.t(0), 'hq');
INSERT INTO tok VALUES ('h', pg_temp.take('h', pg_temp.t(0), 'hq'));
SELECT is((SELECT (claim_started_at, claim_renewed_at, claimed_at) FROM docket.runs WHERE run_id = 'h'),
  (pg_temp.t(0), pg_temp.t(0), pg_temp.t(0)), 'a claim sets claim_started_at, claim_renewed_at and claimed_at to now');
SELECT is(docket.refresh_claim('h', (SELECT token FROM tok WHERE name = 'h'), pg_temp.t(20)), true,
  'h refreshed at t20');
SELECT is(docket.refresh_claim('h', (SELECT token FROM tok WHERE name = 'h'), pg_temp.t(10)), true,
  'h refreshed late, at t10');
SELECT is((SELECT (claim_started_at, claim_renewed_at, claimed_at) FROM docket.runs WHERE run_id = 'h'),
  (pg_temp.t(0), pg_temp.t(20), pg_temp.t(20)), 'the refreshes renewed the claim, only forward; its start stays');
SELECT is_empty($$SELECT * FROM docket.claim_due(now => pg_temp.t(40), orphan_ttl_ms => 30000, queue => 'hq')$$,
  'claimed at t0, refreshed at t20: not expired at t40 with a 30 s TTL');
SELECT is((SELECT (outcome, run_id, claimed_at) FROM docket.claim_due(now => pg_temp.t(51), orphan_ttl_ms => 30000, queue => 'hq')),
  ('lease'::text, 'h'::text, pg_temp.t(51)), 'expired at t51 (refreshed 31 s before): stolen');
SELECT is((SELECT claim_started_at FROM docket.runs WHERE run_id = 'h'), pg_temp.t(51),
  'the steal starts a new claim');

SELECT * FROM finish();
ROLLBACK;
