-- docket.mutate_run: a pure decision function applied to a locked run.
BEGIN;
SELECT plan(85);

SET LOCAL TimeZone = 'UTC';
SET LOCAL docket.fake_now = '2040-06-01 01:00:00+00';

\ir lib/err.sql

-- A run document of graph tap-mu/h1 at sequence `seq`, with `patch` merged over it.
CREATE FUNCTION pg_temp.doc(id text, seq bigint, patch jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'tap-mu', 'graph_hash', 'h1',
                            'status', 'running', 'checkpoint_seq', seq,
                            'started_at', '2040-06-01T00:00:00Z') || patch $$;

-- mutate_run spelled with literals; returns the error or 'no error'.
CREATE FUNCTION pg_temp.mu_err(scope text, id text, fn text, arg jsonb DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$
  SELECT pg_temp.err(format('SELECT docket.mutate_run(%L, %L, %L, %L::jsonb)', scope, id, fn, arg)) $$;

-- One run row as text (ctid included: any UPDATE moves the row).
CREATE FUNCTION pg_temp.row_of(id text) RETURNS text LANGUAGE sql AS $$
  SELECT r.ctid::text || ' ' || r::text FROM docket.runs r WHERE run_id = id $$;

-- The columns a committed mutation writes, and their expected values.
CREATE FUNCTION pg_temp.state(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', status, 'checkpoint_seq', checkpoint_seq,
                            'checkpoint_type', checkpoint_type, 'updated_at', updated_at,
                            'wake_at', wake_at, 'claim_token', claim_token,
                            'claimed_at', claimed_at, 'claim_attempts', claim_attempts,
                            'claim_abandons', claim_abandons, 'poisoned_at', poisoned_at,
                            'poison_reason', poison_reason)
  FROM docket.runs WHERE run_id = id $$;
CREATE FUNCTION pg_temp.expect(status text, seq bigint, type text, updated_at timestamptz,
                               wake_at timestamptz) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('status', status, 'checkpoint_seq', seq, 'checkpoint_type', type,
                            'updated_at', updated_at, 'wake_at', wake_at, 'claim_token', NULL,
                            'claimed_at', NULL, 'claim_attempts', 0, 'claim_abandons', 0,
                            'poisoned_at', NULL, 'poison_reason', NULL) $$;

\o /dev/null
CREATE SCHEMA tap_mut;
CREATE TABLE tap_mut.calls (fn text);

-- The test mutation: `arg` spells the decision. Without "run" it proposes the
-- current run at seq + coalesce(step, 1) with `patch` merged over it; "run":
-- null proposes a NULL run.
CREATE FUNCTION tap_mut.decide(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT ROW(arg ->> 'decision',
             CASE WHEN arg ? 'run' THEN nullif(arg -> 'run', 'null'::jsonb)
                  ELSE run || jsonb_build_object('checkpoint_seq',
                                (run ->> 'checkpoint_seq')::bigint + coalesce((arg ->> 'step')::bigint, 1))
                           || coalesce(arg -> 'patch', '{}'::jsonb) END,
             (arg ->> 'checkpoint_type')::docket.checkpoint_type,
             arg ->> 'schedule',
             (arg ->> 'wake_at')::timestamptz,
             arg -> 'value')::docket.mutation_decision $$;

-- Echoes what it was given, changing nothing.
CREATE FUNCTION tap_mut.echo(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql IMMUTABLE AS $$
  SELECT ROW('no_change', NULL, NULL, NULL, NULL,
             jsonb_build_object('run', run, 'arg', arg))::docket.mutation_decision $$;

CREATE FUNCTION tap_mut.null_result(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$ SELECT NULL::docket.mutation_decision $$;

CREATE FUNCTION tap_mut.strict_decide(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE STRICT AS $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;

-- Raises TAP01 whenever it runs: proves a function was (or was not) invoked.
CREATE FUNCTION tap_mut.boom(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE plpgsql STABLE AS $$
BEGIN RAISE EXCEPTION 'boom was invoked' USING ERRCODE = 'TAP01'; END $$;

-- Wrong shapes, each raising TAP01 if it were ever invoked.
CREATE FUNCTION tap_mut.text_arg(run jsonb, arg text) RETURNS docket.mutation_decision
LANGUAGE plpgsql STABLE AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
CREATE FUNCTION tap_mut.json_run(run json, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE plpgsql STABLE AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
CREATE FUNCTION tap_mut.one_arg(run jsonb) RETURNS docket.mutation_decision
LANGUAGE plpgsql STABLE AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
CREATE FUNCTION tap_mut.three_args(run jsonb, arg jsonb, more jsonb) RETURNS docket.mutation_decision
LANGUAGE plpgsql STABLE AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
CREATE FUNCTION tap_mut.returns_jsonb(run jsonb, arg jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
CREATE TYPE tap_mut.lookalike AS (decision text, run jsonb, checkpoint_type docket.checkpoint_type,
                                  schedule text, wake_at timestamptz, value jsonb);
CREATE FUNCTION tap_mut.returns_lookalike(run jsonb, arg jsonb) RETURNS tap_mut.lookalike
LANGUAGE plpgsql STABLE AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
CREATE FUNCTION tap_mut.returns_set(run jsonb, arg jsonb) RETURNS SETOF docket.mutation_decision
LANGUAGE plpgsql STABLE AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
CREATE PROCEDURE tap_mut.a_procedure(run jsonb, arg jsonb)
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'invoked' USING ERRCODE = 'TAP01'; END $$;
-- VOLATILE: records each call, then decides no_change.
CREATE FUNCTION tap_mut.volatile_writer(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO tap_mut.calls VALUES ('volatile_writer');
  RETURN ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision;
END $$;

SELECT docket.save_graph('tap-mu', 'h1', '{"nodes": []}');
SELECT docket.save_graph('tap-mu', 'h2', '{"nodes": ["other"]}');
SELECT docket.insert_run('tenant:acme', pg_temp.doc('mu-a', 0), 'run_initialized', '2040-06-01 00:00:00+00', 'q-mu');
SELECT docket.insert_run('tenant:beta', pg_temp.doc('mu-b', 3), 'run_initialized', '2040-07-01 00:00:00+00', 'q-mu-b');
SELECT docket.insert_run('tenantless', pg_temp.doc('mu-t', 0), 'run_initialized', '2040-07-01 00:00:00+00', 'q-mu-t');
SELECT docket.insert_run('tenant:acme', pg_temp.doc('mu-p', 2), 'run_initialized', '2040-06-01 00:00:00+00', 'q-mu-p');
-- mu-a is claimed and has used counters; mu-p is poisoned.
UPDATE docket.runs SET claim_token = '00000000-0000-0000-0000-0000000000e1',
                       claimed_at = '2040-06-01 00:00:10+00', wake_at = NULL,
                       claim_attempts = 2, claim_abandons = 1
WHERE run_id = 'mu-a';
UPDATE docket.runs SET wake_at = NULL, claim_attempts = 3, claim_abandons = 2,
                       poisoned_at = '2040-06-01 00:30:00+00', poison_reason = 'max_claim_attempts_exceeded'
WHERE run_id = 'mu-p';
\o

-------------------------------------------------------------------------------
-- Arguments and the function's shape: 22023 before the lookup, never invoked
-------------------------------------------------------------------------------
SELECT pg_temp.row_of('mu-a') AS a0, pg_temp.row_of('mu-b') AS b0,
       pg_temp.row_of('mu-t') AS t0, pg_temp.row_of('mu-p') AS p0 \gset

SELECT alike(pg_temp.mu_err(NULL, 'mu-a', 'tap_mut.echo(jsonb,jsonb)'), '22023 bad_argument: %',
             'NULL scope raises 22023');
SELECT alike(pg_temp.mu_err('tenant:acme', NULL, 'tap_mut.echo(jsonb,jsonb)'), '22023 bad_argument: %',
             'NULL run_id raises 22023');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', NULL), '22023 bad_argument: %',
             'NULL mutation raises 22023');
SELECT alike(pg_temp.mu_err('tenant:', 'mu-a', 'tap_mut.echo(jsonb,jsonb)'), '23514 %',
             'malformed scope text raises the domain check (23514)');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.nope(jsonb,jsonb)'), '42883 %',
             'a function that does not exist is rejected by regprocedure input (42883)');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', '-'), '22023 bad_argument: %',
             'the invalid regprocedure ''-'' raises 22023');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.text_arg(jsonb,text)'), '22023 bad_argument: %',
             'a (jsonb, text) function raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.json_run(json,jsonb)'), '22023 bad_argument: %',
             'a (json, jsonb) function raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.one_arg(jsonb)'), '22023 bad_argument: %',
             'a one-argument function raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.three_args(jsonb,jsonb,jsonb)'), '22023 bad_argument: %',
             'a three-argument function raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.returns_jsonb(jsonb,jsonb)'), '22023 bad_argument: %',
             'a function returning jsonb raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.returns_lookalike(jsonb,jsonb)'), '22023 bad_argument: %',
             'a function returning a lookalike composite raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.returns_set(jsonb,jsonb)'), '22023 bad_argument: %',
             'a set-returning function raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.a_procedure(jsonb,jsonb)'), '22023 bad_argument: %',
             'a procedure raises 22023 and is not invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.volatile_writer(jsonb,jsonb)'), '22023 bad_argument: %',
             'a VOLATILE function raises 22023');
