-- Shared by the claim-path pgTAP files (included with \ir): an empty store,
-- graph g/h1, t(s) = s seconds after 2030-01-01 UTC, doc(id, seq) a running run document.
-- Start from an empty store whatever the database holds; rolled back at the end.
DELETE FROM docket.runs;
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');

-- t(s): s seconds after 2030-01-01 00:00:00 UTC.
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2030-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;

CREATE FUNCTION pg_temp.doc(id text, seq bigint DEFAULT 1) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'g', 'graph_hash', 'h1', 'status', 'running',
                            'checkpoint_seq', seq, 'started_at', '2030-01-01T00:00:00Z') $$;
