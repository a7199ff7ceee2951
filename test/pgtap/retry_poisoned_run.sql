-- retry_poisoned_run: seed 000's clause on poison recovery. Times are in 2030
-- and passed as `now`.
BEGIN;
SELECT plan(46);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

-- Start from an empty store whatever the database holds; rolled back at the end.
DELETE FROM docket.runs;
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');

-- t(s): s seconds after 2030-01-01 00:00:00 UTC.
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2030-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
CREATE FUNCTION pg_temp.doc(id text, status text DEFAULT 'running', seq bigint DEFAULT 1) RETURNS jsonb
  LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'g', 'graph_hash', 'h1', 'status', status,
                            'checkpoint_seq', seq, 'started_at', '2030-01-01T00:00:00Z',
                            'note', 'stored verbatim') $$;
-- Each run gets its own queue, so claims of one run never touch another.
CREATE FUNCTION pg_temp.mk(id text, owner text DEFAULT 'tenantless', status text DEFAULT 'running',
                           seq bigint DEFAULT 1) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM docket.insert_run(owner::docket.scope, pg_temp.doc(id, status, seq), 'run_initialized',
                            pg_temp.t(0), id);
END $$;
-- Claims run `id` at `at` with a maximum of 1 attempt; returns the outcome.
CREATE FUNCTION pg_temp.claim(id text, at timestamptz) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce((SELECT outcome || ':' || claim_attempt
                     FROM docket.claim_due(now => at, max_claim_attempts => 1, queue => id)), 'none') $$;
-- Leases run `id` at t0 and poisons it at t31 (its second need, maximum 1).
CREATE FUNCTION pg_temp.poison(id text) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.claim(id, pg_temp.t(0)) || ' ' || pg_temp.claim(id, pg_temp.t(31)) $$;

CREATE FUNCTION pg_temp.row(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(r) - 'event_seq' - 'completed_seq' - 'completed_at' - 'claimed_seq' - 'claimed_attempt' FROM docket.runs r WHERE run_id = id $$;
CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.run_id), '[]') FROM docket.runs r $$;
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);
CREATE FUNCTION pg_temp.keep(n text, v jsonb) RETURNS void LANGUAGE sql AS $$
  INSERT INTO snaps VALUES (n, v) ON CONFLICT (name) DO UPDATE SET s = excluded.s $$;
CREATE FUNCTION pg_temp.kept(n text) RETURNS jsonb LANGUAGE sql AS $$ SELECT s FROM snaps WHERE name = n $$;
-- The columns recovery may change.
CREATE FUNCTION pg_temp.ops(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.row(id) - '{run_id,tenant_id,queue,graph_id,graph_hash,status,checkpoint_seq,checkpoint_type,started_at,updated_at,document,claim_started_at,claim_renewed_at}'::text[] $$;
CREATE FUNCTION pg_temp.fixed(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.row(id) - '{wake_at,claim_token,claimed_at,claim_attempts,claim_abandons,poisoned_at,poison_reason}'::text[] $$;

-------------------------------------------------------------------------------
-- Fixture
-------------------------------------------------------------------------------
SELECT pg_temp.mk('p', seq => 3);
SELECT pg_temp.mk('ta', owner => 'tenant:a');
SELECT pg_temp.mk('tb', owner => 'tenant:b');
SELECT pg_temp.mk('done', status => 'completed');
SELECT pg_temp.mk('done-p', status => 'failed');
SELECT pg_temp.mk('live');
SELECT pg_temp.mk('w', status => 'waiting');
SELECT is(pg_temp.poison('p'), 'lease:1 poisoned:1', 'p poisoned by attempts');
SELECT is(pg_temp.poison('ta'), 'lease:1 poisoned:1', 'ta (tenant a) poisoned');
SELECT is(pg_temp.poison('tb'), 'lease:1 poisoned:1', 'tb (tenant b) poisoned');
SELECT is(pg_temp.claim('live', pg_temp.t(0)), 'lease:1', 'live is claimed and not poisoned');
UPDATE docket.runs SET poisoned_at = pg_temp.t(1), poison_reason = 'max_claim_attempts_exceeded'
 WHERE run_id = 'done-p';  -- fixture: a terminal run with poison facts
SELECT pg_temp.keep('all', pg_temp.snap());

-------------------------------------------------------------------------------
-- Bad arguments, unknown runs, other scopes, terminal runs: errors, no change.
-------------------------------------------------------------------------------
SELECT throws_ok($$SELECT docket.retry_poisoned_run(NULL, 'p', '2030-01-01Z')$$,
  '22023', 'bad_argument: scope must not be NULL', 'NULL scope');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('system', NULL, '2030-01-01Z')$$,
  '22023', 'bad_argument: run_id must not be NULL', 'NULL run_id');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('system', 'p', NULL)$$,
  '22023', 'bad_argument: now must not be NULL', 'NULL now');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('system', 'p', 'infinity')$$,
  '22023', NULL, 'infinite now');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('bogus', 'p', '2030-01-01Z')$$,
  '23514', NULL, 'a malformed scope is the domain''s check violation');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('tenant:', 'p', '2030-01-01Z')$$,
  '23514', NULL, 'tenant: without an id is malformed');

