-- abandon_claim: seed 000's clause on handing a claim back before execution,
-- and DESIGN.md's notes (validation, backoff, poisoning abandons).
-- Times are in 2030 and passed as `now`.
BEGIN;
SELECT plan(86);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

\ir lib/run_fixture.sql
-- Each run gets its own queue, so claims of one run never touch another.
CREATE FUNCTION pg_temp.mk(id text, wake timestamptz, owner text DEFAULT 'tenantless') RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM docket.insert_run(owner::docket.scope, pg_temp.doc(id), 'run_initialized', wake, id);
END $$;

CREATE TEMP TABLE tok (name text PRIMARY KEY, token uuid);
CREATE FUNCTION pg_temp.tk(n text) RETURNS uuid LANGUAGE sql AS $$ SELECT token FROM tok WHERE name = n $$;
-- Claims run `id` at `at` and remembers its token as `tname`; returns outcome:attempt.
CREATE FUNCTION pg_temp.take(id text, at timestamptz, tname text, ttl bigint DEFAULT 30000)
  RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  SELECT * INTO c FROM docket.claim_due(now => at, claim_limit => 1, orphan_ttl_ms => ttl, queue => id);
  IF c.run_id IS NULL THEN RETURN 'none'; END IF;
  INSERT INTO tok VALUES (tname, c.claim_token)
    ON CONFLICT (name) DO UPDATE SET token = excluded.token;
  RETURN c.outcome || ':' || c.claim_attempt;
END $$;

CREATE FUNCTION pg_temp.row(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(r) FROM docket.runs r WHERE run_id = id $$;
CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.run_id), '[]') FROM docket.runs r $$;
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);
CREATE FUNCTION pg_temp.keep(n text, id text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO snaps VALUES (n, pg_temp.row(id)) ON CONFLICT (name) DO UPDATE SET s = excluded.s $$;
CREATE FUNCTION pg_temp.kept(n text) RETURNS jsonb LANGUAGE sql AS $$ SELECT s FROM snaps WHERE name = n $$;
-- The claim-related columns of a run, for compact comparisons.
CREATE FUNCTION pg_temp.ops(id text) RETURNS text LANGUAGE sql AS $$
  SELECT format('token=%s claimed=%s wake=%s attempts=%s abandons=%s poisoned=%s reason=%s',
                CASE WHEN claim_token IS NULL THEN 'null' ELSE 'set' END,
                coalesce(claimed_at::text, 'null'), coalesce(wake_at::text, 'null'),
                claim_attempts, claim_abandons, coalesce(poisoned_at::text, 'null'),
                coalesce(poison_reason, 'null'))
    FROM docket.runs WHERE run_id = id $$;

SET LOCAL TimeZone = 'UTC';

-------------------------------------------------------------------------------
-- Bad arguments raise 22023 and change nothing.
-------------------------------------------------------------------------------
SELECT pg_temp.mk('a', pg_temp.t(0));
SELECT is(pg_temp.take('a', pg_temp.t(0), 'a1'), 'lease:1', 'a leased at t0');
SELECT pg_temp.keep('all', 'a');

SELECT throws_ok($$SELECT docket.abandon_claim(NULL, pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3)$$,
  '22023', 'bad_argument: run_id must not be NULL', 'NULL run_id');
SELECT throws_ok($$SELECT docket.abandon_claim('a', NULL, 1, pg_temp.t(1), pg_temp.t(60), 3)$$,
  '22023', 'bad_argument: claim_token must not be NULL', 'NULL claim_token');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), NULL, pg_temp.t(1), pg_temp.t(60), 3)$$,
  '22023', 'bad_argument: expected_checkpoint_seq must not be NULL', 'NULL expected_checkpoint_seq');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, NULL, pg_temp.t(60), 3)$$,
  '22023', 'bad_argument: now must not be NULL', 'NULL now');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), NULL, 3)$$,
  '22023', 'bad_argument: retry_at must not be NULL', 'NULL retry_at');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), NULL)$$,
  '22023', 'bad_argument: max_claim_abandons must not be NULL', 'NULL max_claim_abandons');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3, NULL)$$,
  '22023', 'bad_argument: non_poisoning must not be NULL', 'NULL non_poisoning');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(0.999999), 3)$$,
  '22023', 'bad_argument: retry_at must not precede now', 'retry_at before now');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(0), 3,
                                               backoff_base_ms => 1000, backoff_cap_ms => 5000)$$,
  '22023', 'bad_argument: retry_at must not precede now', 'retry_at before now, even with backoff');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3,
                                               backoff_base_ms => 1000)$$,
  '22023', 'bad_argument: backoff_base_ms and backoff_cap_ms go together: both or neither',
  'backoff_base_ms without backoff_cap_ms');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3,
                                               backoff_cap_ms => 1000)$$,
  '22023', 'bad_argument: backoff_base_ms and backoff_cap_ms go together: both or neither',
  'backoff_cap_ms without backoff_base_ms');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3,
                                               backoff_base_ms => 0, backoff_cap_ms => 1000)$$,
  '22023', 'bad_argument: backoff_base_ms and backoff_cap_ms must be > 0', 'backoff_base_ms 0');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3,
                                               backoff_base_ms => 1000, backoff_cap_ms => -1)$$,
  '22023', 'bad_argument: backoff_base_ms and backoff_cap_ms must be > 0', 'negative backoff_cap_ms');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 0)$$,
  '22023', 'bad_argument: max_claim_abandons must be > 0, got 0', 'max_claim_abandons 0');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), -2)$$,
  '22023', NULL, 'negative max_claim_abandons');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), -1, pg_temp.t(1), pg_temp.t(60), 3)$$,
  '22023', NULL, 'negative expected_checkpoint_seq');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, 'infinity', 'infinity', 3)$$,
  '22023', NULL, 'infinite now');
