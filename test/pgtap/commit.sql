-- docket.commit: the claim-fenced advance of a run.
BEGIN;
SELECT plan(84);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

SET LOCAL TimeZone = 'UTC';
SET LOCAL docket.fake_now = '2040-05-01 01:00:00+00';

\ir lib/err.sql

-- A run document of graph tap-cm/h1 at sequence `seq`, with `patch` merged over it.
CREATE FUNCTION pg_temp.doc(id text, seq bigint, patch jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'tap-cm', 'graph_hash', 'h1',
                            'status', 'running', 'checkpoint_seq', seq,
                            'started_at', '2040-05-01T00:00:00Z') || patch $$;

-- docket.commit with every argument spelled as a literal; returns the error or 'no error'.
CREATE FUNCTION pg_temp.cm_err(scope text, run jsonb, expected bigint, token uuid, type text,
                               schedule text, wake timestamptz DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$
  SELECT pg_temp.err(format('SELECT docket.commit(%L, %L::jsonb, %L, %L::uuid, %L, %L, %L)',
                            scope, run, expected, token, type, schedule, wake)) $$;

-- Gives a run a claim, as claim_due would.
CREATE FUNCTION pg_temp.claim(id text, token uuid, at timestamptz) RETURNS void LANGUAGE sql AS $$
  UPDATE docket.runs SET claim_token = token, claimed_at = at, wake_at = NULL,
                         claim_attempts = claim_attempts + 1
  WHERE run_id = id $$;

-- One run row as text (ctid included: any UPDATE moves the row).
CREATE FUNCTION pg_temp.row_of(id text) RETURNS text LANGUAGE sql AS $$
  SELECT r.ctid::text || ' ' || r::text FROM docket.runs r WHERE run_id = id $$;

-- The columns a commit writes, as jsonb.
CREATE FUNCTION pg_temp.state(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', status, 'checkpoint_seq', checkpoint_seq,
                            'checkpoint_type', checkpoint_type, 'updated_at', updated_at,
                            'wake_at', wake_at, 'claim_token', claim_token,
                            'claimed_at', claimed_at, 'claim_attempts', claim_attempts,
                            'claim_abandons', claim_abandons, 'poisoned_at', poisoned_at,
                            'poison_reason', poison_reason)
  FROM docket.runs WHERE run_id = id $$;

-- The columns a commit never writes.
CREATE FUNCTION pg_temp.fixed(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('tenant_id', tenant_id, 'queue', queue, 'graph_id', graph_id,
                            'graph_hash', graph_hash, 'started_at', started_at)
  FROM docket.runs WHERE run_id = id $$;

-- The expected state.
CREATE FUNCTION pg_temp.expect(status text, seq bigint, type text, updated_at timestamptz,
                               wake_at timestamptz, token uuid, claimed_at timestamptz)
RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', status, 'checkpoint_seq', seq, 'checkpoint_type', type,
                            'updated_at', updated_at, 'wake_at', wake_at, 'claim_token', token,
                            'claimed_at', claimed_at, 'claim_attempts', 0, 'claim_abandons', 0,
                            'poisoned_at', NULL, 'poison_reason', NULL) $$;

\o /dev/null
SELECT docket.save_graph('tap-cm', 'h1', '{"nodes": []}');
SELECT docket.save_graph('tap-cm', 'h2', '{"nodes": ["other"]}');
SELECT docket.save_graph('tap-cm2', 'h1', '{"nodes": []}');

SELECT docket.insert_run('tenant:acme', pg_temp.doc('cm-a', 0), 'run_initialized', '2040-05-01 00:00:00+00', 'q-cm');
SELECT docket.insert_run('tenant:beta', pg_temp.doc('cm-b', 0), 'run_initialized', '2040-05-01 00:00:00+00', 'q-cm-b');
SELECT docket.insert_run('tenantless', pg_temp.doc('cm-t', 0), 'run_initialized', '2040-05-01 00:00:00+00', 'q-cm-t');
SELECT docket.insert_run('tenant:acme', pg_temp.doc('cm-c', 4, '{"status": "waiting"}'), 'run_initialized', '2040-05-01 00:00:00+00', 'q-cm-c');
SELECT docket.insert_run('tenant:acme', pg_temp.doc('cm-u', 0), 'run_initialized', '2040-05-01 00:00:00+00', 'q-cm-u');
SELECT pg_temp.claim('cm-a', '00000000-0000-0000-0000-0000000000a1', '2040-05-01 00:00:10+00');
SELECT pg_temp.claim('cm-b', '00000000-0000-0000-0000-0000000000b1', '2040-05-01 00:00:10+00');
SELECT pg_temp.claim('cm-t', '00000000-0000-0000-0000-0000000000c1', '2040-05-01 00:00:10+00');
SELECT pg_temp.claim('cm-c', '00000000-0000-0000-0000-0000000000d1', '2040-05-01 00:00:10+00');
-- cm-a carries used counters and (forced) poison facts, to prove a commit resets them.
UPDATE docket.runs SET claim_attempts = 2, claim_abandons = 1,
                       poisoned_at = '2040-05-01 00:00:20+00', poison_reason = 'max_claim_attempts_exceeded'
WHERE run_id = 'cm-a';
\o

\set A1 '''00000000-0000-0000-0000-0000000000a1'''
\set A2 '''00000000-0000-0000-0000-0000000000a2'''

-------------------------------------------------------------------------------
-- Errors, in the contract's order: proposal (DK002), lookup (DK003), fence
-- (DK001), identity (DK002). None changes anything.
-------------------------------------------------------------------------------
SELECT pg_temp.row_of('cm-a') AS a0, pg_temp.row_of('cm-b') AS b0, pg_temp.row_of('cm-t') AS t0,
       pg_temp.row_of('cm-u') AS u0 \gset

-- The scope is an argument: NULL is a bad argument before anything else.
SELECT alike(pg_temp.cm_err(NULL, NULL, NULL, NULL, NULL, NULL), '22023 bad_argument: %',
             'NULL scope raises 22023, before any proposal check');
SELECT alike(pg_temp.cm_err(NULL, pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'retain_claim'),
             '22023 bad_argument: %', 'NULL scope raises 22023 for a valid proposal');
SELECT alike(pg_temp.cm_err('tenant:', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'retain_claim'),
             '23514 %', 'malformed scope text raises the domain check (23514)');
SELECT alike(pg_temp.cm_err('everyone', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'retain_claim'),
             '23514 %', 'an unknown scope word raises the domain check (23514)');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'nope', 'retain_claim'),
             '22P02 %', 'an unknown checkpoint_type label is rejected by the enum (22P02)');

