
-------------------------------------------------------------------------------
-- Operator reads: a task's facts and the poisoned runs, for roles that hold no
-- table privilege (issue 8's roles; the dashboard and docketctl read through
-- these, docs/dashboard.md). Both are guarded like the other plpgsql public
-- functions (99_roles.sql): the scope is checked against the caller's tenant
-- binding, and the statement itself keeps to the scope. Neither returns a claim
-- token.
-------------------------------------------------------------------------------

CREATE FUNCTION docket.inspect_task(scope docket.scope, run_id text) RETURNS jsonb
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  found jsonb;
BEGIN
  IF scope IS NULL OR run_id IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope and run_id must not be NULL' USING ERRCODE = '22023';
  END IF;
  SELECT jsonb_build_object(
           'run_id', t.run_id, 'tenant_id', r.tenant_id, 'task_name', t.task_name,
           'queue', t.queue, 'params', t.params, 'headers', t.headers,
           'max_attempts', t.max_attempts, 'retry', t.retry,
           'idempotency_key', t.idempotency_key, 'created_at', t.created_at,
           'cancel_at', t.cancel_at, 'deadline_at', t.deadline_at,
           'status', r.status, 'started_at', r.started_at, 'updated_at', r.updated_at,
           'checkpoint_seq', r.checkpoint_seq,
           'steps', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                'step_name', s.step_name, 'value', s.value,
                                'completed_at', s.completed_at)
                              ORDER BY s.completed_at, s.step_name)
                                FROM docket.task_steps s WHERE s.run_id = t.run_id), '[]'))
    INTO found
    FROM docket.runs r JOIN docket.tasks t ON t.run_id = r.run_id
   WHERE r.run_id = inspect_task.run_id
     AND (scope = 'system' OR (scope = 'tenantless' AND r.tenant_id IS NULL)
          OR (left(scope, 7) = 'tenant:' AND r.tenant_id = substr(scope, 8)));
  RETURN found;
END $$;
COMMENT ON FUNCTION docket.inspect_task(docket.scope, text) IS
  'A task''s facts as an operator reads them: run_id, tenant_id, task_name, queue, params, headers, max_attempts, retry (NULL: the defaults), idempotency_key, created_at, cancel_at, deadline_at, status, started_at, updated_at, checkpoint_seq and steps [{step_name, value, completed_at}]. NULL when the task is not visible in the scope. Never a claim token (inspect_run has the claim facts, task_result the state, result and error, task_history the timeline).';

CREATE FUNCTION docket.list_poisoned(scope docket.scope DEFAULT 'system', page_limit int DEFAULT 100,
                                     after_poisoned_at timestamptz DEFAULT NULL,
                                     after_run_id text DEFAULT NULL)
  RETURNS TABLE (run_id text, tenant_id text, queue text, graph_id text, graph_hash text,
                 poisoned_at timestamptz, poison_reason text, claim_attempts int,
                 claim_abandons int)
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
#variable_conflict use_column
BEGIN
  IF scope IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF page_limit IS NULL OR page_limit < 1 OR page_limit > 10000 THEN
    RAISE EXCEPTION 'bad_argument: page_limit must be between 1 and 10000' USING ERRCODE = '22023';
  END IF;
  IF (after_poisoned_at IS NULL) <> (after_run_id IS NULL) THEN
    RAISE EXCEPTION 'bad_argument: after_poisoned_at and after_run_id go together (both or neither)'
      USING ERRCODE = '22023';
  END IF;
  RETURN QUERY
    SELECT r.run_id, r.tenant_id, r.queue, r.graph_id, r.graph_hash, r.poisoned_at,
           r.poison_reason, r.claim_attempts, r.claim_abandons
      FROM docket.runs r
     WHERE r.poisoned_at IS NOT NULL
       AND (list_poisoned.after_poisoned_at IS NULL
            OR (r.poisoned_at, r.run_id) > (list_poisoned.after_poisoned_at, list_poisoned.after_run_id))
       AND (list_poisoned.scope = 'system'
            OR (list_poisoned.scope = 'tenantless' AND r.tenant_id IS NULL)
            OR (left(list_poisoned.scope, 7) = 'tenant:' AND r.tenant_id = substr(list_poisoned.scope, 8)))
     ORDER BY r.poisoned_at, r.run_id
     LIMIT list_poisoned.page_limit;
END $$;
COMMENT ON FUNCTION docket.list_poisoned(docket.scope, int, timestamptz, text) IS
  'The poisoned runs visible in the scope, oldest poisoning first: (run_id, tenant_id, queue, graph_id, graph_hash, poisoned_at, poison_reason, claim_attempts, claim_abandons), at most page_limit (1..10000); the next page starts after the last row''s (poisoned_at, run_id). Served by the runs_poisoned index. retry_poisoned_run recovers one.';
