
-------------------------------------------------------------------------------
-- Roles and privileges (issue 8; docs/security.md). This piece comes last:
-- whatever the pieces before it created gets its grant decision here.
-- The install script (sql/docket--0.3.0.sql) ends with this piece too, so the
-- roles, the grants and SECURITY DEFINER are decided here for both; there the
-- public plpgsql functions are already guarded (sql/install/0.3.0/), and the
-- guard loop below finds none left to convert.
-------------------------------------------------------------------------------

-- The four NOLOGIN roles, created when absent. Roles are cluster-wide, not
-- members of the extension: DROP EXTENSION leaves them.
DO $roles$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['docket_producer', 'docket_worker', 'docket_operator', 'docket_reader']
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    END IF;
  END LOOP;
END
$roles$;

-- The public functions written in plpgsql get a guarded face: docket.<name>
-- becomes the C wrapper (SECURITY DEFINER; it checks the caller and counts as
-- docket's own code, src/pg/guarded.cpp), and the plpgsql body moves to the
-- internal docket._<name>_impl, same arguments. Its references qualified by
-- the function's name (emit_event.event_name) are qualified by the new name.
DO $guard$
DECLARE
  f record;
  settings text;
BEGIN
  FOR f IN
    SELECT p.oid, p.proname, pg_catalog.pg_get_function_arguments(p.oid) AS args,
           pg_catalog.pg_get_function_identity_arguments(p.oid) AS identity,
           pg_catalog.pg_get_function_result(p.oid) AS result,
           CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END
             AS volatility,
           p.prorows, p.proretset, p.proconfig, p.prosrc
      FROM pg_catalog.pg_proc p
     WHERE p.pronamespace = 'docket'::regnamespace
       AND p.proname IN ('emit_event', 'cancel_task', 'task_result', 'schedule_task',
                         'unschedule_task', 'list_schedules', 'fire_schedules', 'queue_stats',
                         'cleanup', 'list_tasks', 'bind_tenant', 'unbind_tenant',
                         'inspect_task', 'list_poisoned')
       AND p.prolang = (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'plpgsql')
     ORDER BY p.proname
  LOOP
    -- Both keep the function's settings (search_path first, jit = off ...).
    IF f.proconfig[1] IS DISTINCT FROM 'search_path=pg_catalog, pg_temp' THEN
      RAISE EXCEPTION 'docket.% does not pin its search_path first: %', f.proname, f.proconfig;
    END IF;
    SELECT string_agg(CASE WHEN c.ord = 1 THEN ' SET search_path = pg_catalog, pg_temp'
                           ELSE format(' SET %I = %L', split_part(c.setting, '=', 1),
                                       substr(c.setting, strpos(c.setting, '=') + 1)) END,
                      '' ORDER BY c.ord)
      INTO settings
      FROM unnest(f.proconfig) WITH ORDINALITY AS c(setting, ord);
    EXECUTE format('CREATE FUNCTION docket.%I(%s) RETURNS %s LANGUAGE plpgsql %s %s%s AS %L',
                   '_' || f.proname || '_impl', f.args, f.result, f.volatility,
                   CASE WHEN f.proretset THEN 'ROWS ' || f.prorows ELSE '' END, settings,
                   regexp_replace(f.prosrc, '(^|[^.\w])' || f.proname || '\.',
                                  '\1_' || f.proname || '_impl.', 'g'));
    EXECUTE format('COMMENT ON FUNCTION docket.%I(%s) IS %L', '_' || f.proname || '_impl',
                   f.identity,
                   'Internal: the body of docket.' || f.proname
                   || ', called only by its guarded wrapper (see docs/security.md).');
    EXECUTE format('CREATE OR REPLACE FUNCTION docket.%I(%s) RETURNS %s LANGUAGE c %s %s%s AS %L, %L',
                   f.proname, f.args, f.result, f.volatility,
                   CASE WHEN f.proretset THEN 'ROWS ' || f.prorows ELSE '' END, settings,
                   'MODULE_PATHNAME', 'docket_guarded');
  END LOOP;
END
$guard$;

-- Grants. Nothing is granted to PUBLIC or to any role but these four, on the
-- schema or any function, table or sequence of docket: every grant another
-- script, an old grant recipe (USAGE on the schema included) or a default
-- privilege gave is revoked first. The application roles are granted the
-- docket roles (docs/security.md).
DO $grants$
DECLARE
  reader text[] := ARRAY[
    'docket.fetch_run(docket.scope, text)',
    'docket.inspect_run(docket.scope, text)',
    'docket.list_runs(docket.scope, int, timestamptz, text, text, text, text[])',
    'docket.list_events(docket.scope, text, bigint, int)',
    'docket.task_result(docket.scope, text)',
    'docket.task_history(docket.scope, text, bigint, int)',
    'docket.queue_stats(docket.scope)',
    'docket.list_schedules(docket.scope)',
    'docket.list_tasks(docket.scope, text, text, text, text, int)',
    'docket.inspect_task(docket.scope, text)',
    'docket.list_poisoned(docket.scope, int, timestamptz, text)'];
  producer text[] := reader || ARRAY[
    'docket.save_graph(text, text, jsonb)',
    'docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text)',
    'docket.spawn_task(text, jsonb, text, docket.scope, jsonb)',
    'docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb)',
    'docket.emit_event(text, jsonb, docket.scope)',
    'docket.cancel_task(docket.scope, text, text)',
    'docket.schedule_task(text, text, text, jsonb, text, docket.scope, jsonb)',
    'docket.unschedule_task(text)'];
  worker text[] := reader || ARRAY[
    'docket.claim_due(timestamptz, int, bigint, int, text, text)',
    'docket.refresh_claim(text, uuid, timestamptz)',
    'docket.release_claim(text, uuid, timestamptz)',
    'docket.abandon_claim(text, uuid, bigint, timestamptz, timestamptz, int, boolean, int, int)',
    'docket.commit(docket.scope, jsonb, bigint, uuid, docket.checkpoint_type, text, timestamptz)',
    'docket.append_events(docket.scope, text, jsonb)',
    'docket.claim_tasks(text, int, bigint, int, timestamptz)',
    'docket.await_due(text, int)',
    'docket.await_tasks(text, int, bigint, int, int)',
    'docket.complete_tasks(text[], uuid[], jsonb[])',
    'docket.complete_steps(text[], uuid[], text[], jsonb[])',
    'docket.step_states(text, uuid)',
    'docket.complete_step(text, uuid, text, jsonb)',
    'docket.complete_task(text, uuid, jsonb)',
    'docket.fail_task(text, uuid, jsonb, boolean)',
    'docket.heartbeat(text, uuid, bigint)',
    'docket.sleep_until(text, uuid, text, timestamptz)',
    'docket.await_event(text, uuid, text, text, bigint)',
    'docket.await_task(text, uuid, text, text)',
    'docket.defer_task(text, uuid, int, int, int)',
    'docket.emit_event(text, jsonb, docket.scope)',
    'docket.spawn_task(text, jsonb, text, docket.scope, jsonb)',
    'docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb)',
    'docket.fire_schedules(int)'];
  -- Pure functions that read no table: granted, but not SECURITY DEFINER.
  operator_pure text[] := ARRAY[
    'docket.cron_next(text, timestamptz)',
    'docket.task_resume(jsonb, jsonb)',
    'docket.task_cancel(jsonb, jsonb)'];
  operator text[] := producer || worker || ARRAY[
    'docket.mutate_run(docket.scope, text, regprocedure, jsonb)',
    'docket.retry_poisoned_run(docket.scope, text, timestamptz)',
    'docket.cleanup(interval, int)',
    'docket.bind_tenant(regrole, text)',
    'docket.unbind_tenant(regrole, text)'];
  o record;
  f text;
BEGIN
  -- The schema, every function, table and sequence keep only their owner's
  -- privileges.
  FOR o IN
    SELECT DISTINCT a.grantee
      FROM pg_catalog.pg_namespace n,
           pg_catalog.aclexplode(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a
     WHERE n.nspname = 'docket' AND a.grantee <> n.nspowner
  LOOP
    EXECUTE format('REVOKE ALL ON SCHEMA docket FROM %s',
                   CASE WHEN o.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(o.grantee::regrole::text) END);
  END LOOP;
  FOR o IN
    SELECT DISTINCT p.oid::regprocedure::text AS obj, a.grantee
      FROM pg_catalog.pg_proc p,
           pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
     WHERE p.pronamespace = 'docket'::regnamespace AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %s', o.obj,
                   CASE WHEN o.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(o.grantee::regrole::text) END);
  END LOOP;
  FOR o IN
    SELECT DISTINCT c.oid::regclass::text AS obj, c.relkind = 'S' AS is_sequence, a.grantee
      FROM pg_catalog.pg_class c,
           pg_catalog.aclexplode(coalesce(c.relacl, pg_catalog.acldefault(
             CASE WHEN c.relkind = 'S' THEN 's'::"char" ELSE 'r'::"char" END, c.relowner))) a
     WHERE c.relnamespace = 'docket'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
       AND a.grantee <> c.relowner
    UNION
    SELECT DISTINCT c.oid::regclass::text, false, a.grantee
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute t
        ON t.attrelid = c.oid AND t.attacl IS NOT NULL,
           pg_catalog.aclexplode(t.attacl) a
     WHERE c.relnamespace = 'docket'::regnamespace AND a.grantee <> c.relowner
  LOOP
    EXECUTE format('REVOKE ALL ON %s %s FROM %s',
                   CASE WHEN o.is_sequence THEN 'SEQUENCE' ELSE 'TABLE' END, o.obj,
                   CASE WHEN o.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(o.grantee::regrole::text) END);
  END LOOP;

  -- Public API functions run as docket's owner.
  FOREACH f IN ARRAY operator LOOP
    EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', f);
  END LOOP;

  EXECUTE 'GRANT USAGE ON SCHEMA docket TO docket_reader, docket_producer, docket_worker, docket_operator';
  EXECUTE 'GRANT EXECUTE ON FUNCTION docket.now() TO docket_reader, docket_producer, docket_worker, docket_operator';
  FOREACH f IN ARRAY reader LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO docket_reader', f);
  END LOOP;
  FOREACH f IN ARRAY producer LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO docket_producer', f);
  END LOOP;
  FOREACH f IN ARRAY worker LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO docket_worker', f);
  END LOOP;
  FOREACH f IN ARRAY operator || operator_pure LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO docket_operator', f);
  END LOOP;
END
$grants$;