SELECT is((SELECT count(*)::int FROM tap_mut.calls), 0, 'the VOLATILE function was never invoked');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'jsonb_concat(jsonb,jsonb)'), '22023 bad_argument: %',
             'a built-in (jsonb, jsonb) -> jsonb function raises 22023');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-nope', 'tap_mut.returns_jsonb(jsonb,jsonb)'), '22023 bad_argument: %',
             'the function is judged before the lookup: a bad function for an unknown run raises 22023, not DK003');
SELECT alike(pg_temp.mu_err('tenant:beta', 'mu-a', 'tap_mut.volatile_writer(jsonb,jsonb)'), '22023 bad_argument: %',
             'a bad function for an out-of-scope run raises 22023, not DK003');

-------------------------------------------------------------------------------
-- Lookup under scope: DK003 without invoking the function
-------------------------------------------------------------------------------
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-nope', 'tap_mut.boom(jsonb,jsonb)'), 'DK003 not_found: run mu-nope%',
             'an unknown run raises DK003 and the function is not invoked');
SELECT alike(pg_temp.mu_err('tenant:beta', 'mu-a', 'tap_mut.boom(jsonb,jsonb)'), 'DK003 not_found: run mu-a%',
             'tenant B cannot mutate tenant A''s run (DK003, not invoked)');
