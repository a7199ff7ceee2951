
-------------------------------------------------------------------------------
-- Queue stats, listing tasks and operator reads (DESIGN.md "History, stats,
-- schedules"; docketctl and the dashboard read through these, docs/dashboard.md).
-- Each keeps to its scope (and is guarded: the scope is checked against the
-- caller's tenant binding); none returns a claim token.
-------------------------------------------------------------------------------

-- docket.queue_stats counts the unfinished runs of each queue from the partial
-- indexes that hold exactly them, and the last minute's finished runs from a
-- range of runs_finished: it never reads older history, however much of it
-- the table keeps (test/pgtap/queue_stats.sql checks the plan and the buffers
-- read; bench/stats measures it beside 1,000,000 finished runs).
--   poisoned   runs_poisoned     (poisoned_at IS NOT NULL)
--   running    runs_claimed      (running, claimed, not poisoned)
--   waiting    runs_waiting      (status waiting: an event wait without a
--                                 timeout, a child wait, a run store wait)
--              and runs_ready_queue for a wait with a timeout (it stays
--              running with wake_at = the timeout; its document says waiting)
--   due        runs_ready_queue  wake_at <= now
--   scheduled  runs_ready_queue  wake_at > now (a sleep, a retry backoff, a
--                                 delayed spawn)
CREATE FUNCTION docket.queue_stats(scope docket.scope DEFAULT 'system')
  RETURNS TABLE (queue text, due bigint, scheduled bigint, running bigint, waiting bigint,
                 poisoned bigint, oldest_due_at timestamptz, completed_last_minute bigint,
                 failed_last_minute bigint)
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.queue_stats(docket.scope) IS
  'Per queue with unfinished runs or completions or failures in the last minute (by docket.now()), visible in scope (system: all; tenantless or tenant:<id>: that owner''s): exact counts of unfinished runs, each once by precedence poisoned > running (claimed) > waiting (on an event or a child) > due (wake_at <= now) > scheduled; the oldest due wake_at; completed and failed runs in the last minute. Served by partial indexes, never a scan of finished history. NULL scope raises 22023.';

CREATE FUNCTION docket._queue_stats_impl(scope docket.scope DEFAULT 'system')
  RETURNS TABLE (queue text, due bigint, scheduled bigint, running bigint, waiting bigint,
                 poisoned bigint, oldest_due_at timestamptz, completed_last_minute bigint,
                 failed_last_minute bigint)
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  t timestamptz := docket.now();
  everyone boolean;
  tenant text;
BEGIN
  IF scope IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope must not be NULL' USING ERRCODE = '22023';
  END IF;
  everyone := scope = 'system';
  tenant := CASE WHEN scope LIKE 'tenant:%' THEN substr(scope, 8) END;
  -- Each branch reads one partial index; the branches are disjoint, so every
  -- run counts once, by precedence: poisoned, running, waiting, due, scheduled.
  RETURN QUERY
  SELECT s.queue,
         count(*) FILTER (WHERE s.state = 'due'),
         count(*) FILTER (WHERE s.state = 'scheduled'),
         count(*) FILTER (WHERE s.state = 'running'),
         count(*) FILTER (WHERE s.state = 'waiting'),
         count(*) FILTER (WHERE s.state = 'poisoned'),
         min(s.wake_at) FILTER (WHERE s.state = 'due'),
         count(*) FILTER (WHERE s.state = 'completed'),
         count(*) FILTER (WHERE s.state = 'failed')
    FROM (
      SELECT r.queue, 'poisoned' AS state, NULL::timestamptz AS wake_at
        FROM docket.runs r
       WHERE r.poisoned_at IS NOT NULL AND r.status IN ('running', 'waiting')
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue, 'running', NULL
        FROM docket.runs r
       WHERE r.status = 'running' AND r.poisoned_at IS NULL AND r.claim_token IS NOT NULL
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue, CASE WHEN r.claim_token IS NOT NULL THEN 'running' ELSE 'waiting' END, NULL
        FROM docket.runs r
       WHERE r.status = 'waiting' AND r.poisoned_at IS NULL
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue,
             CASE WHEN r.document -> 'waiting' ->> 'kind' IN ('event', 'child') THEN 'waiting'
                  WHEN r.wake_at <= t THEN 'due'
                  ELSE 'scheduled' END,
             r.wake_at
        FROM docket.runs r
       WHERE r.status = 'running' AND r.poisoned_at IS NULL AND r.claim_token IS NULL
         AND r.wake_at IS NOT NULL
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
      UNION ALL
      SELECT r.queue, r.status, NULL
        FROM docket.runs r
       WHERE r.status IN ('completed', 'failed')
         AND r.updated_at > t - interval '1 minute' AND r.updated_at <= t
         AND (everyone OR r.tenant_id IS NOT DISTINCT FROM tenant)
    ) AS s
   GROUP BY s.queue
   ORDER BY s.queue;
END $$;
COMMENT ON FUNCTION docket._queue_stats_impl(docket.scope) IS
  'Internal: the body of docket.queue_stats, called only by its guarded wrapper (see docs/security.md).';

-- docket.list_tasks pages the tasks visible in a scope, newest first, with
-- optional filters on queue, state and task name. It walks a docket.run_heads
-- index in page order ((started_at, run_id) descending: run_heads_list for the
-- system scope, run_heads_tenant for one owner, run_heads_graph for a task
-- name, with scope and task name as index conditions) and joins docket.runs by
-- primary key for the state: no index of its own, nothing added to the spawn
-- or claim path. A page reads the heads it passes: with a queue or state
-- filter that matches few of the scope's tasks, it reads the non-matching
-- heads in between (test/pgtap/list_tasks.sql checks plans and buffers read).
--
-- The cursor is a run id (the last of the previous page); its start time is
-- read from its head, so the cursor task must still be visible in the scope
-- (a task deleted by docket.cleanup in the meantime: 22023, start again).
-- The output is a composite type rather than RETURNS TABLE because its
-- column names (queue, state, task_name) are the argument names too.
CREATE TYPE docket.task_summary AS (
  run_id     text,
  task_name  text,
  queue      text,
  tenant_id  text,         -- NULL: tenantless
  state      text,         -- as docket.task_result's state
  attempt    int,
  started_at timestamptz,  -- when it was spawned
  updated_at timestamptz,  -- its last transition
  wake_at    timestamptz   -- when it is due (pending, sleeping, a retry), else NULL
);
COMMENT ON TYPE docket.task_summary IS 'a row of docket.list_tasks (never the claim token)';

-- One chunk of the walk: up to $5 tasks of the scope (and task name) after the
-- cursor ($3 started_at, $4 run_id), in page order, as task summaries
-- (parameters $1 tenant, $2 task name, $6 now). Queue and state are filtered on
-- the chunk by the caller, not here: the planner cannot estimate the computed
-- state, and with a filter it believes selective it would rather sort every
-- task of the scope than walk the index. A function of its own so that
-- test/pgtap/list_tasks.sql EXPLAINs exactly what list_tasks executes.
CREATE FUNCTION docket._list_tasks_statement(scope docket.scope, by_task_name boolean,
                                             with_cursor boolean)
  RETURNS text
  LANGUAGE sql IMMUTABLE
  SET search_path = pg_catalog, pg_temp
  AS $$
  -- The state exactly as docket.task_result computes it.
  SELECT 'SELECT ROW(h.run_id, h.graph_id, h.queue, h.tenant_id, s.state,'
    || ' (r.document ->> ''attempt'')::int, h.started_at, r.updated_at,'
    || ' CASE WHEN s.state IN (''pending'', ''sleeping'') THEN r.wake_at END)::docket.task_summary'
    || ' FROM docket.run_heads h JOIN docket.runs r ON r.run_id = h.run_id'
    || ' CROSS JOIN LATERAL (SELECT CASE'
    || ' WHEN r.status IN (''completed'', ''failed'', ''cancelled'', ''waiting'') THEN r.status'
    || ' WHEN r.poisoned_at IS NOT NULL THEN ''poisoned'''
    || ' WHEN r.claimed_at IS NOT NULL THEN ''running'''
    || ' WHEN r.document -> ''waiting'' ->> ''kind'' IN (''event'', ''child'') THEN ''waiting'''
    || ' WHEN r.wake_at > $6 THEN ''sleeping'''
    || ' ELSE ''pending'' END AS state) s'
    || ' WHERE h.graph_hash = ''task'''
    -- scope and task name: index conditions of run_heads_tenant or run_heads_graph
    || CASE WHEN scope = 'system' THEN ''
            WHEN scope = 'tenantless' THEN ' AND h.tenant_id IS NULL'
            ELSE ' AND h.tenant_id = $1' END
    || CASE WHEN by_task_name THEN ' AND h.graph_id = $2' ELSE '' END
    || CASE WHEN with_cursor THEN ' AND (h.started_at, h.run_id) < ($3, $4)' ELSE '' END
    || ' ORDER BY h.started_at DESC, h.run_id DESC LIMIT $5'
$$;
COMMENT ON FUNCTION docket._list_tasks_statement(docket.scope, boolean, boolean) IS
  'Internal: the statement docket.list_tasks executes for one chunk of its walk in a scope.';

CREATE FUNCTION docket.list_tasks(scope docket.scope, queue text DEFAULT NULL,
                                  state text DEFAULT NULL, task_name text DEFAULT NULL,
                                  after_run_id text DEFAULT NULL, page_limit int DEFAULT 100)
  RETURNS SETOF docket.task_summary
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.list_tasks(docket.scope, text, text, text, text, int) IS
  'Pages the tasks visible in scope (system: all; tenantless or tenant:<id>: that owner''s), newest first (started_at, run_id descending), optionally of one queue, one state (pending|running|sleeping|waiting|poisoned|completed|failed|cancelled, as task_result) and one task name: rows (run_id, task_name, queue, tenant_id, state, attempt, started_at, updated_at, wake_at), never a claim token. Next page: after_run_id => the last run_id of this one (it must still be visible in scope, else 22023); fewer than page_limit rows: the end. Walks a run_heads index in page order (scope and task name as index conditions; queue and state filter the walk). NULL scope, page_limit outside 1..10000 or an unknown state raise 22023.';

CREATE FUNCTION docket._list_tasks_impl(scope docket.scope, queue text DEFAULT NULL,
                                        state text DEFAULT NULL, task_name text DEFAULT NULL,
                                        after_run_id text DEFAULT NULL, page_limit int DEFAULT 100)
  RETURNS SETOF docket.task_summary
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS $$
DECLARE
  t timestamptz := docket.now();
  tenant text;
  cursor_at timestamptz;
  cursor_id text := after_run_id;
  chunk_size int;
  chunk docket.task_summary[];
  remaining int := page_limit;
  found_rows int;
BEGIN
  IF scope IS NULL THEN
    RAISE EXCEPTION 'bad_argument: scope must not be NULL' USING ERRCODE = '22023';
  END IF;
  IF page_limit IS NULL OR page_limit <= 0 OR page_limit > 10000 THEN
    RAISE EXCEPTION 'bad_argument: page_limit must be between 1 and 10000, not %',
      coalesce(page_limit::text, 'NULL') USING ERRCODE = '22023';
  END IF;
  IF state NOT IN ('pending', 'running', 'sleeping', 'waiting', 'poisoned', 'completed', 'failed',
                   'cancelled') THEN
    RAISE EXCEPTION 'bad_argument: state must be one of pending, running, sleeping, waiting, poisoned, completed, failed, cancelled, not "%"',
      state USING ERRCODE = '22023';
  END IF;
  IF scope LIKE 'tenant:%' THEN
    tenant := substr(scope, 8);
  END IF;
  IF after_run_id IS NOT NULL THEN
    -- The cursor task's start time, read under the same scope.
    EXECUTE 'SELECT h.started_at FROM docket.run_heads h'
            || ' WHERE h.run_id = $2 AND h.graph_hash = ''task'''
            || CASE WHEN scope = 'system' THEN ''
                    WHEN scope = 'tenantless' THEN ' AND h.tenant_id IS NULL'
                    ELSE ' AND h.tenant_id = $1' END
      INTO cursor_at USING tenant, after_run_id;
    IF cursor_at IS NULL THEN
      RAISE EXCEPTION 'bad_argument: after_run_id % is not a task visible in scope %',
        after_run_id, scope USING ERRCODE = '22023';
    END IF;
  END IF;
  -- Unfiltered, one chunk is the page; with a queue or state filter the walk
  -- goes on, each chunk twice the last (up to 1000 or the page), until the page
  -- is full or the scope's tasks end.
  chunk_size := page_limit;
  LOOP
    EXECUTE 'SELECT ARRAY(' || docket._list_tasks_statement(scope, task_name IS NOT NULL,
                                                            cursor_at IS NOT NULL) || ')'
      INTO chunk USING tenant, task_name, cursor_at, cursor_id, chunk_size, t;
    RETURN QUERY
      SELECT c.run_id, c.task_name, c.queue, c.tenant_id, c.state, c.attempt, c.started_at,
             c.updated_at, c.wake_at
        FROM unnest(chunk) WITH ORDINALITY AS c
       WHERE (_list_tasks_impl.queue IS NULL OR c.queue = _list_tasks_impl.queue)
         AND (_list_tasks_impl.state IS NULL OR c.state = _list_tasks_impl.state)
       ORDER BY c.ordinality
       LIMIT remaining;
    GET DIAGNOSTICS found_rows = ROW_COUNT;
    remaining := remaining - found_rows;
    EXIT WHEN remaining = 0 OR cardinality(chunk) < chunk_size;
    cursor_at := chunk[cardinality(chunk)].started_at;
    cursor_id := chunk[cardinality(chunk)].run_id;
    chunk_size := least(chunk_size * 2, greatest(page_limit, 1000));
  END LOOP;
END $$;
COMMENT ON FUNCTION docket._list_tasks_impl(docket.scope, text, text, text, text, int) IS
  'Internal: the body of docket.list_tasks, called only by its guarded wrapper (see docs/security.md).';

-- A task's facts and the poisoned runs, for roles that hold no table privilege.
CREATE FUNCTION docket.inspect_task(scope docket.scope, run_id text) RETURNS jsonb
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.inspect_task(docket.scope, text) IS
  'A task''s facts as an operator reads them: run_id, tenant_id, task_name, queue, params, headers, max_attempts, retry (NULL: the defaults), idempotency_key, created_at, cancel_at, deadline_at, status, started_at, updated_at, checkpoint_seq and steps [{step_name, value, completed_at}]. NULL when the task is not visible in the scope. Never a claim token (inspect_run has the claim facts, task_result the state, result and error, task_history the timeline).';

CREATE FUNCTION docket._inspect_task_impl(scope docket.scope, run_id text) RETURNS jsonb
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
   WHERE r.run_id = _inspect_task_impl.run_id
     AND (scope = 'system' OR (scope = 'tenantless' AND r.tenant_id IS NULL)
          OR (left(scope, 7) = 'tenant:' AND r.tenant_id = substr(scope, 8)));
  RETURN found;
END $$;
COMMENT ON FUNCTION docket._inspect_task_impl(docket.scope, text) IS
  'Internal: the body of docket.inspect_task, called only by its guarded wrapper (see docs/security.md).';

CREATE FUNCTION docket.list_poisoned(scope docket.scope DEFAULT 'system', page_limit int DEFAULT 100,
                                     after_poisoned_at timestamptz DEFAULT NULL,
                                     after_run_id text DEFAULT NULL)
  RETURNS TABLE (run_id text, tenant_id text, queue text, graph_id text, graph_hash text,
                 poisoned_at timestamptz, poison_reason text, claim_attempts int,
                 claim_abandons int)
  LANGUAGE c STABLE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_guarded';
COMMENT ON FUNCTION docket.list_poisoned(docket.scope, int, timestamptz, text) IS
  'The poisoned runs visible in the scope, oldest poisoning first: (run_id, tenant_id, queue, graph_id, graph_hash, poisoned_at, poison_reason, claim_attempts, claim_abandons), at most page_limit (1..10000); the next page starts after the last row''s (poisoned_at, run_id). Served by the runs_poisoned index. retry_poisoned_run recovers one.';

CREATE FUNCTION docket._list_poisoned_impl(scope docket.scope DEFAULT 'system', page_limit int DEFAULT 100,
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
       AND (_list_poisoned_impl.after_poisoned_at IS NULL
            OR (r.poisoned_at, r.run_id) > (_list_poisoned_impl.after_poisoned_at, _list_poisoned_impl.after_run_id))
       AND (_list_poisoned_impl.scope = 'system'
            OR (_list_poisoned_impl.scope = 'tenantless' AND r.tenant_id IS NULL)
            OR (left(_list_poisoned_impl.scope, 7) = 'tenant:' AND r.tenant_id = substr(_list_poisoned_impl.scope, 8)))
     ORDER BY r.poisoned_at, r.run_id
     LIMIT _list_poisoned_impl.page_limit;
END $$;
COMMENT ON FUNCTION docket._list_poisoned_impl(docket.scope, int, timestamptz, text) IS
  'Internal: the body of docket.list_poisoned, called only by its guarded wrapper (see docs/security.md).';
