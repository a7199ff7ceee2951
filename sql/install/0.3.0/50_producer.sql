
-------------------------------------------------------------------------------
-- The task layer: producer side (spawning in C++, src/core/spawn.*,
-- src/pg/task_spawn.cpp, set-based), events, cancellation, results
-------------------------------------------------------------------------------

-- The public functions written in plpgsql have a guarded face: docket.<name>
-- is the C wrapper docket_guarded (SECURITY DEFINER, given by the roles
-- piece; it checks the caller and counts as docket's own code,
-- src/pg/guarded.cpp), and the plpgsql body is the internal
-- docket._<name>_impl, same arguments, which nobody but docket's owner may
-- call. The same holds in the schedules, operator reads, retention and tenant
-- binding pieces.

CREATE FUNCTION docket.spawn_task(task_name text, params jsonb DEFAULT '{}',
                                  queue text DEFAULT 'default',
                                  owner_scope docket.scope DEFAULT 'tenantless',
                                  options jsonb DEFAULT '{}')
  RETURNS TABLE (run_id text, attempt int, created boolean)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_spawn_task';
COMMENT ON FUNCTION docket.spawn_task(text, jsonb, text, docket.scope, jsonb) IS
  'Spawns a durable task (a run whose graph_id is the task name) in the caller''s transaction; its run id is time-ordered (UUIDv7). options: max_attempts (5), retry {kind none|fixed|exponential, base_ms, factor, max_ms, jitter}, idempotency_key (a duplicate in the same scope and queue returns the existing task with created = false), run_at or delay_ms, headers, cancel_after_ms (not started within), max_duration_ms (since first start). Unknown keys and wrong types raise 22023. Params over docket.max_params_bytes (default 1MB) or headers over docket.max_headers_bytes (default 64kB) raise 54000.';

CREATE FUNCTION docket.spawn_tasks(task_name text, params jsonb[],
                                   queue text DEFAULT 'default',
                                   owner_scope docket.scope DEFAULT 'tenantless',
                                   options jsonb DEFAULT '{}')
  RETURNS TABLE (run_id text, attempt int, created boolean)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_spawn_tasks';
COMMENT ON FUNCTION docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb) IS
  'Spawns one task per element of params in the caller''s transaction, set-based: one row per element, in input order, as spawn_task returns it. options is one object for every element, or an array of one object per element; each element keeps spawn_task''s semantics (a repeated idempotency key returns the first task with created = false). Any bad element raises 22023 and spawns nothing. Params over docket.max_params_bytes (default 1MB) or headers over docket.max_headers_bytes (default 64kB) raise 54000.';

CREATE FUNCTION docket.emit_event(event_name text, payload jsonb DEFAULT NULL,
                                  owner_scope docket.scope DEFAULT 'tenantless')
  RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.emit_event(text, jsonb, docket.scope) IS
  'Emits an event in an owner scope and wakes every task awaiting it, in one transaction. The first emit wins: returns true, later emits of the same name change nothing and return false. A payload (append_events: the events array) over docket.max_payload_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket._emit_event_impl(event_name text, payload jsonb DEFAULT NULL,
                                        owner_scope docket.scope DEFAULT 'tenantless')
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  tenant text;
  first boolean;
  w record;
  t_now timestamptz := docket.now();
BEGIN
  PERFORM docket._check_name('event_name', event_name);
  tenant := docket._tenant_key(owner_scope);
  -- Locks the slot whether or not this emit is the first (ON CONFLICT DO UPDATE
  -- locks the conflicting row even when its WHERE is false).
  INSERT INTO docket.task_events AS e (tenant_key, event_name, payload, emitted_at, created_at)
  VALUES (tenant, _emit_event_impl.event_name, payload, t_now, t_now)
  ON CONFLICT ON CONSTRAINT task_events_pkey DO UPDATE
    SET payload = EXCLUDED.payload, emitted_at = EXCLUDED.emitted_at
    WHERE e.emitted_at IS NULL
  RETURNING true INTO first;
  IF first IS NULL THEN
    RETURN false;
  END IF;
  FOR w IN
    SELECT tw.run_id, tw.step_name, tw.timeout_at FROM docket.task_waits tw
     WHERE tw.kind = 'event' AND tw.tenant_key = tenant AND tw.target = _emit_event_impl.event_name
     ORDER BY tw.run_id
  LOOP
    -- The timeout came first: the timer wakes that task and its await sees a timeout.
    CONTINUE WHEN w.timeout_at IS NOT NULL AND w.timeout_at < t_now;
    -- Re-checked under the run's lock (slot before run: the documented order). A
    -- claimed task finds the event itself when it replays its await.
    PERFORM 1 FROM docket.runs x WHERE x.run_id = w.run_id AND x.claim_token IS NULL FOR UPDATE;
    CONTINUE WHEN NOT FOUND;
    DELETE FROM docket.task_waits tw WHERE tw.run_id = w.run_id AND tw.step_name = w.step_name;
    PERFORM docket.mutate_run('system', w.run_id, 'docket.task_resume(jsonb,jsonb)',
                              jsonb_build_object('kind', 'event', 'step', w.step_name,
                                                 'reason', 'event'));
  END LOOP;
  RETURN true;
