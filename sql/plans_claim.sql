-- Plans of the claim path (claim_due, commit, mutate_run, abandon_claim,
-- retry_poisoned_run), pinned as generic plans: each candidate scan must walk
-- its partial index in (eligible column, run_id) order, and each update must
-- find its rows by the primary key (the lease: by the ctids of the rows the
-- candidate scan locked, a TID scan each). Each PREPARE repeats the statement text of
-- src/pg/claim.cpp, commit.cpp, transition.cpp, abandon.cpp and poison.cpp
-- word for word; change both together.
CREATE EXTENSION docket;
SET plan_cache_mode = force_generic_plan;
-- The claims below pass explicit clocks in 2024 (docket.max_clock_skew, superuser only).
SET docket.max_clock_skew = '36500d';

-- 2400 runs over four queues and two tenants: half running, the rest waiting
-- or terminal, due one every 15 seconds from 2024-01-01 00:00. Then claims make
-- some running runs leased, some of those leases expire and some runs poisoned.
-- (With a few hundred rows a sequential scan is cheaper than ten primary key
-- probes, the generic estimate for `= ANY($1)`, and the updates' plans flip.)
SELECT docket.save_graph('graph-1', 'hash-1', '{}');
SELECT count(*) FROM (
  SELECT docket.insert_run(
           CASE WHEN i % 3 = 0 THEN 'tenantless' ELSE 'tenant:t' || (i % 2) END,
           jsonb_build_object(
             'id', 'run-' || lpad(i::text, 4, '0'), 'graph_id', 'graph-1', 'graph_hash', 'hash-1',
             'status', (ARRAY['running', 'running', 'running', 'waiting', 'completed', 'failed'])[i % 6 + 1],
             'checkpoint_seq', 0, 'started_at', '2024-01-01T00:00:00Z'),
           'run_initialized', timestamptz '2024-01-01 00:00:00+00' + i * interval '15 seconds',
           'q' || (i % 4))
    FROM generate_series(1, 2400) i) inserted;
SELECT outcome, count(*) FROM docket.claim_due(now => '2024-01-01 03:00:00+00', claim_limit => 200)
 GROUP BY outcome;
SELECT outcome, count(*) FROM docket.claim_due(now => '2024-01-01 04:00:00+00', claim_limit => 40,
                                               orphan_ttl_ms => 1800000, max_claim_attempts => 1)
 GROUP BY outcome ORDER BY outcome;
SELECT status, count(*) FILTER (WHERE claim_token IS NOT NULL) AS claimed,
       count(*) FILTER (WHERE poisoned_at IS NOT NULL) AS poisoned,
       count(*) FILTER (WHERE claim_token IS NULL AND poisoned_at IS NULL
                          AND wake_at <= '2024-01-01 08:00:00+00') AS due_at_8
  FROM docket.runs GROUP BY status ORDER BY status;
ANALYZE docket.runs;

-- claim_due, the candidate scan: ready class by runs_ready / runs_ready_queue in
-- (wake_at, run_id) order; expired class by runs_claimed, bounded by the cutoff
-- on claim_renewed_at (the lease, a heartbeat or refresh_claim sets it), the queue checked in
-- the index, the few claims in that range sorted by claimed_at (their lease,
-- lease_ms, checked on the row).
PREPARE candidates (timestamptz, bigint, timestamptz) AS SELECT false, run_id, wake_at, claim_attempts, NULL::bigint, claimed_seq, claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, wake_at, claim_attempts, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at, run_id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED) AS ready UNION ALL SELECT true, run_id, claimed_at, claim_attempts, lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, claimed_at, claim_attempts, lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL AND claim_renewed_at < $3 AND claimed_at < $3 AND (lease_ms IS NULL OR claimed_at + lease_ms * interval '1 millisecond' < $1) ORDER BY claimed_at, run_id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED) AS expired;
EXPLAIN (COSTS OFF) EXECUTE candidates ('2024-01-01 08:00:00+00', 10, '2024-01-01 07:30:00+00');
PREPARE candidates_queue (timestamptz, bigint, timestamptz, text) AS SELECT false, run_id, wake_at, claim_attempts, NULL::bigint, claimed_seq, claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, wake_at, claim_attempts, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL AND queue = ANY(ARRAY[$4]) AND wake_at <= $1 ORDER BY queue, wake_at, run_id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED) AS ready UNION ALL SELECT true, run_id, claimed_at, claim_attempts, lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, claimed_at, claim_attempts, lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL AND claim_renewed_at < $3 AND claimed_at < $3 AND queue = $4 AND (lease_ms IS NULL OR claimed_at + lease_ms * interval '1 millisecond' < $1) ORDER BY claimed_at, run_id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED) AS expired;
EXPLAIN (COSTS OFF) EXECUTE candidates_queue ('2024-01-01 08:00:00+00', 10, '2024-01-01 07:30:00+00', 'q1');

