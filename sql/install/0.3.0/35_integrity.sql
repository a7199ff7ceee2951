
-------------------------------------------------------------------------------
-- What foreign keys would guard, on the rare side (triggers)
-------------------------------------------------------------------------------
-- A spawn writes a docket.tasks row, a run and its head; a claim or a
-- completion writes events; a checkpoint writes a step. Foreign keys would
-- check those rows one by one: each check a query and a row lock, and the
-- lock on the graph row (one row shared by every run of a task name) taken
-- by every spawning transaction at once. The writers are docket's own
-- statements (no role holds a privilege on these tables), which write a run,
-- its head and its task from the same values and look the graph up first,
-- and write events and steps under the run's row lock, so the guards sit on
-- the rare side: deleting runs deletes their heads, task rows, steps and
-- events (as ON DELETE CASCADE would), and a graph that a run references can
-- be neither deleted nor re-keyed (as a foreign key would refuse).

CREATE FUNCTION docket._runs_deleted() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  DELETE FROM docket.run_heads h USING gone g
   WHERE h.started_at = g.started_at AND h.run_id = g.run_id;
  DELETE FROM docket.tasks t USING gone g WHERE t.run_id = g.run_id;
  DELETE FROM docket.task_steps s USING gone g WHERE s.run_id = g.run_id;
  DELETE FROM docket.run_events e USING gone g WHERE e.run_id = g.run_id;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION docket._runs_deleted() IS
  'Internal trigger: deleting runs deletes their heads, task rows, steps and events (once per statement).';
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