SELECT alike(pg_temp.mu_err('tenantless', 'mu-a', 'tap_mut.boom(jsonb,jsonb)'), 'DK003 not_found: run mu-a%',
             'the tenantless scope cannot mutate a tenant''s run (DK003, not invoked)');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-t', 'tap_mut.boom(jsonb,jsonb)'), 'DK003 not_found: run mu-t%',
             'a tenant cannot mutate a tenantless run (DK003, not invoked)');

-- Once the run is visible the function runs, and its own errors propagate.
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.boom(jsonb,jsonb)'), 'TAP01 boom was invoked%',
             'an error raised by the mutation propagates with its own SQLSTATE');

-------------------------------------------------------------------------------
-- Malformed decisions: DK005, nothing changes
-------------------------------------------------------------------------------
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.null_result(jsonb,jsonb)'), 'DK005 invalid_mutation: %',
             'a NULL result raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.strict_decide(jsonb,jsonb)', NULL), 'DK005 invalid_mutation: %',
             'a STRICT mutation given a NULL arg yields NULL, which raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{}'), 'DK005 invalid_mutation: %',
             'a NULL decision raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "maybe"}'), 'DK005 invalid_mutation: %',
             'an unknown decision raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "COMMIT", "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'decisions are case-sensitive (DK005)');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "checkpoint_type": "signal_received", "schedule": "retain_claim"}'), 'DK005 invalid_mutation: %',
             'a commit with retain_claim raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "step": 0, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit at the current sequence raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "step": 2, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit skipping a sequence raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "patch": {"id": "mu-p"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit proposing another run id raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "patch": {"status": "waiting"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'immediate with status waiting raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "checkpoint_type": "suspended", "schedule": "external"}'), 'DK005 invalid_mutation: %',
             'external with status running raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "checkpoint_type": "run_completed", "schedule": "terminal"}'), 'DK005 invalid_mutation: %',
             'terminal with status running raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "checkpoint_type": "signal_received", "schedule": "immediate", "wake_at": "2040-07-01T00:00:00Z"}'), 'DK005 invalid_mutation: %',
             'a wake_at with immediate raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "checkpoint_type": "signal_received", "schedule": "at"}'), 'DK005 invalid_mutation: %',
             'at without a wake_at raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "checkpoint_type": "signal_received"}'), 'DK005 invalid_mutation: %',
             'a commit without a schedule raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "checkpoint_type": "signal_received", "schedule": "later"}'), 'DK005 invalid_mutation: %',
             'an unknown schedule raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit without a checkpoint_type raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "run": null, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit without a run raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "run": [], "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit whose run is not an object raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "run": {"id": "mu-a", "checkpoint_seq": 1}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit whose run misses keys raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "step": 0, "patch": {"checkpoint_seq": "1"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit with checkpoint_seq "1" (a string) raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "patch": {"status": "created"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit with status created raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "patch": {"started_at": "not a time"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit with a started_at that is not a timestamp raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "patch": {"graph_hash": "h2"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit changing graph_hash raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "patch": {"graph_id": "tap-other"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit changing graph_id raises DK005');
