-- docket.commit's and claim_due's lease writes (src/pg/run_write.cpp): the
-- run row is updated through the table and index access methods, not an
-- UPDATE statement. What an UPDATE would do must still all be done: every
-- index holds the new version (amcheck's heapallindexed, which finds a
-- missing entry), an index made after the first write of the session is
-- written too, and a table with something the direct write does not do (a
-- trigger, an expression index) gets the statement instead.
BEGIN;
SELECT plan(35);
SET LOCAL docket.max_clock_skew = '36500d';
SET LOCAL TimeZone = 'UTC';
SET LOCAL docket.fake_now = '2030-01-01 00:10:00+00';

\ir lib/run_fixture.sql
\ir lib/err.sql
\ir lib/direct_writes.sql

-- doc(id, seq) with a status and more fields.
CREATE FUNCTION pg_temp.next(id text, seq bigint, status text, patch jsonb DEFAULT '{}')
RETURNS jsonb LANGUAGE sql AS $$ SELECT pg_temp.doc(id, seq) || jsonb_build_object('status', status) || patch $$;

-- Runs w-0 .. w-11 (three of them tenant acme's), all due, all claimed.
SELECT docket.insert_run(CASE WHEN g % 4 = 0 THEN 'tenant:acme' ELSE 'tenantless' END,
                         pg_temp.doc('w-' || g, 0), 'run_initialized', pg_temp.t(g))
FROM generate_series(0, 11) g;
CREATE TEMP TABLE lease AS
  SELECT run_id, claim_token AS token FROM docket.claim_due(claim_limit => 20) WHERE outcome = 'lease';
SELECT is((SELECT count(*) FROM lease), 12::bigint, 'twelve runs claimed');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds every leased version');
SELECT results_eq(
  $$ SELECT count(*), count(DISTINCT claim_token), min(claim_attempts), max(claim_attempts),
            bool_and(claimed_at = pg_temp.t(600) AND claim_started_at = pg_temp.t(600)
                     AND claim_renewed_at = pg_temp.t(600)),
            bool_and(wake_at IS NULL AND lease_ms IS NULL AND claimed_seq IS NULL
                     AND claimed_attempt IS NULL)
       FROM docket.runs WHERE claim_token IS NOT NULL $$,
  $$ VALUES (12::bigint, 12::bigint, 1, 1, true, true) $$,
  'each lease wrote the columns the lease statement writes');
SELECT is((SELECT count(*) FROM lease l JOIN docket.runs r USING (run_id) WHERE r.claim_token = l.token),
          12::bigint, 'each run holds the token claim_due returned');

-- Every schedule, through the direct write.
CREATE FUNCTION pg_temp.commit_as(id text, status text, schedule text, wake timestamptz DEFAULT NULL,
                                  patch jsonb DEFAULT '{}')
RETURNS jsonb LANGUAGE sql AS $$
  SELECT docket.commit(CASE WHEN right(id, -2)::int % 4 = 0 THEN 'tenant:acme' ELSE 'tenantless' END,
                       pg_temp.next(id, 1, status, patch), 0,
                       (SELECT token FROM lease WHERE run_id = id),
                       CASE status WHEN 'running' THEN 'step_completed' WHEN 'waiting' THEN 'suspended'
                                   ELSE 'run_completed' END::docket.checkpoint_type, schedule, wake) $$;
SELECT pg_temp.commit_as('w-0', 'completed', 'terminal');
SELECT pg_temp.commit_as('w-1', 'failed', 'terminal');
SELECT pg_temp.commit_as('w-2', 'running', 'retain_claim');
SELECT pg_temp.commit_as('w-3', 'running', 'immediate');
SELECT pg_temp.commit_as('w-4', 'running', 'at', pg_temp.t(3600));
SELECT pg_temp.commit_as('w-5', 'waiting', 'external');
SELECT pg_temp.commit_as('w-6', 'cancelled', 'terminal');

SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds every committed version');
SELECT results_eq(
  $$ SELECT run_id COLLATE "default", status, checkpoint_seq, checkpoint_type::text, claim_token IS NOT NULL,
            wake_at, claim_attempts, updated_at
       FROM docket.runs WHERE run_id IN ('w-0', 'w-1', 'w-2', 'w-3', 'w-4', 'w-5', 'w-6')
      ORDER BY run_id $$,
  $$ VALUES ('w-0', 'completed', 1::bigint, 'run_completed', false, NULL::timestamptz, 0, pg_temp.t(600)),
            ('w-1', 'failed', 1, 'run_completed', false, NULL, 0, pg_temp.t(600)),
            ('w-2', 'running', 1, 'step_completed', true, NULL, 0, pg_temp.t(600)),
            ('w-3', 'running', 1, 'step_completed', false, pg_temp.t(600), 0, pg_temp.t(600)),
            ('w-4', 'running', 1, 'step_completed', false, pg_temp.t(3600), 0, pg_temp.t(600)),
            ('w-5', 'waiting', 1, 'suspended', false, NULL, 0, pg_temp.t(600)),
            ('w-6', 'cancelled', 1, 'run_completed', false, NULL, 0, pg_temp.t(600)) $$,
  'each schedule wrote the columns the commit statement writes');

-- The partial indexes answer for the new versions: forced onto the indexes,
-- each class finds exactly the runs the table holds in it.
SET LOCAL enable_seqscan = off;
SELECT results_eq($$ SELECT run_id COLLATE "default" FROM docket.runs WHERE status IN ('completed', 'failed', 'cancelled')
                     AND updated_at >= pg_temp.t(0) ORDER BY updated_at, 1 $$,
                  $$ VALUES ('w-0'), ('w-1'), ('w-6') $$, 'runs_finished finds the finished runs');
SELECT results_eq($$ SELECT run_id COLLATE "default" FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL
                     AND claim_token IS NULL AND wake_at IS NOT NULL AND wake_at <= pg_temp.t(7200)
                     ORDER BY wake_at, run_id COLLATE "C" $$,
                  $$ VALUES ('w-3'), ('w-4') $$, 'runs_ready finds the runs made due');
SELECT results_eq($$ SELECT run_id COLLATE "default" FROM docket.runs WHERE status = 'waiting' AND queue = 'default' ORDER BY 1 $$,
                  $$ VALUES ('w-5') $$, 'runs_waiting finds the waiting run');
RESET enable_seqscan;

-- A large document is stored whole (TOASTed by the table access method).
SELECT pg_temp.commit_as('w-7', 'running', 'retain_claim', NULL,
                         jsonb_build_object('big', repeat('x', 200000)));
SELECT is((SELECT length(document ->> 'big') FROM docket.runs WHERE run_id = 'w-7'), 200000,
          'a 200 kB document is stored whole');
SELECT is((SELECT pg_column_size(document) < 200000 FROM docket.runs WHERE run_id = 'w-7'), true,
          'and compressed or moved out of line, as by an UPDATE');

-- The fence is checked on the row: a wrong token, a wrong sequence, another
-- tenant's scope change nothing.
SELECT matches(pg_temp.err($$ SELECT docket.commit('tenantless', pg_temp.next('w-9', 1, 'completed'), 0,
                                              gen_random_uuid(), 'run_completed', 'terminal') $$),
          '^DK001 stale_fence: run w-9 ', 'a wrong token is stale');
SELECT matches(pg_temp.err(format($$ SELECT docket.commit('tenantless', pg_temp.next('w-9', 6, 'completed'), 5,
                                              %L, 'run_completed', 'terminal') $$,
                             (SELECT token FROM lease WHERE run_id = 'w-9'))),
          '^DK001 stale_fence: run w-9 ', 'a wrong sequence is stale');
SELECT matches(pg_temp.err(format($$ SELECT docket.commit('tenantless', pg_temp.next('w-8', 1, 'completed'), 0,
                                              %L, 'run_completed', 'terminal') $$,
                             (SELECT token FROM lease WHERE run_id = 'w-8'))),
          '^DK003 not_found: run w-8', 'another tenant''s run is not found');
SELECT is((SELECT string_agg(status || checkpoint_seq, ',' ORDER BY run_id) FROM docket.runs
            WHERE run_id IN ('w-8', 'w-9')), 'running0,running0', 'and the runs are unchanged');

-- In a read-only transaction the commit raises what an UPDATE raises there
-- (25006), and changes nothing.
SELECT is(pg_temp.err(format($$ SET LOCAL transaction_read_only = on;
                               SELECT docket.commit('tenantless', pg_temp.next('w-9', 1, 'completed'), 0,
                                                    %L, 'run_completed', 'terminal') $$,
                             (SELECT token FROM lease WHERE run_id = 'w-9'))),
          '25006 cannot execute UPDATE in a read-only transaction',
          'a read-only transaction cannot commit');
SELECT is((SELECT status || checkpoint_seq FROM docket.runs WHERE run_id = 'w-9'), 'running0',
          'and the run is unchanged');

-- An index made after this session's first write is written too (the
-- cached index list is rebuilt on the table's invalidation).
CREATE INDEX tap_runs_done_graph ON docket.runs (graph_id, run_id) WHERE status = 'completed';
SELECT pg_temp.commit_as('w-8', 'completed', 'terminal');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'a new partial index holds the new version');
SELECT is((SELECT count(*) FROM pg_index WHERE indexrelid = 'docket.tap_runs_done_graph'::regclass), 1::bigint,
          '(amcheck read that index)');
