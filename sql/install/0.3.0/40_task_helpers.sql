
-------------------------------------------------------------------------------
-- The task layer: internal helpers and mutate_run decisions
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

-- docket._run_document, which composes a task's document on read, is created
-- by the piece the 0.3.0 upgrade shares (sql/upgrade/0.3.0/93_narrow_task_document.sql).
