-- Roles (issue 8, DESIGN.md "Roles and tenant binding"): CREATE EXTENSION
-- creates docket_reader, docket_producer, docket_worker and docket_operator;
-- each can call exactly its capabilities, anything else raises 42501 and
-- changes nothing; no role reads or writes a docket table; internal helpers are
-- unreachable; mutate_run runs the caller's mutation with the caller's
-- privileges, never docket's owner's. Login roles granted each docket role act
-- through SET ROLE, as an application would.
BEGIN;
SELECT plan(40);
SET LOCAL timezone = 'UTC';
SELECT set_config('docket.fake_now', '2041-01-01 00:00:00+00', true);

-------------------------------------------------------------------------------
-- The roles and their capability lists
-------------------------------------------------------------------------------
SELECT is((SELECT array_agg(rolname::text ORDER BY rolname) FROM pg_roles
            WHERE rolname IN ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator')
              AND NOT rolcanlogin AND NOT rolsuper AND NOT rolcreaterole AND NOT rolcreatedb),
          ARRAY['docket_operator', 'docket_producer', 'docket_reader', 'docket_worker'],
          'the four NOLOGIN roles exist, without any attribute');

CREATE TEMP TABLE caps (role text, fn regprocedure);
INSERT INTO caps
SELECT r, f::regprocedure
  FROM unnest(ARRAY['docket_reader', 'docket_producer', 'docket_worker', 'docket_operator']) r,
       unnest(ARRAY['docket.now()',
                    'docket.fetch_run(docket.scope, text)',
                    'docket.inspect_run(docket.scope, text)',
                    'docket.list_runs(docket.scope, int, timestamptz, text, text, text, text[])',
                    'docket.list_events(docket.scope, text, bigint, int)',
                    'docket.task_result(docket.scope, text)',
                    'docket.task_history(docket.scope, text, bigint, int)',
                    'docket.queue_stats(docket.scope)',
                    'docket.list_schedules(docket.scope)',
                    'docket.list_tasks(docket.scope, text, text, text, text, int)',
                    'docket.inspect_task(docket.scope, text)',
                    'docket.list_poisoned(docket.scope, int, timestamptz, text)']) f;
INSERT INTO caps
SELECT r, f::regprocedure
  FROM unnest(ARRAY['docket_producer', 'docket_operator']) r,
       unnest(ARRAY['docket.save_graph(text, text, jsonb)',
                    'docket.insert_run(docket.scope, jsonb, docket.checkpoint_type, timestamptz, text)',
                    'docket.cancel_task(docket.scope, text, text)',
                    'docket.schedule_task(text, text, text, jsonb, text, docket.scope, jsonb)',
                    'docket.unschedule_task(text)']) f;
INSERT INTO caps
SELECT r, f::regprocedure
  FROM unnest(ARRAY['docket_producer', 'docket_worker', 'docket_operator']) r,
       unnest(ARRAY['docket.spawn_task(text, jsonb, text, docket.scope, jsonb)',
                    'docket.spawn_tasks(text, jsonb[], text, docket.scope, jsonb)',
                    'docket.emit_event(text, jsonb, docket.scope)']) f;
INSERT INTO caps
SELECT r, f::regprocedure
  FROM unnest(ARRAY['docket_worker', 'docket_operator']) r,
       unnest(ARRAY['docket.claim_due(timestamptz, int, bigint, int, text, text)',
                    'docket.refresh_claim(text, uuid, timestamptz)',
                    'docket.release_claim(text, uuid, timestamptz)',
                    'docket.abandon_claim(text, uuid, bigint, timestamptz, timestamptz, int, boolean, int, int)',
                    'docket.commit(docket.scope, jsonb, bigint, uuid, docket.checkpoint_type, text, timestamptz)',
                    'docket.append_events(docket.scope, text, jsonb)',
                    'docket.claim_tasks(text, int, bigint, int, timestamptz)',
                    'docket.await_due(text, int)',
                    'docket.await_tasks(text, int, bigint, int, int)',
                    'docket.complete_tasks(text[], uuid[], jsonb[])',
                    'docket.complete_steps(text[], uuid[], text[], jsonb[])',
                    'docket.step_states(text, uuid)',
                    'docket.complete_step(text, uuid, text, jsonb)',
                    'docket.complete_task(text, uuid, jsonb)',
                    'docket.fail_task(text, uuid, jsonb, boolean)',
                    'docket.heartbeat(text, uuid, bigint)',
                    'docket.sleep_until(text, uuid, text, timestamptz)',
                    'docket.await_event(text, uuid, text, text, bigint)',
                    'docket.await_task(text, uuid, text, text)',
                    'docket.defer_task(text, uuid, int, int, int)',
                    'docket.fire_schedules(int)']) f;
