
-------------------------------------------------------------------------------
-- The run store's functions (C++: src/core/, src/pg/)
-------------------------------------------------------------------------------

CREATE FUNCTION docket.save_graph(graph_id text, graph_hash text, definition jsonb)
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_save_graph';
COMMENT ON FUNCTION docket.save_graph(text, text, jsonb) IS
  'Publishes a graph version. Idempotent for the same definition; the same (graph_id, graph_hash) with another definition raises graph_conflict (DK006). A run document or definition over docket.max_document_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.insert_run(owner_scope docket.scope, run jsonb,
                                  checkpoint_type docket.checkpoint_type, wake_at timestamptz,
                                  queue text DEFAULT 'default')
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_insert_run';
COMMENT ON FUNCTION docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text) IS
  'Inserts an initialized run (checkpoint_type run_initialized) owned by a tenantless or tenant:<id> scope, due at wake_at, in a queue. Returns the stored document. invalid_run (DK007) for a malformed document or an unsaved graph, duplicate_run (23505) for a taken id. A run document or definition over docket.max_document_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.fetch_run(scope docket.scope, run_id text)
  RETURNS jsonb
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_fetch_run';
COMMENT ON FUNCTION docket.fetch_run(docket.scope, text) IS
  'The last committed run document, or NULL for an unknown run or a scope that cannot see it.';

CREATE FUNCTION docket.inspect_run(scope docket.scope, run_id text)
  RETURNS jsonb
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_inspect_run';
COMMENT ON FUNCTION docket.inspect_run(docket.scope, text) IS
  'The run with its operational facts: {run, tenant_id, checkpoint_type, wake_at, claimed_at, claim_attempts, claim_abandons, poisoned_at, poison_reason}; never the claim token. NULL when not visible.';

CREATE FUNCTION docket.list_runs(scope docket.scope, page_limit int,
                                 before_started_at timestamptz DEFAULT NULL,
                                 before_run_id text DEFAULT NULL,
                                 graph_id text DEFAULT NULL, graph_hash text DEFAULT NULL,
                                 statuses text[] DEFAULT NULL)
  RETURNS jsonb
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_list_runs';
COMMENT ON FUNCTION docket.list_runs(docket.scope, int, timestamptz, text, text, text, text[]) IS
  'One page of run summaries, newest first by (started_at, run_id), after an exclusive keyset cursor: {entries, next_before, has_more}. Scope, graph filters and cursor are index conditions on docket.run_heads; statuses are checked on each in-scope run; documents are never read.';

-- A claim batch is small; tell the planner so joins on it use the indexes.
CREATE FUNCTION docket.claim_due(now timestamptz DEFAULT docket.now(), claim_limit int DEFAULT 1,
                                 orphan_ttl_ms bigint DEFAULT 30000,
                                 max_claim_attempts int DEFAULT 3,
                                 preference text DEFAULT NULL, queue text DEFAULT NULL)
  RETURNS TABLE (outcome text, run_id text, tenant_id text, graph_id text, graph_hash text,
                 checkpoint_seq bigint, claim_token uuid, claimed_at timestamptz,
                 claim_attempt int, orphan_ttl_ms bigint, poisoned_at timestamptz,
                 poison_reason text, queue text)
  LANGUAGE c VOLATILE ROWS 10
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_claim_due';
COMMENT ON FUNCTION docket.claim_due(timestamptz, int, bigint, int, text, text) IS
  'Atomically claims up to claim_limit ready (due, unclaimed) and expired (claim older than orphan_ttl_ms) runs, skipping locked rows. Each is leased (fresh token) or, once it has used max_claim_attempts, poisoned (outcome poisoned, no token). With claim_limit >= 2 each non-empty class gets at least one outcome; with 1, preference (ready|expired) is served first. A now further than docket.max_clock_skew (default 5min) from docket.now() raises 22023.';

CREATE FUNCTION docket.refresh_claim(run_id text, claim_token uuid,
                                     now timestamptz DEFAULT docket.now())
  RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_refresh_claim';
