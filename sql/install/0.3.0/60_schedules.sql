
-------------------------------------------------------------------------------
-- Periodic tasks: schedules in five-field cron syntax (UTC), fired by the
-- worker pools' poll loops or by any scheduler calling docket.fire_schedules().
-- The cron parser is C++ (src/core/cron.*, src/pg/schedule.cpp).
-------------------------------------------------------------------------------
CREATE TABLE docket.schedules (
  schedule_name text PRIMARY KEY,
  cron text NOT NULL,
  task_name text NOT NULL,
  params jsonb NOT NULL,
  queue text NOT NULL,
  owner_scope docket.scope NOT NULL,
  tenant_key text NOT NULL,  -- '' for tenantless, as in docket.tasks
  options jsonb NOT NULL,
  next_run_at timestamptz NOT NULL,  -- the next tick not yet fired
  last_tick_at timestamptz,          -- the tick the last spawned task stands for
  last_run_id text COLLATE "C",
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
COMMENT ON TABLE docket.schedules IS
  'Periodic tasks (docket.schedule_task): each tick of cron spawns one task_name task; next_run_at is the next tick not yet fired.';
-- fire_schedules' due probe (called from every pool's poll loop): an empty range when nothing is due.
CREATE INDEX schedules_due ON docket.schedules (next_run_at);
-- list_schedules for one owner scope.
CREATE INDEX schedules_tenant ON docket.schedules (tenant_key, schedule_name);
REVOKE ALL ON docket.schedules FROM PUBLIC;

CREATE FUNCTION docket.cron_next(cron text, after timestamptz DEFAULT docket.now())
  RETURNS timestamptz
  LANGUAGE c IMMUTABLE PARALLEL SAFE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_cron_next';
COMMENT ON FUNCTION docket.cron_next(text, timestamptz) IS
  'The first minute strictly after `after` at which a five-field cron expression (minute hour day-of-month month day-of-week, UTC; ranges, steps, lists, month and weekday names, @hourly/@daily/@weekly/@monthly/@yearly) fires. A bad expression, or one that never fires (0 0 30 2 *), raises 22023.';

CREATE FUNCTION docket.schedule_task(schedule_name text, cron text, task_name text,
                                     params jsonb DEFAULT '{}',
                                     queue text DEFAULT 'default',
                                     owner_scope docket.scope DEFAULT 'tenantless',
                                     options jsonb DEFAULT '{}')
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.schedule_task(text, text, text, jsonb, text, docket.scope, jsonb) IS
  'Creates or replaces the periodic task schedule_name: at each tick of cron (five fields, UTC) one task_name task is spawned with params, queue, owner_scope and options (spawn_task''s, but idempotency_key and run_at, which each tick sets). Arguments spawn_task would refuse, and a bad cron expression, raise 22023. Replacing with the same cron keeps a due tick not yet fired. Params over docket.max_params_bytes (default 1MB) or headers over docket.max_headers_bytes (default 64kB) raise 54000.';

CREATE FUNCTION docket._schedule_task_impl(schedule_name text, cron text, task_name text,
                                           params jsonb DEFAULT '{}',
                                           queue text DEFAULT 'default',
                                           owner_scope docket.scope DEFAULT 'tenantless',
                                           options jsonb DEFAULT '{}')
  RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  t timestamptz := docket.now();
  first_tick timestamptz;
BEGIN
  -- Ticks become idempotency keys: 'schedule:<name>@<tick>' stays within 255 bytes.
  IF schedule_name IS NULL OR schedule_name = '' OR octet_length(schedule_name) > 200 THEN
    RAISE EXCEPTION 'bad_argument: schedule_name must be non-empty text of at most 200 bytes'
      USING ERRCODE = '22023';
  END IF;
  IF cron IS NULL THEN
    RAISE EXCEPTION 'bad_argument: cron must not be NULL' USING ERRCODE = '22023';
  END IF;
  first_tick := docket.cron_next(cron, t);
  -- Whatever spawn_task would refuse is refused now, not at every tick: a trial
  -- spawn in a subtransaction that is always rolled back (DKS00 is its own).
  BEGIN
    PERFORM set_config('docket.notify', 'off', true);
    PERFORM docket.spawn_task(task_name, params, queue, owner_scope, options);
    RAISE EXCEPTION 'trial spawn' USING ERRCODE = 'DKS00';
  EXCEPTION WHEN SQLSTATE 'DKS00' THEN
    NULL;
  END;
  IF options ? 'idempotency_key' OR options ? 'run_at' THEN
    RAISE EXCEPTION 'bad_argument: options of a schedule must not set idempotency_key or run_at (each tick sets them)'
      USING ERRCODE = '22023';
  END IF;
  INSERT INTO docket.schedules AS s
    (schedule_name, cron, task_name, params, queue, owner_scope, tenant_key, options,
     next_run_at, created_at, updated_at)
  VALUES (_schedule_task_impl.schedule_name, _schedule_task_impl.cron, _schedule_task_impl.task_name,
          _schedule_task_impl.params, _schedule_task_impl.queue, _schedule_task_impl.owner_scope,
          CASE WHEN _schedule_task_impl.owner_scope = 'tenantless' THEN ''
               ELSE substr(_schedule_task_impl.owner_scope, 8) END,
          _schedule_task_impl.options, first_tick, t, t)
  ON CONFLICT ON CONSTRAINT schedules_pkey DO UPDATE SET
    cron = EXCLUDED.cron, task_name = EXCLUDED.task_name, params = EXCLUDED.params,
    queue = EXCLUDED.queue, owner_scope = EXCLUDED.owner_scope,
    tenant_key = EXCLUDED.tenant_key, options = EXCLUDED.options,
    -- the same expression keeps a tick that is due but not yet fired
    next_run_at = CASE WHEN s.cron = EXCLUDED.cron THEN s.next_run_at ELSE EXCLUDED.next_run_at END,
    updated_at = EXCLUDED.updated_at;
