
-------------------------------------------------------------------------------
-- Hostile input: clock skew and size caps (issue 8 item 3; docs/run-store.md
-- "Limits")
-------------------------------------------------------------------------------
-- The bounds are settings (superuser only) defined by the library:
--   docket.max_clock_skew      5min   a caller's `now` argument, either direction (22023)
--   docket.max_document_bytes  1MB    insert_run / commit / mutation run documents,
--                                     save_graph definitions
--   docket.max_params_bytes    1MB    spawn_task(s) / schedule_task params
--   docket.max_result_bytes    1MB    complete_task(s) results, complete_step(s) values
--   docket.max_payload_bytes   1MB    emit_event payloads, append_events' events array
--   docket.max_error_bytes     64kB   fail_task errors
--   docket.max_headers_bytes   64kB   the spawn option headers
-- A value over its cap raises SQLSTATE 54000 (program_limit_exceeded, message
-- "limit_exceeded: ...") before anything changes. The C functions check their
-- arguments themselves; emit_event's payload is checked by the trigger below,
-- before the event row is written.

CREATE FUNCTION docket._limit_event_payload() RETURNS trigger
  LANGUAGE c
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_limit_event_payload';
COMMENT ON FUNCTION docket._limit_event_payload() IS
  'Trigger: refuses (54000) an event payload over docket.max_payload_bytes before docket.task_events is written (emit_event).';
REVOKE ALL ON FUNCTION docket._limit_event_payload() FROM PUBLIC;

CREATE TRIGGER task_events_payload_cap
  BEFORE INSERT OR UPDATE OF payload ON docket.task_events
  FOR EACH ROW WHEN (NEW.payload IS NOT NULL)
  EXECUTE FUNCTION docket._limit_event_payload();

-- The contract of each function names the bound it is held to.
DO $$
DECLARE
  f record;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure AS fn, obj_description(p.oid, 'pg_proc') AS comment, b.note
      FROM (VALUES
        ('docket.claim_due(timestamptz, int, bigint, int, text, text)', 'now'),
        ('docket.claim_tasks(text, int, bigint, int, timestamptz)', 'now'),
        ('docket.refresh_claim(text, uuid, timestamptz)', 'now'),
        ('docket.release_claim(text, uuid, timestamptz)', 'now'),
        ('docket.abandon_claim(text, uuid, bigint, timestamptz, timestamptz, int, boolean, int, int)', 'now'),
        ('docket.retry_poisoned_run(docket.scope, text, timestamptz)', 'now'),
        ('docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text)', 'document'),
        ('docket.commit(docket.scope, jsonb, bigint, uuid, docket.checkpoint_type, text, timestamptz)', 'document'),
        ('docket.mutate_run(docket.scope, text, regprocedure, jsonb)', 'document'),
        ('docket.save_graph(text, text, jsonb)', 'document'),
        ('docket.spawn_task(text, jsonb, text, docket.scope, jsonb)', 'params'),
        ('docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb)', 'params'),
        ('docket.schedule_task(text, text, text, jsonb, text, docket.scope, jsonb)', 'params'),
        ('docket.complete_task(text, uuid, jsonb)', 'result'),
        ('docket.complete_tasks(text[], uuid[], jsonb[])', 'result'),
        ('docket.complete_step(text, uuid, text, jsonb)', 'result'),
        ('docket.complete_steps(text[], uuid[], text[], jsonb[])', 'result'),
        ('docket.emit_event(text, jsonb, docket.scope)', 'payload'),
        ('docket.append_events(docket.scope, text, jsonb)', 'payload'),
        ('docket.fail_task(text, uuid, jsonb, boolean)', 'error')) AS b(signature, note)
      JOIN pg_proc p ON p.oid = b.signature::regprocedure
  LOOP
    EXECUTE format('COMMENT ON FUNCTION %s IS %L', f.fn, f.comment || ' ' || CASE f.note
      WHEN 'now' THEN 'A now further than docket.max_clock_skew (default 5min) from docket.now() raises 22023.'
      WHEN 'document' THEN 'A run document or definition over docket.max_document_bytes (default 1MB) raises 54000.'
      WHEN 'params' THEN 'Params over docket.max_params_bytes (default 1MB) or headers over docket.max_headers_bytes (default 64kB) raise 54000.'
      WHEN 'result' THEN 'A result or step value over docket.max_result_bytes (default 1MB) raises 54000.'
      WHEN 'payload' THEN 'A payload (append_events: the events array) over docket.max_payload_bytes (default 1MB) raises 54000.'
      WHEN 'error' THEN 'An error over docket.max_error_bytes (default 64kB) raises 54000.'
    END);
  END LOOP;
END
$$;