DROP INDEX docket.tap_runs_done_graph;

-- An expression index: the statement writes it.
CREATE INDEX tap_runs_queue_upper ON docket.runs (upper(queue)) WHERE status = 'failed';
SELECT pg_temp.commit_as('w-9', 'failed', 'terminal');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'an expression index holds the new version');
DROP INDEX docket.tap_runs_queue_upper;

-- A trigger on UPDATE: the statement runs, and the trigger with it.
-- (It also changes the row, as a trigger may.)
CREATE FUNCTION pg_temp.saw_and_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO seen VALUES (NEW.run_id, NEW.status);
  NEW.poison_reason := NULL;
  RETURN NEW;
END $$;
CREATE TRIGGER tap_runs_seen BEFORE UPDATE ON docket.runs FOR EACH ROW EXECUTE FUNCTION pg_temp.saw_and_clear();
SELECT pg_temp.commit_as('w-10', 'completed', 'terminal');
SELECT results_eq($$ SELECT run_id, status FROM seen $$, $$ VALUES ('w-10', 'completed') $$,
                  'a BEFORE UPDATE trigger fires for a commit');
SELECT docket.insert_run('tenantless', pg_temp.doc('w-12', 0), 'run_initialized', pg_temp.t(0));
SELECT is((SELECT count(*) FROM docket.claim_due(claim_limit => 20)
           WHERE outcome = 'lease' AND run_id = 'w-12'), 1::bigint, 'claim_due leases the new run');