-- The operator: everything public.
INSERT INTO caps
SELECT 'docket_operator', p.oid::regprocedure
  FROM pg_proc p
 WHERE p.pronamespace = 'docket'::regnamespace AND p.proname NOT LIKE '\_%'
   AND p.prorettype <> 'trigger'::regtype
   AND NOT EXISTS (SELECT 1 FROM caps c WHERE c.role = 'docket_operator' AND c.fn = p.oid);

SELECT is(
  (SELECT count(*)::int FROM caps
    WHERE role = 'docket_operator' AND fn IN ('docket.mutate_run(docket.scope, text, regprocedure, jsonb)'::regprocedure,
                                              'docket.retry_poisoned_run(docket.scope, text, timestamptz)'::regprocedure,
                                              'docket.cleanup(interval, int)'::regprocedure)),
  3, 'the operator''s list holds mutate_run, retry_poisoned_run and cleanup');

-- Each role can execute exactly its list (directly or through PUBLIC or any
-- role it is a member of).
SELECT set_eq(
  $$ SELECT r.rolname::text, p.oid::regprocedure::text
       FROM pg_proc p, pg_roles r
      WHERE p.pronamespace = 'docket'::regnamespace
        AND r.rolname IN ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator')
        AND has_function_privilege(r.oid, p.oid, 'EXECUTE') $$,
  $$ SELECT role, fn::text FROM caps $$,
  'each docket role can execute exactly its capabilities');

SELECT is_empty(
  $$ SELECT r.rolname, c.oid::regclass, priv
       FROM pg_class c, pg_roles r,
            unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) priv
      WHERE c.relnamespace = 'docket'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
        AND r.rolname IN ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator')
        AND has_table_privilege(r.oid, c.oid, priv) $$,
  'no docket role holds any privilege on any docket table');
SELECT is_empty(
  $$ SELECT r.rolname, c.oid::regclass
       FROM pg_class c, pg_roles r
      WHERE c.relnamespace = 'docket'::regnamespace AND c.relkind = 'S'
        AND r.rolname IN ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator')
        AND has_sequence_privilege(r.oid, c.oid, 'USAGE,SELECT,UPDATE') $$,
  'nor on any sequence');
SELECT is_empty(
  $$ SELECT r.rolname, p.oid::regprocedure
       FROM pg_proc p, pg_roles r
      WHERE p.pronamespace = 'docket'::regnamespace AND p.proname LIKE '\_%'
        AND r.rolname IN ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator')
        AND has_function_privilege(r.oid, p.oid, 'EXECUTE') $$,
  'no docket role can execute an internal helper');

-------------------------------------------------------------------------------
-- Acting as each role
-------------------------------------------------------------------------------
CREATE ROLE tap_reader LOGIN;
CREATE ROLE tap_producer LOGIN;
CREATE ROLE tap_worker LOGIN;
CREATE ROLE tap_operator LOGIN;
GRANT docket_reader TO tap_reader;
GRANT docket_producer TO tap_producer;
GRANT docket_worker TO tap_worker;
GRANT docket_operator TO tap_operator;

-- as_role(who, sql): runs sql as who; returns its first value as text, or
-- '<SQLSTATE> <message>' when it raises. pgTAP's bookkeeping stays with the
-- test's role: the switch happens in here.
\ir lib/as_role.sql
-- A fingerprint of every docket table, to show that a refused call changed nothing.
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
  SELECT md5(concat_ws('|',
    (SELECT string_agg(x::text, ',' ORDER BY x.run_id) FROM docket.runs x),
    (SELECT string_agg(x::text, ',' ORDER BY x.run_id) FROM docket.run_heads x),
    (SELECT string_agg(x::text, ',' ORDER BY x.run_id, x.seq) FROM docket.run_events x),
    (SELECT string_agg(x::text, ',' ORDER BY x.graph_id, x.graph_hash) FROM docket.graphs x),
    (SELECT string_agg(x::text, ',' ORDER BY x.run_id) FROM docket.tasks x),
    (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM docket.task_events x),
    (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM docket.task_waits x),
    (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM docket.task_steps x),
    (SELECT string_agg(x::text, ',' ORDER BY x.schedule_name) FROM docket.schedules x))) $$;

