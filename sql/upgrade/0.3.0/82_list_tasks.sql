
-------------------------------------------------------------------------------
-- Listing tasks (issue 9 item 5: docketctl tasks list, the web dashboard)
-------------------------------------------------------------------------------
-- docket.list_tasks pages the tasks visible in a scope, newest first, with
-- optional filters on queue, state and task name. It walks a docket.run_heads
-- index in page order ((started_at, run_id) descending: run_heads_list for the
-- system scope, run_heads_tenant for one owner, run_heads_graph for a task
-- name, with scope and task name as index conditions) and joins docket.runs by
-- primary key for the state: no new index, nothing added to the spawn or
-- claim path. A page reads the heads it passes: with a queue or state filter
-- that matches few of the scope's tasks, it reads the non-matching heads in
-- between (test/pgtap/list_tasks.sql checks plans and buffers read).
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
REVOKE ALL ON FUNCTION docket._list_tasks_statement(docket.scope, boolean, boolean) FROM PUBLIC;

CREATE FUNCTION docket.list_tasks(scope docket.scope, queue text DEFAULT NULL,
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
       WHERE (list_tasks.queue IS NULL OR c.queue = list_tasks.queue)
         AND (list_tasks.state IS NULL OR c.state = list_tasks.state)
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
COMMENT ON FUNCTION docket.list_tasks(docket.scope, text, text, text, text, int) IS
  'Pages the tasks visible in scope (system: all; tenantless or tenant:<id>: that owner''s), newest first (started_at, run_id descending), optionally of one queue, one state (pending|running|sleeping|waiting|poisoned|completed|failed|cancelled, as task_result) and one task name: rows (run_id, task_name, queue, tenant_id, state, attempt, started_at, updated_at, wake_at), never a claim token. Next page: after_run_id => the last run_id of this one (it must still be visible in scope, else 22023); fewer than page_limit rows: the end. Walks a run_heads index in page order (scope and task name as index conditions; queue and state filter the walk). NULL scope, page_limit outside 1..10000 or an unknown state raise 22023.';
REVOKE ALL ON FUNCTION docket.list_tasks(docket.scope, text, text, text, text, int) FROM PUBLIC;
