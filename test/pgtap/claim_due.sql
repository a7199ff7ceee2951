-- claim_due: seed 000's claim_due clause by clause, and DESIGN.md's notes on it.
-- Times are in 2030 (far from the real clock) and always passed as `now`.
BEGIN;
SELECT plan(97);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

-- Start from an empty store whatever the database holds; rolled back at the end.
DELETE FROM docket.runs;
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');

-- t(s): s seconds after 2030-01-01 00:00:00 UTC.
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2030-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;

CREATE FUNCTION pg_temp.mk(id text, wake timestamptz, status text DEFAULT 'running',
                           q text DEFAULT 'default', owner text DEFAULT 'tenantless',
                           seq bigint DEFAULT 1) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM docket.insert_run(owner::docket.scope,
    jsonb_build_object('id', id, 'graph_id', 'g', 'graph_hash', 'h1', 'status', status,
                       'checkpoint_seq', seq, 'started_at', '2030-01-01T00:00:00Z'),
    'run_initialized', wake, q);
END $$;

-- The last batch, and every batch of this file.
CREATE TEMP TABLE last (outcome text, run_id text, tenant_id text, graph_id text, graph_hash text,
                        checkpoint_seq bigint, claim_token uuid, claimed_at timestamptz,
                        claim_attempt int, orphan_ttl_ms bigint, poisoned_at timestamptz,
                        poison_reason text, queue text, ord bigint);
CREATE TEMP TABLE history AS SELECT * FROM last;

-- Claims, keeps the batch in `last` and returns 'outcome:run_id ...' in batch order.
CREATE FUNCTION pg_temp.claim(p_now timestamptz, p_limit int DEFAULT 10, p_ttl bigint DEFAULT 30000,
                              p_max int DEFAULT 3, p_pref text DEFAULT NULL, p_queue text DEFAULT NULL)
  RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM last;
  INSERT INTO last
    SELECT * FROM docket.claim_due(p_now, p_limit, p_ttl, p_max, p_pref, p_queue) WITH ORDINALITY;
  INSERT INTO history SELECT * FROM last;
  RETURN coalesce((SELECT string_agg(outcome || ':' || run_id, ' ' ORDER BY ord) FROM last), '');
END $$;

CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.run_id), '[]') FROM docket.runs r $$;
CREATE FUNCTION pg_temp.row(id text) RETURNS docket.runs LANGUAGE sql AS $$
  SELECT * FROM docket.runs WHERE run_id = id $$;
CREATE FUNCTION pg_temp.reset() RETURNS void LANGUAGE sql AS $$ DELETE FROM docket.runs $$;

-------------------------------------------------------------------------------
-- Bad arguments raise 22023 and change nothing.
-------------------------------------------------------------------------------
SELECT pg_temp.mk('bad-1', pg_temp.t(0));
CREATE TEMP TABLE before AS SELECT pg_temp.snap() AS s;

SELECT throws_ok($$SELECT * FROM docket.claim_due(now => NULL)$$,
  '22023', 'bad_argument: now must not be NULL', 'NULL now');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', claim_limit => NULL)$$,
  '22023', 'bad_argument: claim_limit must not be NULL', 'NULL claim_limit');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', orphan_ttl_ms => NULL)$$,
  '22023', 'bad_argument: orphan_ttl_ms must not be NULL', 'NULL orphan_ttl_ms');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', max_claim_attempts => NULL)$$,
  '22023', 'bad_argument: max_claim_attempts must not be NULL', 'NULL max_claim_attempts');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => 'infinity')$$,
  '22023', NULL, 'infinite now');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '-infinity')$$,
  '22023', NULL, 'minus infinite now');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', claim_limit => 0)$$,
  '22023', 'bad_argument: claim_limit must be between 1 and 10000, got 0', 'claim_limit 0');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', claim_limit => -1)$$,
  '22023', 'bad_argument: claim_limit must be between 1 and 10000, got -1', 'negative claim_limit');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', claim_limit => 10001)$$,
  '22023', 'bad_argument: claim_limit must be between 1 and 10000, got 10001', 'claim_limit 10001');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', claim_limit => 2147483647)$$,
  '22023', NULL, 'huge claim_limit');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', orphan_ttl_ms => -1)$$,
  '22023', 'bad_argument: orphan_ttl_ms must be >= 0, got -1', 'negative orphan_ttl_ms');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', max_claim_attempts => 0)$$,
  '22023', 'bad_argument: max_claim_attempts must be >= 1, got 0', 'max_claim_attempts 0');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', max_claim_attempts => -3)$$,
  '22023', NULL, 'negative max_claim_attempts');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', preference => 'oldest')$$,
  '22023', 'bad_argument: preference must be NULL, ''ready'' or ''expired'', got ''oldest''',
  'bogus preference');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', preference => 'READY')$$,
  '22023', NULL, 'preference is case-sensitive');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', preference => '')$$,
  '22023', NULL, 'empty preference');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', queue => '')$$,
  '22023', 'bad_argument: queue must be a non-empty name of at most 128 bytes', 'empty queue');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', queue => repeat('q', 129))$$,
  '22023', NULL, 'queue of 129 bytes');
