-------------------------------------------------------------------------------
-- Worker side
-------------------------------------------------------------------------------

CREATE FUNCTION docket.claim_tasks(queue text, claim_limit int DEFAULT 1,
                                   lease_ms bigint DEFAULT 30000,
                                   max_claim_attempts int DEFAULT 10,
                                   now timestamptz DEFAULT docket.now())
  RETURNS TABLE (run_id text, claim_token uuid, task_name text, params jsonb, headers jsonb,
                 attempt int, checkpoint_seq bigint, wake_reason text)
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS $$
DECLARE
  c record;
  lease_ids text[];
  lease_tokens uuid[];
  lease_attempts int[];
  lease_seqs bigint[];
BEGIN
  IF queue IS NULL THEN
    RAISE EXCEPTION 'bad_argument: queue must not be NULL' USING ERRCODE = '22023';
  END IF;
  -- claim_due runs (and validates its arguments) before anything is joined.
  SELECT coalesce(array_agg(d.run_id), '{}'), coalesce(array_agg(d.claim_token), '{}'),
         coalesce(array_agg(d.claim_attempt), '{}'), coalesce(array_agg(d.checkpoint_seq), '{}')
    INTO lease_ids, lease_tokens, lease_attempts, lease_seqs
    FROM docket.claim_due(claim_tasks.now, claim_limit, lease_ms, max_claim_attempts, NULL,
                          claim_tasks.queue) d
   WHERE d.outcome = 'lease';
  FOR c IN
    SELECT d.run_id, d.claim_token, d.claim_attempt, d.checkpoint_seq, t.task_name, t.params,
           t.headers, t.cancel_at, t.deadline_at, t.first_started_at, t.max_duration_ms,
           r.document, t.run_id IS NULL AS plain_run
      FROM unnest(lease_ids, lease_tokens, lease_attempts, lease_seqs)
             AS d (run_id, claim_token, claim_attempt, checkpoint_seq)
      LEFT JOIN docket.tasks t ON t.run_id = d.run_id
      JOIN docket.runs r ON r.run_id = d.run_id
     ORDER BY d.run_id
  LOOP
    -- A plain run-store run sharing the queue is handed back untouched: no attempt
    -- used, due again at once for the claimer it belongs to.
    IF c.plain_run THEN
      PERFORM docket.abandon_claim(c.run_id, c.claim_token, c.checkpoint_seq, claim_tasks.now,
                                   claim_tasks.now, 1, non_poisoning => true);
      CONTINUE;
    END IF;
    -- Deadlines are checked for the claimed tasks only: no scan of live tasks.
    IF c.first_started_at IS NULL AND c.cancel_at IS NOT NULL AND c.cancel_at <= claim_tasks.now THEN
      PERFORM docket._task_cancel_held(c.run_id, 'cancel_after_ms');
      CONTINUE;
    END IF;
    IF c.deadline_at IS NOT NULL AND c.deadline_at <= claim_tasks.now THEN
      PERFORM docket._task_cancel_held(c.run_id, 'max_duration_ms');
      CONTINUE;
    END IF;
    IF c.first_started_at IS NULL AND (c.cancel_at IS NOT NULL OR c.max_duration_ms IS NOT NULL) THEN
      UPDATE docket.tasks t
         SET first_started_at = claim_tasks.now,
             deadline_at = claim_tasks.now + c.max_duration_ms * interval '1 millisecond'
       WHERE t.run_id = c.run_id;
    END IF;
    run_id := c.run_id;
    claim_token := c.claim_token;
    task_name := c.task_name;
    params := c.params;
    headers := c.headers;
    attempt := (c.document ->> 'attempt')::int;
    checkpoint_seq := c.checkpoint_seq;
    wake_reason := CASE WHEN c.claim_attempt > 1 THEN 'recovered'
                        ELSE c.document ->> 'wake_reason' END;
    RETURN NEXT;
  END LOOP;
END $$;
COMMENT ON FUNCTION docket.claim_tasks(text, int, bigint, int, timestamptz) IS
  'Claims up to claim_limit due tasks of a queue (run-store claim_due; lease_ms is the orphan TTL). One row per leased task with what a runner needs and why it woke: new, retry, sleep, event, timeout, child, recovered. Poisoned and deadline-cancelled tasks are recorded, not returned.';

