-- docket.runs' CHECK constraint, runs_row_valid (src/pg/row_check.cpp): each
-- of its six rules rejects a row that breaks it (23514) and changes nothing,
-- and rows that keep them all are written, whatever else they hold. docket's
-- own statements are the only writers; these UPDATEs are what a bug in one
-- of them, or a superuser's hand edit, would do.
BEGIN;
SELECT plan(14);

DELETE FROM docket.runs;
SELECT docket.save_graph('g', 'h1', '{"nodes": []}');
SELECT docket.insert_run('tenantless',
  jsonb_build_object('id', 'rv', 'graph_id', 'g', 'graph_hash', 'h1', 'status', 'running',
                     'checkpoint_seq', 1, 'started_at', '2030-01-01T00:00:00Z'),
  'run_initialized', '2030-01-01 00:00:00+00', 'q');
CREATE TEMP TABLE before AS SELECT to_jsonb(r) AS row FROM docket.runs r WHERE run_id = 'rv';
CREATE FUNCTION pg_temp.unchanged() RETURNS boolean LANGUAGE sql AS
  $$ SELECT (SELECT to_jsonb(r) FROM docket.runs r WHERE run_id = 'rv') = (SELECT row FROM before) $$;

SELECT throws_ok($$UPDATE docket.runs SET status = 'paused' WHERE run_id = 'rv'$$, '23514',
  'new row for relation "runs" violates check constraint "runs_row_valid"', 'an unknown status');
SELECT throws_ok($$UPDATE docket.runs SET checkpoint_seq = -1 WHERE run_id = 'rv'$$, '23514', NULL,
  'a negative checkpoint_seq');
SELECT throws_ok($$UPDATE docket.runs SET claim_attempts = -1 WHERE run_id = 'rv'$$, '23514', NULL,
  'a negative claim_attempts');
SELECT throws_ok($$UPDATE docket.runs SET claim_abandons = -1 WHERE run_id = 'rv'$$, '23514', NULL,
  'a negative claim_abandons');
SELECT throws_ok($$UPDATE docket.runs SET claim_token = '00000000-0000-4000-8000-000000000001' WHERE run_id = 'rv'$$,
  '23514', NULL, 'a claim token without claimed_at');
SELECT throws_ok($$UPDATE docket.runs SET claimed_at = '2030-01-01 00:00:01+00' WHERE run_id = 'rv'$$, '23514', NULL,
  'claimed_at without a claim token');
SELECT throws_ok($$UPDATE docket.runs SET poisoned_at = '2030-01-01 00:00:01+00' WHERE run_id = 'rv'$$, '23514', NULL,
  'a poison time without its reason');
SELECT throws_ok($$UPDATE docket.runs SET poison_reason = 'max_claim_attempts_exceeded' WHERE run_id = 'rv'$$,
  '23514', NULL, 'a poison reason without its time');
SELECT ok(pg_temp.unchanged(), 'none of them changed the row');

SELECT lives_ok($$UPDATE docket.runs SET claim_token = '00000000-0000-4000-8000-000000000001',
                    claimed_at = '2030-01-01 00:00:01+00' WHERE run_id = 'rv'$$, 'a claim with its time');
SELECT lives_ok($$UPDATE docket.runs SET poisoned_at = '2030-01-01 00:00:02+00', poison_reason = 'x',
                    claim_token = NULL, claimed_at = NULL WHERE run_id = 'rv'$$, 'a poison with its reason');
SELECT is((SELECT count(*)::int FROM unnest(ARRAY['running', 'waiting', 'completed', 'failed', 'cancelled']) s,
             LATERAL (SELECT docket._run_row_valid(s, 0, 0, 0, NULL, NULL, NULL, NULL) AS ok) v WHERE v.ok), 5,
  'each of the five statuses passes');
SELECT is(docket._run_row_valid(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), true,
  'NULLs pass the value rules, as in a CHECK (the columns are NOT NULL)');
SELECT is(has_function_privilege('public',
  'docket._run_row_valid(text, bigint, integer, integer, uuid, timestamptz, timestamptz, text)', 'EXECUTE'), false,
  'not executable by PUBLIC');

SELECT * FROM finish();
ROLLBACK;