SELECT throws_ok($$SELECT * FROM docket.claim_due(now => '2030-01-01Z', queue => repeat('é', 65))$$,
  '22023', NULL, 'queue of 65 two-byte characters (130 bytes)');
SELECT is(pg_temp.snap(), (SELECT s FROM before), 'the rejected calls changed nothing');

SELECT is(pg_temp.claim(pg_temp.t(0), p_queue => repeat('q', 128)), '',
  'a 128-byte queue name is valid (and empty here)');
SELECT is(pg_temp.claim(pg_temp.t(0), p_limit => 10000, p_ttl => 9223372036854775807),
  'lease:bad-1', 'claim_limit 10000 and the largest TTL are valid');
SELECT pg_temp.reset();

-------------------------------------------------------------------------------
-- The ready class, lease fields, and what is never claimed.
-------------------------------------------------------------------------------
SELECT is(pg_temp.claim(pg_temp.t(0)), '', 'an empty store claims nothing');

SELECT pg_temp.mk('r2', pg_temp.t(-5), seq => 4);
SELECT pg_temp.mk('r1', pg_temp.t(-10), owner => 'tenant:acme');
SELECT pg_temp.mk('r3', pg_temp.t(0));                -- due exactly now
SELECT pg_temp.mk('later', pg_temp.t(0.000001));      -- due one microsecond later
SELECT pg_temp.mk('waiting', pg_temp.t(-10), status => 'waiting');
SELECT pg_temp.mk('done', pg_temp.t(-10), status => 'completed');
SELECT pg_temp.mk('failed', pg_temp.t(-10), status => 'failed');
SELECT pg_temp.mk('cancelled', pg_temp.t(-10), status => 'cancelled');
SELECT pg_temp.mk('past', '2000-01-01Z');  -- due long before the real clock

SELECT is(pg_temp.claim('1999-12-31Z'), '',
  'now is the argument, not the server clock: nothing is due in 1999');
SELECT is(pg_temp.claim(pg_temp.t(0), p_ttl => 45000), 'lease:past lease:r1 lease:r2 lease:r3',
  'due running runs are leased in (wake_at, run_id) order; waiting, terminal and not-yet-due runs are not');

SELECT results_eq(
  $$SELECT outcome, run_id, tenant_id, graph_id, graph_hash, checkpoint_seq, claimed_at,
           claim_attempt, orphan_ttl_ms, poisoned_at, poison_reason, queue
      FROM last WHERE run_id IN ('r1', 'r2') ORDER BY ord$$,
  $$VALUES ('lease', 'r1', 'acme', 'g', 'h1', 1::bigint, pg_temp.t(0), 1, 45000::bigint,
            NULL::timestamptz, NULL::text, 'default'),
           ('lease', 'r2', NULL, 'g', 'h1', 4::bigint, pg_temp.t(0), 1, 45000::bigint,
            NULL::timestamptz, NULL::text, 'default')$$,
  'a lease carries the run, its tenant, graph, sequence, claimed_at = now, attempt 1 and the TTL');
SELECT is((SELECT count(DISTINCT claim_token) FROM last WHERE claim_token IS NOT NULL), 4::bigint,
  'every lease carries its own fresh token');
