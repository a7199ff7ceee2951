-- A narrated psql tour of a run's life in docket's run store.
-- Run by `make demo`; every statement is echoed before its result.
\set QUIET on
\pset null '(null)'
SET client_min_messages = warning;
\set QUIET off

\echo
\echo '=== 1. Install the extension and stop the clock at a known instant.'
\echo '    docket.now() is the store''s clock; docket.fake_now lets us travel in time.'
CREATE EXTENSION docket;
SET docket.fake_now = '2030-01-01 09:00:00+00';
SET TimeZone = 'UTC';
SELECT docket.now();

\echo
\echo '=== 2. Publish a graph version. Saving it again with the same definition is a no-op.'
SELECT docket.save_graph('invoice', 'v1', '{"nodes": ["charge", "email"]}');
SELECT docket.save_graph('invoice', 'v1', '{"nodes": ["charge", "email"]}');

\echo
\echo '=== 3. Insert runs for two tenants (acme, globex) and one without a tenant.'
\echo '    The tenant comes from the owner scope, never from the document.'
SELECT docket.insert_run('tenant:acme',
         jsonb_build_object('id', 'acme-' || i, 'graph_id', 'invoice', 'graph_hash', 'v1',
                            'status', 'running', 'checkpoint_seq', 0,
                            'started_at', '2030-01-01T08:00:0' || i || 'Z'),
         'run_initialized', '2030-01-01 08:59:00+00') ->> 'id' AS inserted
  FROM generate_series(1, 3) AS i;
SELECT docket.insert_run('tenant:globex',
         '{"id": "globex-1", "graph_id": "invoice", "graph_hash": "v1", "status": "running",
           "checkpoint_seq": 0, "started_at": "2030-01-01T08:00:05Z"}',
         'run_initialized', '2030-01-01 08:59:30+00') ->> 'id' AS inserted;
SELECT docket.insert_run('tenantless',
         '{"id": "batch-1", "graph_id": "invoice", "graph_hash": "v1", "status": "running",
           "checkpoint_seq": 0, "started_at": "2030-01-01T08:00:06Z"}',
         'run_initialized', '2030-01-01 12:00:00+00') ->> 'id' AS inserted;

\echo
\echo '=== 4. Scopes: acme sees its own runs only; system sees every tenant.'
SELECT docket.fetch_run('tenant:acme', 'acme-1') ->> 'id' AS acme_sees_acme,
       docket.fetch_run('tenant:acme', 'globex-1') AS acme_sees_globex,
       docket.fetch_run('system', 'globex-1') ->> 'id' AS system_sees_globex;

\echo
\echo '=== 5. A worker claims a batch of due runs: each lease carries a fresh token.'
\echo '    batch-1 is not due until 12:00, so it stays put.'
CREATE TEMP TABLE leases AS
  SELECT * FROM docket.claim_due(now => docket.now(), claim_limit => 10);
SELECT outcome, run_id, tenant_id, checkpoint_seq, claimed_at, claim_attempt FROM leases ORDER BY run_id;

\echo
\echo '=== 6. The holder of acme-1 commits progress and keeps its claim (retain_claim),'
\echo '    then commits the final version (terminal). Each commit proposes checkpoint_seq + 1.'
SELECT docket.commit('tenant:acme',
         '{"id": "acme-1", "graph_id": "invoice", "graph_hash": "v1", "status": "running",
           "checkpoint_seq": 1, "started_at": "2030-01-01T08:00:01Z", "done": ["charge"]}',
         0, (SELECT claim_token FROM leases WHERE run_id = 'acme-1'),
         'node_completed', 'retain_claim') ->> 'checkpoint_seq' AS committed_seq;
SELECT docket.commit('tenant:acme',
         '{"id": "acme-1", "graph_id": "invoice", "graph_hash": "v1", "status": "completed",
           "checkpoint_seq": 2, "started_at": "2030-01-01T08:00:01Z", "done": ["charge", "email"]}',
         1, (SELECT claim_token FROM leases WHERE run_id = 'acme-1'),
         'run_completed', 'terminal') ->> 'status' AS status;

\echo
\echo '=== 7. A commit with a token that no longer holds the run is fenced off.'
\set ON_ERROR_STOP off
SELECT docket.commit('tenant:acme',
         '{"id": "acme-1", "graph_id": "invoice", "graph_hash": "v1", "status": "completed",
           "checkpoint_seq": 3, "started_at": "2030-01-01T08:00:01Z"}',
         2, (SELECT claim_token FROM leases WHERE run_id = 'acme-1'),
         'run_completed', 'terminal');
\set ON_ERROR_STOP on