SELECT throws_ok($$SELECT docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), 'infinity', 3)$$,
  '22023', NULL, 'infinite retry_at');
SELECT is(pg_temp.snap(), jsonb_build_array(pg_temp.kept('all')), 'the rejected calls changed nothing');

-------------------------------------------------------------------------------
-- Stale: wrong token, other sequence, unknown run. Nothing changes.
-------------------------------------------------------------------------------
SELECT is(docket.abandon_claim('a', gen_random_uuid(), 1, pg_temp.t(1), pg_temp.t(60), 3), 'stale',
  'a token that is not the current claim: stale');
SELECT is(docket.abandon_claim('a', pg_temp.tk('a1'), 0, pg_temp.t(1), pg_temp.t(60), 3), 'stale',
  'a sequence below the stored one: stale');
SELECT is(docket.abandon_claim('a', pg_temp.tk('a1'), 2, pg_temp.t(1), pg_temp.t(60), 3), 'stale',
  'a sequence above the stored one: stale');
SELECT is(docket.abandon_claim('nope', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3), 'stale',
  'an unknown run: stale');
SELECT is(pg_temp.snap(), jsonb_build_array(pg_temp.kept('all')), 'the stale abandons changed nothing');

-------------------------------------------------------------------------------
-- Rescheduled: claim cleared, attempt handed back, abandon counted, wake = retry_at.
-------------------------------------------------------------------------------
SELECT is(docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(1), pg_temp.t(60), 3), 'rescheduled',
  'a matched abandon is rescheduled');
SELECT is(pg_temp.ops('a'),
  'token=null claimed=null wake=2030-01-01 00:01:00+00 attempts=0 abandons=1 poisoned=null reason=null',
  'claim cleared, attempt handed back (1 -> 0), one abandon, wake at retry_at');
SELECT is(pg_temp.row('a') - '{claim_token,claimed_at,wake_at,claim_attempts,claim_abandons}'::text[],
  pg_temp.kept('all') - '{claim_token,claimed_at,wake_at,claim_attempts,claim_abandons}'::text[],
  'the document, checkpoint_seq, checkpoint_type and updated_at are untouched');
