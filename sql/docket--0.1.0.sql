-- docket 0.1.0: the run store.
-- Every object lives in schema docket; every function pins its search_path;
-- nothing is granted to PUBLIC (see docs/run-store.md for the grant recipe).

\echo Use "CREATE EXTENSION docket" to load this file. \quit

-- The schema must be docket's own: created now by CREATE EXTENSION, or created
-- empty beforehand by the role that installs docket. A schema that another
-- role owns, or that already holds objects or default privileges, could carry
-- that role's functions, types or grants into docket: refused (42501).
DO $$
DECLARE
  owner oid;
BEGIN
  SELECT n.nspowner INTO owner FROM pg_catalog.pg_namespace n WHERE n.nspname = 'docket';
  IF owner IS DISTINCT FROM (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
    RAISE EXCEPTION 'schema docket is owned by role %, not by %, who installs docket',
      owner::regrole, current_user USING ERRCODE = '42501';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.relnamespace = 'docket'::regnamespace)
     OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'docket'::regnamespace)
     OR EXISTS (SELECT 1 FROM pg_catalog.pg_type t WHERE t.typnamespace = 'docket'::regnamespace)
     OR EXISTS (SELECT 1 FROM pg_catalog.pg_default_acl d WHERE d.defaclnamespace = 'docket'::regnamespace) THEN
    RAISE EXCEPTION 'schema docket already holds objects or default privileges: docket installs only into an empty schema of its own'
      USING ERRCODE = '42501';
  END IF;
END $$;

-------------------------------------------------------------------------------
-- Types
-------------------------------------------------------------------------------

CREATE DOMAIN docket.scope AS text
  CONSTRAINT scope_format CHECK (
    VALUE = 'system' OR VALUE = 'tenantless' OR VALUE LIKE 'tenant:_%');
COMMENT ON DOMAIN docket.scope IS
  'system (every tenant), tenantless (rows without a tenant) or tenant:<id> (one tenant)';

CREATE TYPE docket.checkpoint_type AS ENUM (
  'run_initialized', 'node_completed', 'node_failed', 'signal_received',
  'step_completed', 'suspended', 'resumed', 'retried', 'run_completed',
  'run_failed', 'run_cancelled');
COMMENT ON TYPE docket.checkpoint_type IS 'the kind of the latest committed checkpoint of a run';

CREATE TYPE docket.mutation_decision AS (
  decision text,                          -- 'commit' | 'no_change' | 'error'
  run jsonb,                              -- commit: the proposed run document
  checkpoint_type docket.checkpoint_type, -- commit: its checkpoint type
  schedule text,                          -- commit: immediate | at | external | terminal
  wake_at timestamptz,                    -- commit with schedule 'at'
  value jsonb);                           -- returned to the caller as-is
COMMENT ON TYPE docket.mutation_decision IS
  'what a mutate_run mutation function decides: commit a new run version, change nothing, or report an error';

-------------------------------------------------------------------------------
-- The clock
-------------------------------------------------------------------------------

CREATE FUNCTION docket.now() RETURNS timestamptz
  LANGUAGE c VOLATILE PARALLEL SAFE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_now';
COMMENT ON FUNCTION docket.now() IS
  'The store''s clock: clock_timestamp(), or the timestamp in setting docket.fake_now when it is set (tests travel in time with SET docket.fake_now = ''...'').';

-------------------------------------------------------------------------------
-- Tables
-------------------------------------------------------------------------------

CREATE TABLE docket.graphs (
  graph_id    text NOT NULL CHECK (graph_id <> ''),
  graph_hash  text NOT NULL CHECK (graph_hash <> ''),
  definition  jsonb NOT NULL,
  saved_at    timestamptz NOT NULL,
  PRIMARY KEY (graph_id, graph_hash)
);
COMMENT ON TABLE docket.graphs IS 'published graph versions; a run references one by (graph_id, graph_hash)';

-- The columns a run never changes (run_id, tenant_id, queue, graph_id,
-- graph_hash, started_at) are checked on docket.run_heads, which insert_run
-- writes from the same parameters in the same statement: a CHECK here would run
-- again, re-read from the catalog, on every claim and every commit.
CREATE TABLE docket.runs (
  run_id          text NOT NULL PRIMARY KEY,
  tenant_id       text,  -- NULL: tenantless
  queue           text NOT NULL,
  graph_id        text NOT NULL,
  graph_hash      text NOT NULL,
  status          text NOT NULL
                  CHECK (status IN ('running', 'waiting', 'completed', 'failed', 'cancelled')),
  checkpoint_seq  bigint NOT NULL CHECK (checkpoint_seq >= 0),
  checkpoint_type docket.checkpoint_type NOT NULL,
  started_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  document        jsonb NOT NULL,
  wake_at         timestamptz,
  claim_token     uuid,
  claimed_at      timestamptz,
  claim_attempts  integer NOT NULL DEFAULT 0 CHECK (claim_attempts >= 0),
  claim_abandons  integer NOT NULL DEFAULT 0 CHECK (claim_abandons >= 0),
  poisoned_at     timestamptz,
  poison_reason   text,
  CONSTRAINT runs_claim_pair CHECK ((claim_token IS NULL) = (claimed_at IS NULL)),
  CONSTRAINT runs_poison_pair CHECK ((poisoned_at IS NULL) = (poison_reason IS NULL))
);
COMMENT ON TABLE docket.runs IS
  'one row per durable run: the committed document, its schedule (wake_at), claim, counters and poison facts';

