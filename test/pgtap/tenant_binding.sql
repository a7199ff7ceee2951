-- Tenant binding (issue 8, DESIGN.md "Roles and tenant binding"):
-- bind_tenant/unbind_tenant (operator); a role bound directly or through a
-- role it inherits may only use tenant:<t> scopes of its tenants (anything else
-- raises 42501 and changes nothing), claims only their runs, emits and spawns
-- only into them; unbound roles keep today's behaviour. Login roles act through
-- SET ROLE, as an application would.
BEGIN;
SELECT plan(47);
SET LOCAL timezone = 'UTC';
SELECT set_config('docket.fake_now', '2041-01-01 00:00:00+00', true);

\ir lib/as_role.sql
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
  SELECT md5(concat_ws('|',
    (SELECT string_agg(x::text, ',' ORDER BY x.run_id) FROM docket.runs x),
    (SELECT string_agg(x::text, ',' ORDER BY x.run_id, x.seq) FROM docket.run_events x),
    (SELECT string_agg(x::text, ',' ORDER BY x.run_id) FROM docket.tasks x),
    (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM docket.task_events x),
    (SELECT string_agg(x::text, ',' ORDER BY x.schedule_name) FROM docket.schedules x),
    (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM docket.tenant_bindings x))) $$;
CREATE FUNCTION pg_temp.run(id text, tenant text) RETURNS void LANGUAGE sql AS $$
  SELECT docket.insert_run(CASE WHEN tenant IS NULL THEN 'tenantless' ELSE 'tenant:' || tenant END,
    jsonb_build_object('id', id, 'graph_id', 'g', 'graph_hash', 'h', 'status', 'running',
                       'checkpoint_seq', 0, 'started_at', '2041-01-01T00:00:00Z'),
    'run_initialized', '2041-01-01 00:00:00+00', 'rq');
  SELECT NULL::void $$;

-------------------------------------------------------------------------------
-- Fixtures: runs and tasks of tenants a and b and without a tenant; roles
-------------------------------------------------------------------------------
SELECT docket.save_graph('g', 'h', '{}');
SELECT pg_temp.run('a-1', 'a'), pg_temp.run('a-2', 'a'), pg_temp.run('b-1', 'b'),
       pg_temp.run('b-2', 'b'), pg_temp.run('n-1', NULL);
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY['{}', '{}']::jsonb[], 'tq', 'tenant:a');
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY['{}', '{}']::jsonb[], 'tq', 'tenant:b');

CREATE ROLE tap_tenant_a NOLOGIN;            -- a group role bound to a
CREATE ROLE tap_wa LOGIN IN ROLE tap_tenant_a;  -- a worker bound through it
GRANT docket_worker TO tap_wa;
CREATE ROLE tap_pa LOGIN;                    -- a producer bound directly
GRANT docket_producer TO tap_pa;
CREATE ROLE tap_oa LOGIN;                    -- an operator bound directly
GRANT docket_operator TO tap_oa;
CREATE ROLE tap_wu LOGIN;                    -- an unbound worker
GRANT docket_worker TO tap_wu;
CREATE ROLE tap_op LOGIN;                    -- an unbound operator
GRANT docket_operator TO tap_op;

-------------------------------------------------------------------------------
-- bind_tenant / unbind_tenant
-------------------------------------------------------------------------------
SELECT is(pg_temp.as_role('tap_op', $q$SELECT docket.bind_tenant('tap_tenant_a', 'a')::text$q$),
          'true', 'the operator binds a group role to tenant a');
SELECT is(pg_temp.as_role('tap_op', $q$SELECT docket.bind_tenant('tap_tenant_a', 'a')::text$q$),
          'false', 'binding again: false');
SELECT is(pg_temp.as_role('tap_op', $q$SELECT docket.bind_tenant('tap_pa', 'a')::text$q$), 'true',
          'binds the producer');
SELECT is(docket.bind_tenant('tap_oa', 'a'), true, 'a superuser binds too');
SELECT is(left(pg_temp.as_role('tap_op', $q$SELECT docket.bind_tenant('postgres', 'a')::text$q$), 5),
          '22023', 'a superuser cannot be bound');
SELECT is(left(pg_temp.as_role('tap_op', $q$SELECT docket.bind_tenant('tap_pa', '')::text$q$), 5),
          '22023', 'an empty tenant is refused');
SELECT is(left(pg_temp.as_role('tap_pa', $q$SELECT docket.bind_tenant('tap_pa', 'b')::text$q$), 5),
          '42501', 'a producer cannot bind');