SELECT pg_temp.keep('a', 'a');
SELECT is(docket.abandon_claim('a', pg_temp.tk('a1'), 1, pg_temp.t(2), pg_temp.t(60), 3), 'stale',
  'the same abandon again: stale (the claim is gone)');
SELECT is(pg_temp.row('a'), pg_temp.kept('a'), 'and nothing changed');
SELECT is(pg_temp.take('a', pg_temp.t(59.999999), 'x'), 'none', 'not claimable before retry_at');
SELECT is(pg_temp.take('a', pg_temp.t(60), 'a2'), 'lease:1',
  'claimable at retry_at, and the handed-back attempt did not count (attempt 1 again)');

-------------------------------------------------------------------------------
-- Poisoning: with max 2, the third consecutive abandon poisons; it still counts
-- the abandon and hands the attempt back. `now` is the argument.
-------------------------------------------------------------------------------
SELECT is(docket.abandon_claim('a', pg_temp.tk('a2'), 1, pg_temp.t(61), pg_temp.t(61), 2), 'rescheduled',
  'second abandon (count 1 < max 2): rescheduled');
SELECT is(pg_temp.ops('a'),
  'token=null claimed=null wake=2030-01-01 00:01:01+00 attempts=0 abandons=2 poisoned=null reason=null',
  'retry_at = now: due at once');
SELECT is(pg_temp.take('a', pg_temp.t(61), 'a3'), 'lease:1', 'claimed again at now');
SELECT is(docket.abandon_claim('a', pg_temp.tk('a3'), 1, pg_temp.t(62), pg_temp.t(100), 2), 'poisoned',
  'third abandon (count 2 reached max 2): poisoned');
SELECT is(pg_temp.ops('a'),
  'token=null claimed=null wake=null attempts=0 abandons=3 poisoned=2030-01-01 00:01:02+00 reason=max_claim_abandons_exceeded',
  'claim and wake cleared, attempt handed back, abandon counted, poison facts at now');
SELECT is((pg_temp.row('a')->'document'), pg_temp.kept('all')->'document', 'the document is untouched');
SELECT is(pg_temp.take('a', pg_temp.t(100000), 'x', 0), 'none', 'a poisoned run is not claimed');
SELECT is(docket.abandon_claim('a', pg_temp.tk('a3'), 1, pg_temp.t(63), pg_temp.t(100), 2), 'stale',
  'abandoning the poisoned run again: stale');

SELECT lives_ok($$SELECT docket.retry_poisoned_run('system', 'a', pg_temp.t(200))$$, 'poison recovery');
SELECT is(pg_temp.ops('a'),
  'token=null claimed=null wake=2030-01-01 00:03:20+00 attempts=0 abandons=0 poisoned=null reason=null',
  'recovery resets the abandon count');
SELECT is(pg_temp.take('a', pg_temp.t(200), 'a4'), 'lease:1', 'the recovered run is claimed again');
SELECT is(docket.abandon_claim('a', pg_temp.tk('a4'), 1, pg_temp.t(201), pg_temp.t(201), 1), 'rescheduled',
  'after recovery the count starts over (count 0 < max 1)');

-- max 1: the first abandon reschedules, the second poisons.
SELECT pg_temp.mk('one', pg_temp.t(0), owner => 'tenant:acme');
SELECT is(pg_temp.take('one', pg_temp.t(0), 'o1'), 'lease:1', 'one leased');
SELECT is(docket.abandon_claim('one', pg_temp.tk('o1'), 1, pg_temp.t(0), pg_temp.t(0), 1), 'rescheduled',
  'max 1: the first abandon is rescheduled (tenant runs are abandoned by the system claimer)');
SELECT is(pg_temp.take('one', pg_temp.t(0), 'o2'), 'lease:1', 'one leased again');
SELECT is(docket.abandon_claim('one', pg_temp.tk('o2'), 1, pg_temp.t(0), pg_temp.t(0), 1), 'poisoned',
  'max 1: the second abandon poisons');

