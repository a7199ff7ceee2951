
-------------------------------------------------------------------------------
-- Hostile input: size caps (issue 8 item 3; docs/run-store.md "Limits")
-------------------------------------------------------------------------------
-- The C functions check their arguments against the settings themselves (see
-- 10_types_settings.sql); emit_event's payload is checked by this trigger,
-- before the event row is written.
CREATE FUNCTION docket._limit_event_payload() RETURNS trigger
  LANGUAGE c
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_limit_event_payload';
COMMENT ON FUNCTION docket._limit_event_payload() IS
  'Trigger: refuses (54000) an event payload over docket.max_payload_bytes before docket.task_events is written (emit_event).';

CREATE TRIGGER task_events_payload_cap
  BEFORE INSERT OR UPDATE OF payload ON docket.task_events
  FOR EACH ROW WHEN (NEW.payload IS NOT NULL)
  EXECUTE FUNCTION docket._limit_event_payload();