SELECT alike(pg_temp.mu_err('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "commit", "patch": {"started_at": "2040-06-01T00:00:01Z"}, "checkpoint_type": "signal_received", "schedule": "immediate"}'), 'DK005 invalid_mutation: %',
             'a commit changing started_at raises DK005');

SELECT is(pg_temp.row_of('mu-a'), :'a0', 'no refused mutation changed mu-a');
SELECT is(pg_temp.row_of('mu-b'), :'b0', 'no refused mutation changed mu-b');
SELECT is(pg_temp.row_of('mu-t'), :'t0', 'no refused mutation changed mu-t');
SELECT is(pg_temp.row_of('mu-p'), :'p0', 'no refused mutation changed mu-p');

-------------------------------------------------------------------------------
-- no_change and error: returned, nothing touched
-------------------------------------------------------------------------------
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.echo(jsonb,jsonb)', '{"signal": 1}'),
          jsonb_build_object('outcome', 'unchanged',
                             'value', jsonb_build_object('run', pg_temp.doc('mu-a', 0), 'arg', '{"signal": 1}'::jsonb)),
          'the function receives the stored document and the arg; an IMMUTABLE function is accepted');
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.echo(jsonb,jsonb)'),
          jsonb_build_object('outcome', 'unchanged',
                             'value', jsonb_build_object('run', pg_temp.doc('mu-a', 0), 'arg', NULL)),
          'arg defaults to NULL and reaches a non-strict function as NULL');
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "no_change", "value": {"k": [1, 2]}}'),
          '{"outcome": "unchanged", "value": {"k": [1, 2]}}'::jsonb, 'no_change returns its value tagged unchanged');
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "no_change"}'),
          '{"outcome": "unchanged", "value": null}'::jsonb, 'a NULL value is returned as JSON null');
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)',
                            '{"decision": "no_change", "value": "v", "checkpoint_type": "signal_received", "schedule": "immediate", "step": 5}'),
          '{"outcome": "unchanged", "value": "v"}'::jsonb, 'no_change ignores the commit fields');
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "error", "value": "not allowed"}'),
          '{"outcome": "error", "value": "not allowed"}'::jsonb, 'error returns its value tagged error (not raised)');
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)', '{"decision": "error", "value": null}'),
          '{"outcome": "error", "value": null}'::jsonb, 'error with a JSON null value');
SELECT is(pg_temp.row_of('mu-a'), :'a0', 'no_change and error leave the row byte-identical (claim, schedule, counters, timestamps)');

-------------------------------------------------------------------------------
-- commit: claim revoked, counters and poison reset, schedule applied
-------------------------------------------------------------------------------
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)',
            '{"decision": "commit", "patch": {"signal": {"b": 2, "a": [1]}, "tenant_id": "evil"}, "checkpoint_type": "signal_received", "schedule": "immediate", "value": 1}'),
          '{"outcome": "committed", "value": 1}'::jsonb, 'commit returns its value tagged committed');
SELECT is((SELECT document FROM docket.runs WHERE run_id = 'mu-a'),
          pg_temp.doc('mu-a', 1, '{"signal": {"b": 2, "a": [1]}, "tenant_id": "evil"}'),
          'the proposed document is stored verbatim');
SELECT is(pg_temp.state('mu-a'),
          pg_temp.expect('running', 1, 'signal_received', '2040-06-01 01:00:00+00', '2040-06-01 01:00:00+00'),
          'immediate: the current claim is revoked, counters reset, wake_at = updated_at = docket.now()');
SELECT is((SELECT tenant_id FROM docket.runs WHERE run_id = 'mu-a'), 'acme', 'the tenant never comes from the document');
SELECT alike(pg_temp.err($$SELECT docket.commit('tenant:acme', pg_temp.doc('mu-a', 2), 1, '00000000-0000-0000-0000-0000000000e1', 'node_completed', 'retain_claim')$$),
             'DK001 stale_fence: %', 'the revoked claim can no longer commit (DK001)');