SELECT pg_temp.snapshot() AS before \gset
SELECT is(left(pg_temp.as_role('tap_oa', $q$SELECT docket.bind_tenant('tap_oa', 'b')::text$q$), 5),
          '42501', 'a bound operator cannot widen its own binding');
SELECT is(left(pg_temp.as_role('tap_oa', $q$SELECT docket.unbind_tenant('tap_oa', 'a')::text$q$), 5),
          '42501', 'nor lift it');
SELECT is(pg_temp.snapshot(), :'before', 'nothing changed');

-------------------------------------------------------------------------------
-- A bound role may only use its tenants' scopes
-------------------------------------------------------------------------------
SELECT is(pg_temp.as_role('tap_wa', $q$SELECT docket.fetch_run('tenant:a', 'a-1') ->> 'id'$q$),
          'a-1', 'bound through a group: fetch_run in its tenant');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT docket.inspect_run('tenant:a', 'a-1') -> 'run' ->> 'id'$q$),
          'a-1', 'bound directly: inspect_run in its tenant');
CREATE TEMP TABLE refused (who text, sql text);
INSERT INTO refused VALUES
  ('tap_wa', $q$SELECT docket.fetch_run('system', 'a-1')$q$),
  ('tap_wa', $q$SELECT docket.fetch_run('tenant:b', 'b-1')$q$),
  ('tap_wa', $q$SELECT docket.fetch_run('tenantless', 'n-1')$q$),
  ('tap_wa', $q$SELECT docket.inspect_run('system', 'b-1')$q$),
  ('tap_wa', $q$SELECT docket.list_runs('system', 10)$q$),
  ('tap_wa', $q$SELECT docket.list_runs('tenant:b', 10)$q$),
  ('tap_wa', $q$SELECT count(*) FROM docket.list_events('system', 'b-1')$q$),
  ('tap_wa', $q$SELECT count(*) FROM docket.task_history('tenant:b', 'b-1')$q$),
  ('tap_wa', $q$SELECT docket.task_result('system', 'b-1')$q$),
  ('tap_wa', $q$SELECT count(*) FROM docket.queue_stats()$q$),
  ('tap_wa', $q$SELECT count(*) FROM docket.queue_stats('tenant:b')$q$),
  ('tap_wa', $q$SELECT count(*) FROM docket.list_schedules()$q$),
  ('tap_wa', $q$SELECT docket.append_events('system', 'a-1', '[]')$q$),
  ('tap_wa', $q$SELECT docket.commit('system', '{"id": "a-1"}', 0, gen_random_uuid(), 'node_completed', 'immediate')$q$),
  ('tap_wa', $q$SELECT docket.emit_event('go', '{}', 'tenant:b')$q$),
  ('tap_wa', $q$SELECT count(*) FROM docket.spawn_task('job', '{}', 'tq', 'tenant:b')$q$),
  ('tap_wa', $q$SELECT docket.fire_schedules()$q$),
  ('tap_pa', $q$SELECT docket.insert_run('tenant:b', '{"id": "b-9", "graph_id": "g", "graph_hash": "h",
     "status": "running", "checkpoint_seq": 0, "started_at": "2041-01-01T00:00:00Z"}', 'run_initialized', now())$q$),
  ('tap_pa', $q$SELECT docket.insert_run('tenantless', '{"id": "n-9", "graph_id": "g", "graph_hash": "h",
     "status": "running", "checkpoint_seq": 0, "started_at": "2041-01-01T00:00:00Z"}', 'run_initialized', now())$q$),
  ('tap_pa', $q$SELECT docket.emit_event('go', '{"forged": true}', 'tenant:b')$q$),
  ('tap_pa', $q$SELECT docket.emit_event('go', '{"forged": true}')$q$),
  ('tap_pa', $q$SELECT count(*) FROM docket.spawn_task('job', '{}', 'tq')$q$),
  ('tap_pa', $q$SELECT count(*) FROM docket.spawn_tasks('job', ARRAY['{}']::jsonb[], 'tq', 'tenant:b')$q$),
  ('tap_pa', $q$SELECT docket.cancel_task('tenant:b', 'b-1')$q$),
  ('tap_pa', $q$SELECT docket.cancel_task('system', 'a-1')$q$),
  ('tap_pa', $q$SELECT docket.schedule_task('sb', '* * * * *', 'job', '{}', 'tq', 'tenant:b')$q$),
  ('tap_oa', $q$SELECT docket.mutate_run('system', 'a-1', 'docket.task_cancel(jsonb,jsonb)')$q$),
  ('tap_oa', $q$SELECT docket.retry_poisoned_run('tenant:b', 'b-1')$q$),
  ('tap_oa', $q$SELECT docket.cleanup('0 seconds')$q$);
SELECT pg_temp.snapshot() AS before \gset
SELECT is_empty($$ SELECT who, sql, pg_temp.as_role(who, sql) FROM refused
                    WHERE pg_temp.as_role(who, sql) NOT LIKE '42501 permission denied: role % is bound to tenants %' $$,
                'every scope outside a bound role''s tenants raises 42501');
SELECT is(pg_temp.snapshot(), :'before', 'and changes nothing');
SELECT is(docket.fetch_run('tenant:b', 'b-1') ->> 'status', 'running', 'b-1 is untouched');

SELECT is(pg_temp.as_role('tap_pa', $q$SELECT docket.insert_run('tenant:a', '{"id": "a-9", "graph_id": "g",
  "graph_hash": "h", "status": "running", "checkpoint_seq": 0, "started_at": "2041-01-01T00:00:00Z"}',
  'run_initialized', '2041-01-01 00:00:00+00', 'rq') ->> 'id'$q$), 'a-9', 'a bound producer inserts into its tenant');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT count(*)::text FROM docket.spawn_task('job', '{}', 'tq', 'tenant:a')$q$),
          '1', 'and spawns into it');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT docket.emit_event('go', '{"real": true}', 'tenant:a')::text$q$),
          'true', 'and emits into it');