-------------------------------------------------------------------------------
-- non_poisoning: counts the abandon, hands the attempt back, never poisons.
-------------------------------------------------------------------------------
SELECT pg_temp.mk('np', pg_temp.t(0));
SELECT is(pg_temp.take('np', pg_temp.t(0), 'n'), 'lease:1', 'np leased');
SELECT is(docket.abandon_claim('np', pg_temp.tk('n'), 1, pg_temp.t(0), pg_temp.t(0), 1, true), 'rescheduled',
  'non_poisoning abandon 1 of max 1');
SELECT is(pg_temp.take('np', pg_temp.t(0), 'n'), 'lease:1', 'np leased again');
SELECT is(docket.abandon_claim('np', pg_temp.tk('n'), 1, pg_temp.t(0), pg_temp.t(0), 1, true), 'rescheduled',
  'non_poisoning abandon 2 of max 1: still rescheduled');
SELECT is(pg_temp.take('np', pg_temp.t(0), 'n'), 'lease:1', 'np leased again');
SELECT is(docket.abandon_claim('np', pg_temp.tk('n'), 1, pg_temp.t(0), pg_temp.t(5), 1, true), 'rescheduled',
  'non_poisoning abandon 3 of max 1: still rescheduled');
SELECT is(pg_temp.ops('np'),
  'token=null claimed=null wake=2030-01-01 00:00:05+00 attempts=0 abandons=3 poisoned=null reason=null',
  'non_poisoning abandons are counted and hand the attempt back');
SELECT is(pg_temp.take('np', pg_temp.t(5), 'n'), 'lease:1', 'np leased again');
SELECT is(docket.abandon_claim('np', pg_temp.tk('n'), 1, pg_temp.t(5), pg_temp.t(5), 1), 'poisoned',
  'an ordinary abandon after them poisons (count 3 >= max 1)');

-- The attempt hand-back is floored at zero (fixture: a claim with a zero count).
SELECT pg_temp.mk('floor', pg_temp.t(0));
SELECT is(pg_temp.take('floor', pg_temp.t(0), 'f'), 'lease:1', 'floor leased');
UPDATE docket.runs SET claim_attempts = 0 WHERE run_id = 'floor';
SELECT is(docket.abandon_claim('floor', pg_temp.tk('f'), 1, pg_temp.t(0), pg_temp.t(0), 5), 'rescheduled',
  'abandon with a zero attempt count');
SELECT is((pg_temp.row('floor')->>'claim_attempts')::int, 0, 'the count stays at zero');

-------------------------------------------------------------------------------
-- Backoff: wake = now + min(base * 2^abandons_before, cap); retry_at is ignored.
-------------------------------------------------------------------------------
SELECT pg_temp.mk('k', pg_temp.t(0));
CREATE FUNCTION pg_temp.backoff(at double precision, base int, cap int) RETURNS interval
  LANGUAGE plpgsql AS $$
BEGIN
  IF pg_temp.take('k', pg_temp.t(at), 'k') <> 'lease:1' THEN RAISE 'k not leased at %', at; END IF;
  IF docket.abandon_claim('k', pg_temp.tk('k'), 1, pg_temp.t(at), pg_temp.t(at + 86400), 100,
                          false, base, cap) <> 'rescheduled' THEN
    RAISE 'k not rescheduled';
  END IF;
  RETURN (SELECT wake_at FROM docket.runs WHERE run_id = 'k') - pg_temp.t(at);
END $$;
SELECT is(pg_temp.backoff(0, 1000, 5000), interval '1 second', 'first abandon waits base (2^0)');
SELECT is(pg_temp.backoff(1, 1000, 5000), interval '2 seconds', 'second waits base * 2');
SELECT is(pg_temp.backoff(3, 1000, 5000), interval '4 seconds', 'third waits base * 4');
SELECT is(pg_temp.backoff(7, 1000, 5000), interval '5 seconds', 'fourth: base * 8 capped at 5 s');
SELECT is(pg_temp.backoff(12, 1000, 5000), interval '5 seconds', 'fifth: still the cap');
SELECT is((pg_temp.row('k')->>'claim_abandons')::int, 5, 'five abandons counted');
SELECT is(pg_temp.backoff(17, 250, 100000), interval '8 seconds', 'base 250 after 5 abandons: 250 * 32 ms');
SELECT is(pg_temp.backoff(25, 10000, 3000), interval '3 seconds', 'a base above the cap waits the cap');
UPDATE docket.runs SET claim_abandons = 60 WHERE run_id = 'k';  -- fixture: a long history
SELECT is(pg_temp.backoff(28, 1000, 2147483647), interval '2147483.647 seconds',
  'a huge exponent saturates at the cap');