-- Proposal shape: DK002.
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, NULL, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a NULL claim token raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', NULL, 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a NULL run raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), NULL, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a NULL expected_checkpoint_seq raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', '[]', 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'an array run raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', '"cm-a"', 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a string run raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1) - 'id', 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a run without id raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1) - 'graph_hash', 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a run without graph_hash raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1) - 'started_at', 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a run without started_at raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1) - 'checkpoint_seq', 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a run without checkpoint_seq raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"id": 7}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a numeric id raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"checkpoint_seq": "1"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'checkpoint_seq "1" (a string) raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"checkpoint_seq": 1.5}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'checkpoint_seq 1.5 raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"checkpoint_seq": -1}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'checkpoint_seq -1 raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"started_at": "soon"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a started_at that is not a timestamp raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "created"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'the transient status created raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "bogus"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'an unknown status raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 0), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'proposing the current sequence (not expected + 1) raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 2), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'skipping a sequence (expected + 2) raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, NULL, 'retain_claim'),
             'DK002 invalid_commit: %', 'a NULL checkpoint_type raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', NULL),
             'DK002 invalid_commit: %', 'a NULL schedule raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'soon'),
             'DK002 invalid_commit: %', 'an unknown schedule raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'Immediate'),
             'DK002 invalid_commit: %', 'schedules are case-sensitive (DK002)');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "waiting"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'retain_claim with status waiting raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "completed"}'), 0, :A1, 'run_completed', 'immediate'),
             'DK002 invalid_commit: %', 'immediate with a terminal status raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "waiting"}'), 0, :A1, 'suspended', 'at', '2040-06-01 00:00:00+00'),
             'DK002 invalid_commit: %', 'at with status waiting raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'suspended', 'external'),
             'DK002 invalid_commit: %', 'external with status running raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "failed"}'), 0, :A1, 'run_failed', 'external'),
             'DK002 invalid_commit: %', 'external with a terminal status raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'run_completed', 'terminal'),
             'DK002 invalid_commit: %', 'terminal with status running raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "waiting"}'), 0, :A1, 'suspended', 'terminal'),
             'DK002 invalid_commit: %', 'terminal with status waiting raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'retain_claim', '2040-06-01 00:00:00+00'),
             'DK002 invalid_commit: %', 'a wake_at with retain_claim raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'immediate', '2040-06-01 00:00:00+00'),
             'DK002 invalid_commit: %', 'a wake_at with immediate raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "waiting"}'), 0, :A1, 'suspended', 'external', '2040-06-01 00:00:00+00'),
             'DK002 invalid_commit: %', 'a wake_at with external raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"status": "completed"}'), 0, :A1, 'run_completed', 'terminal', '2040-06-01 00:00:00+00'),
             'DK002 invalid_commit: %', 'a wake_at with terminal raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'suspended', 'at'),
             'DK002 invalid_commit: %', 'at without a wake_at raises DK002');