CREATE FUNCTION docket.step_states(run_id text, claim_token uuid)
  RETURNS TABLE (step_name text, value jsonb)
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  PERFORM docket._task_lock(step_states.run_id, step_states.claim_token);
  RETURN QUERY
    SELECT s.step_name, s.value FROM docket.task_steps s
     WHERE s.run_id = step_states.run_id ORDER BY s.step_name;
END $$;
COMMENT ON FUNCTION docket.step_states(text, uuid) IS
  'The steps this task has completed, under its claim token (DK001 stale, DK010 cancelled).';

CREATE FUNCTION docket.complete_step(run_id text, claim_token uuid, step_name text, value jsonb)
  RETURNS jsonb
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  stored jsonb;
BEGIN
  PERFORM docket._check_name('step_name', step_name);
  IF value IS NULL THEN
    RAISE EXCEPTION 'bad_argument: value must not be NULL'
      USING ERRCODE = '22023';
  END IF;
  PERFORM docket._task_lock(complete_step.run_id, complete_step.claim_token);
  PERFORM docket.refresh_claim(complete_step.run_id, complete_step.claim_token, docket.now());
  INSERT INTO docket.task_steps AS s (run_id, step_name, value, completed_at)
  VALUES (complete_step.run_id, complete_step.step_name, complete_step.value, docket.now())
  ON CONFLICT ON CONSTRAINT task_steps_pkey DO NOTHING;
  SELECT s.value INTO stored FROM docket.task_steps s
   WHERE s.run_id = complete_step.run_id AND s.step_name = complete_step.step_name;
  RETURN stored;
END $$;
COMMENT ON FUNCTION docket.complete_step(text, uuid, text, jsonb) IS
  'Stores a step result and refreshes the claim, under the claim token. Completing a step twice keeps the first value; returns the stored value.';

CREATE FUNCTION docket.heartbeat(run_id text, claim_token uuid) RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  PERFORM docket._task_lock(heartbeat.run_id, heartbeat.claim_token);
  PERFORM docket.refresh_claim(heartbeat.run_id, heartbeat.claim_token, docket.now());
END $$;
COMMENT ON FUNCTION docket.heartbeat(text, uuid) IS
  'Extends a running task''s claim (DK001 stale, DK010 cancelled or overdue).';

CREATE FUNCTION docket.sleep_until(run_id text, claim_token uuid, step_name text,
                                   wake_at timestamptz)
  RETURNS TABLE (status text, resume_at timestamptz)
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
  stored jsonb;
  wake timestamptz;
BEGIN
  PERFORM docket._check_name('step_name', step_name);
  IF sleep_until.wake_at IS NULL OR sleep_until.wake_at IN ('infinity', '-infinity') THEN
    RAISE EXCEPTION 'bad_argument: wake_at must be a finite timestamp' USING ERRCODE = '22023';
  END IF;
  r := docket._task_lock(sleep_until.run_id, sleep_until.claim_token);
  SELECT s.value INTO stored FROM docket.task_steps s
   WHERE s.run_id = sleep_until.run_id AND s.step_name = sleep_until.step_name;
  IF FOUND THEN
    IF jsonb_typeof(stored) IS DISTINCT FROM 'object' OR NOT stored ? 'wake_at' THEN
      PERFORM docket._step_kind_mismatch(sleep_until.step_name, 'a sleep');
    END IF;
    wake := (stored ->> 'wake_at')::timestamptz;
  ELSE
    wake := sleep_until.wake_at;
    INSERT INTO docket.task_steps (run_id, step_name, value, completed_at)
    VALUES (sleep_until.run_id, sleep_until.step_name,
            jsonb_build_object('wake_at', wake), docket.now());
  END IF;
  IF wake <= docket.now() THEN
    PERFORM docket.refresh_claim(sleep_until.run_id, sleep_until.claim_token, docket.now());
    RETURN QUERY SELECT 'elapsed'::text, wake;
    RETURN;
  END IF;
  PERFORM docket._task_commit(r, jsonb_build_object(
            'status', 'running', 'wake_reason', 'sleep',
            'waiting', jsonb_build_object('kind', 'sleep', 'step', sleep_until.step_name)),
          'suspended', 'at', wake);
  RETURN QUERY SELECT 'suspended'::text, wake;
END $$;
COMMENT ON FUNCTION docket.sleep_until(text, uuid, text, timestamptz) IS
  'Durable sleep: records the wake time as a step (a replay keeps the first one) and releases the claim until then (status suspended), or returns elapsed when the time has come.';

