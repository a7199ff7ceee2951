
-------------------------------------------------------------------------------
-- docket.runs: one CHECK constraint instead of six
-------------------------------------------------------------------------------
-- PostgreSQL reads each CHECK expression of a table back from the catalog and
-- plans it for every statement that writes a row: the six constraints of
-- docket.runs (3.4 kB of expression text) cost a single-run commit about a
-- quarter of its time. One C function states the same six rules in one call
-- (src/pg/row_check.cpp); it names no object and runs without a search_path
-- switch.
CREATE FUNCTION docket._run_row_valid(status text, checkpoint_seq bigint, claim_attempts integer,
                                      claim_abandons integer, claim_token uuid, claimed_at timestamptz,
                                      poisoned_at timestamptz, poison_reason text) RETURNS boolean
  LANGUAGE c IMMUTABLE PARALLEL SAFE
  AS 'MODULE_PATHNAME', 'docket_run_row_valid';
COMMENT ON FUNCTION docket._run_row_valid(text, bigint, integer, integer, uuid, timestamptz, timestamptz, text) IS
  'Internal: the CHECK of docket.runs (runs_row_valid): a known status, counters >= 0, claim token and claimed_at together, poison time and reason together.';
REVOKE ALL ON FUNCTION docket._run_row_valid(text, bigint, integer, integer, uuid, timestamptz, timestamptz, text) FROM PUBLIC;
ALTER TABLE docket.runs
  DROP CONSTRAINT runs_status_check,
  DROP CONSTRAINT runs_checkpoint_seq_check,
  DROP CONSTRAINT runs_claim_attempts_check,
  DROP CONSTRAINT runs_claim_abandons_check,
  DROP CONSTRAINT runs_claim_pair,
  DROP CONSTRAINT runs_poison_pair,
  ADD CONSTRAINT runs_row_valid CHECK (docket._run_row_valid(status, checkpoint_seq, claim_attempts,
    claim_abandons, claim_token, claimed_at, poisoned_at, poison_reason));