SELECT is((SELECT payload FROM docket.task_events WHERE tenant_key = 'a' AND event_name = 'go'),
          '{"real": true}', 'the event is stored in tenant a');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT count(*)::text FROM docket.list_schedules('tenant:a')$q$),
          '0', 'list_schedules in its tenant');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT count(*)::text FROM docket.queue_stats('tenant:a')$q$),
          '2', 'queue_stats in its tenant (queues rq and tq)');

-- Schedules are named globally: a bound role may not replace or delete another
-- tenant's schedule by its name.
SELECT docket.schedule_task('sb', '0 * * * *', 'job', '{}', 'tq', 'tenant:b');
SELECT pg_temp.snapshot() AS before \gset
SELECT is(left(pg_temp.as_role('tap_pa', $q$SELECT docket.schedule_task('sb', '* * * * *', 'job', '{}', 'tq', 'tenant:a')::text$q$), 5),
          '42501', 'replacing tenant b''s schedule: 42501');
SELECT is(left(pg_temp.as_role('tap_pa', $q$SELECT docket.unschedule_task('sb')::text$q$), 5),
          '42501', 'deleting it: 42501');
SELECT is(pg_temp.snapshot(), :'before', 'the schedule is unchanged');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT docket.schedule_task('sa', '0 * * * *', 'job', '{}', 'tq', 'tenant:a')::text$q$),
          '', 'a schedule of its own tenant');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT docket.unschedule_task('sa')::text$q$), 'true', 'deleted again');

-------------------------------------------------------------------------------
-- A bound worker claims only its tenants' runs
-------------------------------------------------------------------------------
SELECT is(pg_temp.as_role('tap_wa', $q$SELECT string_agg(run_id || '/' || coalesce(tenant_id, '-'), ',' ORDER BY run_id)
                                         FROM docket.claim_due(claim_limit => 10, queue => 'rq')$q$),
          'a-1/a,a-2/a,a-9/a', 'claim_due by a bound worker leases only tenant a''s runs');
SELECT is((SELECT count(*)::int FROM docket.runs WHERE queue = 'rq' AND claim_token IS NOT NULL AND tenant_id IS DISTINCT FROM 'a'),
          0, 'no other run is claimed');
SELECT is(pg_temp.as_role('tap_wa', $q$SELECT count(*)::text FROM docket.claim_due(claim_limit => 10, queue => 'rq')$q$),
          '0', 'nothing more for it');
SELECT is(pg_temp.as_role('tap_wa', $q$SELECT count(*)::text FROM docket.claim_tasks('tq', 10)$q$),
          '3', 'claim_tasks by a bound worker leases the three tasks of tenant a');
SELECT is((SELECT string_agg(r.tenant_id || ':' || (r.claim_token IS NOT NULL)::text, ',' ORDER BY r.tenant_id, r.run_id)
             FROM docket.runs r WHERE r.queue = 'tq'),
          'a:true,a:true,a:true,b:false,b:false', 'all of tenant a''s tasks, none of tenant b''s');
