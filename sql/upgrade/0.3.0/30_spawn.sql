
-------------------------------------------------------------------------------
-- Spawning in C++ (src/core/spawn.*, src/pg/task_spawn.cpp), set-based
-------------------------------------------------------------------------------
-- A spawn writes a docket.tasks row, a run and its head. Foreign keys checked
-- those rows one by one: each check is a query and a row lock, and the lock
-- on the graph row (one row shared by every run of a task name) is taken by
-- every spawning transaction at once. The writers are docket's own statements
-- (no role holds a privilege on these tables), which write a run, its head
-- and its task from the same values and look the graph up first, so the
-- guards move to the rare side: deleting a run deletes its head and task (as
-- ON DELETE CASCADE did), and a graph that a run references can be neither
-- deleted nor re-keyed (as the foreign key refused).
ALTER TABLE docket.tasks DROP CONSTRAINT tasks_run_id_fkey;
ALTER TABLE docket.run_heads DROP CONSTRAINT run_heads_run_id_fkey;
ALTER TABLE docket.run_heads DROP CONSTRAINT run_heads_graph_fk;

CREATE FUNCTION docket._runs_deleted() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  DELETE FROM docket.run_heads h USING gone g WHERE h.run_id = g.run_id;
  DELETE FROM docket.tasks t USING gone g WHERE t.run_id = g.run_id;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION docket._runs_deleted() IS
  'Internal trigger: deleting runs deletes their heads and task rows (once per statement).';
CREATE TRIGGER runs_deleted AFTER DELETE ON docket.runs
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION docket._runs_deleted();

-- A graph delete first waits for every transaction that is writing run heads
-- (SHARE conflicts with their ROW EXCLUSIVE), so a head committed by a spawn
-- that had found the graph is seen here.
CREATE FUNCTION docket._graph_guard() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND (NEW.graph_id, NEW.graph_hash) IS NOT DISTINCT FROM (OLD.graph_id, OLD.graph_hash) THEN
    RETURN NEW;
  END IF;
  LOCK TABLE docket.run_heads IN SHARE MODE;
  IF TG_OP = 'TRUNCATE' THEN
    IF EXISTS (SELECT 1 FROM docket.run_heads) THEN
      RAISE EXCEPTION 'cannot truncate docket.graphs: runs reference its graphs'
        USING ERRCODE = '23503';
    END IF;
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM docket.run_heads h
              WHERE h.graph_id = OLD.graph_id AND h.graph_hash = OLD.graph_hash) THEN
    RAISE EXCEPTION 'graph % @ % is referenced by runs', OLD.graph_id, OLD.graph_hash
      USING ERRCODE = '23503';
  END IF;
  RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
COMMENT ON FUNCTION docket._graph_guard() IS
  'Internal trigger: a graph that runs reference can be neither deleted nor re-keyed (23503).';
CREATE TRIGGER graphs_referenced BEFORE DELETE OR UPDATE ON docket.graphs
  FOR EACH ROW EXECUTE FUNCTION docket._graph_guard();
CREATE TRIGGER graphs_truncated BEFORE TRUNCATE ON docket.graphs
  FOR EACH STATEMENT EXECUTE FUNCTION docket._graph_guard();

-- The list indexes of docket.run_heads, ascending (list_runs walks them
-- backwards, newest first). Start times and time-ordered run ids grow, so a
-- new head lands at the right end of each index (or of its tenant's or graph's
-- range), where a btree fills its pages; in a descending index every new head
-- lands at the left end, where pages split in half (measured: about 1.8x the
-- pages and 1.5x the insert time).
DROP INDEX docket.run_heads_list, docket.run_heads_tenant, docket.run_heads_graph;
CREATE INDEX run_heads_list
  ON docket.run_heads (started_at, run_id, tenant_id, graph_id, graph_hash);
CREATE INDEX run_heads_tenant
  ON docket.run_heads (tenant_id, started_at, run_id, graph_id, graph_hash);
CREATE INDEX run_heads_graph
  ON docket.run_heads (graph_id, started_at, run_id, graph_hash, tenant_id);

CREATE OR REPLACE FUNCTION docket.spawn_task(task_name text, params jsonb DEFAULT '{}',
                                             queue text DEFAULT 'default',
                                             owner_scope docket.scope DEFAULT 'tenantless',
                                             options jsonb DEFAULT '{}')
  RETURNS TABLE (run_id text, attempt int, created boolean)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_spawn_task';

COMMENT ON FUNCTION docket.spawn_task(text, jsonb, text, docket.scope, jsonb) IS
  'Spawns a durable task (a run whose graph_id is the task name) in the caller''s transaction; its run id is time-ordered (UUIDv7). options: max_attempts (5), retry {kind none|fixed|exponential, base_ms, factor, max_ms, jitter}, idempotency_key (a duplicate in the same scope and queue returns the existing task with created = false), run_at or delay_ms, headers, cancel_after_ms (not started within), max_duration_ms (since first start). Unknown keys and wrong types raise 22023.';

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
  'Spawns one task per element of params in the caller''s transaction, set-based: one row per element, in input order, as spawn_task returns it. options is one object for every element, or an array of one object per element; each element keeps spawn_task''s semantics (a repeated idempotency key returns the first task with created = false). Any bad element raises 22023 and spawns nothing.';

REVOKE ALL ON FUNCTION docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb),
  docket._runs_deleted(), docket._graph_guard() FROM PUBLIC;