CREATE FUNCTION docket.await_event(run_id text, claim_token uuid, step_name text,
                                   event_name text, timeout_ms bigint DEFAULT NULL)
  RETURNS TABLE (status text, payload jsonb)
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
  stored jsonb;
  tenant text;
  slot docket.task_events;
  timeout timestamptz;
  t_now timestamptz := docket.now();
BEGIN
  PERFORM docket._check_claim(run_id, claim_token);
  PERFORM docket._check_name('step_name', step_name);
  PERFORM docket._check_name('event_name', event_name);
  IF timeout_ms < 0 THEN
    RAISE EXCEPTION 'bad_argument: timeout_ms must be >= 0' USING ERRCODE = '22023';
  END IF;
  IF timeout_ms > 86400000 * 3650::bigint THEN
    RAISE EXCEPTION 'bad_argument: timeout_ms must be at most % (ten years)',
      86400000 * 3650::bigint USING ERRCODE = '22023';
  END IF;
  -- Replay: the first outcome of this step is final.
  SELECT s.value INTO stored FROM docket.task_steps s
   WHERE s.run_id = await_event.run_id AND s.step_name = await_event.step_name;
  IF FOUND THEN
    IF jsonb_typeof(stored) IS DISTINCT FROM 'object'
       OR stored ->> 'status' IS DISTINCT FROM 'received' AND stored ->> 'status' IS DISTINCT FROM 'timeout' THEN
      PERFORM docket._step_kind_mismatch(await_event.step_name, 'an event wait');
    END IF;
    PERFORM docket._task_lock(await_event.run_id, await_event.claim_token);
    RETURN QUERY SELECT stored ->> 'status', stored -> 'payload';
    RETURN;
  END IF;
  SELECT coalesce(x.tenant_id, '') INTO tenant FROM docket.runs x WHERE x.run_id = await_event.run_id;
  -- Lock order: the event slot first, then the run.
  INSERT INTO docket.task_events (tenant_key, event_name, created_at)
  VALUES (coalesce(tenant, ''), await_event.event_name, t_now)
  ON CONFLICT ON CONSTRAINT task_events_pkey DO NOTHING;
  SELECT * INTO slot FROM docket.task_events e
   WHERE e.tenant_key = coalesce(tenant, '') AND e.event_name = await_event.event_name FOR UPDATE;
  r := docket._task_lock(await_event.run_id, await_event.claim_token);

  SELECT w.timeout_at INTO timeout FROM docket.task_waits w
   WHERE w.run_id = await_event.run_id AND w.step_name = await_event.step_name;
  IF NOT FOUND AND timeout_ms IS NOT NULL THEN
    timeout := t_now + timeout_ms * interval '1 millisecond';
  END IF;

  IF slot.emitted_at IS NOT NULL AND (timeout IS NULL OR slot.emitted_at <= timeout) THEN
    stored := jsonb_build_object('status', 'received', 'payload', slot.payload);
  ELSIF timeout IS NOT NULL AND timeout <= t_now THEN
    stored := jsonb_build_object('status', 'timeout', 'payload', NULL);
  END IF;
  IF stored IS NOT NULL THEN
    PERFORM docket._task_settle_wait(await_event.run_id, await_event.claim_token,
                                     await_event.step_name, stored, t_now);
    RETURN QUERY SELECT stored ->> 'status', stored -> 'payload';
    RETURN;
  END IF;

  INSERT INTO docket.task_waits (run_id, step_name, kind, tenant_key, target, timeout_at)
  VALUES (await_event.run_id, await_event.step_name, 'event', coalesce(tenant, ''),
          await_event.event_name, timeout)
  ON CONFLICT ON CONSTRAINT task_waits_pkey DO NOTHING;
  IF timeout IS NULL THEN
    PERFORM docket._task_commit(r, jsonb_build_object(
              'status', 'waiting', 'wake_reason', 'event',
              'waiting', jsonb_build_object('kind', 'event', 'step', await_event.step_name,
                                            'event', await_event.event_name)),
            'suspended', 'external');
  ELSE
    PERFORM docket._task_commit(r, jsonb_build_object(
              'status', 'running', 'wake_reason', 'timeout',
              'waiting', jsonb_build_object('kind', 'event', 'step', await_event.step_name,
                                            'event', await_event.event_name)),
            'suspended', 'at', timeout);
  END IF;
  RETURN QUERY SELECT 'suspended'::text, NULL::jsonb;