SELECT results_eq(
  $$SELECT run_id COLLATE "default", r.claim_token, r.claimed_at, r.wake_at, r.claim_attempts
      FROM docket.runs r JOIN last USING (run_id) ORDER BY run_id$$,
  $$SELECT run_id, claim_token, pg_temp.t(0), NULL::timestamptz, 1 FROM last ORDER BY run_id$$,
  'the row stores the token and claimed_at, clears wake_at and counts the attempt');
SELECT results_eq(
  $$SELECT run_id COLLATE "default", wake_at, claim_token FROM docket.runs
     WHERE run_id IN ('later', 'waiting', 'done', 'failed', 'cancelled') ORDER BY run_id$$,
  $$VALUES ('cancelled', pg_temp.t(-10), NULL::uuid), ('done', pg_temp.t(-10), NULL),
           ('failed', pg_temp.t(-10), NULL), ('later', pg_temp.t(0.000001), NULL),
           ('waiting', pg_temp.t(-10), NULL)$$,
  'runs that were not claimed are untouched');
SELECT is(pg_temp.claim(pg_temp.t(0.000001)), 'lease:later', 'a run is claimable once now reaches its wake');
SELECT is(pg_temp.claim(pg_temp.t(1000000), p_ttl => 9223372036854775807), '',
  'waiting and terminal runs are never claimed, even with a past wake');
SELECT is(pg_temp.claim(pg_temp.t(30), p_ttl => 30000), '',
  'leases with claimed_at + ttl = now are not expired yet');

-------------------------------------------------------------------------------
-- The expired class: strictly older than the TTL; a steal is a fresh lease.
-------------------------------------------------------------------------------
SELECT pg_temp.reset();
SELECT pg_temp.mk('e1', pg_temp.t(0));
SELECT is(pg_temp.claim(pg_temp.t(0)), 'lease:e1', 'e1 leased at t0');
CREATE TEMP TABLE first_lease AS SELECT * FROM last;

SELECT is(pg_temp.claim(pg_temp.t(30), p_ttl => 30000), '',
  'now - claimed_at = ttl: not expired');
SELECT is(pg_temp.claim(pg_temp.t(30.000001), p_ttl => 30000), 'lease:e1',
  'now - claimed_at > ttl by one microsecond: expired and leased again');
SELECT isnt((SELECT claim_token FROM last), (SELECT claim_token FROM first_lease),
  'the steal carries a fresh token');
SELECT results_eq(
  $$SELECT claimed_at, claim_attempt, orphan_ttl_ms FROM last$$,
  $$VALUES (pg_temp.t(30.000001), 2, 30000::bigint)$$,
  'the steal stamps claimed_at = now and counts attempt 2');
SELECT ok(NOT docket.refresh_claim('e1', (SELECT claim_token FROM first_lease), pg_temp.t(31)),
  'the old token has lost the claim');
SELECT is((pg_temp.row('e1')).claim_token, (SELECT claim_token FROM last),
  'the row holds the new token');

SELECT is(pg_temp.claim(pg_temp.t(30.000001), p_ttl => 0), '',
  'ttl 0: a claim made at now is not expired at now');
SELECT is(pg_temp.claim(pg_temp.t(30.000002), p_ttl => 0), 'lease:e1',
  'ttl 0: expired one microsecond later');
SELECT is(pg_temp.claim(pg_temp.t(100000), p_ttl => 9223372036854775807), '',
  'the largest TTL never expires a claim');

-------------------------------------------------------------------------------
-- Poison: a maximum of 3 permits exactly 3 leases; the 4th need poisons.
-------------------------------------------------------------------------------
SELECT pg_temp.reset();
SELECT pg_temp.mk('m', pg_temp.t(0), q => 'mq', owner => 'tenant:t1', seq => 7);
SELECT is(pg_temp.claim(pg_temp.t(0), p_max => 3), 'lease:m', 'claim 1 of 3');
SELECT is(pg_temp.claim(pg_temp.t(31), p_max => 3), 'lease:m', 'claim 2 of 3 (steal)');
SELECT is(pg_temp.claim(pg_temp.t(62), p_max => 3), 'lease:m', 'claim 3 of 3 (steal)');
SELECT is((SELECT claim_attempt FROM last), 3, 'the third lease carries attempt 3');
SELECT is(pg_temp.claim(pg_temp.t(93), p_ttl => 30000, p_max => 3), 'poisoned:m',
  'the fourth need poisons the run');
