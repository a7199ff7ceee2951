-------------------------------------------------------------------------------
-- Producer side
-------------------------------------------------------------------------------

CREATE FUNCTION docket.spawn_task(task_name text, params jsonb DEFAULT '{}',
                                  queue text DEFAULT 'default',
                                  owner_scope docket.scope DEFAULT 'tenantless',
                                  options jsonb DEFAULT '{}')
  RETURNS TABLE (run_id text, attempt int, created boolean)
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
#variable_conflict use_column
DECLARE
  k text;
  t_now timestamptz := docket.now();
  tenant text;
  new_id text := gen_random_uuid()::text;
  wake timestamptz;
  delay bigint;
  cancel_after bigint;
  max_attempts bigint;
  max_duration bigint;
  key text;
  existing text;
BEGIN
  PERFORM docket._check_name('task_name', task_name);
  IF params IS NULL THEN
    RAISE EXCEPTION 'bad_argument: params must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF queue IS NULL OR queue = '' OR octet_length(queue) > 128 THEN
    RAISE EXCEPTION 'bad_argument: queue must be a non-empty name of at most 128 bytes'
      USING ERRCODE = '22023';
  END IF;
  tenant := docket._tenant_key(owner_scope);
  IF options IS NULL OR jsonb_typeof(options) <> 'object' THEN
    RAISE EXCEPTION 'bad_argument: options must be a JSON object' USING ERRCODE = '22023';
  END IF;
  FOR k IN SELECT jsonb_object_keys(options) LOOP
    IF k NOT IN ('max_attempts', 'retry', 'idempotency_key', 'run_at', 'delay_ms', 'headers',
                 'cancel_after_ms', 'max_duration_ms') THEN
      RAISE EXCEPTION 'bad_argument: unknown spawn option "%"', k USING ERRCODE = '22023';
    END IF;
  END LOOP;
  max_attempts := docket._int_option(options, 'max_attempts', 1, 1000);
  IF options ? 'headers' AND jsonb_typeof(options -> 'headers') <> 'object' THEN
    RAISE EXCEPTION 'bad_argument: option headers must be a JSON object' USING ERRCODE = '22023';
  END IF;
  IF options ? 'idempotency_key' THEN
    IF jsonb_typeof(options -> 'idempotency_key') <> 'string' THEN
      RAISE EXCEPTION 'bad_argument: option idempotency_key must be a string' USING ERRCODE = '22023';
    END IF;
    key := options ->> 'idempotency_key';
    PERFORM docket._check_name('idempotency_key', key);
  END IF;
  IF options ? 'run_at' AND options ? 'delay_ms' THEN
    RAISE EXCEPTION 'bad_argument: options run_at and delay_ms exclude each other'
      USING ERRCODE = '22023';
  END IF;
  wake := t_now;
  IF options ? 'run_at' THEN
    IF jsonb_typeof(options -> 'run_at') <> 'string' THEN
      RAISE EXCEPTION 'bad_argument: option run_at must be a timestamp string' USING ERRCODE = '22023';
    END IF;
    BEGIN
      wake := (options ->> 'run_at')::timestamptz;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR invalid_parameter_value THEN
      RAISE EXCEPTION 'bad_argument: option run_at is not a timestamp: %', options ->> 'run_at'
        USING ERRCODE = '22023';
    END;
    IF wake IN ('infinity', '-infinity') THEN
      RAISE EXCEPTION 'bad_argument: option run_at must be finite' USING ERRCODE = '22023';
    END IF;
  END IF;
  delay := docket._int_option(options, 'delay_ms', 0, 86400000 * 3650::bigint);
  IF delay IS NOT NULL THEN
    wake := t_now + delay * interval '1 millisecond';
  END IF;
  cancel_after := docket._int_option(options, 'cancel_after_ms', 1, 86400000 * 3650::bigint);
  max_duration := docket._int_option(options, 'max_duration_ms', 1, 86400000 * 3650::bigint);

  -- The idempotency key is claimed first: a duplicate returns the existing task.
  INSERT INTO docket.tasks AS t (run_id, tenant_key, queue, task_name, params, headers,
                                 max_attempts, retry, idempotency_key, cancel_at,
                                 max_duration_ms, created_at)
  VALUES (new_id, tenant, spawn_task.queue, spawn_task.task_name, params,
          coalesce(options -> 'headers', '{}'),
          coalesce(max_attempts::int, 5),
          docket._retry_policy(options -> 'retry'), key,
          CASE WHEN cancel_after IS NOT NULL
               THEN wake + cancel_after * interval '1 millisecond' END,
          max_duration, t_now)
  ON CONFLICT (tenant_key, queue, idempotency_key) WHERE idempotency_key IS NOT NULL
  DO NOTHING;
  IF NOT FOUND THEN
    SELECT t.run_id INTO existing FROM docket.tasks t
     WHERE t.tenant_key = tenant AND t.queue = spawn_task.queue AND t.idempotency_key = key;
    RETURN QUERY
      SELECT existing, (r.document ->> 'attempt')::int, false
        FROM docket.runs r WHERE r.run_id = existing;
    RETURN;
  END IF;

  IF NOT EXISTS (SELECT 1 FROM docket.graphs g
                  WHERE g.graph_id = spawn_task.task_name AND g.graph_hash = 'task') THEN
    PERFORM docket.save_graph(spawn_task.task_name, 'task', '{"kind": "task"}');
  END IF;
  PERFORM docket.insert_run(owner_scope,
            jsonb_build_object('id', new_id, 'graph_id', spawn_task.task_name,
                               'graph_hash', 'task', 'status', 'running',
                               'checkpoint_seq', 0, 'started_at', docket._iso(t_now),
                               'attempt', 1, 'wake_reason', 'new'),
            'run_initialized', wake, spawn_task.queue);
  RETURN QUERY SELECT new_id, 1, true;