END $$;
COMMENT ON FUNCTION docket.await_event(text, uuid, text, text, bigint) IS
  'Waits for an event in the task''s scope: received (with the payload) at once if it was emitted, timeout once timeout_ms has passed, else suspended (claim released until the event or the timeout). The outcome is stored as the step''s result, so a replay sees the same outcome.';

CREATE FUNCTION docket.await_task(run_id text, claim_token uuid, step_name text,
                                  child_run_id text)
  RETURNS TABLE (status text, outcome jsonb)
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
  stored jsonb;
  child docket.runs;
  parent_tenant text;
BEGIN
  PERFORM docket._check_claim(run_id, claim_token);
  PERFORM docket._check_name('step_name', step_name);
  IF child_run_id IS NULL THEN
    RAISE EXCEPTION 'bad_argument: child_run_id must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF child_run_id = run_id THEN
    RAISE EXCEPTION 'bad_argument: task % cannot await itself', run_id USING ERRCODE = '22023';
  END IF;
  SELECT s.value INTO stored FROM docket.task_steps s
   WHERE s.run_id = await_task.run_id AND s.step_name = await_task.step_name;
  IF FOUND THEN
    IF jsonb_typeof(stored) IS DISTINCT FROM 'object' OR NOT stored ? 'state' THEN
      PERFORM docket._step_kind_mismatch(await_task.step_name, 'a child join');
    END IF;
    PERFORM docket._task_lock(await_task.run_id, await_task.claim_token);
    RETURN QUERY SELECT stored ->> 'state', stored;
    RETURN;
  END IF;
  SELECT x.tenant_id INTO parent_tenant FROM docket.runs x WHERE x.run_id = await_task.run_id;
  -- Lock order: the child before the parent.
  SELECT * INTO child FROM docket.runs x
   WHERE x.run_id = child_run_id AND x.graph_hash = 'task'
     AND x.tenant_id IS NOT DISTINCT FROM parent_tenant
   FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'not_found: child task % does not exist in this task''s scope', child_run_id
      USING ERRCODE = 'DK003';
  END IF;
  r := docket._task_lock(await_task.run_id, await_task.claim_token);
  IF child.status IN ('completed', 'failed', 'cancelled') THEN
    stored := jsonb_build_object('state', child.status,
                                 'result', child.document -> 'result',
                                 'error', child.document -> 'error');
    PERFORM docket._task_settle_wait(await_task.run_id, await_task.claim_token,
                                     await_task.step_name, stored, docket.now());
    RETURN QUERY SELECT child.status, stored;
    RETURN;
  END IF;
  INSERT INTO docket.task_waits (run_id, step_name, kind, tenant_key, target)
  VALUES (await_task.run_id, await_task.step_name, 'child', coalesce(parent_tenant, ''),
          child_run_id)
  ON CONFLICT ON CONSTRAINT task_waits_pkey DO NOTHING;
  PERFORM docket._task_commit(r, jsonb_build_object(
            'status', 'waiting', 'wake_reason', 'child',
            'waiting', jsonb_build_object('kind', 'child', 'step', await_task.step_name,
                                          'child', child_run_id)),
          'suspended', 'external');
  RETURN QUERY SELECT 'suspended'::text, NULL::jsonb;
END $$;
COMMENT ON FUNCTION docket.await_task(text, uuid, text, text) IS
  'Joins a child task: its outcome {state, result, error} once it has finished (stored as the step''s result), else suspended (claim released) until it finishes. No polling, no held worker slot.';

CREATE FUNCTION docket.complete_task(run_id text, claim_token uuid, result jsonb DEFAULT NULL)
  RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
BEGIN
  r := docket._task_lock(complete_task.run_id, complete_task.claim_token);
  PERFORM docket._task_commit(r, jsonb_build_object('status', 'completed', 'result', result),
                              'run_completed', 'terminal');
  DELETE FROM docket.task_waits w WHERE w.run_id = complete_task.run_id;
  PERFORM docket._task_wake_parents(complete_task.run_id);
END $$;
COMMENT ON FUNCTION docket.complete_task(text, uuid, jsonb) IS
  'Finishes a task with its result under its claim token (DK001 stale, DK010 cancelled) and wakes tasks awaiting it.';

