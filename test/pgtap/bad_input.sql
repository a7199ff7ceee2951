-- Hostile input (issue 8), the systematic sweep: every public function (every
-- function of schema docket that docket_operator may EXECUTE, read from the
-- catalog, so a new function is swept without anyone adding it here) is called
-- once per argument and hostile value class of that argument's type (NULLs,
-- empty and 2 MB strings, odd unicode, scopes it may not take, JSON scalars,
-- 2 MB and 10,000-deep documents, wrong-typed fields, infinite and far-off
-- timestamps, negative, zero and huge numbers, arrays with NULL elements or of
-- unequal length, mutations that write, re-enter or may not be executed,
-- roles that do not exist ...), the other arguments kept valid on a fixture
-- with runs and tasks in each interesting state.
--
-- Each call runs as a role granted docket_operator, in a subtransaction, and
-- is always rolled back. It passes when it is refused with a documented
-- SQLSTATE (DESIGN.md, docs/run-store.md, docs/tasks.md, docs/security.md;
-- never XX000 or another internal class) and every docket table is unchanged
-- afterwards (a fingerprint of every table, read as superuser), or when it
-- succeeds and is listed below as an accepted case (with its reason, and
-- whether it may write). A backend crash ends the script early: the plan then
-- fails. The hostile values are in pg_temp.hostile (per type) and
-- pg_temp.hostile_named (per argument name); a public function whose argument
-- type has no hostile values, or that has no valid baseline call, fails here.
-- The older suites hostile_clock, hostile_sizes, hostile_mutation and
-- hostile_token test the boundaries of each rule; this one sweeps.
BEGIN;
SET LOCAL TimeZone = 'UTC';
-- A guard against a call that loops: each function's sweep is one statement.
SET LOCAL statement_timeout = '120s';

\o /dev/null
SET LOCAL docket.fake_now = '2041-03-01 00:00:00+00';
SELECT docket.now();  -- loads the library (its settings)

CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS
  $$ SELECT '2041-03-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
CREATE FUNCTION pg_temp.doc(id text, seq bigint) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'bi-g', 'graph_hash', 'h1', 'status', 'running',
                            'checkpoint_seq', seq, 'started_at', '2041-03-01T00:00:00Z') $$;

-------------------------------------------------------------------------------
-- The caller: a role granted docket_operator (every public function).
-------------------------------------------------------------------------------
CREATE ROLE docket_tap_bi_op NOLOGIN;
GRANT docket_operator TO docket_tap_bi_op;
-- A role for bind_tenant to bind (the caller stays unbound).
CREATE ROLE docket_tap_bi_app NOLOGIN;