-- Every index of docket.runs costs every claim and every commit one insertion:
-- both change indexed columns (claim_token, claimed_at, wake_at, status), so
-- neither update can be HOT. Only the claim path's indexes live here; what
-- never changes (the list keys) lives in docket.run_heads.
--
-- Claims: the ready class (unclaimed, due), with and without a queue, and the
-- expired class (claim older than the TTL). Partial, so a row sits in at most
-- one class and terminal runs cost nothing. The expired class has one index
-- for both statements: its range (claimed_at < cutoff) holds only expired
-- claims, so a queue is checked inside that range rather than given an index
-- that every claim would pay for.
CREATE INDEX runs_ready ON docket.runs (wake_at, run_id COLLATE "C")
  WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL;
CREATE INDEX runs_ready_queue ON docket.runs (queue, wake_at, run_id COLLATE "C")
  WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL;
CREATE INDEX runs_claimed ON docket.runs (claimed_at, run_id COLLATE "C", queue)
  WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;

-- Operators look for poisoned runs.
CREATE INDEX runs_poisoned ON docket.runs (poisoned_at) WHERE poisoned_at IS NOT NULL;

-- What a run is, fixed at insert: written once by insert_run in the statement
-- that inserts the run, never updated, deleted with the run; its checks are
-- those of these columns of docket.runs too. list_runs walks these indexes
-- (newest first by (started_at, run_id), for the system scope, one tenant
-- (tenant_id IS NULL is an index condition too) and one graph) and joins
-- docket.runs by primary key for the mutable summary columns. Every index
-- carries every scope and filter column, so whichever one the planner picks,
-- scope and filters are index conditions.
CREATE TABLE docket.run_heads (
  run_id      text NOT NULL PRIMARY KEY CHECK (run_id <> '')
              REFERENCES docket.runs (run_id) ON DELETE CASCADE,
  tenant_id   text CHECK (tenant_id <> ''),  -- NULL: tenantless
  queue       text NOT NULL CHECK (queue <> '' AND octet_length(queue) <= 128),
  graph_id    text NOT NULL,
  graph_hash  text NOT NULL,
  started_at  timestamptz NOT NULL,
  -- Here rather than on docket.runs: PostgreSQL re-checks a row's foreign keys
  -- when it updates a row version its own transaction wrote (a claim and a
  -- commit in one transaction), which would lock the graph row, shared by every
  -- run of the graph, in each such transaction.
  CONSTRAINT run_heads_graph_fk FOREIGN KEY (graph_id, graph_hash) REFERENCES docket.graphs
);
COMMENT ON TABLE docket.run_heads IS
  'the immutable identity of each run (tenant, queue, graph version, start), written once at insert; list_runs reads it';
CREATE INDEX run_heads_list
  ON docket.run_heads (started_at DESC, run_id DESC, tenant_id, graph_id, graph_hash);
CREATE INDEX run_heads_tenant
  ON docket.run_heads (tenant_id, started_at DESC, run_id DESC, graph_id, graph_hash);
CREATE INDEX run_heads_graph
  ON docket.run_heads (graph_id, started_at DESC, run_id DESC, graph_hash, tenant_id);

CREATE TABLE docket.run_events (
  run_id      text NOT NULL REFERENCES docket.runs (run_id) ON DELETE CASCADE,
  seq         bigint NOT NULL CHECK (seq >= 1),
  type        text NOT NULL CHECK (type <> ''),
  payload     jsonb,
  recorded_at timestamptz NOT NULL,
  PRIMARY KEY (run_id, seq)
);
COMMENT ON TABLE docket.run_events IS 'the per-run event log: seqs 1, 2, 3 ... with no gaps';

REVOKE ALL ON ALL TABLES IN SCHEMA docket FROM PUBLIC;

-------------------------------------------------------------------------------
-- Run store functions (C++)
-------------------------------------------------------------------------------

CREATE FUNCTION docket.save_graph(graph_id text, graph_hash text, definition jsonb)
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_save_graph';
COMMENT ON FUNCTION docket.save_graph(text, text, jsonb) IS
  'Publishes a graph version. Idempotent for the same definition; the same (graph_id, graph_hash) with another definition raises graph_conflict (DK006).';

