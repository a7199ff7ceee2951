-- docket 0.1.0 -> 0.2.0: the task layer.
-- A task is a run of the run store: its graph_id is the task name, its graph_hash
-- is 'task'. Every transition of a task goes through run-store primitives
-- (insert_run, claim_due, refresh_claim, commit, mutate_run, abandon_claim); the
-- tables below only hold what a task adds: spawn options, step results, events
-- and waiters. See docs/tasks.md.
--
-- Lock order (deadlock freedom): an event slot (docket.task_events row) before
-- any run; a child run before its parent; several runs in run_id order.

\echo Use "ALTER EXTENSION docket UPDATE TO '0.2.0'" to load this file. \quit

-------------------------------------------------------------------------------
-- Tables
-------------------------------------------------------------------------------

-- What spawn_task fixed once; never updated except first_started_at/deadline_at.
CREATE TABLE docket.tasks (
  -- deferred: spawn_task claims the idempotency key before it inserts the run
  run_id           text PRIMARY KEY REFERENCES docket.runs (run_id) ON DELETE CASCADE
                   DEFERRABLE INITIALLY DEFERRED,
  tenant_key       text NOT NULL,             -- '' for tenantless, else the tenant id
  queue            text NOT NULL,
  task_name        text NOT NULL,
  params           jsonb NOT NULL,
  headers          jsonb NOT NULL,
  max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
  retry            jsonb NOT NULL,
  idempotency_key  text,
  cancel_at        timestamptz,               -- cancel_after_ms: not started by then
  max_duration_ms  bigint,
  first_started_at timestamptz,               -- recorded at first claim when a deadline applies
  deadline_at      timestamptz,               -- first_started_at + max_duration_ms
  created_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX tasks_idempotency ON docket.tasks (tenant_key, queue, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
COMMENT ON TABLE docket.tasks IS 'spawn-time facts of a task (a run whose graph_hash is ''task'')';

CREATE TABLE docket.task_steps (
  run_id       text NOT NULL REFERENCES docket.runs (run_id) ON DELETE CASCADE,
  step_name    text NOT NULL,
  value        jsonb,
  completed_at timestamptz NOT NULL,
  PRIMARY KEY (run_id, step_name)
);
COMMENT ON TABLE docket.task_steps IS 'checkpointed step results; the first value of a step wins and replays on every attempt';

-- One row per (scope, event name): a slot that await_event and emit_event both lock
-- first, so an emit racing an await is never lost. emitted_at NULL = not emitted yet.
CREATE TABLE docket.task_events (
  tenant_key  text NOT NULL,
  event_name  text NOT NULL,
  payload     jsonb,
  emitted_at  timestamptz,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_key, event_name)
);
CREATE INDEX task_events_emitted ON docket.task_events (emitted_at);
COMMENT ON TABLE docket.task_events IS 'emitted events (first emit wins) and the slots waiters lock';

CREATE TABLE docket.task_waits (
  run_id     text NOT NULL REFERENCES docket.runs (run_id) ON DELETE CASCADE,
  step_name  text NOT NULL,
  kind       text NOT NULL CHECK (kind IN ('event', 'child')),
  tenant_key text NOT NULL,
  target     text NOT NULL,                   -- event name or child run id
  timeout_at timestamptz,
  PRIMARY KEY (run_id, step_name)
);
CREATE INDEX task_waits_target ON docket.task_waits (kind, tenant_key, target);
COMMENT ON TABLE docket.task_waits IS 'tasks suspended on an event or a child task';

-- Retention: finished runs by age.
CREATE INDEX runs_finished ON docket.runs (updated_at)
  WHERE status IN ('completed', 'failed', 'cancelled');

REVOKE ALL ON docket.tasks, docket.task_steps, docket.task_events, docket.task_waits FROM PUBLIC;

-- A claim batch is small; tell the planner so joins on it use the indexes.
ALTER FUNCTION docket.claim_due(timestamptz, int, bigint, int, text, text) ROWS 10;

-------------------------------------------------------------------------------
-- Internal helpers
-------------------------------------------------------------------------------

CREATE FUNCTION docket._check_name(what text, name text) RETURNS void
  LANGUAGE plpgsql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF name IS NULL THEN
    RAISE EXCEPTION 'bad_argument: % must not be NULL', what USING ERRCODE = '22023';
  END IF;
  IF name = '' OR octet_length(name) > 255 THEN
    RAISE EXCEPTION 'bad_argument: % must be non-empty text of at most 255 bytes', what
      USING ERRCODE = '22023';
  END IF;
END $$;
COMMENT ON FUNCTION docket._check_name(text, text) IS
  'Internal: raises 22023 unless name is non-empty text of at most 255 bytes.';

CREATE FUNCTION docket._tenant_key(owner_scope docket.scope) RETURNS text
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
  RETURN CASE WHEN owner_scope = 'tenantless' THEN '' ELSE substr(owner_scope, 8) END;
END $$;
COMMENT ON FUNCTION docket._tenant_key(docket.scope) IS
  'Internal: the task tables'' tenant key of an owner scope ('''' for tenantless).';

CREATE FUNCTION docket._scope_of(tenant_id text) RETURNS docket.scope
  LANGUAGE sql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$ SELECT CASE WHEN tenant_id IS NULL THEN 'tenantless' ELSE 'tenant:' || tenant_id END::docket.scope $$;
COMMENT ON FUNCTION docket._scope_of(text) IS 'Internal: the owner scope of a run''s tenant_id.';

CREATE FUNCTION docket._iso(t timestamptz) RETURNS text
  LANGUAGE sql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;
COMMENT ON FUNCTION docket._iso(timestamptz) IS 'Internal: an ISO-8601 UTC text of a timestamp.';

CREATE FUNCTION docket._check_claim(run_id text, claim_token uuid) RETURNS void
  LANGUAGE plpgsql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF run_id IS NULL THEN
    RAISE EXCEPTION 'bad_argument: run_id must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF claim_token IS NULL THEN
    RAISE EXCEPTION 'bad_argument: claim_token must not be NULL' USING ERRCODE = '22023';
  END IF;
END $$;
COMMENT ON FUNCTION docket._check_claim(text, uuid) IS
  'Internal: raises 22023 when a fenced call''s run_id or claim_token is NULL.';

CREATE FUNCTION docket._step_kind_mismatch(step_name text, expected text) RETURNS void
  LANGUAGE plpgsql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  RAISE EXCEPTION 'bad_argument: step "%" was completed as another kind of step, not as %',
    step_name, expected USING ERRCODE = '22023';
END $$;
COMMENT ON FUNCTION docket._step_kind_mismatch(text, text) IS
  'Internal: raises 22023 when a step name is reused for a different kind of step.';

-- Locks a task's run for a fenced call and checks the fence: unknown -> DK003,
-- cancelled -> DK010, other token -> DK001, past max_duration -> DK010 (unless
-- allow_overdue).
CREATE FUNCTION docket._task_lock(p_run_id text, p_claim_token uuid,
                                  allow_overdue boolean DEFAULT false)
  RETURNS docket.runs
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
  deadline timestamptz;
BEGIN
  IF p_run_id IS NULL THEN
    RAISE EXCEPTION 'bad_argument: run_id must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF p_claim_token IS NULL THEN
    RAISE EXCEPTION 'bad_argument: claim_token must not be NULL' USING ERRCODE = '22023';
  END IF;
  SELECT * INTO r FROM docket.runs WHERE run_id = p_run_id AND graph_hash = 'task' FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'not_found: task % does not exist', p_run_id USING ERRCODE = 'DK003';
  END IF;
  IF r.status = 'cancelled' THEN
    RAISE EXCEPTION 'cancelled: task % was cancelled', p_run_id USING ERRCODE = 'DK010';
  END IF;
  IF r.claim_token IS DISTINCT FROM p_claim_token THEN
    RAISE EXCEPTION 'stale_fence: task % is not held by this claim token', p_run_id
      USING ERRCODE = 'DK001';
  END IF;
  IF NOT allow_overdue THEN
    SELECT t.deadline_at INTO deadline FROM docket.tasks t WHERE t.run_id = p_run_id;
    IF deadline IS NOT NULL AND deadline <= docket.now() THEN
      RAISE EXCEPTION 'cancelled: task % exceeded its max_duration_ms', p_run_id
        USING ERRCODE = 'DK010';
    END IF;
  END IF;
  RETURN r;
END $$;
COMMENT ON FUNCTION docket._task_lock(text, uuid, boolean) IS
  'Internal: locks a task''s run under its claim token; DK003 unknown, DK010 cancelled or overdue, DK001 stale token.';

-- Records a wait's outcome as its step's result, drops the waiter row and extends the
-- claim: a replay of the step returns the same outcome.
CREATE FUNCTION docket._task_settle_wait(p_run_id text, p_claim_token uuid, p_step_name text,
                                         outcome jsonb, t_now timestamptz)
  RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  INSERT INTO docket.task_steps (run_id, step_name, value, completed_at)
  VALUES (p_run_id, p_step_name, outcome, t_now);
  DELETE FROM docket.task_waits w WHERE w.run_id = p_run_id AND w.step_name = p_step_name;
  PERFORM docket.refresh_claim(p_run_id, p_claim_token, t_now);
END $$;
COMMENT ON FUNCTION docket._task_settle_wait(text, uuid, text, jsonb, timestamptz) IS
  'Internal: stores a wait''s outcome as its step, removes the waiter and extends the claim.';

-- Commits the next version of a task's run under the caller's fence.
CREATE FUNCTION docket._task_commit(r docket.runs, changes jsonb,
                                    checkpoint_type docket.checkpoint_type, schedule text,
                                    wake_at timestamptz DEFAULT NULL)
  RETURNS jsonb
  LANGUAGE sql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
  SELECT docket.commit('system',
                       (r.document - 'waiting') || changes
                         || jsonb_build_object('checkpoint_seq', r.checkpoint_seq + 1),
                       r.checkpoint_seq, r.claim_token, checkpoint_type, schedule, wake_at)
$$;
COMMENT ON FUNCTION docket._task_commit(docket.runs, jsonb, docket.checkpoint_type, text, timestamptz) IS
  'Internal: docket.commit of a task''s next version (document || changes, checkpoint_seq + 1).';

-- mutate_run decision: resume a task suspended on the step named in arg.
CREATE FUNCTION docket.task_resume(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
  SELECT CASE
    WHEN run ->> 'status' IN ('running', 'waiting')
         AND run -> 'waiting' ->> 'step' = arg ->> 'step'
         AND run -> 'waiting' ->> 'kind' = arg ->> 'kind'
    THEN ROW('commit',
             (run - 'waiting') || jsonb_build_object(
               'status', 'running',
               'checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1,
               'wake_reason', arg ->> 'reason'),
             'resumed', 'immediate', NULL, 'true')::docket.mutation_decision
    ELSE ROW('no_change', NULL, NULL, NULL, NULL, 'false')::docket.mutation_decision
  END
$$;
COMMENT ON FUNCTION docket.task_resume(jsonb, jsonb) IS
  'mutate_run decision used by emit_event and child completion: makes a task suspended on step arg.step (kind arg.kind) due now with wake_reason arg.reason.';

-- mutate_run decision: cancel a task unless it already finished.
CREATE FUNCTION docket.task_cancel(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
  SELECT CASE
    WHEN run ->> 'status' IN ('completed', 'failed', 'cancelled')
    THEN ROW('no_change', NULL, NULL, NULL, NULL, to_jsonb(run ->> 'status'))::docket.mutation_decision
    ELSE ROW('commit',
             (run - 'waiting') || jsonb_build_object(
               'status', 'cancelled',
               'checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1,
               'cancel_reason', arg -> 'reason'),
             'run_cancelled', 'terminal', NULL, '"cancelled"')::docket.mutation_decision
  END
$$;
COMMENT ON FUNCTION docket.task_cancel(jsonb, jsonb) IS
  'mutate_run decision used by cancel_task: a terminal cancelled version, or no change for a finished task.';

-- Wakes the parents awaiting a finished child (child before parent: lock order).
CREATE FUNCTION docket._task_wake_parents(child_run_id text) RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  w record;
  tenant text;
BEGIN
  -- The waiters live in the child's scope; with it the delete is an index lookup.
  SELECT coalesce(x.tenant_id, '') INTO tenant FROM docket.runs x WHERE x.run_id = child_run_id;
  FOR w IN
    WITH gone AS (
      DELETE FROM docket.task_waits
       WHERE kind = 'child' AND tenant_key = tenant AND target = child_run_id
       RETURNING run_id, step_name)
    SELECT run_id, step_name FROM gone ORDER BY run_id
  LOOP
    PERFORM docket.mutate_run('system', w.run_id, 'docket.task_resume(jsonb,jsonb)',
                              jsonb_build_object('kind', 'child', 'step', w.step_name,
                                                 'reason', 'child'));
  END LOOP;
END $$;
COMMENT ON FUNCTION docket._task_wake_parents(text) IS
  'Internal: resumes every task awaiting the given child task.';

-- Cancels a task the caller holds (claim path: cancel_after_ms / max_duration_ms).
CREATE FUNCTION docket._task_cancel_held(p_run_id text, reason text) RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  r docket.runs;
BEGIN
  SELECT * INTO r FROM docket.runs WHERE run_id = p_run_id FOR UPDATE;
  PERFORM docket._task_commit(r, jsonb_build_object('status', 'cancelled',
                                                    'cancel_reason', reason),
                              'run_cancelled', 'terminal');
  DELETE FROM docket.task_waits WHERE run_id = p_run_id;
  PERFORM docket._task_wake_parents(p_run_id);
END $$;
COMMENT ON FUNCTION docket._task_cancel_held(text, text) IS
  'Internal: cancels a task whose claim the caller holds, and wakes its parents.';

CREATE FUNCTION docket._retry_delay_ms(retry jsonb, failed_attempt int) RETURNS bigint
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  kind text := coalesce(retry ->> 'kind', 'exponential');
  base numeric := coalesce((retry ->> 'base_ms')::numeric, 1000);
  factor numeric := coalesce((retry ->> 'factor')::numeric, 2);
  cap numeric := (retry ->> 'max_ms')::numeric;
  jitter numeric := coalesce((retry ->> 'jitter')::numeric, 0);
  delay numeric;
BEGIN
  IF kind = 'none' THEN
    RETURN 0;
  ELSIF kind = 'fixed' THEN
    delay := base;
  ELSE
    -- base * factor^(n-1), computed stepwise so it saturates instead of overflowing
    delay := base;
    FOR i IN 2 .. failed_attempt LOOP
      EXIT WHEN delay >= coalesce(cap, 1e15);
      delay := delay * factor;
    END LOOP;
  END IF;
  delay := least(delay, coalesce(cap, 1e15), 1e15);
  IF jitter > 0 THEN
    delay := delay * (1 - jitter * random()::numeric);
  END IF;
  RETURN floor(delay)::bigint;
END $$;
COMMENT ON FUNCTION docket._retry_delay_ms(jsonb, int) IS
  'Internal: the retry delay after a failed attempt: none 0, fixed base_ms, exponential base_ms * factor^(attempt-1), capped at max_ms, shortened by up to jitter (0..1) at random.';

CREATE FUNCTION docket._int_option(options jsonb, key text, min_value bigint, max_value bigint)
  RETURNS bigint
  LANGUAGE plpgsql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  v jsonb := options -> key;
  n numeric;
BEGIN
  IF v IS NULL THEN
    RETURN NULL;
  END IF;
  IF jsonb_typeof(v) <> 'number' THEN
    RAISE EXCEPTION 'bad_argument: option % must be an integer, got %', key, v
      USING ERRCODE = '22023';
  END IF;
  n := v::numeric;
  IF n <> trunc(n) OR n < min_value OR n > max_value THEN
    RAISE EXCEPTION 'bad_argument: option % must be an integer between % and %, got %',
      key, min_value, max_value, v USING ERRCODE = '22023';
  END IF;
  RETURN n::bigint;
END $$;
COMMENT ON FUNCTION docket._int_option(jsonb, text, bigint, bigint) IS
  'Internal: reads an integer option within bounds, raising 22023 otherwise.';

CREATE FUNCTION docket._retry_policy(retry jsonb) RETURNS jsonb
  LANGUAGE plpgsql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  k text;
  policy jsonb := '{"kind": "exponential", "base_ms": 1000, "factor": 2, "max_ms": 300000, "jitter": 0}';
BEGIN
  IF retry IS NULL THEN
    RETURN policy;
  END IF;
  IF jsonb_typeof(retry) <> 'object' THEN
    RAISE EXCEPTION 'bad_argument: option retry must be an object' USING ERRCODE = '22023';
  END IF;
  FOR k IN SELECT jsonb_object_keys(retry) LOOP
    IF k NOT IN ('kind', 'base_ms', 'factor', 'max_ms', 'jitter') THEN
      RAISE EXCEPTION 'bad_argument: unknown retry key "%"', k USING ERRCODE = '22023';
    END IF;
  END LOOP;
  IF retry ? 'kind' AND (jsonb_typeof(retry -> 'kind') <> 'string'
                         OR retry ->> 'kind' NOT IN ('none', 'fixed', 'exponential')) THEN
    RAISE EXCEPTION 'bad_argument: retry kind must be "none", "fixed" or "exponential"'
      USING ERRCODE = '22023';
  END IF;
  PERFORM docket._int_option(retry, 'base_ms', 0, 86400000 * 365::bigint);
  PERFORM docket._int_option(retry, 'max_ms', 0, 86400000 * 365::bigint);
  IF retry ? 'factor' AND (jsonb_typeof(retry -> 'factor') <> 'number'
                           OR (retry ->> 'factor')::numeric < 1
                           OR (retry ->> 'factor')::numeric > 100) THEN
    RAISE EXCEPTION 'bad_argument: retry factor must be a number between 1 and 100'
      USING ERRCODE = '22023';
  END IF;
  IF retry ? 'jitter' AND (jsonb_typeof(retry -> 'jitter') <> 'number'
                           OR (retry ->> 'jitter')::numeric < 0
                           OR (retry ->> 'jitter')::numeric > 1) THEN
    RAISE EXCEPTION 'bad_argument: retry jitter must be a number between 0 and 1'
      USING ERRCODE = '22023';
  END IF;
  RETURN policy || retry;
END $$;
COMMENT ON FUNCTION docket._retry_policy(jsonb) IS
  'Internal: validates a retry option and fills in the defaults (exponential, 1000 ms, x2, max 300000 ms, no jitter).';

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

-------------------------------------------------------------------------------
-- Retention
-------------------------------------------------------------------------------

CREATE FUNCTION docket.cleanup(older_than interval, batch int DEFAULT 1000) RETURNS bigint
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  cutoff timestamptz;
  deleted bigint;
BEGIN
  IF older_than IS NULL OR older_than < interval '0' THEN
    RAISE EXCEPTION 'bad_argument: older_than must be a non-negative interval' USING ERRCODE = '22023';
  END IF;
  IF batch IS NULL OR batch < 1 OR batch > 100000 THEN
    RAISE EXCEPTION 'bad_argument: batch must be between 1 and 100000' USING ERRCODE = '22023';
  END IF;
  cutoff := docket.now() - older_than;
  -- Finished runs (with their task row, steps, waits and run events, by cascade);
  -- rows a worker or operator holds are skipped, not waited for.
  DELETE FROM docket.runs x
   WHERE x.run_id = ANY (ARRAY(
     SELECT y.run_id FROM docket.runs y
      WHERE y.status IN ('completed', 'failed', 'cancelled') AND y.updated_at < cutoff
      ORDER BY y.updated_at
      LIMIT batch
      FOR UPDATE SKIP LOCKED));
  GET DIAGNOSTICS deleted = ROW_COUNT;
  -- Emitted events past the horizon (their waiters are long gone).
  DELETE FROM docket.task_events e
   WHERE (e.tenant_key, e.event_name) IN (
     SELECT f.tenant_key, f.event_name FROM docket.task_events f
      WHERE f.emitted_at < cutoff
      ORDER BY f.emitted_at
      LIMIT batch
      FOR UPDATE SKIP LOCKED);
  RETURN deleted;
END $$;
COMMENT ON FUNCTION docket.cleanup(interval, int) IS
  'Retention: deletes up to batch finished runs (completed, failed, cancelled) last written before now - older_than, with their tasks, steps, waits and events, and emitted events older than that. Skips locked rows; returns the number of runs deleted. Call it repeatedly (e.g. from pg_cron) until it returns 0.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA docket FROM PUBLIC;
