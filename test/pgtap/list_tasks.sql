-- list_tasks: the tasks of a scope, newest first, filtered by queue, state and
-- task name, paged by a run id cursor; the state as task_result's; never a
-- claim token; the scope enforced in the statement; served by a run_heads
-- index walked in page order (plans and buffers on a store of realistic size).
-- Fixtures are built with the real task calls; the clock is docket.fake_now in 2041.
BEGIN;
SELECT plan(54);
SET LOCAL timezone = 'UTC';

-------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS
  $$ SELECT '2041-01-01 00:00:00+00'::timestamptz + round(s * 1e6)::bigint * interval '1 microsecond' $$;
CREATE FUNCTION pg_temp.at(s double precision) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('docket.fake_now', docket._iso(pg_temp.t(s)), true);
END $$;
CREATE TEMP TABLE ids (name text PRIMARY KEY, run_id text NOT NULL, token uuid);
-- spawn(n, q, s[, scope, opts]): at t(s), spawns task n (task name job_<n>) into queue q.
CREATE FUNCTION pg_temp.spawn(n text, q text, s double precision,
                              scope docket.scope DEFAULT 'tenantless',
                              opts jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.at(s);
  INSERT INTO ids (name, run_id)
    SELECT n, x.run_id FROM docket.spawn_task('job_' || n, '{}', q, scope, opts) x;
END $$;
CREATE FUNCTION pg_temp.id(n text) RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT run_id FROM ids WHERE name = n $$;
CREATE FUNCTION pg_temp.tok(n text) RETURNS uuid LANGUAGE sql STABLE AS
  $$ SELECT token FROM ids WHERE name = n $$;
-- claim(q, s[, lease, mca]): at t(s), claims one task from queue q; returns its name.
CREATE FUNCTION pg_temp.claim(q text, s double precision, lease bigint DEFAULT 3600000,
                              mca int DEFAULT 10) RETURNS text LANGUAGE plpgsql AS $$
DECLARE out text;
BEGIN
  PERFORM pg_temp.at(s);
  WITH c AS (SELECT x.* FROM docket.claim_tasks(q, 1, lease, mca, pg_temp.t(s)) x),
       u AS (UPDATE ids SET token = c.claim_token FROM c WHERE ids.run_id = c.run_id
             RETURNING ids.name)
  SELECT coalesce(string_agg(u.name, ' '), '') INTO out FROM u;
  RETURN out;
END $$;
-- names(query): the fixture names of the run ids list_tasks returns, in its order.
CREATE FUNCTION pg_temp.names(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE out text;
BEGIN
  EXECUTE format('SELECT coalesce(string_agg(coalesce(i.name, l.run_id), '' '' ORDER BY l.n), '''')
                    FROM (SELECT x.run_id, row_number() OVER () AS n FROM (%s) x) l
                    LEFT JOIN ids i ON i.run_id = l.run_id', q) INTO out;
  RETURN out;
END $$;
\ir lib/err.sql

-------------------------------------------------------------------------------
-- The function
-------------------------------------------------------------------------------
SELECT ok(obj_description('docket.list_tasks(docket.scope, text, text, text, text, int)'::regprocedure,
                          'pg_proc') IS NOT NULL, 'list_tasks has a comment');
SELECT is((SELECT proconfig FROM pg_proc
            WHERE oid = 'docket.list_tasks(docket.scope, text, text, text, text, int)'::regprocedure),
  ARRAY['search_path=pg_catalog, pg_temp', 'jit=off'], 'its search_path is pinned, jit off');
SELECT is((SELECT proconfig[1] FROM pg_proc
            WHERE oid = 'docket._list_tasks_statement(docket.scope, boolean, boolean)'::regprocedure),
  'search_path=pg_catalog, pg_temp', 'its statement builder''s too');
SELECT is((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
             FROM pg_attribute a WHERE a.attrelid = 'docket.task_summary'::regclass AND a.attnum > 0),
  'run_id text, task_name text, queue text, tenant_id text, state text, attempt integer, started_at timestamp with time zone, updated_at timestamp with time zone, wake_at timestamp with time zone',
  'its rows: a summary, no claim token');
SELECT ok(NOT has_function_privilege('public', 'docket.list_tasks(docket.scope, text, text, text, text, int)', 'EXECUTE'),
  'PUBLIC may not execute it');

SELECT is(pg_temp.err($$SELECT * FROM docket.list_tasks(NULL)$$),
  '22023 bad_argument: scope must not be NULL', 'a NULL scope raises 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.list_tasks('system', page_limit => 0)$$),
  '22023 bad_argument: page_limit must be between 1 and 10000, not 0', 'page_limit 0 raises 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.list_tasks('system', page_limit => NULL)$$),
  '22023 bad_argument: page_limit must be between 1 and 10000, not NULL', 'page_limit NULL raises 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.list_tasks('system', state => 'due')$$),
  '22023 bad_argument: state must be one of pending, running, sleeping, waiting, poisoned, completed, failed, cancelled, not "due"',
  'an unknown state raises 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.list_tasks('nobody')$$)::text LIKE '23514 %', true,
  'a malformed scope is the domain''s check violation');
SELECT is(pg_temp.err($$SELECT * FROM docket.list_tasks('system', after_run_id => 'no-such-run')$$),
  '22023 bad_argument: after_run_id no-such-run is not a task visible in scope system',
  'an unknown cursor raises 22023');

-------------------------------------------------------------------------------
-- Fixtures: every state, in queues lt_a, lt_b and lt_c, tenantless and two tenants
-------------------------------------------------------------------------------
-- A run store run (not a task) is never listed.
SELECT docket.save_graph('lt_graph', 'h1', '{}');
SELECT ok(docket.insert_run('tenantless', jsonb_build_object('id', 'lt-not-a-task', 'graph_id', 'lt_graph',
  'graph_hash', 'h1', 'status', 'running', 'checkpoint_seq', 0, 'started_at', '2041-01-01T00:00:50Z'),
  'run_initialized', pg_temp.t(50), 'lt_a') IS NOT NULL, 'a run store run in lt_a');

SELECT pg_temp.spawn('poisoned', 'lt_a', 1);
SELECT is(pg_temp.claim('lt_a', 1, lease => 1000, mca => 1), 'poisoned', 'poisoned claimed');
SELECT is(pg_temp.claim('lt_a', 3, lease => 1000, mca => 1), '', 'its expired claim poisons it');
SELECT pg_temp.spawn('running', 'lt_a', 4);
SELECT is(pg_temp.claim('lt_a', 4), 'running', 'running claimed');
SELECT pg_temp.spawn('sleeping', 'lt_a', 5);
SELECT is(pg_temp.claim('lt_a', 5), 'sleeping', 'sleeping claimed');
SELECT status FROM docket.sleep_until(pg_temp.id('sleeping'), pg_temp.tok('sleeping'), 'nap', pg_temp.t(5000));
SELECT pg_temp.spawn('waiting', 'lt_a', 6);
SELECT is(pg_temp.claim('lt_a', 6), 'waiting', 'waiting claimed');
SELECT status FROM docket.await_event(pg_temp.id('waiting'), pg_temp.tok('waiting'), 'e', 'never', 10000);
SELECT pg_temp.spawn('completed', 'lt_a', 7);
SELECT is(pg_temp.claim('lt_a', 7), 'completed', 'completed claimed');
SELECT docket.complete_task(pg_temp.id('completed'), pg_temp.tok('completed'), '{}');
SELECT pg_temp.spawn('failed', 'lt_a', 8);
SELECT is(pg_temp.claim('lt_a', 8), 'failed', 'failed claimed');
SELECT disposition FROM docket.fail_task(pg_temp.id('failed'), pg_temp.tok('failed'), '{"message": "no"}', false);
SELECT pg_temp.spawn('cancelled', 'lt_a', 9);
SELECT docket.cancel_task('tenantless', pg_temp.id('cancelled'), 'test');
SELECT pg_temp.spawn('pending', 'lt_a', 10);
SELECT pg_temp.spawn('x1', 'lt_b', 11, 'tenant:x');
SELECT pg_temp.spawn('x2', 'lt_b', 12, 'tenant:x');
SELECT pg_temp.spawn('x3', 'lt_a', 13, 'tenant:x');
SELECT pg_temp.spawn('y1', 'lt_b', 14, 'tenant:y');
SELECT pg_temp.spawn('retry', 'lt_c', 15, opts => '{"retry": {"kind": "fixed", "base_ms": 3600000}}');
SELECT is(pg_temp.claim('lt_c', 15), 'retry', 'retry claimed');
SELECT disposition FROM docket.fail_task(pg_temp.id('retry'), pg_temp.tok('retry'), '{"message": "again"}');
SELECT pg_temp.at(20);

-------------------------------------------------------------------------------
-- Listing
-------------------------------------------------------------------------------
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('system') WHERE queue LIKE 'lt\_%'$$),
  'retry y1 x3 x2 x1 pending cancelled failed completed waiting sleeping running poisoned',
  'system: every task, newest first; the run store run is not a task');
SELECT results_eq(
  $$SELECT l.state, l.task_name, l.queue, l.tenant_id, l.attempt FROM docket.list_tasks('system') l
     WHERE l.queue LIKE 'lt\_%' ORDER BY l.run_id$$,
  $$SELECT docket.task_result('system', i.run_id) ->> 'state', 'job_' || i.name,
           docket.task_result('system', i.run_id) ->> 'queue',
           docket.inspect_run('system', i.run_id) ->> 'tenant_id',
           (docket.task_result('system', i.run_id) ->> 'attempts')::int
      FROM ids i ORDER BY i.run_id$$,
  'state, name, queue, tenant and attempt agree with task_result and inspect_run');
SELECT is((SELECT string_agg(DISTINCT l.state, ' ' ORDER BY l.state) FROM docket.list_tasks('system') l
            WHERE l.queue LIKE 'lt\_%'),
  'cancelled completed failed pending poisoned running sleeping waiting', 'every state is in the fixture');
SELECT is((SELECT l.wake_at FROM docket.list_tasks('system', task_name => 'job_sleeping') l),
  pg_temp.t(5000), 'a sleeping task''s wake time');
SELECT is((SELECT l.wake_at FROM docket.list_tasks('system', task_name => 'job_running') l), NULL,
  'a running task has none');
SELECT is((SELECT l.state || ' ' || l.attempt FROM docket.list_tasks('system', task_name => 'job_retry') l),
  'sleeping 2', 'a retry waiting out its backoff: sleeping, its next attempt');

-- Filters
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('system', queue => 'lt_b')$$),
  'y1 x2 x1', 'by queue');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('system', state => 'pending')
                           WHERE queue LIKE 'lt\_%'$$),
  'y1 x3 x2 x1 pending', 'by state');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('system', state => 'sleeping', queue => 'lt_a')$$),
  'sleeping', 'by state and queue');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('system', task_name => 'job_x2')$$),
  'x2', 'by task name');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('system', queue => 'lt_a', state => 'pending',
                                                          task_name => 'job_x3')$$),
  'x3', 'by all three');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('system', queue => 'lt_b', task_name => 'job_x3')$$),
  '', 'no match: no rows');
SELECT is(pg_temp.names($$SELECT l.* FROM unnest(ARRAY['poisoned', 'running', 'waiting', 'completed', 'failed',
                                                        'cancelled']) WITH ORDINALITY s (st, o),
                                  LATERAL docket.list_tasks('system', state => s.st) l
                            WHERE l.queue LIKE 'lt\_%' ORDER BY s.o$$),
  'poisoned running waiting completed failed cancelled', 'each state filter finds its task');

-- Scopes
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('tenant:x')$$), 'x3 x2 x1', 'a tenant: its tasks only');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('tenant:y', queue => 'lt_b')$$), 'y1', 'another tenant');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('tenant:z')$$), '', 'a tenant with nothing');
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('tenantless') WHERE queue LIKE 'lt\_%'$$),
  'retry pending cancelled failed completed waiting sleeping running poisoned', 'tenantless: no tenant''s task');

-- Keyset paging
SELECT is(pg_temp.names($$SELECT * FROM docket.list_tasks('tenantless', queue => 'lt_a', page_limit => 3)$$),
  'pending cancelled failed', 'page 1');
SELECT is(pg_temp.names(format($$SELECT * FROM docket.list_tasks('tenantless', queue => 'lt_a', page_limit => 3,
                                                                  after_run_id => %L)$$, pg_temp.id('failed'))),
  'completed waiting sleeping', 'page 2 continues after the cursor');
SELECT is(pg_temp.names(format($$SELECT * FROM docket.list_tasks('tenantless', queue => 'lt_a', page_limit => 3,
                                                                  after_run_id => %L)$$, pg_temp.id('sleeping'))),
  'running poisoned', 'page 3: short, the end');
SELECT is(pg_temp.names(format($$SELECT * FROM docket.list_tasks('tenant:x', after_run_id => %L)$$, pg_temp.id('x2'))),
  'x1', 'a tenant''s cursor');
SELECT is(pg_temp.err(format($$SELECT * FROM docket.list_tasks('tenant:x', after_run_id => %L)$$, pg_temp.id('y1'))),
  format('22023 bad_argument: after_run_id %s is not a task visible in scope tenant:x', pg_temp.id('y1')),
  'another tenant''s run id is no cursor');

-------------------------------------------------------------------------------
-- Served by an index, walked in page order
-------------------------------------------------------------------------------
-- 40,000 more tasks (their runs and heads written straight into the tables):
-- 3/4 finished, 2/3 in 50 tenants, 10 queues, 20 task names. The unfinished
-- ones have no wake time (pending for list_tasks), so none enters a claim or
-- wait index: the files after this one check the plans and buffers of those,
-- and this file's rolled-back rows leave dead entries wherever they went.
INSERT INTO docket.graphs VALUES ('lt_job', 'task', '{"kind": "task"}', pg_temp.t(0)) ON CONFLICT DO NOTHING;
INSERT INTO docket.graphs
  SELECT 'lt_job' || g, 'task', '{"kind": "task"}', pg_temp.t(0) FROM generate_series(1, 19) g;
INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash, status, checkpoint_seq,
                         checkpoint_type, started_at, updated_at, document, wake_at)
SELECT 'big-' || lpad(i::text, 6, '0'), CASE WHEN i % 3 = 0 THEN NULL ELSE 't' || (i % 50) END,
       'lt_q' || (i % 10), 'lt_job' || CASE WHEN i % 20 = 0 THEN '' ELSE (i % 20)::text END, 'task',
       CASE WHEN i <= 30000 THEN (ARRAY['completed', 'failed', 'cancelled'])[1 + i % 3] ELSE 'running' END,
       1, CASE WHEN i <= 30000 THEN 'run_completed' ELSE 'suspended' END::docket.checkpoint_type,
       pg_temp.t(-86400 + i), pg_temp.t(-86400 + i),
       jsonb_build_object('id', 'big-' || i, 'attempt', 1, 'padding', repeat('x', 200)),
       NULL
  FROM generate_series(1, 40000) i;
INSERT INTO docket.run_heads (run_id, tenant_id, queue, graph_id, graph_hash, started_at)
SELECT r.run_id, r.tenant_id, r.queue, r.graph_id, r.graph_hash, r.started_at
  FROM docket.runs r WHERE r.run_id LIKE 'big-%';
ANALYZE docket.runs, docket.run_heads, docket.graphs;

CREATE FUNCTION pg_temp.pages(tbl regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(c.relpages)::bigint FROM pg_class c
   WHERE c.oid = tbl OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = tbl) $$;
CREATE FUNCTION pg_temp.blocks(tbl regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint FROM pg_class c
   WHERE c.oid = tbl OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = tbl) $$;
-- cost(q): the buffers of docket.runs, docket.run_heads and their indexes q's last of 3 runs fetched.
CREATE FUNCTION pg_temp.cost(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE before bigint;
BEGIN
  EXECUTE q;
  EXECUTE q;
  before := pg_temp.blocks('docket.runs') + pg_temp.blocks('docket.run_heads');
  EXECUTE q;
  RETURN pg_temp.blocks('docket.runs') + pg_temp.blocks('docket.run_heads') - before;
END $$;
-- shape(scope[, task_name, cursor]): 'indexes read; seqscans=n sorts=n' of the
-- plan of one chunk of list_tasks's walk (as EXECUTE ... USING: a custom plan).
CREATE FUNCTION pg_temp.shape(scope docket.scope, task_name text DEFAULT NULL,
                              after_run_id text DEFAULT NULL) RETURNS text LANGUAGE plpgsql AS $$
DECLARE p json;
BEGIN
  DEALLOCATE ALL;
  EXECUTE format('PREPARE lt_q (text, text, timestamptz, text, int, timestamptz) AS %s',
                 docket._list_tasks_statement(scope, task_name IS NOT NULL, after_run_id IS NOT NULL));
  EXECUTE format('EXPLAIN (COSTS OFF, FORMAT JSON) EXECUTE lt_q(%L, %L, %L, %L, 20, %L)',
                 CASE WHEN scope LIKE 'tenant:%' THEN substr(scope, 8) END, task_name,
                 (SELECT h.started_at FROM docket.run_heads h WHERE h.run_id = after_run_id),
                 after_run_id, pg_temp.t(20)) INTO p;
  RETURN (SELECT coalesce(string_agg(DISTINCT n ->> 'Index Name', ',') FILTER (WHERE n ? 'Index Name'), '')
                 || '; seqscans=' || count(*) FILTER (WHERE n ->> 'Node Type' = 'Seq Scan')
                 || ' sorts=' || count(*) FILTER (WHERE n ->> 'Node Type' IN ('Sort', 'Incremental Sort'))
            FROM jsonb_path_query(p::jsonb, 'strict $.** ? (exists (@."Node Type"))') n);
END $$;

SELECT cmp_ok(pg_temp.pages('docket.runs'), '>', 1000::bigint, 'fixture: docket.runs spans a thousand pages');
SELECT is(pg_temp.shape('system'), 'run_heads_list,runs_pkey; seqscans=0 sorts=0',
  'system: run_heads_list in page order, runs by primary key');
SELECT is(pg_temp.shape('tenant:t7'), 'run_heads_tenant,runs_pkey; seqscans=0 sorts=0',
  'a tenant: run_heads_tenant');
SELECT is(pg_temp.shape('tenant:t7', after_run_id => 'big-035057'), 'run_heads_tenant,runs_pkey; seqscans=0 sorts=0',
  'a tenant with a cursor: run_heads_tenant');
SELECT is(pg_temp.shape('system', 'lt_job3', 'big-020003'),
  'run_heads_graph,runs_pkey; seqscans=0 sorts=0', 'a task name with a cursor: run_heads_graph');
SELECT is(pg_temp.shape('tenantless', 'lt_job3'), 'run_heads_graph,runs_pkey; seqscans=0 sorts=0',
  'tenantless and a task name: run_heads_graph');
SELECT cmp_ok(pg_temp.cost($$SELECT * FROM docket.list_tasks('system', page_limit => 20)$$), '<', 150::bigint,
  'a page of 20 reads about 4 buffers a task');
SELECT cmp_ok(pg_temp.cost($$SELECT * FROM docket.list_tasks('tenant:t7', queue => 'lt_q7', page_limit => 20,
                                                              after_run_id => 'big-035057')$$), '<', 150::bigint,
  'a tenant''s queue after a cursor: the same');
SELECT is((SELECT count(*) FROM docket.list_tasks('system', queue => 'lt_q3', state => 'pending', page_limit => 600)),
  600::bigint, 'a filtered page spanning chunks is full');
SELECT is((SELECT count(*) FROM docket.list_tasks('system', queue => 'lt_q3', state => 'pending', page_limit => 10000)),
  1000::bigint, 'and the walk reaches the end');
SELECT is((SELECT string_agg(run_id, ',') FROM docket.list_tasks('system', queue => 'lt_q3', state => 'pending',
                                                                   page_limit => 3)),
  'big-039993,big-039983,big-039973', 'in page order');
SELECT is((SELECT string_agg(run_id, ',') FROM docket.list_tasks('system', queue => 'lt_q3', state => 'completed',
                                                                   page_limit => 2)),
  'big-029973,big-029943', 'a filter matching deep in the walk');

SELECT * FROM finish();
ROLLBACK;