SELECT results_eq($$ SELECT run_id, status FROM seen WHERE run_id IN ('w-10', 'w-12') ORDER BY run_id $$,
                  $$ VALUES ('w-10', 'completed'), ('w-12', 'running') $$,
                  'and the trigger fires for the lease');
DELETE FROM seen WHERE run_id <> 'w-10';
SELECT is((SELECT status FROM docket.runs WHERE run_id = 'w-10'), 'completed', 'which applied');
DROP TRIGGER tap_runs_seen ON docket.runs;
SELECT pg_temp.commit_as('w-11', 'completed', 'terminal');
SELECT is((SELECT count(*) FROM seen), 1::bigint, 'a dropped trigger fires no more');
SELECT is((SELECT status FROM docket.runs WHERE run_id = 'w-11'), 'completed', 'and the commit applied');

-- A statement-level trigger on UPDATE also sends commits to the statement.
CREATE FUNCTION pg_temp.saw_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO seen VALUES ('statement', TG_OP);
  RETURN NULL;
END $$;
CREATE TRIGGER tap_runs_statement AFTER UPDATE ON docket.runs FOR EACH STATEMENT
  EXECUTE FUNCTION pg_temp.saw_statement();
SELECT docket.commit('tenantless', pg_temp.next('w-2', 2, 'completed'), 1,
                     (SELECT token FROM lease WHERE run_id = 'w-2'), 'run_completed', 'terminal');
SELECT is((SELECT count(*) FROM seen WHERE run_id = 'statement'), 1::bigint,
          'a statement-level UPDATE trigger fires for a commit');
DROP TRIGGER tap_runs_statement ON docket.runs;

-- docket.direct_writes off: the statements write instead, to the same end.
-- Superusers only: a role must not turn off what an audit needs.
SELECT is(current_setting('docket.direct_writes'), 'on', 'docket.direct_writes is on by default');
CREATE ROLE docket_tap_direct NOLOGIN;
SELECT is(pg_temp.err($$SET LOCAL ROLE docket_tap_direct; SET LOCAL docket.direct_writes = on$$),
          '42501 permission denied to set parameter "docket.direct_writes"',
          'a role that is not a superuser cannot set docket.direct_writes');
RESET ROLE;
SET LOCAL docket.direct_writes = off;
SELECT docket.insert_run('tenantless', pg_temp.doc('w-13', 0), 'run_initialized', pg_temp.t(0));
SELECT is((SELECT count(*) FROM docket.claim_due(claim_limit => 20) WHERE outcome = 'lease' AND run_id = 'w-13'),
          1::bigint, 'with direct writes off, claim_due leases');
SELECT is(docket.commit('tenantless', pg_temp.next('w-13', 1, 'completed'), 0,
                        (SELECT claim_token FROM docket.runs WHERE run_id = 'w-13'), 'run_completed',
                        'terminal') ->> 'status', 'completed', 'and commit applies');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'and every index holds what the statements wrote');
RESET docket.direct_writes;

-- The foreign keys' own triggers (run_events, tasks reference the run id)
-- do not stop the direct write: the id never changes.
SELECT is((SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docket.runs'::regclass
           AND tgisinternal AND tgtype & 16 <> 0) > 0, true,
          'docket.runs has foreign-key triggers on UPDATE');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index is whole at the end');
SELECT is((SELECT count(*) FROM docket.runs r WHERE NOT docket._run_row_valid(status, checkpoint_seq,
             claim_attempts, claim_abandons, claim_token, claimed_at, poisoned_at, poison_reason)),
          0::bigint, 'every row keeps the row rules');

SELECT * FROM finish();
ROLLBACK;