END $$;
COMMENT ON FUNCTION docket._emit_event_impl(text, jsonb, docket.scope) IS
  'Internal: the body of docket.emit_event, called only by its guarded wrapper (see docs/security.md).';

-- cancel_task records the cancellation in the history (mutate_run holds the
-- run's lock: the counter and the event are written under it).
CREATE FUNCTION docket.cancel_task(scope docket.scope, run_id text, reason text DEFAULT NULL)
  RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.cancel_task(docket.scope, text, text) IS
  'Cancels a task durably: true when this call cancelled it, false when it had already finished (idempotent). A worker still running it gets DK010 on its next fenced call.';

CREATE FUNCTION docket._cancel_task_impl(scope docket.scope, run_id text, reason text DEFAULT NULL)
  RETURNS boolean
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  outcome jsonb;
BEGIN
  IF scope IS NULL OR run_id IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope and run_id must not be NULL' USING ERRCODE = '22023';
  END IF;
  -- Same message as the run store's, so a tenant cannot tell another tenant's ids apart.
  IF NOT EXISTS (SELECT 1 FROM docket.tasks t WHERE t.run_id = _cancel_task_impl.run_id) THEN
    RAISE EXCEPTION 'not_found: run % does not exist or is not visible in this scope', run_id
      USING ERRCODE = 'DK003';
  END IF;
  outcome := docket.mutate_run(scope, run_id, 'docket.task_cancel(jsonb,jsonb)',
                               jsonb_build_object('reason', reason));
  IF outcome ->> 'outcome' <> 'committed' THEN
    RETURN false;
  END IF;
  WITH advanced AS (
    UPDATE docket.runs x SET event_seq = x.event_seq + 1
     WHERE x.run_id = _cancel_task_impl.run_id RETURNING x.run_id, x.event_seq)
  INSERT INTO docket.run_events (run_id, seq, type, payload, recorded_at)
  SELECT a.run_id, a.event_seq, 'cancelled', jsonb_build_object('reason', reason), docket.now()
    FROM advanced a;
  DELETE FROM docket.task_waits tw WHERE tw.run_id = _cancel_task_impl.run_id;
  PERFORM docket._task_wake_parents(run_id);
  RETURN true;
END $$;
COMMENT ON FUNCTION docket._cancel_task_impl(docket.scope, text, text) IS
  'Internal: the body of docket.cancel_task, called only by its guarded wrapper (see docs/security.md).';

CREATE FUNCTION docket.task_result(scope docket.scope, run_id text) RETURNS jsonb
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.task_result(docket.scope, text) IS
  'A task''s outcome: {state (pending|running|sleeping|waiting|poisoned|completed|failed|cancelled), result, error, attempts, task_name, queue}, or NULL when not visible.';

CREATE FUNCTION docket._task_result_impl(scope docket.scope, run_id text) RETURNS jsonb
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  info jsonb;
  t docket.tasks;
  state text;
BEGIN
  info := docket.inspect_run(scope, run_id);
  IF info IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT * INTO t FROM docket.tasks tk WHERE tk.run_id = _task_result_impl.run_id;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  state := CASE
    WHEN info -> 'run' ->> 'status' IN ('completed', 'failed', 'cancelled', 'waiting')
      THEN info -> 'run' ->> 'status'
    WHEN info ->> 'poisoned_at' IS NOT NULL THEN 'poisoned'
    WHEN info ->> 'claimed_at' IS NOT NULL THEN 'running'
    -- an event wait with a timeout is a wait: the timeout only bounds it
    WHEN info -> 'run' -> 'waiting' ->> 'kind' IN ('event', 'child') THEN 'waiting'
    WHEN (info ->> 'wake_at')::timestamptz > docket.now() THEN 'sleeping'
    ELSE 'pending' END;
  RETURN jsonb_build_object(
    'state', state,
    'result', info -> 'run' -> 'result',
    'error', coalesce(info -> 'run' -> 'error', info -> 'run' -> 'last_error'),
    'attempts', (info -> 'run' ->> 'attempt')::int,
    'task_name', t.task_name,
    'queue', t.queue);
END $$;
COMMENT ON FUNCTION docket._task_result_impl(docket.scope, text) IS
  'Internal: the body of docket.task_result, called only by its guarded wrapper (see docs/security.md).';