END $$;
COMMENT ON FUNCTION docket._schedule_task_impl(text, text, text, jsonb, text, docket.scope, jsonb) IS
  'Internal: the body of docket.schedule_task, called only by its guarded wrapper (see docs/security.md).';

CREATE FUNCTION docket.unschedule_task(schedule_name text) RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.unschedule_task(text) IS
  'Deletes the schedule schedule_name: true when it existed. Tasks it already spawned are not touched.';

CREATE FUNCTION docket._unschedule_task_impl(schedule_name text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF schedule_name IS NULL THEN
    RAISE EXCEPTION 'bad_argument: schedule_name must not be NULL' USING ERRCODE = '22023';
  END IF;
  DELETE FROM docket.schedules s WHERE s.schedule_name = _unschedule_task_impl.schedule_name;
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION docket._unschedule_task_impl(text) IS
  'Internal: the body of docket.unschedule_task, called only by its guarded wrapper (see docs/security.md).';

CREATE FUNCTION docket.list_schedules(scope docket.scope DEFAULT 'system')
  RETURNS TABLE (schedule_name text, cron text, task_name text, queue text,
                 owner_scope docket.scope, next_run_at timestamptz)
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.list_schedules(docket.scope) IS
  'The schedules visible in scope (system: all; tenantless or tenant:<id>: those owned there), by name: (schedule_name, cron, task_name, queue, owner_scope, next_run_at).';

CREATE FUNCTION docket._list_schedules_impl(scope docket.scope DEFAULT 'system')
  RETURNS TABLE (schedule_name text, cron text, task_name text, queue text,
                 owner_scope docket.scope, next_run_at timestamptz)
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF scope IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF scope = 'system' THEN
    RETURN QUERY SELECT s.schedule_name, s.cron, s.task_name, s.queue, s.owner_scope, s.next_run_at
                   FROM docket.schedules s ORDER BY s.schedule_name;
  ELSE
    RETURN QUERY SELECT s.schedule_name, s.cron, s.task_name, s.queue, s.owner_scope, s.next_run_at
                   FROM docket.schedules s
                  WHERE s.tenant_key = CASE WHEN scope = 'tenantless' THEN '' ELSE substr(scope, 8) END
                  ORDER BY s.schedule_name;
  END IF;
END $$;
COMMENT ON FUNCTION docket._list_schedules_impl(docket.scope) IS
  'Internal: the body of docket.list_schedules, called only by its guarded wrapper (see docs/security.md).';

CREATE FUNCTION docket.fire_schedules(max_schedules int DEFAULT 1000) RETURNS int
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.fire_schedules(int) IS
  'Fires the due schedules (at most max_schedules, oldest tick first): one task per schedule for its oldest unfired tick (idempotency key schedule:<name>@<tick>, headers docket_schedule and docket_tick), however many callers run it at once (schedules another caller holds are skipped); ticks missed meanwhile are skipped, and next_run_at moves to the first tick after docket.now(). Returns the number of schedules fired. Called by the worker pools'' poll loops; pg_cron or any scheduler may call it too. Cheap when nothing is due.';

CREATE FUNCTION docket._fire_schedules_impl(max_schedules int DEFAULT 1000) RETURNS int
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  t timestamptz := docket.now();
  s record;
  tick text;
  spawned record;
  fired int := 0;
BEGIN
  IF max_schedules IS NULL OR max_schedules <= 0 THEN
    RAISE EXCEPTION 'bad_argument: max_schedules must be positive' USING ERRCODE = '22023';
  END IF;
  -- A schedule another caller is firing is locked: skip it (it fires once).
  -- One whose row was advanced since this snapshot is re-checked and dropped.
  FOR s IN SELECT d.schedule_name, d.cron, d.task_name, d.params, d.queue, d.owner_scope,
                  d.options, d.next_run_at
             FROM docket.schedules d
            WHERE d.next_run_at <= t
            ORDER BY d.next_run_at
            LIMIT max_schedules
              FOR UPDATE SKIP LOCKED
  LOOP
    -- One task for the oldest tick not fired; later missed ticks are skipped.
    tick := to_char(s.next_run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
    SELECT x.run_id INTO spawned
      FROM docket.spawn_task(s.task_name, s.params, s.queue, s.owner_scope,
             s.options || jsonb_build_object(
               'idempotency_key', 'schedule:' || s.schedule_name || '@' || tick,
               'headers', coalesce(s.options -> 'headers', '{}')
                          || jsonb_build_object('docket_schedule', s.schedule_name,
                                                'docket_tick', tick))) x;
    UPDATE docket.schedules d
       SET next_run_at = docket.cron_next(s.cron, t), last_tick_at = s.next_run_at,
           last_run_id = spawned.run_id, updated_at = t
     WHERE d.schedule_name = s.schedule_name;
    fired := fired + 1;
  END LOOP;
  RETURN fired;
END $$;
COMMENT ON FUNCTION docket._fire_schedules_impl(int) IS
  'Internal: the body of docket.fire_schedules, called only by its guarded wrapper (see docs/security.md).';
