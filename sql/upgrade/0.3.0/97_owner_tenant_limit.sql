
-------------------------------------------------------------------------------
-- The tenant of an owner scope is at most 1000 bytes (shared with the install
-- script)
-------------------------------------------------------------------------------
-- A run, task, event or schedule is created in an owner scope; its tenant id is
-- at most 1000 bytes, as a bound tenant is (bind_tenant), and a longer one is
-- refused with 22023 before anything is stored (src/core/limits.hpp
-- kMaxTenantBytes; the C entry points check it in parse_owner_scope, the
-- plpgsql ones here). Before 0.3.0 it was bounded only by PostgreSQL's index
-- row size (54000). A read scope is not capped: runs stored before may carry a
-- longer tenant id.
CREATE OR REPLACE FUNCTION docket._tenant_key(owner_scope docket.scope) RETURNS text
  LANGUAGE plpgsql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF owner_scope IS NULL THEN
    RAISE EXCEPTION 'bad_argument: owner_scope must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF owner_scope = 'system' THEN
    RAISE EXCEPTION 'bad_argument: owner_scope must be ''tenantless'' or ''tenant:<id>'', not ''system'''
      USING ERRCODE = '22023';
  END IF;
  IF octet_length(owner_scope) > 1007 THEN
    RAISE EXCEPTION 'bad_argument: owner_scope''s tenant id is % bytes, over 1000',
      octet_length(owner_scope) - 7 USING ERRCODE = '22023';
  END IF;
  RETURN CASE WHEN owner_scope = 'tenantless' THEN '' ELSE substr(owner_scope, 8) END;
END $$;
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