-- Proposal checks come before the lookup.
SELECT alike(pg_temp.cm_err('tenant:beta', pg_temp.doc('cm-a', 5), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'a malformed proposal for a run the scope cannot see raises DK002, not DK003');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-nope', 1, '{"status": "waiting"}'), 0, :A1, 'node_completed', 'immediate'),
             'DK002 invalid_commit: %', 'a malformed proposal for an unknown run raises DK002, not DK003');

-- Lookup: DK003 for a valid proposal the scope cannot see, before the fence.
SELECT alike(pg_temp.cm_err('tenant:beta', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'retain_claim'),
             'DK003 not_found: run cm-a%', 'another tenant cannot commit the run (DK003)');
SELECT alike(pg_temp.cm_err('tenantless', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'retain_claim'),
             'DK003 not_found: run cm-a%', 'the tenantless scope cannot commit a tenant''s run (DK003)');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-t', 1), 0, '00000000-0000-0000-0000-0000000000c1', 'node_completed', 'retain_claim'),
             'DK003 not_found: run cm-t%', 'a tenant cannot commit a tenantless run (DK003)');
SELECT alike(pg_temp.cm_err('tenant:beta', pg_temp.doc('cm-a', 8), 7, :A2, 'node_completed', 'retain_claim'),
             'DK003 not_found: run cm-a%', 'an out-of-scope run is not_found even when the fence is stale too');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-nope', 1), 0, :A1, 'node_completed', 'retain_claim'),
             'DK003 not_found: run cm-nope%', 'an unknown run raises DK003');

-- Fence: DK001, before identity.
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 6), 5, :A1, 'node_completed', 'retain_claim'),
             'DK001 stale_fence: run cm-a%', 'a stale expected sequence raises DK001');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A2, 'node_completed', 'retain_claim'),
             'DK001 stale_fence: run cm-a%', 'another claim token raises DK001');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-u', 1), 0, :A1, 'node_completed', 'retain_claim'),
             'DK001 stale_fence: run cm-u%', 'a run without a claim raises DK001 for any token');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"graph_hash": "h2"}'), 0, :A2, 'node_completed', 'retain_claim'),
             'DK001 stale_fence: %', 'a stale fence is reported before an identity change');

-- Identity: DK002 with a good fence.
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"graph_hash": "h2"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'changing graph_hash (to a saved version) raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"graph_id": "tap-cm2"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'changing graph_id raises DK002');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1, '{"started_at": "2040-05-01T00:00:00.000001Z"}'), 0, :A1, 'node_completed', 'retain_claim'),
             'DK002 invalid_commit: %', 'changing started_at by a microsecond raises DK002');

SELECT is(pg_temp.row_of('cm-a'), :'a0', 'no refused commit changed cm-a');
SELECT is(pg_temp.row_of('cm-b'), :'b0', 'no refused commit changed cm-b');
SELECT is(pg_temp.row_of('cm-t'), :'t0', 'no refused commit changed cm-t');