SELECT is(pg_temp.as_role('tap_wa', $q$SELECT count(*)::text FROM docket.claim_tasks('tq', 10)$q$),
          '0', 'tenant b''s tasks stay due for it');

-- An unbound worker keeps today's behaviour.
SELECT is(pg_temp.as_role('tap_wu', $q$SELECT string_agg(run_id, ',' ORDER BY run_id)
                                         FROM docket.claim_due(claim_limit => 10, queue => 'rq')$q$),
          'b-1,b-2,n-1', 'an unbound worker claims every tenant''s runs');
SELECT is(pg_temp.as_role('tap_wu', $q$SELECT count(*)::text FROM docket.claim_tasks('tq', 10)$q$),
          '2', 'and tasks');
SELECT is(pg_temp.as_role('tap_wu', $q$SELECT docket.fetch_run('system', 'b-1') ->> 'id'$q$),
          'b-1', 'and uses the system scope');

-------------------------------------------------------------------------------
-- A mutation is outside docket: what it calls is checked again
-------------------------------------------------------------------------------
CREATE SCHEMA tap_tb;
GRANT USAGE ON SCHEMA tap_tb TO tap_oa;
CREATE FUNCTION tap_tb.peek_system(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE AS
  $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL,
                docket.fetch_run('system', 'b-1') -> 'id')::docket.mutation_decision $$;
GRANT EXECUTE ON FUNCTION tap_tb.peek_system(jsonb, jsonb) TO tap_oa;
SELECT is(left(pg_temp.as_role('tap_oa', $q$SELECT docket.mutate_run('tenant:a', 'a-1', 'tap_tb.peek_system(jsonb,jsonb)')::text$q$), 5),
          '42501', 'a bound operator''s mutation cannot read the system scope');
SELECT is(pg_temp.as_role('tap_op', $q$SELECT docket.mutate_run('tenant:a', 'a-1', 'docket.task_resume(jsonb,jsonb)',
                                                                '{"kind": "event", "step": "x", "reason": "event"}') ->> 'outcome'$q$)
          IS NOT NULL, true, 'an unbound operator mutates');

-------------------------------------------------------------------------------
-- Nested calls are docket's: a bound role's emit wakes its tenant's waiter
-------------------------------------------------------------------------------
SELECT count(*) FROM docket.spawn_task('waiter', '{}', 'wq', 'tenant:a');
CREATE TEMP TABLE held AS SELECT * FROM docket.claim_tasks('wq', 1);
SELECT is((SELECT status FROM docket.await_event(h.run_id, h.claim_token, 's', 'late')), 'suspended',
          'a tenant a task waits for late') FROM held h;
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT docket.emit_event('late', '{}', 'tenant:a')::text$q$),
          'true', 'the bound producer''s emit wakes it (mutate_run(''system'', ...) inside docket)');
SELECT is((SELECT x.claim_token IS NULL AND x.wake_at IS NOT NULL FROM docket.runs x, held h WHERE x.run_id = h.run_id),
          true, 'the waiter is due again');
SELECT is(pg_temp.as_role('tap_pa', format($q$SELECT docket.cancel_task('tenant:a', %L)::text$q$, h.run_id)),
          'true', 'and it cancels its tenant''s task') FROM held h;

-------------------------------------------------------------------------------
-- Unbinding
-------------------------------------------------------------------------------
SELECT is(pg_temp.as_role('tap_op', $q$SELECT docket.unbind_tenant('tap_tenant_a', 'a')::text$q$), 'true',
          'the operator unbinds the group');
SELECT is(pg_temp.as_role('tap_op', $q$SELECT docket.unbind_tenant('tap_tenant_a', 'a')::text$q$), 'false',
          'unbinding again: false');
SELECT is(pg_temp.as_role('tap_wa', $q$SELECT docket.fetch_run('system', 'b-1') ->> 'id'$q$),
          'b-1', 'its member is unbound again: system scope');
SELECT is(left(pg_temp.as_role('tap_pa', $q$SELECT docket.fetch_run('system', 'b-1') ->> 'id'$q$), 5),
          '42501', 'the producer bound directly is still bound');
SELECT is(docket.bind_tenant('tap_pa', 'b'), true, 'a second tenant for the producer');
SELECT is(pg_temp.as_role('tap_pa', $q$SELECT docket.fetch_run('tenant:b', 'b-1') ->> 'id'$q$),
          'b-1', 'it now uses both tenants');

SELECT * FROM finish();
ROLLBACK;
