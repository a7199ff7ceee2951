
-------------------------------------------------------------------------------
-- Types, settings and the clock
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

-- The settings are defined by the library when it loads (src/pg/settings.cpp),
-- not by this script; the bounds on hostile input are superuser only (see
-- docs/run-store.md, "Limits"):
--   docket.fake_now            ''     the store's clock in tests (superuser, finite only)
--   docket.notify              on     NOTIFY docket_due when a run becomes due now
--   docket.notify_interval_ms  100    at most one notification per queue and interval
--   docket.max_clock_skew      5min   a caller's `now` argument, either direction (22023)
--   docket.max_document_bytes  1MB    insert_run / commit / mutation run documents,
--                                     save_graph definitions
--   docket.max_params_bytes    1MB    spawn_task(s) / schedule_task params
--   docket.max_result_bytes    1MB    complete_task(s) results, complete_step(s) values
--   docket.max_payload_bytes   1MB    emit_event payloads, append_events' events array
--   docket.max_error_bytes     64kB   fail_task errors
--   docket.max_headers_bytes   64kB   the spawn option headers
-- A value over its cap raises SQLSTATE 54000 (program_limit_exceeded, message
-- "limit_exceeded: ...") before anything changes. The contract of each
-- public function held to a bound names it: its comment ends with the setting
-- and the SQLSTATE.

-- docket.now() names no object, so it needs no pinned search_path: switching
-- it costs each call (argument defaults call it on every claim and refresh).
CREATE FUNCTION docket.now() RETURNS timestamptz
  LANGUAGE c VOLATILE PARALLEL SAFE
  AS 'MODULE_PATHNAME', 'docket_now';
COMMENT ON FUNCTION docket.now() IS
  'The store''s clock: clock_timestamp(), or the timestamp in setting docket.fake_now when it is set (tests travel in time with SET docket.fake_now = ''...'').';
