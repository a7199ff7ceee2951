
-------------------------------------------------------------------------------
-- A task's row stores a narrow document (shared with the install script)
-------------------------------------------------------------------------------
-- A task's row stores only what its columns do not say (attempt,
-- wake_reason, waiting, result, error, ...); its id, graph_id, graph_hash,
-- status, checkpoint_seq and started_at are composed from the columns when the
-- document is read (src/pg/run_document.cpp): fetch_run, inspect_run,
-- retry_poisoned_run and the lock of mutate_run and commit read it through
-- this function. A document with an "id" (every run that is not a task, and
-- a task's run that a commit or mutate_run stored, or 0.2.0 wrote) is returned
-- as stored, so the rows of 0.2.0 need no rewrite. It names no object, so like
-- docket.now() it runs without a search_path switch.
CREATE FUNCTION docket._run_document(document jsonb, run_id text, graph_id text, graph_hash text,
                                     status text, checkpoint_seq bigint, started_at timestamptz)
  RETURNS jsonb
  LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
  AS 'MODULE_PATHNAME', 'docket_run_document';
COMMENT ON FUNCTION docket._run_document(jsonb, text, text, text, text, bigint, timestamptz) IS
  'Internal: the document a run''s readers see. A task''s stored document without an "id" gets id, graph_id, graph_hash, status, checkpoint_seq and started_at (YYYY-MM-DDTHH:MM:SS.ffffffZ, UTC) from the columns given; any other document is returned as it is.';
REVOKE ALL ON FUNCTION docket._run_document(jsonb, text, text, text, text, bigint, timestamptz) FROM PUBLIC;