SET LOCAL docket.fake_now = '2040-06-01 02:00:00+00';
SELECT is(docket.mutate_run('system', 'mu-a', 'tap_mut.decide(jsonb,jsonb)',
            '{"decision": "commit", "checkpoint_type": "suspended", "schedule": "at", "wake_at": "2040-08-01T00:00:00Z"}'),
          '{"outcome": "committed", "value": null}'::jsonb, 'the system scope mutates a tenant''s run (at, future)');
SELECT is(pg_temp.state('mu-a'),
          pg_temp.expect('running', 2, 'suspended', '2040-06-01 02:00:00+00', '2040-08-01 00:00:00+00'),
          'at: wake_at = the given time');

SET LOCAL docket.fake_now = '2040-06-01 03:00:00+00';
SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)',
            '{"decision": "commit", "checkpoint_type": "resumed", "schedule": "at", "wake_at": "2040-05-01T00:00:00Z"}') ->> 'outcome',
          'committed', 'at with a past time commits');
SELECT is(pg_temp.state('mu-a'),
          pg_temp.expect('running', 3, 'resumed', '2040-06-01 03:00:00+00', '2040-05-01 00:00:00+00'),
          'at in the past: the wake is recorded as given');
SELECT results_eq($$SELECT outcome, run_id, checkpoint_seq FROM docket.claim_due(now => docket.now(), claim_limit => 5, queue => 'q-mu')$$,
                  $$VALUES ('lease'::text, 'mu-a'::text, 3::bigint)$$, 'an at in the past is due at once');
SELECT isnt((SELECT claim_token FROM docket.runs WHERE run_id = 'mu-a'), NULL, 'mu-a is claimed again');

SELECT is(docket.mutate_run('tenant:acme', 'mu-a', 'tap_mut.decide(jsonb,jsonb)',
            '{"decision": "commit", "patch": {"status": "waiting"}, "checkpoint_type": "suspended", "schedule": "external"}') ->> 'outcome',
          'committed', 'external with status waiting commits over a claim_due lease');
SELECT is(pg_temp.state('mu-a'),
          pg_temp.expect('waiting', 4, 'suspended', '2040-06-01 03:00:00+00', NULL),
          'external: the lease is revoked, no wake, claim_attempts reset');

SELECT is(docket.mutate_run('tenant:acme', 'mu-p', 'tap_mut.decide(jsonb,jsonb)',
            '{"decision": "commit", "checkpoint_type": "retried", "schedule": "immediate"}') ->> 'outcome',
          'committed', 'a poisoned run can be mutated');
SELECT is(pg_temp.state('mu-p'),
          pg_temp.expect('running', 3, 'retried', '2040-06-01 03:00:00+00', '2040-06-01 03:00:00+00'),
          'commit clears poison facts and resets attempt and abandon counts');

SELECT is(docket.mutate_run('system', 'mu-b', 'tap_mut.decide(jsonb,jsonb)',
            '{"decision": "commit", "patch": {"status": "cancelled"}, "checkpoint_type": "run_cancelled", "schedule": "terminal"}') ->> 'outcome',
          'committed', 'terminal (cancelled) commits');
SELECT is(pg_temp.state('mu-b'),
          pg_temp.expect('cancelled', 4, 'run_cancelled', '2040-06-01 03:00:00+00', NULL),
          'terminal: the pending wake is removed');
SELECT is((SELECT tenant_id FROM docket.runs WHERE run_id = 'mu-b'), 'beta', 'the system scope does not change the tenant');

SELECT is(docket.mutate_run('tenantless', 'mu-t', 'tap_mut.decide(jsonb,jsonb)',
            '{"decision": "commit", "patch": {"status": "waiting"}, "checkpoint_type": "suspended", "schedule": "external"}') ->> 'outcome',
          'committed', 'the tenantless scope mutates a tenantless run');
SELECT is(pg_temp.state('mu-t'),
          pg_temp.expect('waiting', 1, 'suspended', '2040-06-01 03:00:00+00', NULL),
          'external: no wake');
SELECT is((SELECT tenant_id FROM docket.runs WHERE run_id = 'mu-t'), NULL, 'a tenantless run stays tenantless');

SELECT is((SELECT count(*)::int FROM docket.run_events WHERE run_id LIKE 'mu-%'), 0, 'mutate_run never appends events');
SELECT is((SELECT count(*)::int FROM tap_mut.calls), 0, 'the VOLATILE function was never invoked at all');

SELECT * FROM finish();
ROLLBACK;