-------------------------------------------------------------------------------
-- retain_claim: keeps the claim, moves claimed_at forward only
-------------------------------------------------------------------------------
SELECT is(docket.commit('tenant:acme',
            pg_temp.doc('cm-a', 1, '{"tenant_id": "evil", "updated_at": "1999-01-01T00:00:00Z", "state": {"z": [3, 2, 1], "a": "x"}}'),
            0, :A1, 'node_completed', 'retain_claim'),
          pg_temp.doc('cm-a', 1, '{"tenant_id": "evil", "updated_at": "1999-01-01T00:00:00Z", "state": {"z": [3, 2, 1], "a": "x"}}'),
          'retain_claim: commit returns the proposed document');
SELECT is((SELECT document FROM docket.runs WHERE run_id = 'cm-a'),
          pg_temp.doc('cm-a', 1, '{"tenant_id": "evil", "updated_at": "1999-01-01T00:00:00Z", "state": {"z": [3, 2, 1], "a": "x"}}'),
          'retain_claim: the document is replaced verbatim');
SELECT is(pg_temp.state('cm-a'),
          pg_temp.expect('running', 1, 'node_completed', '2040-05-01 01:00:00+00', NULL,
                         :A1, '2040-05-01 01:00:00+00'),
          'retain_claim: seq, type and updated_at recorded, token kept, claimed_at advanced to docket.now(), no wake, counters and poison reset');
SELECT is(pg_temp.fixed('cm-a'),
          jsonb_build_object('tenant_id', 'acme', 'queue', 'q-cm', 'graph_id', 'tap-cm', 'graph_hash', 'h1',
                             'started_at', '2040-05-01 00:00:00+00'::timestamptz),
          'tenant, queue and identity are untouched (tenant never taken from the document)');

SET LOCAL docket.fake_now = '2040-05-01 00:30:00+00';
SELECT is(docket.commit('tenant:acme', pg_temp.doc('cm-a', 2), 1, :A1, 'step_completed', 'retain_claim'),
          pg_temp.doc('cm-a', 2), 'retain_claim with a clock behind the claim commits');
SELECT is(pg_temp.state('cm-a'),
          pg_temp.expect('running', 2, 'step_completed', '2040-05-01 00:30:00+00', NULL,
                         :A1, '2040-05-01 01:00:00+00'),
          'retain_claim never moves claimed_at backward; updated_at still follows docket.now()');

SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 1), 0, :A1, 'node_completed', 'retain_claim'),
             'DK001 stale_fence: %', 'replaying an already committed proposal raises DK001');

-------------------------------------------------------------------------------
-- Release schedules: the claim is cleared
-------------------------------------------------------------------------------
SET LOCAL docket.fake_now = '2040-05-01 02:00:00+00';
UPDATE docket.runs SET claim_attempts = 1, claim_abandons = 3 WHERE run_id = 'cm-a';
SELECT is(docket.commit('tenant:acme', pg_temp.doc('cm-a', 3), 2, :A1, 'node_completed', 'immediate'),
          pg_temp.doc('cm-a', 3), 'immediate commits');
SELECT is(pg_temp.state('cm-a'),
          pg_temp.expect('running', 3, 'node_completed', '2040-05-01 02:00:00+00', '2040-05-01 02:00:00+00',
                         NULL, NULL),
          'immediate: claim cleared, wake_at = docket.now(), counters reset');
SELECT alike(pg_temp.cm_err('tenant:acme', pg_temp.doc('cm-a', 4), 3, :A1, 'node_completed', 'retain_claim'),
             'DK001 stale_fence: %', 'after a release the old token is stale (DK001)');

SELECT pg_temp.claim('cm-a', :A2, '2040-05-01 02:05:00+00');
SET LOCAL docket.fake_now = '2040-05-01 02:10:00+00';
SELECT is(docket.commit('system', pg_temp.doc('cm-a', 4), 3, :A2, 'suspended', 'at', '2040-06-01 00:00:00+00'),
          pg_temp.doc('cm-a', 4), 'at (future) commits under the system scope');
SELECT is(pg_temp.state('cm-a'),
          pg_temp.expect('running', 4, 'suspended', '2040-05-01 02:10:00+00', '2040-06-01 00:00:00+00',
                         NULL, NULL),
          'at: claim cleared, wake_at = the given time');
SELECT is((SELECT count(*)::int FROM docket.claim_due(now => '2040-05-31 23:59:59+00', claim_limit => 5, queue => 'q-cm')),
          0, 'a future at is not claimable before its time');