END $$;
COMMENT ON FUNCTION docket.spawn_task(text, jsonb, text, docket.scope, jsonb) IS
  'Spawns a durable task (a run whose graph_id is the task name) in the caller''s transaction. options: max_attempts (5), retry {kind none|fixed|exponential, base_ms, factor, max_ms, jitter}, idempotency_key (a duplicate in the same scope and queue returns the existing task with created = false), run_at or delay_ms, headers, cancel_after_ms (not started within), max_duration_ms (since first start). Unknown keys and wrong types raise 22023.';

CREATE FUNCTION docket.emit_event(event_name text, payload jsonb DEFAULT NULL,
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
  VALUES (tenant, emit_event.event_name, payload, t_now, t_now)
  ON CONFLICT ON CONSTRAINT task_events_pkey DO UPDATE
    SET payload = EXCLUDED.payload, emitted_at = EXCLUDED.emitted_at
    WHERE e.emitted_at IS NULL
  RETURNING true INTO first;
  IF first IS NULL THEN
    RETURN false;
  END IF;
  FOR w IN
    SELECT tw.run_id, tw.step_name, tw.timeout_at FROM docket.task_waits tw
     WHERE tw.kind = 'event' AND tw.tenant_key = tenant AND tw.target = emit_event.event_name
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
COMMENT ON FUNCTION docket.emit_event(text, jsonb, docket.scope) IS
  'Emits an event in an owner scope and wakes every task awaiting it, in one transaction. The first emit wins: returns true, later emits of the same name change nothing and return false.';

CREATE FUNCTION docket.cancel_task(scope docket.scope, run_id text, reason text DEFAULT NULL)
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
  IF NOT EXISTS (SELECT 1 FROM docket.tasks t WHERE t.run_id = cancel_task.run_id) THEN
    RAISE EXCEPTION 'not_found: run % does not exist or is not visible in this scope', run_id
      USING ERRCODE = 'DK003';
  END IF;
  outcome := docket.mutate_run(scope, run_id, 'docket.task_cancel(jsonb,jsonb)',
                               jsonb_build_object('reason', reason));
  IF outcome ->> 'outcome' <> 'committed' THEN
    RETURN false;
  END IF;
  DELETE FROM docket.task_waits tw WHERE tw.run_id = cancel_task.run_id;
  PERFORM docket._task_wake_parents(run_id);
  RETURN true;
END $$;
COMMENT ON FUNCTION docket.cancel_task(docket.scope, text, text) IS
  'Cancels a task durably: true when this call cancelled it, false when it had already finished (idempotent). A worker still running it gets DK010 on its next fenced call.';

CREATE FUNCTION docket.task_result(scope docket.scope, run_id text) RETURNS jsonb
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
  SELECT * INTO t FROM docket.tasks tk WHERE tk.run_id = task_result.run_id;
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
COMMENT ON FUNCTION docket.task_result(docket.scope, text) IS
  'A task''s outcome: {state (pending|running|sleeping|waiting|poisoned|completed|failed|cancelled), result, error, attempts, task_name, queue}, or NULL when not visible.';