UPDATE docket.runs SET wake_at = pg_temp.t(30) WHERE run_id = 'k';  -- fixture: due again at t30
SELECT is(pg_temp.backoff(30, 2147483647, 2147483647), interval '2147483.647 seconds',
  'the largest base and cap do not overflow');

-------------------------------------------------------------------------------
-- A steal or a commit makes the holder's abandon stale and changes nothing.
-------------------------------------------------------------------------------
SELECT pg_temp.mk('s', pg_temp.t(0));
SELECT is(pg_temp.take('s', pg_temp.t(0), 's1'), 'lease:1', 's leased at t0');
SELECT is(pg_temp.take('s', pg_temp.t(31), 's2'), 'lease:2', 's stolen at t31');
SELECT pg_temp.keep('s', 's');
SELECT is(docket.abandon_claim('s', pg_temp.tk('s1'), 1, pg_temp.t(32), pg_temp.t(60), 3), 'stale',
  'the robbed holder''s abandon is stale');
SELECT is(pg_temp.row('s'), pg_temp.kept('s'), 'and leaves the winning claim alone');

SELECT pg_temp.mk('c', pg_temp.t(0));
SELECT is(pg_temp.take('c', pg_temp.t(0), 'c'), 'lease:1', 'c leased');
SET LOCAL docket.fake_now = '2030-01-01 00:00:01+00';
SELECT lives_ok($$SELECT docket.commit('tenantless', pg_temp.doc('c', 2), 1, pg_temp.tk('c'),
                                       'step_completed', 'retain_claim')$$,
  'the holder commits (retain_claim): sequence 2');
RESET docket.fake_now;
SELECT pg_temp.keep('c', 'c');
SELECT is(docket.abandon_claim('c', pg_temp.tk('c'), 1, pg_temp.t(2), pg_temp.t(60), 3), 'stale',
  'an abandon with the lease''s sequence after a commit is stale');
SELECT is(pg_temp.row('c'), pg_temp.kept('c'), 'and changes nothing');

-------------------------------------------------------------------------------
-- A commit resets the abandon count.
-------------------------------------------------------------------------------
SELECT pg_temp.mk('r', pg_temp.t(0));
SELECT is(pg_temp.take('r', pg_temp.t(0), 'r'), 'lease:1', 'r leased');
SELECT is(docket.abandon_claim('r', pg_temp.tk('r'), 1, pg_temp.t(0), pg_temp.t(0), 3), 'rescheduled', 'r abandoned once');
SELECT is(pg_temp.take('r', pg_temp.t(0), 'r'), 'lease:1', 'r leased again');
SELECT is(docket.abandon_claim('r', pg_temp.tk('r'), 1, pg_temp.t(0), pg_temp.t(0), 3), 'rescheduled', 'r abandoned twice');
SELECT is((docket.inspect_run('system', 'r')->>'claim_abandons')::int, 2, 'inspect_run shows two abandons');
SELECT is(pg_temp.take('r', pg_temp.t(0), 'r'), 'lease:1', 'r leased a third time');
SET LOCAL docket.fake_now = '2030-01-01 00:00:01+00';
SELECT lives_ok($$SELECT docket.commit('tenantless', pg_temp.doc('r', 2), 1, pg_temp.tk('r'),
                                       'step_completed', 'immediate')$$,
  'the holder commits');
RESET docket.fake_now;
SELECT is((docket.inspect_run('system', 'r')->>'claim_abandons')::int, 0, 'the commit reset the abandon count');

SELECT * FROM finish();
ROLLBACK;