-- claim_due, the lease and poison updates: the lease by the locked rows' ctids (a
-- nested loop of TID scans over its arrays), the poisoning by the primary key.
PREPARE lease (tid[], timestamptz, bigint, uuid[], text[]) AS UPDATE docket.runs r SET claim_token = l.token, claimed_at = $2, claim_started_at = $2, claim_renewed_at = $2, wake_at = NULL, claim_attempts = r.claim_attempts + 1, lease_ms = $3, claimed_seq = NULL, claimed_attempt = NULL FROM unnest($1::tid[], $4::uuid[], $5::text[]) AS l(tid, token, id) WHERE r.ctid = l.tid AND r.run_id = l.id RETURNING r.run_id, tenant_id, graph_id, graph_hash, checkpoint_seq, claim_token, claimed_at, claim_attempts, poisoned_at, poison_reason, queue;
EXPLAIN (COSTS OFF) EXECUTE lease ('{"(0,1)","(0,2)","(0,7)"}', '2024-01-01 08:00:00+00', NULL, '{00000000-0000-4000-8000-000000000001,00000000-0000-4000-8000-000000000002,00000000-0000-4000-8000-000000000003}', '{run-0001,run-0002,run-0007}');
PREPARE poison (text[], timestamptz) AS UPDATE docket.runs SET claim_token = NULL, claimed_at = NULL, wake_at = NULL, poisoned_at = $2, poison_reason = 'max_claim_attempts_exceeded' WHERE run_id = ANY($1) RETURNING run_id, tenant_id, graph_id, graph_hash, checkpoint_seq, claim_token, claimed_at, claim_attempts, poisoned_at, poison_reason, queue;
EXPLAIN (COSTS OFF) EXECUTE poison ('{run-0001,run-0002,run-0007}', '2024-01-01 08:00:00+00');

-- commit: one update by primary key, the scope, fence and identity filters of that row.
PREPARE commit_fenced (text, jsonb, text, bigint, text, timestamptz, bool, timestamptz, timestamptz, bool, text, bigint, uuid, text, text, timestamptz) AS UPDATE docket.runs SET document = $2, status = $3, checkpoint_seq = $4, checkpoint_type = $5::docket.checkpoint_type, updated_at = $6, claim_token = CASE WHEN $7 THEN claim_token END, claimed_at = CASE WHEN $7 THEN greatest(claimed_at, $8) END, wake_at = $9, claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL WHERE run_id = $1 AND ($10 OR tenant_id IS NOT DISTINCT FROM $11) AND checkpoint_seq = $12 AND claim_token = $13 AND graph_id = $14 AND graph_hash = $15 AND started_at = $16 RETURNING document, queue;
EXPLAIN (COSTS OFF) EXECUTE commit_fenced ('run-0001', '{}', 'completed', 2, 'run_completed', '2024-01-01 08:00:00+00', false, NULL, NULL, false, 't1', 1, '00000000-0000-0000-0000-000000000001', 'graph-1', 'hash-1', '2024-01-01 00:00:00+00');

-- mutate_run (and a commit that matched nothing): lock by primary key with the
-- scope as a filter, update by primary key.
PREPARE transition_lock (text, bool, text) AS SELECT run_id, graph_id, graph_hash, started_at, checkpoint_seq, status, claim_token, claimed_at, poisoned_at IS NOT NULL, queue, document FROM docket.runs WHERE run_id = $1 AND ($2 OR tenant_id IS NOT DISTINCT FROM $3) FOR UPDATE;
EXPLAIN (COSTS OFF) EXECUTE transition_lock ('run-0001', false, 't1');
PREPARE transition_update (text, jsonb, text, bigint, text, timestamptz, bool, timestamptz, timestamptz) AS UPDATE docket.runs SET document = $2, status = $3, checkpoint_seq = $4, checkpoint_type = $5::docket.checkpoint_type, updated_at = $6, claim_token = CASE WHEN $7 THEN claim_token END, claimed_at = $8, wake_at = $9, claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL WHERE run_id = $1 RETURNING document;
EXPLAIN (COSTS OFF) EXECUTE transition_update ('run-0001', '{}', 'completed', 2, 'run_completed', '2024-01-01 08:00:00+00', false, NULL, NULL);

-- abandon_claim: lock by primary key, update by primary key.
PREPARE abandon_lookup (text) AS SELECT claim_token, checkpoint_seq, claim_attempts, claim_abandons, queue FROM docket.runs WHERE run_id = $1 FOR UPDATE;
EXPLAIN (COSTS OFF) EXECUTE abandon_lookup ('run-0001');
PREPARE abandon_reschedule (text, int, int, timestamptz) AS UPDATE docket.runs SET claim_token = NULL, claimed_at = NULL, claim_attempts = $2, claim_abandons = $3, wake_at = $4 WHERE run_id = $1;
EXPLAIN (COSTS OFF) EXECUTE abandon_reschedule ('run-0001', 0, 1, '2024-01-01 08:00:00+00');
PREPARE abandon_poison (text, int, int, timestamptz) AS UPDATE docket.runs SET claim_token = NULL, claimed_at = NULL, claim_attempts = $2, claim_abandons = $3, wake_at = NULL, poisoned_at = $4, poison_reason = 'max_claim_abandons_exceeded' WHERE run_id = $1;
EXPLAIN (COSTS OFF) EXECUTE abandon_poison ('run-0001', 0, 1, '2024-01-01 08:00:00+00');

-- retry_poisoned_run: lock by primary key with the scope as a filter, update by primary key.
PREPARE recover_lookup (text, bool, text) AS SELECT status, poisoned_at IS NOT NULL, queue, document FROM docket.runs WHERE run_id = $1 AND ($2 OR tenant_id IS NOT DISTINCT FROM $3) FOR UPDATE;
EXPLAIN (COSTS OFF) EXECUTE recover_lookup ('run-0001', false, 't1');
PREPARE recover (text, timestamptz) AS UPDATE docket.runs SET poisoned_at = NULL, poison_reason = NULL, claim_token = NULL, claimed_at = NULL, claim_attempts = 0, claim_abandons = 0, wake_at = $2 WHERE run_id = $1;
EXPLAIN (COSTS OFF) EXECUTE recover ('run-0001', '2024-01-01 08:00:00+00');

DROP EXTENSION docket CASCADE;