SELECT pg_temp.claim('cm-a', :A1, '2040-05-01 02:15:00+00');
SET LOCAL docket.fake_now = '2040-05-01 03:00:00+00';
SELECT is(docket.commit('tenant:acme', pg_temp.doc('cm-a', 5), 4, :A1, 'resumed', 'at', '2040-04-30 00:00:00+00'),
          pg_temp.doc('cm-a', 5), 'at with a past time commits');
SELECT is(pg_temp.state('cm-a'),
          pg_temp.expect('running', 5, 'resumed', '2040-05-01 03:00:00+00', '2040-04-30 00:00:00+00',
                         NULL, NULL),
          'at in the past: the wake is recorded as given');
SELECT results_eq($$SELECT outcome, run_id, checkpoint_seq FROM docket.claim_due(now => docket.now(), claim_limit => 5, queue => 'q-cm')$$,
                  $$VALUES ('lease'::text, 'cm-a'::text, 5::bigint)$$,
                  'an at in the past is due at once');
SELECT claim_token AS a3 FROM docket.runs WHERE run_id = 'cm-a' \gset

SET LOCAL docket.fake_now = '2040-05-01 04:00:00+00';
SELECT is(docket.commit('tenant:acme', pg_temp.doc('cm-a', 6, '{"status": "waiting"}'), 5, :'a3', 'suspended', 'external'),
          pg_temp.doc('cm-a', 6, '{"status": "waiting"}'), 'external with status waiting commits (with a token from claim_due)');
SELECT is(pg_temp.state('cm-a'),
          pg_temp.expect('waiting', 6, 'suspended', '2040-05-01 04:00:00+00', NULL, NULL, NULL),
          'external: claim cleared, no wake, status waiting');

SELECT is(docket.commit('system', pg_temp.doc('cm-b', 1, '{"status": "completed", "result": 42}'), 0,
                        '00000000-0000-0000-0000-0000000000b1', 'run_completed', 'terminal'),
          pg_temp.doc('cm-b', 1, '{"status": "completed", "result": 42}'), 'the system scope commits a tenant''s run (terminal, completed)');
SELECT is(pg_temp.state('cm-b'),
          pg_temp.expect('completed', 1, 'run_completed', '2040-05-01 04:00:00+00', NULL, NULL, NULL),
          'terminal completed: claim cleared, no wake');
SELECT is(docket.commit('tenantless', pg_temp.doc('cm-t', 1, '{"status": "failed"}'), 0,
                        '00000000-0000-0000-0000-0000000000c1', 'run_failed', 'terminal'),
          pg_temp.doc('cm-t', 1, '{"status": "failed"}'), 'the tenantless scope commits a tenantless run (terminal, failed)');
SELECT is(pg_temp.state('cm-t'),
          pg_temp.expect('failed', 1, 'run_failed', '2040-05-01 04:00:00+00', NULL, NULL, NULL),
          'terminal failed: claim cleared, no wake');
SELECT is(pg_temp.fixed('cm-t') ->> 'tenant_id', NULL, 'a tenantless run stays tenantless');

-- The same instant spelled with another offset is the same identity.
SELECT is(docket.commit('tenant:acme', pg_temp.doc('cm-c', 5, '{"status": "cancelled", "started_at": "2040-05-01T02:00:00+02:00"}'), 4,
                        '00000000-0000-0000-0000-0000000000d1', 'run_cancelled', 'terminal'),
          pg_temp.doc('cm-c', 5, '{"status": "cancelled", "started_at": "2040-05-01T02:00:00+02:00"}'),
          'started_at compares as an instant: another offset for the same time commits (terminal, cancelled)');
SELECT is(pg_temp.state('cm-c'),
          pg_temp.expect('cancelled', 5, 'run_cancelled', '2040-05-01 04:00:00+00', NULL, NULL, NULL),
          'terminal cancelled: claim cleared, no wake');
SELECT is(pg_temp.fixed('cm-c') ->> 'started_at', '2040-05-01T00:00:00+00:00', 'the started_at column is unchanged');

SELECT is((SELECT count(*)::int FROM docket.run_events WHERE run_id LIKE 'cm-%'), 0, 'commit never appends events');
SELECT is(pg_temp.row_of('cm-u'), :'u0', 'a run nobody committed is untouched');

SELECT * FROM finish();
ROLLBACK;