-------------------------------------------------------------------------------
-- Mutation functions for mutate_run's regprocedure argument.
-------------------------------------------------------------------------------
CREATE SCHEMA tap_bi;
GRANT USAGE ON SCHEMA tap_bi TO docket_tap_bi_op;
CREATE FUNCTION tap_bi.no_change(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_bi.advance(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT ROW('commit', run || jsonb_build_object('checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1),
             'signal_received', 'immediate', NULL, NULL)::docket.mutation_decision $$;
-- Writes the run as its owner (a superuser's SECURITY DEFINER helper the caller may run).
CREATE FUNCTION tap_bi.touch_run(id text) RETURNS void LANGUAGE plpgsql VOLATILE SECURITY DEFINER AS
  $$ BEGIN UPDATE docket.runs SET document = document || '{"evil": true}' WHERE run_id = id; END $$;
CREATE FUNCTION tap_bi.definer_writer(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_bi.touch_run(run ->> 'id');
  SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
-- Writes docket.runs with the caller's own privileges (it has none on the table).
CREATE FUNCTION tap_bi.delete_run(id text) RETURNS void LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN DELETE FROM docket.runs WHERE run_id = id; END $$;
CREATE FUNCTION tap_bi.caller_writer(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_bi.delete_run(run ->> 'id');
  SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
-- Re-enters docket on the locked run: another mutate_run, append_events, retry_poisoned_run.
CREATE FUNCTION tap_bi.mutate_again(id text) RETURNS void LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN PERFORM docket.mutate_run('tenant:acme', id, 'tap_bi.advance(jsonb,jsonb)'::regprocedure); END $$;
CREATE FUNCTION tap_bi.reenter_mutate(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_bi.mutate_again(run ->> 'id');
  SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_bi.append_again(id text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM docket.append_events('tenant:acme', id, '[{"seq": 2, "type": "forged", "payload": null}]');
END $$;
CREATE FUNCTION tap_bi.reenter_append(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_bi.append_again(run ->> 'id');
  SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_bi.retry_again(id text) RETURNS void LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN PERFORM docket.retry_poisoned_run('tenant:acme', id); END $$;
CREATE FUNCTION tap_bi.reenter_retry(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT tap_bi.retry_again(run ->> 'id');
  SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
-- Shapes: volatile, a NULL decision, a commit proposing another id, an error of its own.
CREATE FUNCTION tap_bi.volatile_one(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql VOLATILE AS $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_bi.null_decision(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$ SELECT NULL::docket.mutation_decision $$;
CREATE FUNCTION tap_bi.other_id(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT ROW('commit', run || jsonb_build_object('id', 'bi-claimed',
                                                 'checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1),
             'signal_received', 'immediate', NULL, NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_bi.infinite_wake(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$
  SELECT ROW('commit', run || jsonb_build_object('checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1),
             'signal_received', 'at', 'infinity', NULL)::docket.mutation_decision $$;
CREATE FUNCTION tap_bi.raises(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$ SELECT CASE WHEN 1 / 0 = 0 THEN NULL::docket.mutation_decision END $$;
-- One the caller may not execute.
CREATE FUNCTION tap_bi.not_mine(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql STABLE AS $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$;
REVOKE EXECUTE ON FUNCTION tap_bi.not_mine(jsonb, jsonb) FROM PUBLIC;

-------------------------------------------------------------------------------
-- The fixture (as superuser, docket.now() at t(0) = 2041-03-01 UTC; tenant acme).
-------------------------------------------------------------------------------
CREATE TEMP TABLE fx (k text PRIMARY KEY, v text NOT NULL);
SELECT docket.save_graph('bi-g', 'h1', '{"nodes": []}');
-- Run store: a due run with one event, a claimed run, a poisoned run.
SELECT docket.insert_run('tenant:acme', pg_temp.doc('bi-ready', 0), 'run_initialized', pg_temp.t(0), 'bi-q-ready');
SELECT docket.append_events('tenant:acme', 'bi-ready', '[{"seq": 1, "type": "t", "payload": null}]');
SELECT docket.insert_run('tenant:acme', pg_temp.doc('bi-claimed', 0), 'run_initialized', pg_temp.t(0), 'bi-q-claimed');
INSERT INTO fx SELECT 'run_token', claim_token::text FROM docket.claim_due(pg_temp.t(0), queue => 'bi-q-claimed');
SELECT docket.insert_run('tenant:acme', pg_temp.doc('bi-poison', 0), 'run_initialized', pg_temp.t(0), 'bi-q-poison');
SELECT * FROM docket.claim_due(pg_temp.t(0), 1, 1000, 1, NULL, 'bi-q-poison');
SELECT * FROM docket.claim_due(pg_temp.t(2), 1, 1000, 1, NULL, 'bi-q-poison');
-- Another tenant's run.
SELECT docket.insert_run('tenant:zeta', pg_temp.doc('bi-zeta', 0), 'run_initialized', pg_temp.t(0), 'bi-q-zeta');
-- Tasks: one claimed with a stored step (the worker calls' subject), a child it
-- can join, a finished one, and another claimed one (its token is a stranger's).
INSERT INTO fx SELECT 'task', run_id FROM docket.spawn_task('bi_work', '{"n": 1}', 'bi-tq', 'tenant:acme');
INSERT INTO fx SELECT 'task_token', claim_token::text FROM docket.claim_tasks('bi-tq', 1, 30000, 10, pg_temp.t(0));
SELECT docket.complete_step((SELECT v FROM fx WHERE k = 'task'), (SELECT v::uuid FROM fx WHERE k = 'task_token'),
                            'stored-step', '{"v": 1}');
INSERT INTO fx SELECT 'child', run_id FROM docket.spawn_task('bi_child', '{}', 'bi-cq', 'tenant:acme');
INSERT INTO fx SELECT 'done', run_id FROM docket.spawn_task('bi_done', '{}', 'bi-dq', 'tenant:acme');
INSERT INTO fx SELECT 'done_token', claim_token::text FROM docket.claim_tasks('bi-dq', 1, 30000, 10, pg_temp.t(0));
SELECT docket.complete_task((SELECT v FROM fx WHERE k = 'done'), (SELECT v::uuid FROM fx WHERE k = 'done_token'), '{"r": 1}');
INSERT INTO fx SELECT 'other', run_id FROM docket.spawn_task('bi_other', '{}', 'bi-oq', 'tenant:acme');
INSERT INTO fx SELECT 'other_token', claim_token::text FROM docket.claim_tasks('bi-oq', 1, 30000, 10, pg_temp.t(0));
-- An emitted event, a schedule that is due (created 10 minutes earlier), a binding.
SELECT docket.emit_event('bi-emitted', '{"x": 1}', 'tenant:acme');
SET LOCAL docket.fake_now = '2041-02-28 23:50:00+00';
SELECT docket.schedule_task('bi-s0', '*/5 * * * *', 'bi_sched', '{}', 'bi-sq', 'tenant:acme', '{}');
SET LOCAL docket.fake_now = '2041-03-01 00:00:00+00';
SELECT docket.bind_tenant('docket_tap_bi_app', 'zeta');

-- fx(k) as a SQL literal of type ty.
CREATE FUNCTION pg_temp.lit(key text, ty text DEFAULT 'text') RETURNS text LANGUAGE sql AS
  $$ SELECT format('%L::%s', (SELECT v FROM fx WHERE k = key), ty) $$;
CREATE FUNCTION pg_temp.ts(s double precision) RETURNS text LANGUAGE sql AS
  $$ SELECT format('%L::timestamptz', pg_temp.t(s)) $$;

-------------------------------------------------------------------------------
-- The valid call of every public function (its baseline): one expression per
-- argument, defaults included. A hostile value replaces one of them at a time.
-------------------------------------------------------------------------------
CREATE TEMP TABLE baseline (fn regprocedure PRIMARY KEY, args text[] NOT NULL);
INSERT INTO baseline VALUES
  ('docket.now()', '{}'),
  ('docket.save_graph(text, text, jsonb)', ARRAY[$$'bi-g2'$$, $$'h1'$$, $$'{"nodes": []}'$$]),
  ('docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text)',
   ARRAY[$$'tenant:acme'$$, format('%L', pg_temp.doc('bi-new', 0)), $$'run_initialized'$$, pg_temp.ts(0), $$'bi-q-new'$$]),
  ('docket.fetch_run(docket.scope, text)', ARRAY[$$'tenant:acme'$$, $$'bi-ready'$$]),
  ('docket.inspect_run(docket.scope, text)', ARRAY[$$'tenant:acme'$$, $$'bi-ready'$$]),
  ('docket.list_runs(docket.scope, int, timestamptz, text, text, text, text[])',
   ARRAY[$$'tenant:acme'$$, '10', pg_temp.ts(60), $$'bi-zzz'$$, $$'bi-g'$$, $$'h1'$$, $$'{running}'$$]),
  ('docket.claim_due(timestamptz, int, bigint, int, text, text)',
   ARRAY[pg_temp.ts(0), '1', '30000', '3', 'NULL', $$'bi-q-ready'$$]),
  ('docket.refresh_claim(text, uuid, timestamptz)',
   ARRAY[$$'bi-claimed'$$, pg_temp.lit('run_token', 'uuid'), pg_temp.ts(1)]),
  ('docket.release_claim(text, uuid, timestamptz)',
   ARRAY[$$'bi-claimed'$$, pg_temp.lit('run_token', 'uuid'), pg_temp.ts(1)]),
  ('docket.abandon_claim(text, uuid, bigint, timestamptz, timestamptz, int, boolean, int, int)',
   ARRAY[$$'bi-claimed'$$, pg_temp.lit('run_token', 'uuid'), '0', pg_temp.ts(1), pg_temp.ts(60), '3', 'false',
         '1000', '60000']),
  ('docket.commit(docket.scope, jsonb, bigint, uuid, docket.checkpoint_type, text, timestamptz)',
   ARRAY[$$'tenant:acme'$$, format('%L', pg_temp.doc('bi-claimed', 1)), '0', pg_temp.lit('run_token', 'uuid'),
         $$'node_completed'$$, $$'at'$$, pg_temp.ts(3600)]),
  ('docket.mutate_run(docket.scope, text, regprocedure, jsonb)',
   ARRAY[$$'tenant:acme'$$, $$'bi-ready'$$, $$'tap_bi.advance(jsonb,jsonb)'$$, $$'{"a": 1}'$$]),
  ('docket.retry_poisoned_run(docket.scope, text, timestamptz)',
   ARRAY[$$'tenant:acme'$$, $$'bi-poison'$$, pg_temp.ts(1)]),
  ('docket.append_events(docket.scope, text, jsonb)',
   ARRAY[$$'tenant:acme'$$, $$'bi-ready'$$, $$'[{"seq": 2, "type": "t", "payload": {"a": 1}}]'$$]),
  ('docket.list_events(docket.scope, text, bigint, int)', ARRAY[$$'tenant:acme'$$, $$'bi-ready'$$, '0', '100']),
  ('docket.spawn_task(text, jsonb, text, docket.scope, jsonb)',
   ARRAY[$$'bi_new'$$, $$'{"a": 1}'$$, $$'bi-nq'$$, $$'tenant:acme'$$,
         $$'{"max_attempts": 3, "delay_ms": 1000, "headers": {"h": 1}}'$$]),
  ('docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb)',
   ARRAY[$$'bi_new'$$, $$ARRAY['{"a": 1}']::jsonb[]$$, $$'bi-nq'$$, $$'tenant:acme'$$, $$'{"max_attempts": 3}'$$]),
  ('docket.emit_event(text, jsonb, docket.scope)', ARRAY[$$'bi-ev'$$, $$'{"x": 1}'$$, $$'tenant:acme'$$]),
  ('docket.cancel_task(docket.scope, text, text)', ARRAY[$$'tenant:acme'$$, pg_temp.lit('child'), $$'why'$$]),
  ('docket.task_result(docket.scope, text)', ARRAY[$$'tenant:acme'$$, pg_temp.lit('done')]),
  ('docket.claim_tasks(text, int, bigint, int, timestamptz)', ARRAY[$$'bi-cq'$$, '1', '30000', '10', pg_temp.ts(0)]),
  ('docket.await_due(text, int)', ARRAY[$$'bi-aq'$$, '0']),
  ('docket.await_tasks(text, int, bigint, int, int)', ARRAY[$$'bi-aq'$$, '1', '30000', '10', '0']),
  ('docket.complete_tasks(text[], uuid[], jsonb[])',
   ARRAY[format('ARRAY[%s]', pg_temp.lit('task')), format('ARRAY[%s]', pg_temp.lit('task_token', 'uuid')),
         $$ARRAY['{"r": 1}']::jsonb[]$$]),
  ('docket.complete_steps(text[], uuid[], text[], jsonb[])',
   ARRAY[format('ARRAY[%s]', pg_temp.lit('task')), format('ARRAY[%s]', pg_temp.lit('task_token', 'uuid')),
         $$ARRAY['s2']$$, $$ARRAY['{"v": 2}']::jsonb[]$$]),
  ('docket.step_states(text, uuid)', ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid')]),
  ('docket.complete_step(text, uuid, text, jsonb)',
   ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), $$'s2'$$, $$'{"v": 2}'$$]),
  ('docket.complete_task(text, uuid, jsonb)',
   ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), $$'{"r": 1}'$$]),
  ('docket.fail_task(text, uuid, jsonb, boolean)',
   ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), $$'{"message": "no"}'$$, 'true']),
  ('docket.heartbeat(text, uuid, bigint)', ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), '60000']),
  ('docket.sleep_until(text, uuid, text, timestamptz)',
   ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), $$'nap'$$, pg_temp.ts(3600)]),
  ('docket.await_event(text, uuid, text, text, bigint)',
   ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), $$'wait'$$, $$'bi-ev2'$$, '60000']),
  ('docket.await_task(text, uuid, text, text)',
   ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), $$'join'$$, pg_temp.lit('child')]),
  ('docket.defer_task(text, uuid, int, int, int)',
   ARRAY[pg_temp.lit('task'), pg_temp.lit('task_token', 'uuid'), '20', '1000', '60000']),
  ('docket.cleanup(interval, int)', ARRAY[$$'1 day'$$, '1000']),
  ('docket.cron_next(text, timestamptz)', ARRAY[$$'*/5 * * * *'$$, pg_temp.ts(0)]),
  ('docket.schedule_task(text, text, text, jsonb, text, docket.scope, jsonb)',
   ARRAY[$$'bi-s1'$$, $$'0 * * * *'$$, $$'bi_sched'$$, $$'{"p": 1}'$$, $$'bi-sq'$$, $$'tenant:acme'$$,
         $$'{"max_attempts": 2}'$$]),
  ('docket.unschedule_task(text)', ARRAY[$$'bi-s0'$$]),
  ('docket.list_schedules(docket.scope)', ARRAY[$$'tenant:acme'$$]),
  ('docket.fire_schedules(int)', ARRAY['1000']),
  ('docket.queue_stats(docket.scope)', ARRAY[$$'tenant:acme'$$]),
  ('docket.task_history(docket.scope, text, bigint, int)', ARRAY[$$'tenant:acme'$$, pg_temp.lit('task'), '0', '100']),
  ('docket.list_tasks(docket.scope, text, text, text, text, int)',
   ARRAY[$$'tenant:acme'$$, $$'bi-tq'$$, $$'running'$$, $$'bi_work'$$, 'NULL', '100']),
  ('docket.inspect_task(docket.scope, text)', ARRAY[$$'tenant:acme'$$, pg_temp.lit('task')]),
  ('docket.list_poisoned(docket.scope, int, timestamptz, text)', ARRAY[$$'tenant:acme'$$, '100', 'NULL', 'NULL']),
  ('docket.task_resume(jsonb, jsonb)',
   ARRAY[$$'{"id": "r", "status": "waiting", "checkpoint_seq": 3, "waiting": {"step": "s", "kind": "event"}}'$$,
         $$'{"step": "s", "kind": "event", "reason": "event"}'$$]),
  ('docket.task_cancel(jsonb, jsonb)',
   ARRAY[$$'{"id": "r", "status": "running", "checkpoint_seq": 3}'$$, $$'{"reason": "why"}'$$]),
  ('docket.bind_tenant(regrole, text)', ARRAY[$$'docket_tap_bi_app'$$, $$'acme'$$]),
  ('docket.unbind_tenant(regrole, text)', ARRAY[$$'docket_tap_bi_app'$$, $$'zeta'$$]);

-------------------------------------------------------------------------------
-- Hostile values per argument type. %v stands for the argument's valid value.
-------------------------------------------------------------------------------
CREATE TEMP TABLE hostile (ty regtype, class text, expr text, PRIMARY KEY (ty, class));
INSERT INTO hostile VALUES
  ('text', 'null', 'NULL'),
  ('text', 'empty', $$''$$),
  ('text', 'blank', $$' '$$),
  ('text', 'huge-2MB', $$repeat('x', 2097152)$$),
  ('text', 'long-2kB-multibyte', $$repeat('é', 1024)$$),
  ('text', 'control-chars', $$E'a\x01b\x1fc\td\ne\rf'$$),
  ('text', 'odd-unicode', $$E'\u202e\u200b\ufeff\U0001F600\u0301'$$),
  ('text', 'format-and-quotes', $$'%s%n%1$s'' "; DROP TABLE docket.runs; --\'$$),
  ('text', 'scope-words', $$'system'$$),
  ('text', 'valid-twice', $$%v || %v$$),
  ('docket.scope', 'null', 'NULL'),
  ('docket.scope', 'empty', $$''$$),
  ('docket.scope', 'system', $$'system'$$),
  ('docket.scope', 'tenantless', $$'tenantless'$$),
  ('docket.scope', 'other-tenant', $$'tenant:zeta'$$),
  ('docket.scope', 'malformed-no-id', $$'tenant:'$$),
  ('docket.scope', 'malformed-word', $$'acme'$$),
  ('docket.scope', 'malformed-case', $$'TENANT:acme'$$),
  ('docket.scope', 'huge-tenant-2MB', $$'tenant:' || repeat('x', 2097152)$$),
  ('docket.scope', 'odd-unicode-tenant', $$E'tenant:\u202e\u200b'$$),
  ('jsonb', 'null', 'NULL'),
  ('jsonb', 'json-null', $$'null'$$),
  ('jsonb', 'empty-array', $$'[]'$$),
  ('jsonb', 'empty-object', $$'{}'$$),
  ('jsonb', 'number', $$'-1'$$),
  ('jsonb', 'huge-number', $$'1e1000'$$),
  ('jsonb', 'string', $$'"x"'$$),
  ('jsonb', 'boolean', $$'true'$$),
  ('jsonb', 'huge-2MB', $$jsonb_build_object('pad', repeat('x', 2097152))$$),
  ('jsonb', 'deep-array-10000', $$(repeat('[', 10000) || repeat(']', 10000))::jsonb$$),
  ('jsonb', 'deep-object-10000', $$(repeat('{"a":', 10000) || '1' || repeat('}', 10000))::jsonb$$),
  ('jsonb', 'fields-as-arrays',
   $$(SELECT coalesce(jsonb_object_agg(k, '[]'::jsonb), '{}') FROM jsonb_object_keys(CASE jsonb_typeof(%v) WHEN 'object' THEN %v ELSE '{"k": 1}' END) k)$$),
  ('jsonb', 'fields-as-strings',
   $$(SELECT coalesce(jsonb_object_agg(k, '"x"'::jsonb), '{}') FROM jsonb_object_keys(CASE jsonb_typeof(%v) WHEN 'object' THEN %v ELSE '{"k": 1}' END) k)$$),
  ('jsonb', 'fields-as-huge-numbers',
   $$(SELECT coalesce(jsonb_object_agg(k, '9223372036854775808'::jsonb), '{}') FROM jsonb_object_keys(CASE jsonb_typeof(%v) WHEN 'object' THEN %v ELSE '{"k": 1}' END) k)$$),
  ('jsonb', 'fields-as-negative',
   $$(SELECT coalesce(jsonb_object_agg(k, '-1'::jsonb), '{}') FROM jsonb_object_keys(CASE jsonb_typeof(%v) WHEN 'object' THEN %v ELSE '{"k": 1}' END) k)$$),
  ('jsonb', 'unknown-key', $$CASE jsonb_typeof(%v) WHEN 'object' THEN %v || '{"zz_unknown": 1}' ELSE '{"zz_unknown": 1}' END$$),
  ('timestamptz', 'null', 'NULL'),
  ('timestamptz', 'infinity', $$'infinity'$$),
  ('timestamptz', '-infinity', $$'-infinity'$$),
  ('timestamptz', 'max-294276', $$'294276-12-31 23:59:59.999999+00'$$),
  ('timestamptz', 'min-4713BC', $$'4713-11-24 00:00:00+00 BC'$$),
  ('timestamptz', 'epoch-1970', $$'1970-01-01 00:00:00+00'$$),
  ('timestamptz', 'ten-minutes-ahead', $$'2041-03-01 00:10:00+00'$$),
  ('timestamptz', 'century-ahead', $$'2141-03-01 00:00:00+00'$$),
  ('integer', 'null', 'NULL'),
  ('integer', 'minus-one', '-1'),
  ('integer', 'zero', '0'),
  ('integer', 'int-max', '2147483647'),
  ('integer', 'int-min', '-2147483648'),
  ('bigint', 'null', 'NULL'),
  ('bigint', 'minus-one', '-1'),
  ('bigint', 'zero', '0'),
  ('bigint', 'int-max', '2147483647'),
  ('bigint', 'bigint-max', '9223372036854775807'),
  ('bigint', 'bigint-min', '-9223372036854775808'),
  ('boolean', 'null', 'NULL'),
  ('boolean', 'negated', 'NOT %v'),
  ('uuid', 'null', 'NULL'),
  ('uuid', 'zero', $$'00000000-0000-0000-0000-000000000000'$$),
  ('uuid', 'random', $$'5f0c6a52-8d2b-4a5e-9c1e-2b7f3e9d1a44'$$),
  ('interval', 'null', 'NULL'),
  ('interval', 'negative', $$'-1 second'$$),
  ('interval', 'zero', $$'0'$$),
  ('interval', 'huge', $$'178000000 years'$$),
  ('interval', 'huge-negative', $$'-178000000 years'$$),
  ('text[]', 'null', 'NULL'),
  ('text[]', 'empty', $$'{}'$$),
  ('text[]', 'null-element', $$'{NULL}'$$),
  ('text[]', 'valid-and-null', $$%v || NULL::text$$),
  ('text[]', 'valid-twice', $$%v || %v$$),
  ('text[]', 'empty-element', $$ARRAY['']$$),
  ('text[]', 'huge-element-2MB', $$ARRAY[repeat('x', 2097152)]$$),
  ('text[]', 'two-dimensional', $$ARRAY[[%v[1]], [%v[1]]]$$),
  ('uuid[]', 'null', 'NULL'),
  ('uuid[]', 'empty', $$'{}'$$),
  ('uuid[]', 'null-element', $$'{NULL}'$$),
  ('uuid[]', 'valid-and-null', $$%v || NULL::uuid$$),
  ('uuid[]', 'valid-twice', $$%v || %v$$),
  ('uuid[]', 'random-element', $$ARRAY['5f0c6a52-8d2b-4a5e-9c1e-2b7f3e9d1a44'::uuid]$$),
  ('jsonb[]', 'null', 'NULL'),
  ('jsonb[]', 'empty', $$'{}'$$),
  ('jsonb[]', 'null-element', $$'{NULL}'::jsonb[]$$),
  ('jsonb[]', 'valid-and-null', $$%v || NULL::jsonb$$),
  ('jsonb[]', 'valid-twice', $$%v || %v$$),
  ('jsonb[]', 'scalar-elements', $$ARRAY['null', '[]', '"x"', '1']::jsonb[]$$),
  ('jsonb[]', 'huge-element-2MB', $$ARRAY[jsonb_build_object('pad', repeat('x', 2097152))]$$),
  ('jsonb[]', 'deep-element-10000', $$ARRAY[(repeat('[', 10000) || repeat(']', 10000))::jsonb]$$),
  ('regprocedure', 'null', 'NULL'),
  ('regprocedure', 'zero-oid', $$'-'$$),
  ('regprocedure', 'dangling-oid', $$4294967294::oid$$),
  ('regprocedure', 'wrong-signature', $$'docket.now()'$$),
  ('regprocedure', 'internal-helper', $$'docket._run_document(jsonb,text,text,text,text,bigint,timestamptz)'$$),
  ('regprocedure', 'volatile', $$'tap_bi.volatile_one(jsonb,jsonb)'$$),
  ('regprocedure', 'not-executable', $$'tap_bi.not_mine(jsonb,jsonb)'$$),
  ('regprocedure', 'writes-as-definer', $$'tap_bi.definer_writer(jsonb,jsonb)'$$),
  ('regprocedure', 'writes-as-caller', $$'tap_bi.caller_writer(jsonb,jsonb)'$$),
  ('regprocedure', 'reenters-mutate_run', $$'tap_bi.reenter_mutate(jsonb,jsonb)'$$),
  ('regprocedure', 'reenters-append_events', $$'tap_bi.reenter_append(jsonb,jsonb)'$$),
  ('regprocedure', 'reenters-retry_poisoned_run', $$'tap_bi.reenter_retry(jsonb,jsonb)'$$),
  ('regprocedure', 'null-decision', $$'tap_bi.null_decision(jsonb,jsonb)'$$),
  ('regprocedure', 'commits-another-id', $$'tap_bi.other_id(jsonb,jsonb)'$$),
  ('regprocedure', 'wakes-at-infinity', $$'tap_bi.infinite_wake(jsonb,jsonb)'$$),
  ('regprocedure', 'raises-its-own-error', $$'tap_bi.raises(jsonb,jsonb)'$$),
  ('regprocedure', 'docket-task_cancel', $$'docket.task_cancel(jsonb,jsonb)'$$),
  ('regrole', 'null', 'NULL'),
  ('regrole', 'zero-oid', $$'-'$$),
  ('regrole', 'dangling-oid', $$4294967294::oid$$),
  ('regrole', 'superuser', $$(SELECT oid FROM pg_roles WHERE rolsuper ORDER BY oid LIMIT 1)$$),
  ('regrole', 'docket-role', $$'docket_operator'$$),
  ('regrole', 'the-caller', $$current_user$$),
  ('docket.checkpoint_type', 'null', 'NULL'),
  ('docket.checkpoint_type', 'terminal-type', $$'run_completed'$$),
  ('docket.checkpoint_type', 'suspended', $$'suspended'$$);

-- Values for one argument name (in every function that has it), besides its type's.
CREATE TEMP TABLE hostile_named (arg text, class text, expr text, PRIMARY KEY (arg, class));
INSERT INTO hostile_named VALUES
  ('run_id', 'another-tenants-run', $$'bi-zeta'$$),
  ('run_id', 'poisoned-run', $$'bi-poison'$$),
  ('run_id', 'finished-task', format('%L', (SELECT v FROM fx WHERE k = 'done'))),
  ('claim_token', 'another-claims-token', format('%L', (SELECT v FROM fx WHERE k = 'other_token'))),
  ('cron', 'never-fires', $$'0 0 30 2 *'$$),
  ('cron', 'six-fields', $$'* * * * * *'$$),
  ('cron', 'zero-step', $$'*/0 * * * *'$$),
  ('cron', 'huge-step', $$'*/2147483648 * * * *'$$),
  ('cron', 'out-of-range', $$'60 24 32 13 8'$$),
  ('cron', 'backwards-range', $$'5-3 * * * *'$$),
  ('cron', 'unknown-macro', $$'@reboot'$$),
  ('cron', 'long-list', $$array_to_string(array_fill('1'::text, ARRAY[100000]), ',') || ' * * * *'$$),
  ('options', 'max-attempts-huge', $$'{"max_attempts": 2147483648}'$$),
  ('options', 'max-attempts-zero', $$'{"max_attempts": 0}'$$),
  ('options', 'retry-huge', $$'{"retry": {"kind": "exponential", "base_ms": 9223372036854775807, "factor": 1e300, "max_ms": 9223372036854775807}}'$$),
  ('options', 'retry-negative', $$'{"retry": {"kind": "fixed", "base_ms": -1}}'$$),
  ('options', 'run-at-infinity', $$'{"run_at": "infinity"}'$$),
  ('options', 'run-at-294276', $$'{"run_at": "294276-12-31T23:59:59Z"}'$$),
  ('options', 'delay-huge', $$'{"delay_ms": 9223372036854775807}'$$),
  ('options', 'delay-fraction', $$'{"delay_ms": 0.5}'$$),
  ('options', 'cancel-after-huge', $$'{"cancel_after_ms": 9223372036854775807}'$$),
  ('options', 'max-duration-huge', $$'{"max_duration_ms": 9223372036854775807}'$$),
  ('options', 'idempotency-key-huge', $$jsonb_build_object('idempotency_key', repeat('k', 100000))$$),
  ('options', 'headers-not-object', $$'{"headers": []}'$$),
  ('options', 'array-of-one-null', $$'[null]'$$),
  ('run', 'seq-huge', $$%v || '{"checkpoint_seq": 9223372036854775808}'$$),
  ('run', 'seq-fraction', $$%v || '{"checkpoint_seq": 1.5}'$$),
  ('run', 'started-infinity', $$%v || '{"started_at": "infinity"}'$$),
  ('run', 'started-294276', $$%v || '{"started_at": "294276-12-31T23:59:59Z"}'$$),
  ('run', 'status-terminal', $$%v || '{"status": "completed"}'$$),
  ('run', 'id-empty', $$%v || '{"id": ""}'$$),
  ('run', 'id-100kB', $$%v || jsonb_build_object('id', repeat('x', 102400))$$),
  ('run', 'id-100kB-incompressible', $$%v || jsonb_build_object('id', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3200) i))$$),
  ('run', 'graph-changed', $$%v || '{"graph_hash": "h2"}'$$),
  ('events', 'seq-huge', $$'[{"seq": 9223372036854775808, "type": "t", "payload": null}]'$$),
  ('events', 'seq-fraction', $$'[{"seq": 1.5, "type": "t", "payload": null}]'$$),
  ('events', 'seq-gap', $$'[{"seq": 3, "type": "t", "payload": null}]'$$),
  ('events', 'missing-payload', $$'[{"seq": 2, "type": "t"}]'$$),
  ('events', 'null-element', $$'[null]'$$),
  ('events', 'seq-zero', $$'[{"seq": 0, "type": "t", "payload": null}]'$$),
  ('events', 'type-empty', $$'[{"seq": 2, "type": "", "payload": null}]'$$),
  ('events', 'type-not-text', $$'[{"seq": 2, "type": 1, "payload": null}]'$$),
  ('events', 'many-elements-100000', $$(SELECT jsonb_agg(jsonb_build_object('seq', i, 'type', 't', 'payload', NULL)) FROM generate_series(2, 100001) i)$$),
  ('schedule', 'unknown', $$'someday'$$),
  ('schedule', 'retain-with-wake', $$'retain_claim'$$),
  ('preference', 'unknown', $$'bogus'$$),
  ('state', 'unknown', $$'bogus'$$),
  ('queue', 'long-129-bytes', $$repeat('q', 129)$$),
  ('after_run_id', 'unknown-cursor', $$'no-such-run'$$),
  ('page_limit', 'over-10000', '10001'),
  ('child_run_id', 'itself', format('%L', (SELECT v FROM fx WHERE k = 'task'))),
  ('child_run_id', 'finished-task', format('%L', (SELECT v FROM fx WHERE k = 'done'))),
  ('child_run_id', 'another-tenants-run', $$'bi-zeta'$$),
  ('statuses', 'transient-status', $$ARRAY['created']$$),
  ('claim_limit', 'over-10000', '10001'),
  ('before_run_id', 'without-started-at', $$'bi-zzz'$$);

-------------------------------------------------------------------------------
-- The documented SQLSTATEs: a refused call must end in one of these ('*':
-- any function; else only the function named).
-------------------------------------------------------------------------------
CREATE TEMP TABLE documented (sqlstate text, name text, reason text NOT NULL, PRIMARY KEY (sqlstate, name));
INSERT INTO documented VALUES
  ('DK001', '*', 'stale_fence (DESIGN.md Errors, docs/tasks.md)'),
  ('DK002', '*', 'invalid_commit (DESIGN.md Errors)'),
  ('DK003', '*', 'not_found (DESIGN.md Errors, docs/tasks.md)'),
  ('DK004', '*', 'inactive_run (DESIGN.md Errors)'),
  ('DK005', '*', 'invalid_mutation (DESIGN.md Errors, docs/run-store.md Signals)'),
  ('DK006', '*', 'graph_conflict (DESIGN.md Errors)'),
  ('DK007', '*', 'invalid_run (DESIGN.md Errors)'),
  ('DK010', '*', 'cancelled (DESIGN.md Task layer, docs/tasks.md)'),
  ('22023', '*', 'bad_argument (DESIGN.md Errors, docs/run-store.md Errors)'),
  ('23514', '*', 'malformed scope text: the docket.scope domain check (DESIGN.md Errors)'),
  ('23505', '*', 'duplicate_run (docs/run-store.md Errors)'),
  ('54000', '*', 'limit_exceeded, or an id too long for an index (docs/run-store.md Limits)'),
  ('42501', '*', 'insufficient privilege (docs/security.md)'),
  ('22P02', '*', 'a bad literal passes through (docs/run-store.md Errors)'),
  ('22003', 'task_resume', 'a run document whose checkpoint_seq is out of bigint range passes PostgreSQL''s cast error through (docs/run-store.md Errors)'),
  ('22003', 'task_cancel', 'a run document whose checkpoint_seq is out of bigint range passes PostgreSQL''s cast error through (docs/run-store.md Errors)'),
  ('22012', 'mutate_run', 'the mutation function''s own error passes through with its SQLSTATE (docs/run-store.md Signals)');

-------------------------------------------------------------------------------
-- The harness.
-------------------------------------------------------------------------------
-- Every docket table's rows, hashed in a stable order (read as superuser).
CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  rel regclass;
  h text;
  acc text := '';
BEGIN
  FOR rel IN SELECT c.oid FROM pg_class c
              WHERE c.relnamespace = 'docket'::regnamespace AND c.relkind IN ('r', 'p')
              ORDER BY c.relname
  LOOP
    EXECUTE format($q$SELECT md5(coalesce(string_agg(x::text, E'\n' ORDER BY x::text), '')) FROM %s x$q$, rel)
      INTO h;
    acc := acc || rel::text || '=' || h || ' ';
  END LOOP;
  RETURN acc;
END $$;
INSERT INTO fx VALUES ('fingerprint', pg_temp.fingerprint());

-- try(call): runs call as docket_tap_bi_op in a subtransaction that is always
-- rolled back; returns its SQLSTATE ('ok' when it succeeded), message and
-- whether it changed a docket table (when it succeeded: seen before the roll back;
-- when it failed: after it, which must never be).
CREATE FUNCTION pg_temp.try(call text, OUT state text, OUT message text, OUT changed boolean)
LANGUAGE plpgsql AS $$
DECLARE
  fp text;
BEGIN
  BEGIN
    SET LOCAL ROLE docket_tap_bi_op;
    EXECUTE call;
    RESET ROLE;
    fp := pg_temp.fingerprint();
    RAISE EXCEPTION USING ERRCODE = 'DKT99', MESSAGE = fp;
  EXCEPTION WHEN OTHERS THEN
    IF SQLSTATE = 'DKT99' THEN
      state := 'ok';
      changed := SQLERRM IS DISTINCT FROM (SELECT v FROM fx WHERE k = 'fingerprint');
    ELSE
      state := SQLSTATE;
      message := left(SQLERRM, 300);
      changed := pg_temp.fingerprint() IS DISTINCT FROM (SELECT v FROM fx WHERE k = 'fingerprint');
    END IF;
  END;
END $$;

-- The public functions: whatever docket_operator may execute in schema docket.
CREATE TEMP TABLE public_fns AS
  SELECT p.oid::regprocedure AS fn, p.proname::text AS name, p.pronargs::int AS nargs
    FROM pg_proc p
   WHERE p.pronamespace = 'docket'::regnamespace
     AND has_function_privilege('docket_operator', p.oid, 'EXECUTE');
CREATE TEMP TABLE public_args AS
  SELECT f.fn, f.name, a.n::int AS argno, p.proargnames[a.n] AS argname, a.ty::regtype AS ty
    FROM public_fns f JOIN pg_proc p ON p.oid = f.fn,
         unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(ty, n);

CREATE TEMP TABLE results (fn regprocedure, name text, argno int, argname text, class text,
                           call text, state text, message text, changed boolean);

-- sweep(fn): the baseline call, then each hostile value of each argument.
CREATE FUNCTION pg_temp.sweep(f regprocedure) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  base text[];
  a record;
  h record;
  args text[];
  tys text[];
  call text;
  r record;
BEGIN
  SELECT b.args INTO base FROM baseline b WHERE b.fn = f;
  IF base IS NULL THEN
    RETURN;
  END IF;
  SELECT coalesce(array_agg(format_type(x.ty, NULL) ORDER BY x.argno), '{}') INTO tys
    FROM public_args x WHERE x.fn = f;
  call := format('SELECT * FROM %s(%s)', f::oid::regproc,
                 (SELECT coalesce(string_agg(format('(%s)::%s', base[i], tys[i]), ', ' ORDER BY i), '')
                    FROM generate_subscripts(tys, 1) i));
  r := pg_temp.try(call);
  INSERT INTO results VALUES (f, (SELECT name FROM public_fns WHERE fn = f), 0, NULL, 'baseline', call,
                              r.state, r.message, r.changed);
  FOR a IN SELECT * FROM public_args x WHERE x.fn = f ORDER BY x.argno LOOP
    FOR h IN SELECT v.class, v.expr FROM hostile v WHERE v.ty = a.ty
             UNION ALL
             SELECT n.class, n.expr FROM hostile_named n WHERE n.arg = a.argname
             ORDER BY 1
    LOOP
      args := base;
      args[a.argno] := replace(h.expr, '%v', format('((%s)::%s)', base[a.argno], tys[a.argno]));
      call := format('SELECT * FROM %s(%s)', f::oid::regproc,
                     (SELECT string_agg(format('(%s)::%s', args[i], tys[i]), ', ' ORDER BY i)
                        FROM generate_subscripts(tys, 1) i));
      r := pg_temp.try(call);
      INSERT INTO results VALUES (f, a.name, a.argno, a.argname, h.class, call, r.state, r.message, r.changed);
    END LOOP;
  END LOOP;
END $$;
\o

SELECT plan((SELECT 8 + count(*)::int FROM public_fns) + (SELECT count(*)::int FROM public_args));

-- Coverage: nothing escapes the sweep.
SELECT cmp_ok((SELECT count(*)::int FROM public_fns), '>=', 45, 'the sweep sees the public API (45 functions or more)');
SELECT is_empty($$SELECT fn FROM public_fns WHERE fn NOT IN (SELECT fn FROM baseline)$$,
  'every public function has a valid baseline call in the sweep');
SELECT is_empty($$SELECT DISTINCT ty FROM public_args WHERE ty NOT IN (SELECT ty FROM hostile)$$,
  'every argument type of a public function has hostile values in the sweep');
SELECT is_empty($$SELECT fn FROM baseline WHERE fn NOT IN (SELECT fn FROM public_fns)$$,
  'the sweep has no baseline for a function that is not public');
SELECT is(jsonb_typeof((repeat('[', 10000) || repeat(']', 10000))::jsonb), 'array',
  'a 10,000-deep document is a value PostgreSQL accepts (the sweep hands it to docket)');

\o /dev/null
SELECT format('SELECT pg_temp.sweep(%L::regprocedure)', fn) FROM public_fns ORDER BY fn::text
\gexec
\o

-- Accepted cases: hostile values docket takes as valid input. Every success of
-- the sweep must be listed here by (function, argument, class), with whether it
-- may write (the call's own changes, seen before its roll back) and why it is
-- valid; every listed class must be met (no stale entries).
CREATE TEMP TABLE accepted (name text, argname text, classes text[], writes boolean, reason text NOT NULL);
INSERT INTO accepted VALUES
  ('abandon_claim', 'backoff_base_ms', '{"int-max"}', true,
   'a positive backoff; the delay is computed in closed form and capped by backoff_cap_ms'),
  ('abandon_claim', 'backoff_cap_ms', '{"int-max"}', true,
   'a positive backoff cap (docs/run-store.md Abandon)'),
  ('abandon_claim', 'claim_token', '{"another-claims-token","random","zero"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('abandon_claim', 'expected_checkpoint_seq', '{"bigint-max","int-max","zero"}', true,
   'zero is the valid value; another sequence is ''stale'' and changes nothing'),
  ('abandon_claim', 'max_claim_abandons', '{"int-max"}', true,
   'any positive bound (DESIGN.md: max_claim_abandons > 0)'),
  ('abandon_claim', 'non_poisoning', '{"negated"}', true,
   'the other valid value'),
  ('abandon_claim', 'retry_at', '{"century-ahead","max-294276","ten-minutes-ahead"}', true,
   'retry_at >= now, however far (DESIGN.md abandon_claim); infinity is refused'),
  ('abandon_claim', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('append_events', 'events', '{"empty-array"}', false,
   'an empty array is a no-op (DESIGN.md append_events)'),
  ('append_events', 'scope', '{"system"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('await_event', 'event_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('await_event', 'step_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('await_event', 'timeout_ms', '{"int-max","null","zero"}', true,
   'no timeout (NULL) or 0 .. ten years (docs/tasks.md)'),
  ('await_task', 'child_run_id', '{"finished-task"}', true,
   'a child that has finished: its outcome, stored as the step (docs/tasks.md await_task)'),
  ('await_task', 'step_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('bind_tenant', 'role', '{"docket-role","the-caller"}', true,
   'an existing role that is not a superuser: docket''s own role binds its members, the caller may bind itself (a binding only restricts; docs/security.md)'),
  ('bind_tenant', 'tenant', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'tenant ids are opaque non-empty text of at most 1000 bytes (docs/security.md)'),
  ('cancel_task', 'reason', '{"blank","control-chars","empty","format-and-quotes","long-2kB-multibyte","null","odd-unicode","scope-words","valid-twice"}', true,
   'the reason is free text stored in the cancelled version (NULL: none); the document cap bounds it'),
  ('cancel_task', 'run_id', '{"finished-task"}', false,
   'a finished task: false, nothing changes (docs/tasks.md)'),
  ('cancel_task', 'scope', '{"system"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('claim_due', 'max_claim_attempts', '{"int-max"}', true,
   'any bound >= 1 (docs/run-store.md)'),
  ('claim_due', 'orphan_ttl_ms', '{"bigint-max","int-max","zero"}', true,
   'any TTL >= 0: 0 treats every claim as expired, a huge one none (seed 000)'),
  ('claim_due', 'preference', '{"null","valid-twice"}', true,
   'NULL is the default preference'),
  ('claim_due', 'queue', '{"null"}', true,
   'NULL: every queue (DESIGN.md Queues)'),
  ('claim_due', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', false,
   'a queue name no run has: nothing is claimed'),
  ('await_due', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', false,
   'a queue name no run has: nothing is ready, false at once (timeout 0)'),
  ('await_due', 'timeout_ms', '{"zero"}', false,
   '0 .. an hour: no wait'),
  ('await_tasks', 'lease_ms', '{"bigint-max","int-max","zero"}', false,
   'any lease >= 0, as claim_tasks (nothing to claim in this queue)'),
  ('await_tasks', 'max_claim_attempts', '{"int-max"}', false,
   'any bound >= 1, as claim_tasks'),
  ('await_tasks', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', false,
   'a queue name no run has: nothing is claimed'),
  ('await_tasks', 'timeout_ms', '{"zero"}', false,
   '0 .. an hour: no wait'),
  ('claim_tasks', 'lease_ms', '{"bigint-max","int-max","zero"}', true,
   'any lease >= 0; it is stored capped at ten years (docs/tasks.md Leases)'),
  ('claim_tasks', 'max_claim_attempts', '{"int-max"}', true,
   'any bound >= 1 (docs/tasks.md)'),
  ('claim_tasks', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', false,
   'a queue name no run has: nothing is claimed'),
  ('cleanup', 'older_than', '{"zero","huge"}', false,
   'a zero horizon: finished runs last written before now (none here); one before the earliest timestamp: nothing is that old (it raised 22008 before)'),
  ('commit', 'checkpoint_type', '{"suspended","terminal-type"}', true,
   'the checkpoint type labels the version: any value of the enum (DESIGN.md)'),
  ('commit', 'expected_checkpoint_seq', '{"zero"}', true,
   'the same as the valid value'),
  ('commit', 'run', '{"unknown-key"}', true,
   'the document is the runtime''s, stored verbatim beyond its checked fields (DESIGN.md)'),
  ('commit', 'scope', '{"system"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('commit', 'wake_at', '{"century-ahead","epoch-1970","max-294276","min-4713BC","ten-minutes-ahead"}', true,
   'a finite time: a past one is due at once, a far one later (DESIGN.md Schedules); infinity is refused'),
  ('complete_step', 'step_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('complete_step', 'value', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-number","json-null","number","string","unknown-key"}', true,
   'the caller''s own JSON value, stored as given within its size cap (docs/run-store.md Limits)'),
  ('complete_steps', 'claim_tokens', '{"random-element"}', false,
   'a per-element outcome (not_found, stale), never a raise (DESIGN.md Batched worker calls); nothing changes'),
  ('complete_steps', 'run_ids', '{"empty-element","huge-element-2MB"}', false,
   'a per-element outcome (not_found, stale), never a raise (DESIGN.md Batched worker calls); nothing changes'),
  ('complete_steps', 'step_values', '{"deep-element-10000"}', true,
   'the caller''s own JSON value, stored as given within its size cap (docs/run-store.md Limits)'),
  ('complete_task', 'result', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-number","json-null","null","number","string","unknown-key"}', true,
   'the task''s result: any JSON (NULL is JSON null, the default) within docket.max_result_bytes'),
  ('complete_tasks', 'claim_tokens', '{"random-element"}', false,
   'a per-element outcome (not_found, stale), never a raise (DESIGN.md Batched worker calls); nothing changes'),
  ('complete_tasks', 'results', '{"deep-element-10000","null-element"}', true,
   'any JSON result; a NULL element is JSON null (DESIGN.md complete_tasks)'),
  ('complete_tasks', 'run_ids', '{"empty-element","huge-element-2MB"}', false,
   'a per-element outcome (not_found, stale), never a raise (DESIGN.md Batched worker calls); nothing changes'),
  ('cron_next', 'after', '{"century-ahead","epoch-1970","min-4713BC","ten-minutes-ahead"}', false,
   'a pure decision function of its arguments: returns a decision, reads and writes nothing (docs/security.md)'),
  ('defer_task', 'base_ms', '{"int-max"}', true,
   'a positive base; the backoff is computed in closed form and capped by cap_ms'),
  ('defer_task', 'cap_ms', '{"int-max"}', true,
   'a positive cap'),
  ('defer_task', 'claim_token', '{"another-claims-token","random","zero"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('defer_task', 'max_defers', '{"int-max"}', true,
   'any bound >= 1'),
  ('defer_task', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('emit_event', 'event_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('emit_event', 'owner_scope', '{"odd-unicode-tenant","other-tenant","tenantless"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('emit_event', 'payload', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-number","json-null","null","number","string","unknown-key"}', true,
   'the event''s payload: any JSON (NULL is the default) within docket.max_payload_bytes'),
  ('fail_task', 'error', '{"boolean","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-number","json-null","number","string","unknown-key"}', true,
   'the error document: any JSON within docket.max_error_bytes'),
  ('fail_task', 'retry', '{"negated"}', true,
   'the other valid value (false: a permanent failure)'),
  ('fetch_run', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run id not visible in the scope (unknown, another tenant''s, any text): a read returns NULL or no rows (DESIGN.md Errors)'),
  ('fetch_run', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('fire_schedules', 'max_schedules', '{"int-max"}', true,
   'any bound >= 1: a LIMIT, not a loop count'),
  ('heartbeat', 'extend_ms', '{"int-max","null","zero"}', true,
   'no extension (NULL) or 0 .. ten years (docs/tasks.md)'),
  ('insert_run', 'owner_scope', '{"odd-unicode-tenant","other-tenant","tenantless"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('insert_run', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('insert_run', 'run', '{"status-terminal","unknown-key"}', true,
   'any durable status may be inserted (seed 000 insert_run); the document is stored verbatim'),
  ('insert_run', 'wake_at', '{"century-ahead","epoch-1970","max-294276","min-4713BC","ten-minutes-ahead"}', true,
   'a finite time: a past one is due at once, a far one later (DESIGN.md Schedules); infinity is refused'),
  ('inspect_run', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run id not visible in the scope (unknown, another tenant''s, any text): a read returns NULL or no rows (DESIGN.md Errors)'),
  ('inspect_run', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('inspect_task', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run id not visible in the scope (unknown, another tenant''s, any text): a read returns NULL or no rows (DESIGN.md Errors)'),
  ('inspect_task', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('list_events', 'after_seq', '{"bigint-max","int-max","zero"}', false,
   'a cursor at or past the log''s end: an empty page'),
  ('list_events', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run id not visible in the scope (unknown, another tenant''s, any text): a read returns NULL or no rows (DESIGN.md Errors)'),
  ('list_events', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('list_poisoned', 'after_poisoned_at', '{"null"}', false,
   'no cursor (both NULL): the first page'),
  ('list_poisoned', 'after_run_id', '{"null","valid-twice"}', false,
   'no cursor (both NULL): the first page'),
  ('list_poisoned', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('list_runs', 'before_run_id', '{"blank","control-chars","empty","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","scope-words","valid-twice","without-started-at"}', false,
   'a filter or cursor value that matches nothing: a shorter or empty page'),
  ('list_runs', 'before_started_at', '{"century-ahead","epoch-1970","max-294276","min-4713BC","ten-minutes-ahead"}', false,
   'a filter or cursor value that matches nothing: a shorter or empty page'),
  ('list_runs', 'graph_hash', '{"blank","control-chars","format-and-quotes","huge-2MB","long-2kB-multibyte","null","odd-unicode","scope-words","valid-twice"}', false,
   'a filter or cursor value that matches nothing: a shorter or empty page'),
  ('list_runs', 'graph_id', '{"blank","control-chars","format-and-quotes","huge-2MB","long-2kB-multibyte","null","odd-unicode","scope-words","valid-twice"}', false,
   'a filter or cursor value that matches nothing: a shorter or empty page'),
  ('list_runs', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('list_runs', 'statuses', '{"null","valid-twice"}', false,
   'NULL: no status filter (DESIGN.md list_runs)'),
  ('list_schedules', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('list_tasks', 'after_run_id', '{"null","valid-twice"}', false,
   'no cursor: the first page'),
  ('list_tasks', 'queue', '{"blank","control-chars","empty","format-and-quotes","huge-2MB","long-129-bytes","long-2kB-multibyte","null","odd-unicode","scope-words","valid-twice"}', false,
   'a filter or cursor value that matches nothing: a shorter or empty page'),
  ('list_tasks', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('list_tasks', 'state', '{"null"}', false,
   'NULL: no state filter (docs/tasks.md)'),
  ('list_tasks', 'task_name', '{"blank","control-chars","empty","format-and-quotes","huge-2MB","long-2kB-multibyte","null","odd-unicode","scope-words","valid-twice"}', false,
   'a filter or cursor value that matches nothing: a shorter or empty page'),
  ('mutate_run', 'arg', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-2MB","huge-number","json-null","null","number","string","unknown-key"}', true,
   'arg is handed to the mutation and not stored; what a mutation proposes is capped as a document'),
  ('mutate_run', 'mutation', '{"docket-task_cancel","reenters-retry_poisoned_run"}', true,
   'docket.task_cancel is a public mutation (it cancels any run); a re-entered retry_poisoned_run on a run that is not poisoned is a no-op and writes nothing'),
  ('mutate_run', 'run_id', '{"poisoned-run"}', true,
   'a mutation may commit a poisoned run: the commit resets counters and poison (docs/run-store.md)'),
  ('mutate_run', 'scope', '{"system"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('queue_stats', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('refresh_claim', 'claim_token', '{"another-claims-token","random","zero"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('refresh_claim', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('release_claim', 'claim_token', '{"another-claims-token","random","zero"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('release_claim', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run or token that does not hold the claim: the documented success-shaped outcome (refresh false, release a no-op, abandon and defer ''stale''), nothing changes'),
  ('retry_poisoned_run', 'run_id', '{"poisoned-run"}', true,
   'the same as the valid value'),
  ('retry_poisoned_run', 'scope', '{"system"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('save_graph', 'definition', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-number","json-null","number","string","unknown-key"}', true,
   'a graph definition is the runtime''s JSON, stored as given within docket.max_document_bytes'),
  ('save_graph', 'graph_hash', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('save_graph', 'graph_id', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('schedule_task', 'options', '{"empty-object"}', true,
   'no options: the defaults'),
  ('schedule_task', 'owner_scope', '{"odd-unicode-tenant","other-tenant","tenantless"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('schedule_task', 'params', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-number","json-null","number","string","unknown-key"}', true,
   'the caller''s own JSON value, stored as given within its size cap (docs/run-store.md Limits)'),
  ('schedule_task', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('schedule_task', 'schedule_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('schedule_task', 'task_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('sleep_until', 'step_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('sleep_until', 'wake_at', '{"century-ahead","epoch-1970","max-294276","min-4713BC","ten-minutes-ahead"}', true,
   'a finite time: a past one is due at once, a far one later (DESIGN.md Schedules); infinity is refused'),
  ('spawn_task', 'options', '{"empty-object","run-at-294276"}', true,
   'no options: the defaults; a run_at however far is a finite time (infinity is refused)'),
  ('spawn_task', 'owner_scope', '{"odd-unicode-tenant","other-tenant","tenantless"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('spawn_task', 'params', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-number","json-null","number","string","unknown-key"}', true,
   'task params: any JSON within docket.max_params_bytes'),
  ('spawn_task', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('spawn_task', 'task_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('spawn_tasks', 'options', '{"empty-object","run-at-294276"}', true,
   'no options: the defaults; a run_at however far is a finite time (infinity is refused)'),
  ('spawn_tasks', 'owner_scope', '{"odd-unicode-tenant","other-tenant","tenantless"}', true,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant id is opaque text'),
  ('spawn_tasks', 'params', '{"deep-element-10000","empty","scalar-elements","valid-twice"}', true,
   'any JSON elements; an empty array spawns nothing (docs/tasks.md spawn_tasks)'),
  ('spawn_tasks', 'queue', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('spawn_tasks', 'task_name', '{"blank","control-chars","format-and-quotes","odd-unicode","scope-words","valid-twice"}', true,
   'names are opaque text: NULL, empty and over-long ones are refused, anything else is stored as given; no SQL is built from them (docs/security.md)'),
  ('task_cancel', 'arg', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-2MB","huge-number","json-null","null","number","string","unknown-key"}', false,
   'a pure decision function of its arguments: returns a decision, reads and writes nothing (docs/security.md)'),
  ('task_cancel', 'run', '{"deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-negative","graph-changed","huge-2MB","id-empty","id-100kB","id-100kB-incompressible","null","started-294276","started-infinity","status-terminal","unknown-key"}', false,
   'a pure decision function of its arguments: returns a decision, reads and writes nothing (docs/security.md)'),
  ('task_history', 'after_seq', '{"bigint-max","int-max","zero"}', false,
   'a cursor at or past the log''s end: an empty page'),
  ('task_history', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run id not visible in the scope (unknown, another tenant''s, any text): a read returns NULL or no rows (DESIGN.md Errors)'),
  ('task_history', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('task_result', 'run_id', '{"another-tenants-run","blank","control-chars","empty","finished-task","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","poisoned-run","scope-words","valid-twice"}', false,
   'a run id not visible in the scope (unknown, another tenant''s, any text): a read returns NULL or no rows (DESIGN.md Errors)'),
  ('task_result', 'scope', '{"huge-tenant-2MB","odd-unicode-tenant","other-tenant","system","tenantless"}', false,
   'an unbound caller is trusted with the scope it passes (docs/security.md); a tenant with no rows reads nothing'),
  ('task_resume', 'arg', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","huge-2MB","huge-number","json-null","null","number","string","unknown-key"}', false,
   'a pure decision function of its arguments: returns a decision, reads and writes nothing (docs/security.md)'),
  ('task_resume', 'run', '{"boolean","deep-array-10000","deep-object-10000","empty-array","empty-object","fields-as-arrays","fields-as-huge-numbers","fields-as-negative","fields-as-strings","graph-changed","huge-2MB","huge-number","id-empty","id-100kB","id-100kB-incompressible","json-null","null","number","started-294276","started-infinity","status-terminal","string","unknown-key"}', false,
   'a pure decision function of its arguments: returns a decision, reads and writes nothing (docs/security.md)'),
  ('unbind_tenant', 'role', '{"dangling-oid","docket-role","superuser","the-caller","zero-oid"}', false,
   'no such binding: false, nothing changes'),
  ('unbind_tenant', 'tenant', '{"blank","control-chars","empty","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","scope-words","valid-twice"}', false,
   'no such binding: false, nothing changes'),
  ('unschedule_task', 'schedule_name', '{"blank","control-chars","empty","format-and-quotes","huge-2MB","long-2kB-multibyte","odd-unicode","scope-words","valid-twice"}', false,
   'no such schedule: false, nothing changes');

SELECT is_empty($$SELECT name, argname, class, state FROM results WHERE class = 'baseline' AND state <> 'ok'$$,
  'every baseline call succeeds (so each hostile value is what a refusal is about)');
-- The harness sees a write: a spawn's baseline changed the fingerprint, a read's did not.
SELECT is((SELECT array_agg(name || '=' || changed ORDER BY name) FROM results
            WHERE class = 'baseline' AND name IN ('spawn_task', 'fetch_run', 'bind_tenant', 'list_tasks')),
          '{bind_tenant=true,fetch_run=false,list_tasks=false,spawn_task=true}',
          'the fingerprint tells a call that wrote from one that did not');

SELECT is_empty($$
  SELECT x.name, x.argname, c FROM accepted x, unnest(x.classes) c
   WHERE NOT EXISTS (SELECT 1 FROM results r WHERE r.name = x.name AND r.argname = x.argname
                                                AND r.class = c AND r.state = 'ok')
$$, 'every accepted case is met by the sweep (no stale entry hides a refusal)');

-- One assertion per function: its baseline succeeded.
SELECT ok(EXISTS (SELECT 1 FROM results r WHERE r.fn = f.fn AND r.class = 'baseline' AND r.state = 'ok'),
          format('%s: the valid baseline call succeeds', f.fn))
  FROM public_fns f ORDER BY f.fn::text;

-- One assertion per argument: each hostile value refused with a documented
-- SQLSTATE and nothing changed, or an accepted case.
CREATE TEMP TABLE verdicts AS
  SELECT r.*,
         CASE
           WHEN r.state = 'ok' THEN
             CASE WHEN NOT EXISTS (SELECT 1 FROM accepted x
                                    WHERE x.name = r.name AND x.argname = r.argname
                                      AND r.class = ANY (x.classes) AND (x.writes OR NOT r.changed))
                  THEN 'succeeded, not an accepted case' || CASE WHEN r.changed THEN ' (wrote)' ELSE '' END END
           WHEN NOT EXISTS (SELECT 1 FROM documented d WHERE d.sqlstate = r.state AND d.name IN ('*', r.name))
             THEN 'undocumented SQLSTATE ' || r.state
           WHEN r.changed THEN 'refused but a docket table changed'
         END AS problem
    FROM results r WHERE r.class <> 'baseline';

SELECT ok(NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.fn = a.fn AND v.argno = a.argno AND v.problem IS NOT NULL)
          AND EXISTS (SELECT 1 FROM verdicts v WHERE v.fn = a.fn AND v.argno = a.argno),
          format('%s, argument %s (%s): %s hostile values, each refused with a documented SQLSTATE leaving every table unchanged, or an accepted case',
                 a.fn, a.argname, a.ty,
                 (SELECT count(*) FROM verdicts v WHERE v.fn = a.fn AND v.argno = a.argno)))
  FROM public_args a ORDER BY a.fn::text, a.argno;

SELECT diag(format('%s(%s) %s: %s -- %s [%s]', v.name, v.argname, v.class, v.problem, v.message, left(v.call, 200)))
  FROM verdicts v WHERE v.problem IS NOT NULL ORDER BY v.fn::text, v.argno, v.class;

SELECT * FROM finish();
ROLLBACK;
