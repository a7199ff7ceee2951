-- fetch_run and inspect_run: the stored document and the operational facts of
-- one run, NULL for an unknown run or a scope that cannot see it.
BEGIN;
SELECT plan(56);
-- This suite's subject includes explicit clocks (now => ...) far from docket's own:
-- docket.max_clock_skew (superuser only) is raised for it (hostile_limits.sql tests the bound).
SET LOCAL docket.max_clock_skew = '36500d';

SELECT is((SELECT count(*) FROM docket.runs), 0::bigint, 'the store starts empty');

CREATE FUNCTION pg_temp.doc(id text, extra jsonb DEFAULT '{}') RETURNS jsonb
  LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'fi-graph', 'graph_hash', 'fi-hash',
                            'status', 'running', 'checkpoint_seq', 0,
                            'started_at', '2030-01-01T00:00:00Z') || extra
$$;

DO $fixture$
BEGIN
  PERFORM docket.save_graph('fi-graph', 'fi-hash', '{"nodes": []}');
  -- One run per owner: tenant acme, tenant beta, tenantless, and tenant "acme:eu"
  -- (a tenant id containing ':' that starts like another tenant's scope).
  PERFORM docket.insert_run('tenant:acme',
                           pg_temp.doc('fi-acme', '{"input": {"n": [1, 2.50, "x"], "z": null}}'),
                           'run_initialized', '2030-01-01T00:00:05Z');
  PERFORM docket.insert_run('tenant:beta', pg_temp.doc('fi-beta'), 'run_initialized',
                           '2030-01-01T00:00:00Z');
  PERFORM docket.insert_run('tenantless', pg_temp.doc('fi-none'), 'run_initialized',
                           '2030-01-01T00:00:00Z');
  PERFORM docket.insert_run('tenant:acme:eu', pg_temp.doc('fi-acme-eu'), 'run_initialized',
                           '2030-01-01T00:00:00Z');
END
$fixture$;

-------------------------------------------------------------------------------
-- fetch_run
-------------------------------------------------------------------------------

SELECT is(docket.fetch_run('tenant:acme', 'fi-acme'),
          pg_temp.doc('fi-acme', '{"input": {"n": [1, 2.50, "x"], "z": null}}'),
          'fetch_run returns the stored document verbatim, unknown fields included');
SELECT is(docket.fetch_run('tenant:acme', 'fi-acme')::text,
          pg_temp.doc('fi-acme', '{"input": {"n": [1, 2.50, "x"], "z": null}}')::text,
          'fetch_run keeps number text and JSON nulls inside the document');
SELECT is(docket.fetch_run('system', 'fi-acme') ->> 'id', 'fi-acme', 'system sees a tenant run');
SELECT is(docket.fetch_run('system', 'fi-none') ->> 'id', 'fi-none',
          'system sees a tenantless run');
SELECT is(docket.fetch_run('tenant:beta', 'fi-beta') ->> 'id', 'fi-beta',
          'a tenant sees its own run');
SELECT is(docket.fetch_run('tenant:beta', 'fi-acme'), NULL,
          'another tenant gets NULL for a run it does not own');
SELECT is(docket.fetch_run('tenant:acme', 'fi-beta'), NULL, 'and the other way round');
SELECT is(docket.fetch_run('tenantless', 'fi-acme'), NULL,
          'tenantless gets NULL for a tenant run');
SELECT is(docket.fetch_run('tenantless', 'fi-none') ->> 'id', 'fi-none',
          'tenantless sees a tenantless run');
SELECT is(docket.fetch_run('tenant:acme', 'fi-none'), NULL,
          'a tenant gets NULL for a tenantless run');
SELECT is(docket.fetch_run('tenant:acme:eu', 'fi-acme-eu') ->> 'id', 'fi-acme-eu',
          'a tenant id containing a colon sees its run');
SELECT is(docket.fetch_run('tenant:acme', 'fi-acme-eu'), NULL,
          'tenant acme does not see tenant acme:eu');
SELECT is(docket.fetch_run('tenant:acme:eu', 'fi-acme'), NULL,
          'tenant acme:eu does not see tenant acme');
SELECT is(docket.fetch_run('system', 'fi-unknown'), NULL, 'an unknown run is NULL');
SELECT is(docket.fetch_run('system', ''), NULL, 'an empty run id is an unknown run');
SELECT throws_ok($$SELECT docket.fetch_run(NULL, 'fi-acme')$$, '22023',
                 'bad_argument: scope must not be NULL', 'fetch_run: NULL scope is 22023');
SELECT throws_ok($$SELECT docket.fetch_run('system', NULL)$$, '22023',
                 'bad_argument: run_id must not be NULL', 'fetch_run: NULL run_id is 22023');
SELECT throws_ok($$SELECT docket.fetch_run('tenant:', 'fi-acme')$$, '23514', NULL,
                 'fetch_run: a malformed scope is the domain check violation');
SELECT throws_ok($$SELECT docket.fetch_run('everyone', 'fi-acme')$$, '23514', NULL,
                 'fetch_run: an unknown scope word is the domain check violation');

-- A commit replaces the document; fetch_run returns the last committed one.
SELECT is((SELECT count(*) FROM docket.claim_due(now => '2030-01-01T00:01:00Z', claim_limit => 10)),
          4::bigint, 'fixture: every run claimed');
DO $fixture$
BEGIN
  PERFORM docket.commit('tenant:acme',
                        pg_temp.doc('fi-acme', '{"checkpoint_seq": 1, "step": "two"}'), 0,
                        (SELECT claim_token FROM docket.runs WHERE run_id = 'fi-acme'),
                        'node_completed', 'immediate');
END
$fixture$;
SELECT is(docket.fetch_run('tenant:acme', 'fi-acme'),
          pg_temp.doc('fi-acme', '{"checkpoint_seq": 1, "step": "two"}'),
          'fetch_run returns the last committed document');
SELECT is(docket.fetch_run('tenant:beta', 'fi-acme'), NULL,
          'still invisible to another tenant after the commit');

-------------------------------------------------------------------------------
-- inspect_run
-------------------------------------------------------------------------------

SELECT is(ARRAY(SELECT jsonb_object_keys(docket.inspect_run('system', 'fi-beta')) ORDER BY 1),
          ARRAY['checkpoint_type', 'claim_abandons', 'claim_attempts', 'claimed_at', 'poison_reason',
                'poisoned_at', 'run', 'tenant_id', 'wake_at'],
          'inspect_run has exactly the nine keys');

-- fi-acme after the commit: unclaimed, due now (immediate), counters reset.
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') -> 'run',
          docket.fetch_run('tenant:acme', 'fi-acme'), 'run is the stored document');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') ->> 'tenant_id', 'acme',
          'tenant_id is the owner tenant');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') ->> 'checkpoint_type', 'node_completed',
          'checkpoint_type is the latest checkpoint''s type');
