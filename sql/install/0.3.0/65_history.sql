
-------------------------------------------------------------------------------
-- Task history (DESIGN.md "History, stats, schedules")
-------------------------------------------------------------------------------
-- Every task transition appends its events to the run's event log in the
-- same transaction (src/pg/history.hpp): spawned, claimed, woke,
-- step_completed, sleeping, waiting, attempt_failed, retry_scheduled,
-- deferred, completed, failed, cancelled, poisoned, numbered by the run's
-- event_seq; the spawned and completed events and the stored steps' events
-- are stated by the rows themselves (docket.runs.completed_seq,
-- docket.task_steps.seq), merged into the pages by number. The history of a
-- task is its run's event log; task_history pages it with list_events' own
-- code (the same visibility rule: no rows outside the scope).
CREATE FUNCTION docket.task_history(scope docket.scope, run_id text, after_seq bigint DEFAULT 0,
                                    page_limit int DEFAULT 100)
  RETURNS TABLE (seq bigint, type text, payload jsonb, recorded_at timestamptz)
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_list_events';
COMMENT ON FUNCTION docket.task_history(docket.scope, text, bigint, int) IS
  'A task''s history, oldest first: events with seq > after_seq, at most page_limit (1..10000). Types: spawned, claimed {attempt}, woke {reason}, step_completed {step_name}, sleeping {until}, waiting {event, timeout_at} or {child}, attempt_failed {attempt, error}, retry_scheduled {attempt, retry_at}, deferred {retry_at, defers}, completed, failed {error}, cancelled {reason}, poisoned {reason}. Errors longer than 8192 bytes of JSON are kept as {truncated, bytes, prefix}. No rows when the run is not visible in the scope.';