COMMENT ON FUNCTION docket.refresh_claim(text, uuid, timestamptz) IS
  'Moves claimed_at forward to now (never backward) under the exact current token. false means the claim is lost (stale token, unknown run) and nothing changed. A now further than docket.max_clock_skew (default 5min) from docket.now() raises 22023.';

CREATE FUNCTION docket.release_claim(run_id text, claim_token uuid,
                                     now timestamptz DEFAULT docket.now())
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_release_claim';
COMMENT ON FUNCTION docket.release_claim(text, uuid, timestamptz) IS
  'Clears the claim under the exact current token and makes the run due at now. Idempotent: a stale token or unknown run changes nothing. A now further than docket.max_clock_skew (default 5min) from docket.now() raises 22023.';

CREATE FUNCTION docket.abandon_claim(run_id text, claim_token uuid, expected_checkpoint_seq bigint,
                                     now timestamptz, retry_at timestamptz,
                                     max_claim_abandons int, non_poisoning boolean DEFAULT false,
                                     backoff_base_ms int DEFAULT NULL,
                                     backoff_cap_ms int DEFAULT NULL)
  RETURNS text
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_abandon_claim';
COMMENT ON FUNCTION docket.abandon_claim(text, uuid, bigint, timestamptz, timestamptz, int, boolean, int, int) IS
  'Hands back a claim before its first commit (token and sequence fenced) without using an attempt: rescheduled at retry_at (or now + min(base * 2^abandons, cap)), poisoned once max_claim_abandons is reached (unless non_poisoning), or stale. A now further than docket.max_clock_skew (default 5min) from docket.now() raises 22023.';

CREATE FUNCTION docket.commit(scope docket.scope, run jsonb, expected_checkpoint_seq bigint,
                              claim_token uuid, checkpoint_type docket.checkpoint_type,
                              schedule text, wake_at timestamptz DEFAULT NULL)
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_commit';
COMMENT ON FUNCTION docket.commit(docket.scope, jsonb, bigint, uuid, docket.checkpoint_type, text, timestamptz) IS
  'Commits the next run version under the token-and-sequence fence and applies the schedule (retain_claim, immediate, at, external, terminal). invalid_commit (DK002) before lookup, not_found (DK003), stale_fence (DK001), then identity (DK002). A run document or definition over docket.max_document_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.mutate_run(scope docket.scope, run_id text, mutation regprocedure,
                                  arg jsonb DEFAULT NULL)
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_mutate_run';
COMMENT ON FUNCTION docket.mutate_run(docket.scope, text, regprocedure, jsonb) IS
  'Locks the run, calls mutation(run, arg) (an IMMUTABLE or STABLE (jsonb, jsonb) -> docket.mutation_decision function) and applies its decision: commit (revokes any claim, release schedule), no_change or error. Returns {outcome, value}. A run document or definition over docket.max_document_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.retry_poisoned_run(scope docket.scope, run_id text,
                                          now timestamptz DEFAULT docket.now())
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_retry_poisoned_run';
COMMENT ON FUNCTION docket.retry_poisoned_run(docket.scope, text, timestamptz) IS
  'Clears poison facts, claim and counters of a non-terminal poisoned run and makes it due at now. Idempotent for an unpoisoned run; inactive_run (DK004) for a terminal one. A now further than docket.max_clock_skew (default 5min) from docket.now() raises 22023.';

CREATE FUNCTION docket.append_events(scope docket.scope, run_id text, events jsonb)
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_append_events';
COMMENT ON FUNCTION docket.append_events(docket.scope, text, jsonb) IS
  'Appends [{seq, type, payload}, ...] to the run''s event log; seqs must continue the last one by +1 each. A payload (append_events: the events array) over docket.max_payload_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.list_events(scope docket.scope, run_id text, after_seq bigint DEFAULT 0,
                                   page_limit int DEFAULT 100)
  RETURNS TABLE (seq bigint, type text, payload jsonb, recorded_at timestamptz)
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_list_events';
COMMENT ON FUNCTION docket.list_events(docket.scope, text, bigint, int) IS
  'Events of a run with seq > after_seq, in seq order, at most page_limit. No rows when the run is not visible.';