SELECT results_eq(
  $$SELECT outcome, run_id, tenant_id, graph_id, graph_hash, checkpoint_seq, claim_token, claimed_at,
           claim_attempt, orphan_ttl_ms, poisoned_at, poison_reason, queue FROM last$$,
  $$VALUES ('poisoned', 'm', 't1', 'g', 'h1', 7::bigint, NULL::uuid, NULL::timestamptz, 3,
            30000::bigint, pg_temp.t(93), 'max_claim_attempts_exceeded', 'mq')$$,
  'a poison outcome has no token or claimed_at, the stored count, poisoned_at = now and the reason');
SELECT results_eq(
  $$SELECT claim_token, claimed_at, wake_at, claim_attempts, poisoned_at, poison_reason, checkpoint_seq
      FROM docket.runs WHERE run_id = 'm'$$,
  $$VALUES (NULL::uuid, NULL::timestamptz, NULL::timestamptz, 3, pg_temp.t(93),
            'max_claim_attempts_exceeded', 7::bigint)$$,
  'the poisoned row: claim and wake cleared, attempts unchanged, paired poison facts');
SELECT is(pg_temp.claim(pg_temp.t(1000000), p_ttl => 0, p_max => 100), '',
  'a poisoned run is never leased again, whatever the maximum');
UPDATE docket.runs SET wake_at = pg_temp.t(0) WHERE run_id = 'm';
SELECT is(pg_temp.claim(pg_temp.t(1000000), p_max => 100), '',
  'not even with a wake (fixture) set');
UPDATE docket.runs SET claim_token = gen_random_uuid(), claimed_at = pg_temp.t(0), wake_at = NULL
 WHERE run_id = 'm';
SELECT is(pg_temp.claim(pg_temp.t(1000000), p_ttl => 0, p_max => 100), '',
  'nor with an old claim (fixture) set');

-- The ready class poisons too: a released run whose count reached the maximum.
SELECT pg_temp.mk('rel', pg_temp.t(0));
SELECT is(pg_temp.claim(pg_temp.t(0), p_max => 1), 'lease:rel', 'the single permitted lease');
SELECT docket.release_claim('rel', (SELECT claim_token FROM last), pg_temp.t(1));
SELECT is(pg_temp.claim(pg_temp.t(1), p_max => 1), 'poisoned:rel',
  'a due run whose attempts reached the maximum is poisoned from the ready class');
SELECT is((SELECT claim_attempt FROM last), 1, 'with its stored count');

-------------------------------------------------------------------------------
-- Ordering: eligible_at is wake_at (ready) or claimed_at + ttl (expired); ties by run_id.
-------------------------------------------------------------------------------
SELECT pg_temp.reset();
SELECT pg_temp.mk('tb', pg_temp.t(5));
SELECT pg_temp.mk('tc', pg_temp.t(5));
SELECT pg_temp.mk('ta', pg_temp.t(5));
SELECT is(pg_temp.claim(pg_temp.t(5), p_limit => 2), 'lease:ta lease:tb',
  'equal wakes are taken in run_id order, up to the limit');
SELECT is(pg_temp.claim(pg_temp.t(5), p_limit => 2), 'lease:tc', 'then the rest');

SELECT pg_temp.reset();
SELECT pg_temp.mk('x-a', pg_temp.t(10));
SELECT is(pg_temp.claim(pg_temp.t(10)), 'lease:x-a', 'x-a claimed at t10 (eligible again at t40)');
SELECT pg_temp.mk('x-b', pg_temp.t(40));
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1), 'lease:x-a',
  'a tie across classes (both eligible at t40) goes to the smaller run_id: expired x-a');
SELECT pg_temp.reset();
SELECT pg_temp.mk('y-b', pg_temp.t(10));
SELECT is(pg_temp.claim(pg_temp.t(10)), 'lease:y-b', 'y-b claimed at t10');
SELECT pg_temp.mk('y-a', pg_temp.t(40));
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1), 'lease:y-a',
  'a tie across classes goes to the smaller run_id: ready y-a');

