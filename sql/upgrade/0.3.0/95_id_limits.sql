-- A new run's id, graph_id and graph_hash are at most 255 bytes each
-- (src/core/limits.hpp kMaxIdBytes): insert_run refuses a longer one with
-- invalid_run (DK007), save_graph with 22023, before an index would refuse it
-- with 54000. The install script runs this piece too (Makefile), so both paths
-- state it in the same words.
DO $$
DECLARE
  f record;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure AS fn, obj_description(p.oid, 'pg_proc') AS comment, b.note
      FROM (VALUES
        ('docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text)',
         'An id, graph_id or graph_hash over 255 bytes raises invalid_run (DK007).'),
        ('docket.save_graph(text, text, jsonb)',
         'A graph_id or graph_hash over 255 bytes raises 22023.')) AS b(signature, note)
      JOIN pg_proc p ON p.oid = b.signature::regprocedure
  LOOP
    EXECUTE format('COMMENT ON FUNCTION %s IS %L', f.fn, f.comment || ' ' || f.note);
  END LOOP;
END
$$;