SELECT throws_ok($$SELECT docket.retry_poisoned_run('system', 'nope', '2030-01-01Z')$$,
  'DK003', 'not_found: run nope does not exist or is not visible in this scope', 'unknown run: not_found');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('tenant:a', 'tb', '2030-01-01Z')$$,
  'DK003', 'not_found: run tb does not exist or is not visible in this scope',
  'tenant a cannot recover tenant b''s run');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('tenantless', 'tb', '2030-01-01Z')$$,
  'DK003', NULL, 'the tenantless scope cannot recover a tenant''s run');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('tenant:b', 'p', '2030-01-01Z')$$,
  'DK003', NULL, 'a tenant cannot recover a tenantless run');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('tenant:a:x', 'ta', '2030-01-01Z')$$,
  'DK003', NULL, 'tenant a:x is not tenant a');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('tenant:a', 'done', '2030-01-01Z')$$,
  'DK003', NULL, 'an out-of-scope terminal run is not_found, not inactive');

SELECT throws_ok($$SELECT docket.retry_poisoned_run('system', 'done', '2030-01-01Z')$$,
  'DK004', 'inactive_run: run done is completed and cannot be recovered', 'a terminal run: inactive_run');
SELECT throws_ok($$SELECT docket.retry_poisoned_run('tenantless', 'done-p', '2030-01-01Z')$$,
  'DK004', 'inactive_run: run done-p is failed and cannot be recovered',
  'terminal is checked first, even when the run is poisoned');
SELECT is(pg_temp.snap(), pg_temp.kept('all'), 'none of the failed calls changed anything');

-------------------------------------------------------------------------------
-- Recovery
-------------------------------------------------------------------------------
SELECT is(docket.retry_poisoned_run('tenantless', 'p', pg_temp.t(100)), pg_temp.doc('p', seq => 3),
  'recovery returns the stored document');
SELECT is(pg_temp.ops('p'),
  jsonb_build_object('wake_at', pg_temp.t(100), 'claim_token', NULL, 'claimed_at', NULL,
                     'claim_attempts', 0, 'claim_abandons', 0, 'poisoned_at', NULL, 'poison_reason', NULL,
                     'deadline_at', NULL, 'lease_ms', NULL),
  'poison facts cleared, counters reset, an immediate wake at now (the argument)');
SELECT is(pg_temp.fixed('p'), (SELECT jsonb_path_query(s, '$[*] ? (@.run_id == "p")') FROM snaps WHERE name = 'all')
  - '{event_seq,completed_seq,completed_at,claimed_seq,claimed_attempt,wake_at,claim_token,claimed_at,claim_attempts,claim_abandons,poisoned_at,poison_reason}'::text[],
  'document, status, checkpoint_seq, checkpoint_type and updated_at are untouched');
SELECT pg_temp.keep('p', pg_temp.row('p'));
SELECT is(docket.retry_poisoned_run('system', 'p', pg_temp.t(200)), pg_temp.doc('p', seq => 3),
  'recovering it again succeeds');
SELECT is(pg_temp.row('p'), pg_temp.kept('p'), 'and changes nothing (the wake stays at the first recovery)');
SELECT is(pg_temp.claim('p', pg_temp.t(99.999999)), 'none', 'the recovered run is not due before now');
SELECT is(pg_temp.claim('p', pg_temp.t(100)), 'lease:1', 'it is due at now, with a fresh attempt budget');