SELECT is((docket.inspect_run('tenant:acme', 'fi-acme') ->> 'wake_at')::timestamptz,
          (SELECT wake_at FROM docket.runs WHERE run_id = 'fi-acme'),
          'wake_at is the stored wake');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') -> 'claimed_at', 'null'::jsonb,
          'claimed_at is JSON null when unclaimed');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') -> 'claim_attempts', '0'::jsonb,
          'claim_attempts is a JSON number (reset by the commit)');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') -> 'claim_abandons', '0'::jsonb,
          'claim_abandons is a JSON number');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') -> 'poisoned_at', 'null'::jsonb,
          'poisoned_at is JSON null when not poisoned');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme') -> 'poison_reason', 'null'::jsonb,
          'poison_reason is JSON null when not poisoned');

-- fi-beta: claimed by the claim_due above.
SELECT is((docket.inspect_run('tenant:beta', 'fi-beta') ->> 'claimed_at')::timestamptz,
          '2030-01-01T00:01:00Z'::timestamptz, 'claimed_at is the claim time');
SELECT is(docket.inspect_run('tenant:beta', 'fi-beta') -> 'claim_attempts', '1'::jsonb,
          'claim_attempts counts the claim');
SELECT is(docket.inspect_run('tenant:beta', 'fi-beta') -> 'wake_at', 'null'::jsonb,
          'wake_at is JSON null while claimed');
