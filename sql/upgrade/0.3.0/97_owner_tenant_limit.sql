
-------------------------------------------------------------------------------
-- The tenant of an owner scope is at most 1000 bytes (shared with the install
-- script)
-------------------------------------------------------------------------------
-- A run, task, event or schedule is created in an owner scope; its tenant id is
-- at most 1000 bytes, as a bound tenant is (bind_tenant), and a longer one is
-- refused with 22023 before anything is stored (src/core/limits.hpp
-- kMaxTenantBytes), by the core's parse_owner_scope for the C entry points and
-- for the plpgsql ones alike: docket._tenant_key, a plpgsql function before,
-- is now that C function's face.
-- Before 0.3.0 the tenant id was bounded only by PostgreSQL's index row size
-- (54000). A read scope is not capped: runs stored before may carry a longer
-- tenant id.
CREATE OR REPLACE FUNCTION docket._tenant_key(owner_scope docket.scope) RETURNS text
  LANGUAGE c IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_tenant_key';
COMMENT ON FUNCTION docket._tenant_key(docket.scope) IS
  'Internal: the task tables'' tenant key of an owner scope ('''' for tenantless); 22023 for NULL, system, or a tenant id over 1000 bytes.';
-- Each function that takes an owner scope says so, after its own comment.
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOREACH f IN ARRAY ARRAY[
    'docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text)',
    'docket.spawn_task(text, jsonb, text, docket.scope, jsonb)',
    'docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb)',
    'docket.emit_event(text, jsonb, docket.scope)',
    'docket.schedule_task(text, text, text, jsonb, text, docket.scope, jsonb)']::regprocedure[]
  LOOP
    EXECUTE format('COMMENT ON FUNCTION %s IS %L', f, obj_description(f, 'pg_proc')
                   || ' An owner_scope whose tenant id is over 1000 bytes raises 22023.');
  END LOOP;
END
$$;
