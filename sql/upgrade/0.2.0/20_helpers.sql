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