SELECT is(docket.inspect_run('tenant:beta', 'fi-beta') ->> 'checkpoint_type', 'run_initialized',
          'checkpoint_type of a fresh run is run_initialized');
SELECT ok(NOT (docket.inspect_run('system', 'fi-beta') ? 'claim_token'),
          'inspect_run has no claim_token key');
SELECT ok(position((SELECT claim_token::text FROM docket.runs WHERE run_id = 'fi-beta')
                   IN docket.inspect_run('system', 'fi-beta')::text) = 0,
          'the claim token appears nowhere in inspect_run');

-- fi-none: tenantless; abandoned once, so claim_abandons counts and wake_at is retry_at.
SELECT is(docket.abandon_claim('fi-none', (SELECT claim_token FROM docket.runs WHERE run_id = 'fi-none'),
                               0, '2030-01-01T00:02:00Z', '2030-01-01T00:10:00Z', 5),
          'rescheduled', 'fixture: fi-none abandoned');
SELECT is(docket.inspect_run('tenantless', 'fi-none') -> 'tenant_id', 'null'::jsonb,
          'tenant_id is JSON null for a tenantless run');
SELECT is(docket.inspect_run('tenantless', 'fi-none') -> 'claim_abandons', '1'::jsonb,
          'claim_abandons counts the abandon');
SELECT is((docket.inspect_run('tenantless', 'fi-none') ->> 'wake_at')::timestamptz,
          '2030-01-01T00:10:00Z'::timestamptz, 'wake_at is the retry time');

-- fi-acme-eu: poisoned by a claim past max_claim_attempts.
SELECT is((SELECT outcome FROM docket.claim_due(now => '2030-01-01T02:00:00Z', claim_limit => 10,
                                                orphan_ttl_ms => 1000, max_claim_attempts => 1)
            WHERE run_id = 'fi-acme-eu'),
          'poisoned', 'fixture: fi-acme-eu poisoned');
SELECT is((docket.inspect_run('tenant:acme:eu', 'fi-acme-eu') ->> 'poisoned_at')::timestamptz,
          '2030-01-01T02:00:00Z'::timestamptz, 'poisoned_at is the poison time');
SELECT is(docket.inspect_run('tenant:acme:eu', 'fi-acme-eu') ->> 'poison_reason',
          'max_claim_attempts_exceeded', 'poison_reason names the reason');
SELECT is(docket.inspect_run('tenant:acme:eu', 'fi-acme-eu') -> 'claimed_at', 'null'::jsonb,
          'a poisoned run has no claim');
SELECT is(jsonb_typeof(docket.inspect_run('tenant:acme:eu', 'fi-acme-eu') -> 'wake_at'), 'null',
          'every key stays present with null values (wake_at)');

-- Scopes.
SELECT is(docket.inspect_run('tenant:beta', 'fi-acme'), NULL, 'inspect_run: another tenant gets NULL');
SELECT is(docket.inspect_run('tenantless', 'fi-acme'), NULL,
          'inspect_run: tenantless gets NULL for a tenant run');
SELECT is(docket.inspect_run('tenant:acme', 'fi-none'), NULL,
          'inspect_run: a tenant gets NULL for a tenantless run');
SELECT is(docket.inspect_run('tenant:acme', 'fi-acme-eu'), NULL,
          'inspect_run: tenant acme does not see tenant acme:eu');
SELECT is((SELECT count(*) FROM unnest(ARRAY['fi-acme', 'fi-beta', 'fi-none', 'fi-acme-eu']) id
            WHERE docket.inspect_run('system', id) IS NOT NULL),
          4::bigint, 'inspect_run: system sees every run');
SELECT is(docket.inspect_run('system', 'fi-unknown'), NULL, 'inspect_run: an unknown run is NULL');
SELECT throws_ok($$SELECT docket.inspect_run(NULL, 'fi-acme')$$, '22023',
                 'bad_argument: scope must not be NULL', 'inspect_run: NULL scope is 22023');
SELECT throws_ok($$SELECT docket.inspect_run('system', NULL)$$, '22023',
                 'bad_argument: run_id must not be NULL', 'inspect_run: NULL run_id is 22023');

SELECT * FROM finish();
ROLLBACK;