\echo
\echo '=== 8. acme-2 parks itself waiting for an external signal (schedule external).'
SELECT docket.commit('tenant:acme',
         '{"id": "acme-2", "graph_id": "invoice", "graph_hash": "v1", "status": "waiting",
           "checkpoint_seq": 1, "started_at": "2030-01-01T08:00:02Z", "waiting_for": "approval"}',
         0, (SELECT claim_token FROM leases WHERE run_id = 'acme-2'),
         'suspended', 'external') ->> 'status' AS status;

\echo
\echo '=== 9. A signal arrives through mutate_run: a pure function decides the next version'
\echo '    while the run row is locked. Here: resume the run and make it due at once.'
CREATE FUNCTION approve(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN run ->> 'status' = 'waiting' THEN
      ROW('commit',
          run || jsonb_build_object('status', 'running',
                                    'checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1,
                                    'approved_by', arg ->> 'by'),
          'signal_received', 'immediate', NULL, jsonb_build_object('approved', true)
      )::docket.mutation_decision
    ELSE
      ROW('no_change', NULL, NULL, NULL, NULL, '"not waiting"')::docket.mutation_decision
    END $$;
SELECT docket.mutate_run('tenant:acme', 'acme-2', 'approve(jsonb,jsonb)', '{"by": "ops"}');
SELECT docket.mutate_run('tenant:acme', 'acme-2', 'approve(jsonb,jsonb)', '{"by": "ops"}');
SELECT docket.inspect_run('tenant:acme', 'acme-2') - 'run' AS operational_facts;

\echo
\echo '=== 10. The worker holding acme-3 vanishes. 31 seconds later its claim is older than'
\echo '     the 30 s orphan TTL, and another worker steals it with a new token.'
SET docket.fake_now = '2030-01-01 09:00:31+00';
SELECT outcome, run_id, claim_attempt, claimed_at
  FROM docket.claim_due(now => docket.now(), claim_limit => 10, orphan_ttl_ms => 30000)
 ORDER BY run_id;
\echo '     The vanished worker''s late commit now fails with stale_fence:'
\set ON_ERROR_STOP off
SELECT docket.commit('tenant:acme',
         '{"id": "acme-3", "graph_id": "invoice", "graph_hash": "v1", "status": "completed",
           "checkpoint_seq": 1, "started_at": "2030-01-01T08:00:03Z"}',
         0, (SELECT claim_token FROM leases WHERE run_id = 'acme-3'), 'run_completed', 'terminal');
\set ON_ERROR_STOP on

\echo
\echo '=== 11. A run whose workers keep dying is poisoned after max_claim_attempts claims.'
\echo '     acme-3 and globex-1 have used 2 claims without committing; with'
\echo '     max_claim_attempts => 2 the next recovery poisons them instead of leasing.'
\echo '     acme-2 committed in between (mutate_run reset its count), so it is leased again.'
SET docket.fake_now = '2030-01-01 09:01:30+00';
SELECT outcome, run_id, claim_attempt, claim_token IS NOT NULL AS has_token, poisoned_at, poison_reason
  FROM docket.claim_due(now => docket.now(), claim_limit => 10, max_claim_attempts => 2)
 ORDER BY run_id;
SELECT docket.inspect_run('system', 'acme-3') - 'run' AS poisoned_facts;
\echo '     An operator recovers it: poison cleared, counters reset, due now.'
SELECT docket.retry_poisoned_run('system', 'acme-3') ->> 'id' AS recovered;
SELECT docket.inspect_run('system', 'acme-3') - 'run' AS recovered_facts;

\echo
\echo '=== 12. Every transition is a row in the per-run event log, appended by lifecycle code.'
SELECT docket.append_events('tenant:acme', 'acme-1',
         '[{"seq": 1, "type": "node_completed", "payload": {"node": "charge"}},
           {"seq": 2, "type": "run_completed", "payload": null}]');
SELECT seq, type, payload FROM docket.list_events('tenant:acme', 'acme-1');

\echo
\echo '=== 13. List runs page by page, newest first, with a keyset cursor.'
SELECT jsonb_pretty(docket.list_runs('system', 2)) AS page_1;
SELECT jsonb_pretty(docket.list_runs('system', 2,
         before_started_at => '2030-01-01T08:00:05Z', before_run_id => 'globex-1')) AS page_2;
SELECT docket.list_runs('tenant:acme', 10, statuses => ARRAY['completed']) -> 'entries' AS acme_completed;

\echo
\echo '=== The end: every run and its state.'
SELECT run_id, tenant_id, status, checkpoint_seq, wake_at, claimed_at IS NOT NULL AS claimed,
       claim_attempts, poisoned_at
  FROM docket.runs ORDER BY run_id;