SELECT is(docket.retry_poisoned_run('tenant:b', 'tb', pg_temp.t(100)), pg_temp.doc('tb'),
  'tenant b recovers its own run');
SELECT is(pg_temp.row('tb')->>'poisoned_at', NULL, 'tb is no longer poisoned');
SELECT is(docket.retry_poisoned_run('system', 'ta', pg_temp.t(100)), pg_temp.doc('ta'),
  'the system scope recovers any tenant''s run');
SELECT is(pg_temp.row('ta')->>'poisoned_at', NULL, 'ta is no longer poisoned');

-- A poisoned row that still carries a claim (fixture) has it cleared.
SELECT pg_temp.mk('pc');
SELECT is(pg_temp.poison('pc'), 'lease:1 poisoned:1', 'pc poisoned');
UPDATE docket.runs SET claim_token = gen_random_uuid(), claimed_at = pg_temp.t(40), claim_abandons = 4
 WHERE run_id = 'pc';
SELECT lives_ok($$SELECT docket.retry_poisoned_run('system', 'pc', '2030-01-01 00:01:00Z')$$, 'recover pc');
SELECT is(pg_temp.ops('pc'),
  jsonb_build_object('wake_at', pg_temp.t(60), 'claim_token', NULL, 'claimed_at', NULL,
                     'claim_attempts', 0, 'claim_abandons', 0, 'poisoned_at', NULL, 'poison_reason', NULL,
                     'deadline_at', NULL, 'lease_ms', NULL),
  'claim and abandon count cleared too');

-- Poisoned by abandons.
SELECT pg_temp.mk('pa');
SELECT is(pg_temp.claim('pa', pg_temp.t(0)), 'lease:1', 'pa leased');
SELECT is(docket.abandon_claim('pa', (SELECT claim_token FROM docket.runs WHERE run_id = 'pa'), 1,
                               pg_temp.t(1), pg_temp.t(1), 1), 'rescheduled', 'pa abandoned');
SELECT is(pg_temp.claim('pa', pg_temp.t(1)), 'lease:1', 'pa leased again');
SELECT is(docket.abandon_claim('pa', (SELECT claim_token FROM docket.runs WHERE run_id = 'pa'), 1,
                               pg_temp.t(2), pg_temp.t(2), 1), 'poisoned', 'pa poisoned by abandons');
SELECT is(docket.retry_poisoned_run('system', 'pa', pg_temp.t(3))->>'id', 'pa', 'recover pa');
SELECT is(pg_temp.ops('pa'),
  jsonb_build_object('wake_at', pg_temp.t(3), 'claim_token', NULL, 'claimed_at', NULL,
                     'claim_attempts', 0, 'claim_abandons', 0, 'poisoned_at', NULL, 'poison_reason', NULL,
                     'deadline_at', NULL, 'lease_ms', NULL),
  'a run poisoned by abandons is recovered the same way');

-------------------------------------------------------------------------------
-- Unpoisoned, non-terminal runs: idempotent success, nothing changes.
-------------------------------------------------------------------------------
SELECT pg_temp.keep('live', pg_temp.row('live'));
SELECT is(docket.retry_poisoned_run('system', 'live', pg_temp.t(5)), pg_temp.doc('live'),
  'a claimed, unpoisoned run: success, its document');
SELECT is(pg_temp.row('live'), pg_temp.kept('live'), 'its claim and schedule are untouched');
SELECT pg_temp.keep('w', pg_temp.row('w'));
SELECT is(docket.retry_poisoned_run('tenantless', 'w', pg_temp.t(5)), pg_temp.doc('w', 'waiting'),
  'a waiting run: success, its document');
SELECT is(pg_temp.row('w'), pg_temp.kept('w'), 'and it is untouched');

-- now defaults to docket.now().
SELECT pg_temp.mk('d');
SELECT is(pg_temp.poison('d'), 'lease:1 poisoned:1', 'd poisoned');
SET LOCAL docket.fake_now = '2031-06-01 12:00:00+00';
SELECT lives_ok($$SELECT docket.retry_poisoned_run('system', 'd')$$, 'recover d with the default now');
RESET docket.fake_now;
SELECT is((pg_temp.row('d')->>'wake_at')::timestamptz, '2031-06-01 12:00:00+00'::timestamptz,
  'the default now is docket.now()');

SELECT * FROM finish();
ROLLBACK;
