-- A new run's id, graph_id and graph_hash are at most 255 bytes each
-- (src/core/limits.hpp kMaxIdBytes): insert_run refuses a longer one with
-- invalid_run (DK007), save_graph with 22023, before an index would refuse it
-- with 54000. The install script runs this piece too (Makefile), so both paths
-- state it in the same words, after the comment each function already has.
DO $$
DECLARE
  insert_run regprocedure := 'docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text)';
  save_graph regprocedure := 'docket.save_graph(text, text, jsonb)';
BEGIN
  EXECUTE format('COMMENT ON FUNCTION %s IS %L', insert_run, obj_description(insert_run, 'pg_proc')
                 || ' An id, graph_id or graph_hash over 255 bytes raises invalid_run (DK007).');
  EXECUTE format('COMMENT ON FUNCTION %s IS %L', save_graph, obj_description(save_graph, 'pg_proc')
                 || ' A graph_id or graph_hash over 255 bytes raises 22023.');
END
$$;