CREATE FUNCTION docket.fail_task(run_id text, claim_token uuid, error jsonb)
  RETURNS TABLE (disposition text, retry_at timestamptz)
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
  t docket.tasks;
  failed_attempt int;
  t_now timestamptz := docket.now();
  next_at timestamptz;
BEGIN
  IF error IS NULL THEN
    RAISE EXCEPTION 'bad_argument: error must not be NULL' USING ERRCODE = '22023';
  END IF;
  r := docket._task_lock(fail_task.run_id, fail_task.claim_token, allow_overdue => true);
  SELECT * INTO t FROM docket.tasks tk WHERE tk.run_id = fail_task.run_id;
  failed_attempt := (r.document ->> 'attempt')::int;
  IF t.deadline_at IS NOT NULL AND t.deadline_at <= t_now THEN
    PERFORM docket._task_commit(r, jsonb_build_object('status', 'cancelled', 'error', error,
                                                      'cancel_reason', 'max_duration_ms'),
                                'run_cancelled', 'terminal');
    DELETE FROM docket.task_waits w WHERE w.run_id = fail_task.run_id;
    PERFORM docket._task_wake_parents(fail_task.run_id);
    RETURN QUERY SELECT 'cancelled'::text, NULL::timestamptz;
  ELSIF failed_attempt < t.max_attempts THEN
    next_at := t_now + docket._retry_delay_ms(t.retry, failed_attempt) * interval '1 millisecond';
    PERFORM docket._task_commit(r, jsonb_build_object('status', 'running',
                                                      'attempt', failed_attempt + 1,
                                                      'wake_reason', 'retry',
                                                      'last_error', error),
                                'retried', 'at', next_at);
    RETURN QUERY SELECT 'retry_scheduled'::text, next_at;
  ELSE
    PERFORM docket._task_commit(r, jsonb_build_object('status', 'failed', 'error', error),
                                'run_failed', 'terminal');
    DELETE FROM docket.task_waits w WHERE w.run_id = fail_task.run_id;
    PERFORM docket._task_wake_parents(fail_task.run_id);
    RETURN QUERY SELECT 'failed'::text, NULL::timestamptz;
  END IF;
END $$;
COMMENT ON FUNCTION docket.fail_task(text, uuid, jsonb) IS
  'Records a failed attempt under the claim token; the task''s retry policy and attempt budget decide: retry_scheduled (with retry_at), failed, or cancelled (past max_duration_ms).';

CREATE FUNCTION docket.defer_task(run_id text, claim_token uuid, max_defers int DEFAULT 20,
                                  base_ms int DEFAULT 1000, cap_ms int DEFAULT 60000)
  RETURNS text
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
  t_now timestamptz := docket.now();
  delay numeric;
BEGIN
  IF run_id IS NULL OR claim_token IS NULL OR max_defers IS NULL OR base_ms IS NULL
     OR cap_ms IS NULL THEN
    RAISE EXCEPTION 'bad_argument: arguments of defer_task must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF base_ms <= 0 OR cap_ms <= 0 OR max_defers <= 0 THEN
    RAISE EXCEPTION 'bad_argument: max_defers, base_ms and cap_ms must be > 0' USING ERRCODE = '22023';
  END IF;
  SELECT * INTO r FROM docket.runs x WHERE x.run_id = defer_task.run_id;
  IF NOT FOUND THEN
    RETURN 'stale';
  END IF;
  -- base * 2^defers, capped, with deterministic jitter (75-100%) from the run id.
  delay := least(base_ms::numeric * power(2::numeric, least(r.claim_abandons, 40)), cap_ms);
  delay := delay * (0.75 + 0.25 * ((hashtext(r.run_id || ':' || r.claim_abandons) & 1023) / 1023.0));
  RETURN docket.abandon_claim(defer_task.run_id, defer_task.claim_token, r.checkpoint_seq, t_now,
                              t_now + floor(delay) * interval '1 millisecond', max_defers);
END $$;
COMMENT ON FUNCTION docket.defer_task(text, uuid, int, int, int) IS
  'Hands a claimed task back without using an attempt (for a worker that does not know its task name): run-store abandon_claim with a jittered backoff of base_ms * 2^defers capped at cap_ms; poisoned after max_defers. Returns rescheduled, poisoned or stale.';

