-- Hostile input (issue 8): a mutation function that writes the run mutate_run
-- holds, directly or by re-entering docket, is refused with DK005 before
-- anything changes (it used to crash the backend when it deleted the run, and
-- to lose an update when it committed it re-entrantly); docket.fake_now is for
-- superusers only, and never infinite.
BEGIN;
SELECT plan(14);
SET LOCAL TimeZone = 'UTC';

\ir lib/err.sql

CREATE FUNCTION pg_temp.doc(id text, seq bigint) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'tap-hm', 'graph_hash', 'h1',
                            'status', 'running', 'checkpoint_seq', seq,
                            'started_at', '2040-06-01T00:00:00Z') $$;
CREATE FUNCTION pg_temp.row_of(id text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce((SELECT r.ctid::text || ' ' || r::text FROM docket.runs r WHERE run_id = id), 'gone') $$;

\o /dev/null
CREATE SCHEMA tap_hm;
-- The writers a STABLE mutation can reach: a VOLATILE function it calls.
CREATE FUNCTION tap_hm.delete_run(id text) RETURNS void LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN DELETE FROM docket.runs WHERE run_id = id; END $$;
CREATE FUNCTION tap_hm.touch_run(id text) RETURNS void LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN UPDATE docket.runs SET document = document || '{"evil": true}' WHERE run_id = id; END $$;
CREATE FUNCTION tap_hm.commit_run(run jsonb, token uuid) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM docket.commit('system', run || jsonb_build_object('checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1),
                        (run ->> 'checkpoint_seq')::bigint, token, 'signal_received', 'immediate');
END $$;
CREATE FUNCTION tap_hm.mutate_again(id text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM docket.mutate_run('system', id, 'tap_hm.advance(jsonb,jsonb)'::regprocedure);
END $$;
CREATE FUNCTION tap_hm.advance(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT ROW('commit', run || jsonb_build_object('checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1),
             'signal_received', 'immediate', NULL, NULL)::docket.mutation_decision $$;
-- The mutations: each writes through one of them, then decides.
CREATE FUNCTION tap_hm.deleter(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_hm.delete_run(run ->> 'id');
  SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_hm.toucher(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_hm.touch_run(run ->> 'id');
  SELECT ROW('commit', run || jsonb_build_object('checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1),
             'signal_received', 'immediate', NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_hm.committer(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_hm.commit_run(run, (arg ->> 'token')::uuid);
  SELECT ROW('commit', run || jsonb_build_object('checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1),
             'signal_received', 'immediate', NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_hm.reenterer(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_hm.mutate_again(run ->> 'id');
  SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;

SELECT docket.save_graph('tap-hm', 'h1', '{"nodes": []}');
SELECT docket.insert_run('tenantless', pg_temp.doc('hm-1', 0), 'run_initialized', '2040-06-01 00:00:00+00', 'q-hm');
\o
-- Claimed, so a re-entrant commit with its token would pass the fence.
SET LOCAL docket.fake_now = '2040-06-01 00:00:01+00';
CREATE TEMP TABLE lease AS SELECT claim_token FROM docket.claim_due(queue => 'q-hm');
RESET docket.fake_now;
CREATE TEMP TABLE before AS SELECT pg_temp.row_of('hm-1') AS r;

SELECT is(left(pg_temp.err($$SELECT docket.mutate_run('system', 'hm-1', 'tap_hm.deleter(jsonb,jsonb)'::regprocedure)$$), 5),
  'DK005', 'a mutation that deletes the locked run: DK005 (no crash)');
SELECT is(pg_temp.row_of('hm-1'), (SELECT r FROM before), 'and the run is still there, unchanged');
SELECT ok(pg_temp.err($$SELECT docket.mutate_run('system', 'hm-1', 'tap_hm.deleter(jsonb,jsonb)'::regprocedure)$$)
  LIKE '%deleted run hm-1 while mutate_run held it%', 'the message says what the mutation did');
SELECT is(left(pg_temp.err($$SELECT docket.mutate_run('system', 'hm-1', 'tap_hm.toucher(jsonb,jsonb)'::regprocedure)$$), 5),
  'DK005', 'a mutation that updates the locked run: DK005');
SELECT is(pg_temp.row_of('hm-1'), (SELECT r FROM before), 'unchanged');
SELECT is(left(pg_temp.err(format($$SELECT docket.mutate_run('system', 'hm-1', 'tap_hm.committer(jsonb,jsonb)'::regprocedure, %L)$$,
                                  jsonb_build_object('token', (SELECT claim_token FROM lease)))), 5),
  'DK005', 'a mutation that commits the run re-entrantly: DK005 (no lost update)');
SELECT is(pg_temp.row_of('hm-1'), (SELECT r FROM before), 'unchanged');
SELECT is(left(pg_temp.err($$SELECT docket.mutate_run('system', 'hm-1', 'tap_hm.reenterer(jsonb,jsonb)'::regprocedure)$$), 5),
  'DK005', 'a mutation that re-enters mutate_run on the run: DK005');
SELECT is(pg_temp.row_of('hm-1'), (SELECT r FROM before), 'unchanged');
SELECT is(docket.mutate_run('system', 'hm-1', 'tap_hm.advance(jsonb,jsonb)'::regprocedure) ->> 'outcome',
  'committed', 'a mutation that only decides still commits');

-- docket.fake_now: superusers only, finite only.
CREATE ROLE docket_tap_clock NOLOGIN;
SELECT is(pg_temp.err($$SET LOCAL ROLE docket_tap_clock; SET LOCAL docket.fake_now = '2030-01-01 00:00:00+00'$$),
  '42501 permission denied to set parameter "docket.fake_now"', 'a role that is not a superuser cannot move the clock');
RESET ROLE;
SET LOCAL docket.fake_now = 'infinity';
SELECT is(left(pg_temp.err($$SELECT docket.now()$$), 5), '22023', 'docket.now() refuses an infinite fake_now');
SELECT is(left(pg_temp.err($$SELECT * FROM docket.spawn_task('t', '{}', 'q-hm')$$), 5), '22023',
  'and so does every call that reads the clock');
SET LOCAL docket.fake_now = '2040-06-01 02:00:00+00';
SELECT is(docket.now(), '2040-06-01 02:00:00+00'::timestamptz, 'a finite fake_now is the clock');

SELECT * FROM finish();
ROLLBACK;