CREATE FUNCTION docket.insert_run(owner_scope docket.scope, run jsonb,
                                  checkpoint_type docket.checkpoint_type, wake_at timestamptz,
                                  queue text DEFAULT 'default')
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_insert_run';
COMMENT ON FUNCTION docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text) IS
  'Inserts an initialized run (checkpoint_type run_initialized) owned by a tenantless or tenant:<id> scope, due at wake_at, in a queue. Returns the stored document. invalid_run (DK007) for a malformed document or an unsaved graph, duplicate_run (23505) for a taken id.';

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

CREATE FUNCTION docket.claim_due(now timestamptz DEFAULT docket.now(), claim_limit int DEFAULT 1,
                                 orphan_ttl_ms bigint DEFAULT 30000,
                                 max_claim_attempts int DEFAULT 3,
                                 preference text DEFAULT NULL, queue text DEFAULT NULL)
  RETURNS TABLE (outcome text, run_id text, tenant_id text, graph_id text, graph_hash text,
                 checkpoint_seq bigint, claim_token uuid, claimed_at timestamptz,
                 claim_attempt int, orphan_ttl_ms bigint, poisoned_at timestamptz,
                 poison_reason text, queue text)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_claim_due';
COMMENT ON FUNCTION docket.claim_due(timestamptz, int, bigint, int, text, text) IS
  'Atomically claims up to claim_limit ready (due, unclaimed) and expired (claim older than orphan_ttl_ms) runs, skipping locked rows. Each is leased (fresh token) or, once it has used max_claim_attempts, poisoned (outcome poisoned, no token). With claim_limit >= 2 each non-empty class gets at least one outcome; with 1, preference (ready|expired) is served first.';

CREATE FUNCTION docket.refresh_claim(run_id text, claim_token uuid,
                                     now timestamptz DEFAULT docket.now())
  RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_refresh_claim';
COMMENT ON FUNCTION docket.refresh_claim(text, uuid, timestamptz) IS
  'Moves claimed_at forward to now (never backward) under the exact current token. false means the claim is lost (stale token, unknown run) and nothing changed.';

CREATE FUNCTION docket.release_claim(run_id text, claim_token uuid,
                                     now timestamptz DEFAULT docket.now())
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_release_claim';
COMMENT ON FUNCTION docket.release_claim(text, uuid, timestamptz) IS
  'Clears the claim under the exact current token and makes the run due at now. Idempotent: a stale token or unknown run changes nothing.';

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
  'Hands back a claim before its first commit (token and sequence fenced) without using an attempt: rescheduled at retry_at (or now + min(base * 2^abandons, cap)), poisoned once max_claim_abandons is reached (unless non_poisoning), or stale.';

CREATE FUNCTION docket.commit(scope docket.scope, run jsonb, expected_checkpoint_seq bigint,
                              claim_token uuid, checkpoint_type docket.checkpoint_type,
                              schedule text, wake_at timestamptz DEFAULT NULL)
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_commit';
COMMENT ON FUNCTION docket.commit(docket.scope, jsonb, bigint, uuid, docket.checkpoint_type, text, timestamptz) IS
  'Commits the next run version under the token-and-sequence fence and applies the schedule (retain_claim, immediate, at, external, terminal). invalid_commit (DK002) before lookup, not_found (DK003), stale_fence (DK001), then identity (DK002).';

CREATE FUNCTION docket.mutate_run(scope docket.scope, run_id text, mutation regprocedure,
                                  arg jsonb DEFAULT NULL)
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_mutate_run';
COMMENT ON FUNCTION docket.mutate_run(docket.scope, text, regprocedure, jsonb) IS
  'Locks the run, calls mutation(run, arg) (an IMMUTABLE or STABLE (jsonb, jsonb) -> docket.mutation_decision function) and applies its decision: commit (revokes any claim, release schedule), no_change or error. Returns {outcome, value}.';

CREATE FUNCTION docket.retry_poisoned_run(scope docket.scope, run_id text,
                                          now timestamptz DEFAULT docket.now())
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_retry_poisoned_run';
COMMENT ON FUNCTION docket.retry_poisoned_run(docket.scope, text, timestamptz) IS
  'Clears poison facts, claim and counters of a non-terminal poisoned run and makes it due at now. Idempotent for an unpoisoned run; inactive_run (DK004) for a terminal one.';

CREATE FUNCTION docket.append_events(scope docket.scope, run_id text, events jsonb)
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_append_events';
COMMENT ON FUNCTION docket.append_events(docket.scope, text, jsonb) IS
  'Appends [{seq, type, payload}, ...] to the run''s event log; seqs must continue the last one by +1 each.';

CREATE FUNCTION docket.list_events(scope docket.scope, run_id text, after_seq bigint DEFAULT 0,
                                   page_limit int DEFAULT 100)
  RETURNS TABLE (seq bigint, type text, payload jsonb, recorded_at timestamptz)
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_list_events';
COMMENT ON FUNCTION docket.list_events(docket.scope, text, bigint, int) IS
  'Events of a run with seq > after_seq, in seq order, at most page_limit. No rows when the run is not visible.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA docket FROM PUBLIC;