SELECT pg_temp.reset();
SELECT pg_temp.mk('old-claim', pg_temp.t(0));
SELECT is(pg_temp.claim(pg_temp.t(0)), 'lease:old-claim', 'claimed at t0');
SELECT pg_temp.mk('ready-40', pg_temp.t(40));
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1, p_ttl => 50000), 'lease:ready-40',
  'an expired run is eligible at claimed_at + ttl (t50), after a ready run due at t40');
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1, p_ttl => 30000), 'lease:old-claim',
  'with ttl 30s it is eligible at t30 and goes first');

-------------------------------------------------------------------------------
-- Class reservation (limit >= 2), preference (limit 1), the limit bound.
-- Fixture: expired e1, e2, e3 (claimed t0, t1, t2 => eligible t30, t31, t32)
-- and ready r1, r2, r3 (due t40, t41, t42), all claimed at t100.
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.classes(expired_first boolean DEFAULT true) RETURNS void
  LANGUAGE plpgsql AS $$
DECLARE
  base_e double precision := CASE WHEN expired_first THEN 0 ELSE 20 END;
  base_r double precision := CASE WHEN expired_first THEN 40 ELSE 10 END;
BEGIN
  PERFORM pg_temp.reset();
  FOR i IN 1..3 LOOP
    PERFORM pg_temp.mk('e' || i, pg_temp.t(base_e + i - 1));
    PERFORM pg_temp.claim(pg_temp.t(base_e + i - 1), p_limit => 1);
  END LOOP;
  FOR i IN 1..3 LOOP
    PERFORM pg_temp.mk('r' || i, pg_temp.t(base_r + i - 1));
  END LOOP;
END $$;

SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 2), 'lease:e1 lease:r1',
  'limit 2: one outcome for each class, though the expired class is older');
SELECT pg_temp.classes(expired_first => false);
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 2), 'lease:r1 lease:e1',
  'limit 2: one for each class, though the ready class is older (r1 t10, e1 t50)');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 3), 'lease:e1 lease:e2 lease:r1',
  'limit 3: one each, the rest by age');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 4), 'lease:e1 lease:e2 lease:e3 lease:r1',
  'limit 4: at most four outcomes');
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 4), 'lease:r2 lease:r3',
  'the next call takes what is left');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 10), 'lease:e1 lease:e2 lease:e3 lease:r1 lease:r2 lease:r3',
  'a large limit takes both classes in age order');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 2, p_max => 1), 'poisoned:e1 lease:r1',
  'the reservation is per outcome: a poisoned expired head uses the expired share');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 3, p_pref => 'ready'), 'lease:e1 lease:e2 lease:r1',
  'preference is ignored at limit >= 2');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 2, p_pref => 'expired', p_queue => 'default'),
  'lease:e1 lease:r1', 'the reservation holds with a queue filter too');

SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1), 'lease:e1',
  'limit 1, no preference: the oldest head (expired e1)');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1, p_pref => 'ready'), 'lease:r1',
  'limit 1, preference ready: the ready head though it is younger');
SELECT pg_temp.classes(expired_first => false);
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1), 'lease:r1',
  'limit 1, no preference: the oldest head (ready r1)');
SELECT pg_temp.classes(expired_first => false);
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1, p_pref => 'expired'), 'lease:e1',
  'limit 1, preference expired: the expired head though it is younger');
SELECT pg_temp.classes();
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1, p_pref => 'expired'), 'lease:e1',
  'limit 1, preference expired, expired older: e1');

-- Fall-through: the preferred class is empty, the other one is served.
SELECT pg_temp.reset();
SELECT pg_temp.mk('only-ready', pg_temp.t(0));
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 1, p_pref => 'expired'), 'lease:only-ready',
  'preference expired with no expired run falls through to ready');
SELECT is(pg_temp.claim(pg_temp.t(200), p_limit => 1, p_pref => 'ready'), 'lease:only-ready',
  'preference ready with no ready run falls through to expired');
SELECT is(pg_temp.claim(pg_temp.t(200), p_limit => 1, p_pref => 'ready'), '',
  'nothing eligible: nothing claimed');