-- The producer publishes and spawns.
SELECT is(pg_temp.as_role('tap_producer', $q$SELECT docket.save_graph('g', 'h', '{}')::text$q$),
          '', 'producer: save_graph');
SELECT is(pg_temp.as_role('tap_producer', $q$SELECT docket.insert_run('tenant:a', '{"id": "r-1",
  "graph_id": "g", "graph_hash": "h", "status": "running", "checkpoint_seq": 0,
  "started_at": "2041-01-01T00:00:00Z"}', 'run_initialized', '2041-01-01 00:00:00+00') ->> 'id'$q$),
          'r-1', 'producer: insert_run');
SELECT is(pg_temp.as_role('tap_producer',
            $q$SELECT run_id FROM docket.spawn_task('job', '{}', 'q', 'tenant:a', '{"idempotency_key": "k1"}')$q$)
          IS NOT NULL, true, 'producer: spawn_task (its docket.now() default included)');
SELECT is(pg_temp.as_role('tap_producer', $q$SELECT docket.fetch_run('tenant:a', 'r-1') ->> 'id'$q$),
          'r-1', 'producer: fetch_run (a reader capability)');

-- Calls outside a role's list: 42501, nothing changed.
CREATE TEMP TABLE refused (who text, sql text);
INSERT INTO refused VALUES
  ('tap_reader', $q$SELECT docket.save_graph('g2', 'h', '{}')$q$),
  ('tap_reader', $q$SELECT docket.spawn_task('job', '{}', 'q', 'tenant:a')$q$),
  ('tap_reader', $q$SELECT docket.emit_event('e', '{}', 'tenant:a')$q$),
  ('tap_reader', $q$SELECT count(*) FROM docket.claim_due()$q$),
  ('tap_producer', $q$SELECT count(*) FROM docket.claim_due()$q$),
  ('tap_producer', $q$SELECT count(*) FROM docket.claim_tasks('q')$q$),
  ('tap_producer', $q$SELECT docket.await_due('q', 0)$q$),
  ('tap_producer', $q$SELECT count(*) FROM docket.await_tasks('q', 1, 30000, 10, 0)$q$),
  ('tap_producer', $q$SELECT docket.fire_schedules()$q$),
  ('tap_producer', $q$SELECT docket.mutate_run('system', 'r-1', 'docket.task_cancel(jsonb,jsonb)')$q$),
  ('tap_producer', $q$SELECT docket.retry_poisoned_run('system', 'r-1')$q$),
  ('tap_producer', $q$SELECT docket.cleanup('0 seconds')$q$),
  ('tap_worker', $q$SELECT docket.insert_run('tenant:a', '{"id": "r-2", "graph_id": "g", "graph_hash": "h",
     "status": "running", "checkpoint_seq": 0, "started_at": "2041-01-01T00:00:00Z"}', 'run_initialized', now())$q$),
  ('tap_worker', $q$SELECT docket.save_graph('g2', 'h', '{}')$q$),
  ('tap_worker', $q$SELECT docket.cancel_task('system', 'r-1')$q$),
  ('tap_worker', $q$SELECT docket.schedule_task('s', '* * * * *', 'job')$q$),
  ('tap_worker', $q$SELECT docket.mutate_run('system', 'r-1', 'docket.task_cancel(jsonb,jsonb)')$q$),
  ('tap_worker', $q$SELECT docket.cleanup('0 seconds')$q$),
  ('tap_reader', $q$SELECT docket.cron_next('* * * * *')$q$);
SELECT pg_temp.snapshot() AS before \gset
SELECT is_empty($$ SELECT who, sql, pg_temp.as_role(who, sql) FROM refused
                    WHERE pg_temp.as_role(who, sql) NOT LIKE '42501 permission denied for function %' $$,
                'every call outside a role''s list raises 42501 permission denied');
SELECT is(pg_temp.snapshot(), :'before', 'and changes nothing');

-- No role reads or writes a table, whatever it holds.
SELECT is_empty($$
  SELECT r, t, pg_temp.as_role(r, format('SELECT count(*) FROM %s', t))
    FROM unnest(ARRAY['tap_reader', 'tap_producer', 'tap_worker', 'tap_operator']) r,
         (SELECT c.oid::regclass::text AS t FROM pg_class c
           WHERE c.relnamespace = 'docket'::regnamespace AND c.relkind = 'r') tables
   WHERE pg_temp.as_role(r, format('SELECT count(*) FROM %s', t)) NOT LIKE '42501 %' $$,
  'no role can read any docket table');
SELECT is(pg_temp.as_role('tap_operator', $q$UPDATE docket.runs SET tenant_id = 'b' RETURNING run_id$q$),
          '42501 permission denied for table runs', 'the operator cannot write docket.runs');
SELECT is(pg_temp.as_role('tap_worker', $q$DELETE FROM docket.tasks RETURNING run_id$q$),
          '42501 permission denied for table tasks', 'a worker cannot delete tasks');
SELECT is(pg_temp.as_role('tap_reader', $q$SELECT claim_token::text FROM docket.runs LIMIT 1$q$),
          '42501 permission denied for table runs', 'the reader cannot read tokens');

-- Internal helpers are unreachable.
SELECT is(pg_temp.as_role('tap_operator', $q$SELECT docket._task_wake_parents('r-1')::text$q$),
          '42501 permission denied for function _task_wake_parents', 'operator: _task_wake_parents refused');
SELECT is(pg_temp.as_role('tap_worker', $q$SELECT docket._cancel_task_impl('system', 'r-1', NULL)::text$q$),
          '42501 permission denied for function _cancel_task_impl', 'worker: a plpgsql body refused');
SELECT is(pg_temp.as_role('tap_producer', $q$SELECT docket._retry_policy('{}')::text$q$),
          '42501 permission denied for function _retry_policy', 'producer: _retry_policy refused');
SELECT is(pg_temp.as_role('tap_operator',
            $q$SELECT docket._run_document('{}', 'x', 'g', 'task', 'running', 0, now())::text$q$),
          '42501 permission denied for function _run_document', 'operator: _run_document refused');

-------------------------------------------------------------------------------
-- The worker runs tasks; internal calls (waking, cancelling) work under roles
-------------------------------------------------------------------------------
SELECT is(pg_temp.as_role('tap_worker', $q$SELECT count(*)::text FROM docket.claim_tasks('q', 10)$q$),
          '1', 'worker: claim_tasks leases the spawned task');
SELECT is(pg_temp.as_role('tap_worker', $q$SELECT docket.complete_task(t.run_id, t.claim_token, '{"ok": true}')::text
                                            FROM (SELECT x.run_id, x.claim_token FROM docket.runs x WHERE x.queue = 'q') t$q$),
          '42501 permission denied for table runs', 'worker: it cannot look its token up in the table');
SELECT is(docket.task_result('tenant:a', (SELECT run_id FROM docket.tasks WHERE queue = 'q')) ->> 'state',
          'running', 'the task is running');
SELECT is(pg_temp.as_role('tap_worker', format($q$SELECT docket.complete_task(%L, %L, '{"ok": true}')::text$q$,
                                               x.run_id, x.claim_token)), '',
          'worker: complete_task with its token')
  FROM docket.runs x WHERE x.queue = 'q';
SELECT is(pg_temp.as_role('tap_reader', $q$SELECT docket.task_result('tenant:a', run_id) ->> 'state'
                                            FROM docket.list_runs('tenant:a', 10) l,
                                                 jsonb_to_recordset(l -> 'entries') AS e(run_id text, graph_id text)
                                           WHERE e.graph_id = 'job'$q$),
          'completed', 'reader: task_result and list_runs (a guarded plpgsql function)');
SELECT is(pg_temp.as_role('tap_reader', $q$SELECT count(*)::text FROM docket.queue_stats('tenant:a')$q$),
          '2', 'reader: queue_stats (queues default and q)');

-- A parent waiting on an event is woken by the producer's emit (emit_event
-- calls mutate_run('system', ..., task_resume) inside docket, as docket's owner).
SELECT is(pg_temp.as_role('tap_producer',
            $q$SELECT run_id FROM docket.spawn_task('waiter', '{}', 'w', 'tenant:a', '{"idempotency_key": "k2"}')$q$)
          IS NOT NULL, true, 'producer: spawn a waiter');
CREATE TEMP TABLE held AS SELECT * FROM docket.claim_tasks('w', 1);
SELECT is((SELECT status FROM docket.await_event(h.run_id, h.claim_token, 's', 'go')), 'suspended',
          'the waiter waits for go') FROM held h;
SELECT is(pg_temp.as_role('tap_producer', $q$SELECT docket.emit_event('go', '{"n": 1}', 'tenant:a')::text$q$),
          'true', 'producer: emit_event wakes it (a nested mutate_run with a mutation the producer cannot execute)');
SELECT is((SELECT x.wake_at IS NOT NULL AND x.status = 'running' FROM docket.runs x, held h WHERE x.run_id = h.run_id),
          true, 'the waiter is due again');
SELECT is(pg_temp.as_role('tap_producer', format($q$SELECT docket.cancel_task('tenant:a', %L, 'stop')::text$q$, h.run_id)),
          'true', 'producer: cancel_task (its nested mutate_run uses docket.task_cancel)')
  FROM held h;

-------------------------------------------------------------------------------
-- mutate_run runs the mutation as the caller
-------------------------------------------------------------------------------
CREATE SCHEMA tap_roles;
GRANT USAGE ON SCHEMA tap_roles TO tap_operator;
-- Reports who runs it, changes nothing.
CREATE FUNCTION tap_roles.whoami(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE AS
  $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL, to_jsonb(current_user::text))::docket.mutation_decision $$;
-- Reads docket.runs with the privileges of whoever runs it.
CREATE FUNCTION tap_roles.peek(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE AS
  $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL,
                (SELECT to_jsonb(count(*)) FROM docket.runs))::docket.mutation_decision $$;
-- Not granted to the operator.
CREATE FUNCTION tap_roles.secret(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE AS
  $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL, '"secret"'::jsonb)::docket.mutation_decision $$;
REVOKE ALL ON FUNCTION tap_roles.whoami(jsonb, jsonb), tap_roles.peek(jsonb, jsonb),
  tap_roles.secret(jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tap_roles.whoami(jsonb, jsonb), tap_roles.peek(jsonb, jsonb) TO tap_operator;

SELECT is(pg_temp.as_role('tap_operator',
            $q$SELECT docket.mutate_run('tenant:a', 'r-1', 'tap_roles.whoami(jsonb,jsonb)') ->> 'value'$q$),
          'tap_operator', 'the mutation runs as the calling role, not as docket''s owner');
SELECT is(docket.mutate_run('tenant:a', 'r-1', 'tap_roles.whoami(jsonb,jsonb)') ->> 'value',
          current_user::text, 'a superuser''s mutation runs as the superuser');
SELECT is(pg_temp.as_role('tap_operator',
            $q$SELECT docket.mutate_run('tenant:a', 'r-1', 'tap_roles.peek(jsonb,jsonb)')::text$q$),
          '42501 permission denied for table runs', 'what the mutation reads is checked against the caller');
SELECT pg_temp.snapshot() AS before \gset
SELECT is(pg_temp.as_role('tap_operator',
            $q$SELECT docket.mutate_run('tenant:a', 'r-1', 'tap_roles.secret(jsonb,jsonb)')::text$q$),
          '42501 permission denied for function secret', 'a mutation the caller cannot execute: 42501');
SELECT is(pg_temp.snapshot(), :'before', 'and nothing changed');
SELECT is(pg_temp.as_role('tap_operator',
            $q$SELECT docket.mutate_run('tenant:a', 'r-1', 'docket._task_wake_parents(text)'::regprocedure::oid::regprocedure)::text$q$),
          '22023 bad_argument: mutation function docket._task_wake_parents(text) must take exactly (jsonb, jsonb)',
          'an internal helper is refused as a mutation before anything runs');
SELECT is(pg_temp.as_role('tap_operator',
            $q$SELECT docket.mutate_run('tenant:a', 'r-1', 'docket.task_resume(jsonb,jsonb)',
                                        '{"kind": "event", "step": "x", "reason": "event"}') ->> 'outcome'$q$)
          IS NOT NULL, true, 'the operator may use docket''s own mutations');

-------------------------------------------------------------------------------
-- The clock is everyone's; settings are not
-------------------------------------------------------------------------------
SELECT is(pg_temp.as_role('tap_reader', $q$SELECT docket.now()::text$q$),
          '2041-01-01 00:00:00+00', 'every role can read the clock');
SELECT is(left(pg_temp.as_role('tap_worker', $q$SELECT set_config('docket.fake_now', '2050-01-01', true)$q$), 5),
          '42501', 'no role can move it');

SELECT * FROM finish();
ROLLBACK;