-- One class only: the limit is not split.
SELECT pg_temp.reset();
SELECT pg_temp.mk('s' || i, pg_temp.t(i)) FROM generate_series(1, 5) i;
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 3), 'lease:s1 lease:s2 lease:s3',
  'with one class non-empty it gets the whole limit');
SELECT is((SELECT count(*) FROM docket.runs WHERE claim_token IS NULL), 2::bigint,
  'the rest stay unclaimed');

-------------------------------------------------------------------------------
-- Queues: a filter, not a class; NULL means every queue.
-------------------------------------------------------------------------------
SELECT pg_temp.reset();
SELECT pg_temp.mk('qa-old', pg_temp.t(0), q => 'qa');
SELECT pg_temp.mk('qb-old', pg_temp.t(1), q => 'qb');
SELECT is(pg_temp.claim(pg_temp.t(1)), 'lease:qa-old lease:qb-old',
  'qa-old and qb-old claimed at t1 (eligible again at t31)');
SELECT pg_temp.mk('qa-1', pg_temp.t(40), q => 'qa');
SELECT pg_temp.mk('qa-2', pg_temp.t(41), q => 'qa');
SELECT pg_temp.mk('qb-1', pg_temp.t(39), q => 'qb');
CREATE TEMP TABLE qb_before AS
  SELECT to_jsonb(r) AS s FROM docket.runs r WHERE queue = 'qb';
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 2, p_queue => 'qa'), 'lease:qa-old lease:qa-1',
  'queue qa: only its runs, one per class');
SELECT ok((SELECT bool_and(queue = 'qa') FROM last), 'the batch reports queue qa');
SELECT results_eq($$SELECT to_jsonb(r) FROM docket.runs r WHERE queue = 'qb' ORDER BY run_id$$,
  $$SELECT s FROM qb_before ORDER BY s->>'run_id'$$, 'runs of queue qb are untouched');
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 10, p_queue => 'nope'), '',
  'an unknown queue has nothing to claim');
SELECT is(pg_temp.claim(pg_temp.t(100), p_limit => 10), 'lease:qb-old lease:qb-1 lease:qa-2',
  'queue NULL claims every queue');

-------------------------------------------------------------------------------
-- Defaults: now defaults to docket.now(), limit to 1.
-------------------------------------------------------------------------------
SELECT pg_temp.reset();
SELECT pg_temp.mk('d1', pg_temp.t(0));
SELECT pg_temp.mk('d2', pg_temp.t(1));
SET LOCAL docket.fake_now = '2029-12-31 23:59:59+00';
SELECT is_empty($$SELECT * FROM docket.claim_due()$$, 'the default now is docket.now(): nothing due yet');
SET LOCAL docket.fake_now = '2030-01-01 00:00:05+00';
SELECT results_eq($$SELECT run_id, claimed_at, orphan_ttl_ms FROM docket.claim_due()$$,
  $$VALUES ('d1', pg_temp.t(5), 30000::bigint)$$,
  'defaults: docket.now(), one run, ttl 30000');
RESET docket.fake_now;

-------------------------------------------------------------------------------
-- Every token handed out in this file was fresh.
-------------------------------------------------------------------------------
SELECT is((SELECT count(DISTINCT claim_token) FROM history), (SELECT count(claim_token) FROM history),
  'no token was ever handed out twice');
SELECT ok((SELECT bool_and((claim_token IS NULL) = (outcome = 'poisoned')) FROM history),
  'leases and only leases carry a token');
SELECT ok((SELECT bool_and((poisoned_at IS NULL AND poison_reason IS NULL) = (outcome = 'lease')) FROM history),
  'poison facts appear exactly on poison outcomes');

-- Claim tokens: one per lease, each its own random version 4 UUID (a claim
-- draws its tokens together), stored on the row it leases.
SELECT pg_temp.mk('tok-' || g, pg_temp.t(0), q => 'tokq') FROM generate_series(1, 20) g;
CREATE TEMP TABLE toks AS
  SELECT run_id, claim_token FROM docket.claim_due(pg_temp.t(10), 20, queue => 'tokq') WHERE outcome = 'lease';
\ir lib/claim_tokens.sql
SELECT * FROM pg_temp.token_checks(20);
SELECT * FROM finish();
ROLLBACK;
