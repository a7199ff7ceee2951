-- The task layer's hot lookups are index-served. Two kinds of checks on a store of
-- realistic size (statistics from ANALYZE, no planner settings):
--   * EXPLAIN (COSTS OFF, FORMAT JSON) of the statements the functions run, with
--     literals (custom plans) and as prepared statements under
--     plan_cache_mode = force_generic_plan (the plans PL/pgSQL caches);
--   * the buffers the real function calls read from each table and its indexes
--     (pg_stat_get_xact_blocks_fetched), which must stay a handful while the
--     tables span hundreds of pages, whatever statements the functions use.
BEGIN;
SELECT plan(51);

-------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.plan(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE p json;
BEGIN
  EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO p;
  RETURN p::jsonb;
END $$;
-- Every plan node of q.
CREATE FUNCTION pg_temp.nodes(q text) RETURNS SETOF jsonb LANGUAGE sql AS $$
  SELECT n FROM jsonb_path_query(pg_temp.plan(q), 'strict $.** ? (exists (@."Node Type"))') n $$;
-- The indexes q's plan reads, sorted.
CREATE FUNCTION pg_temp.indexes(q text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(DISTINCT n ->> 'Index Name', ','), '') FROM pg_temp.nodes(q) n
   WHERE n ? 'Index Name' $$;
-- The tables q's plan reads whole (sequential scans), sorted.
CREATE FUNCTION pg_temp.seqscans(q text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(DISTINCT n ->> 'Relation Name', ','), '') FROM pg_temp.nodes(q) n
   WHERE n ->> 'Node Type' = 'Seq Scan' $$;
-- The index conditions of q's plan on index `idx`.
CREATE FUNCTION pg_temp.index_cond(q text, idx text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(n ->> 'Index Cond', ' | ') FROM pg_temp.nodes(q) n WHERE n ->> 'Index Name' = idx $$;
-- A batch UPDATE's plan in one line: the indexes it reads with their
-- conditions, its loop nodes in plan order, and any sequential scan, sort,
-- materialization, hash or merge join (expected: none; a nested loop over the
-- arrays, in their order, which is the lock order, each row by primary key).
CREATE FUNCTION pg_temp.batch_plan(q text) RETURNS text LANGUAGE sql AS $$
  SELECT format('indexes: %s (%s); loop: %s; others: %s',
                string_agg(DISTINCT n ->> 'Index Name', ','), string_agg(n ->> 'Index Cond', ' | '),
                string_agg(n ->> 'Node Type', ',')
                  FILTER (WHERE n ->> 'Node Type' IN ('Nested Loop', 'Function Scan', 'Index Scan')),
                coalesce(string_agg(n ->> 'Node Type', ',')
                  FILTER (WHERE n ->> 'Node Type' IN ('Seq Scan', 'Sort', 'Materialize', 'Hash Join', 'Merge Join')),
                  'none'))
    FROM pg_temp.nodes(q) n $$;

-- Buffers of a table and its indexes fetched so far in this transaction.
CREATE FUNCTION pg_temp.blocks(tbl regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint FROM pg_class c
   WHERE c.oid = tbl OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = tbl) $$;
CREATE FUNCTION pg_temp.pages(tbl regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(c.relpages)::bigint FROM pg_class c
   WHERE c.oid = tbl OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = tbl) $$;
-- Runs format(q, i) for i = 1 .. n (the first calls settle the plan caches, as in a
-- long-lived session) and returns the buffers the last one fetched from tbl and its indexes.
CREATE FUNCTION pg_temp.cost(q text, tbl regclass, n int DEFAULT 7) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE before bigint;
BEGIN
  FOR i IN 1 .. n - 1 LOOP
    EXECUTE format(q, i);
  END LOOP;
  before := pg_temp.blocks(tbl);
  EXECUTE format(q, n);
  RETURN pg_temp.blocks(tbl) - before;
END $$;

-------------------------------------------------------------------------------
-- Fixture: 30000 tasks written straight into the tables
-------------------------------------------------------------------------------
SELECT set_config('docket.fake_now', '2040-03-01 00:00:00+00', true);
INSERT INTO docket.graphs VALUES ('job', 'task', '{"kind": "task"}', '2040-01-01Z');
-- 20000 finished over 40 days, 10000 live; 2/3 in 50 tenants; 10 queues
INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash, status, checkpoint_seq,
                         checkpoint_type, started_at, updated_at, document, wake_at)
SELECT 'r' || i, CASE WHEN i % 3 = 0 THEN NULL ELSE 't' || (i % 50) END, 'q' || (i % 10), 'job', 'task',
       CASE WHEN i <= 20000 THEN (ARRAY['completed', 'failed', 'cancelled'])[1 + i % 3] ELSE 'running' END,
       1, CASE WHEN i <= 20000 THEN 'run_completed' ELSE 'suspended' END::docket.checkpoint_type,
       '2040-01-01Z'::timestamptz + i * interval '3 minutes',
       '2040-01-01Z'::timestamptz + i * interval '3 minutes',
       jsonb_build_object('id', 'r' || i, 'graph_id', 'job', 'graph_hash', 'task',
                          'status', CASE WHEN i <= 20000 THEN 'completed' ELSE 'running' END,
                          'checkpoint_seq', 1, 'started_at', '2040-01-01T00:00:00Z', 'attempt', 1),
       CASE WHEN i > 20000 THEN '2040-06-01Z'::timestamptz END
  FROM generate_series(1, 30000) i;
INSERT INTO docket.tasks (run_id, tenant_key, queue, task_name, params, headers, max_attempts, retry,
                          idempotency_key, created_at)
SELECT 'r' || i, CASE WHEN i % 3 = 0 THEN '' ELSE 't' || (i % 50) END, 'q' || (i % 10), 'job', '{}', '{}', 5,
       '{}', CASE WHEN i % 2 = 0 THEN 'key-' || i END, '2040-01-01Z'
  FROM generate_series(1, 30000) i;
-- 5 steps for each live task
INSERT INTO docket.task_steps (run_id, step_name, value, completed_at)
SELECT 'r' || i, 'step#' || s, to_jsonb(s), '2040-01-01Z'
  FROM generate_series(20001, 30000) i, generate_series(1, 5) s;
-- 40000 waits of live tasks: half on events (2000 names), half on children
INSERT INTO docket.task_waits (run_id, step_name, kind, tenant_key, target)
SELECT 'r' || i, 'w' || k, CASE WHEN i % 2 = 0 THEN 'event' ELSE 'child' END,
       CASE WHEN i % 3 = 0 THEN '' ELSE 't' || (i % 50) END,
       CASE WHEN i % 2 = 0 THEN 'event-' || (i % 2000) ELSE 'c' || i || '-' || k END
  FROM generate_series(20001, 30000) i, generate_series(1, 4) k;
-- 50000 event slots, 40000 emitted over 28 days, in 2000: before any time
-- another test file's events carry (real time, 2040 and later), whose rolled
-- back rows can still sit at the head of task_events_emitted until a vacuum
-- and would otherwise be walked by the cleanup measured below.
INSERT INTO docket.task_events (tenant_key, event_name, payload, emitted_at, created_at)
SELECT CASE WHEN i % 3 = 0 THEN '' ELSE 't' || (i % 50) END, 'ev-' || i, '{}',
       CASE WHEN i <= 40000 THEN '2000-01-01Z'::timestamptz + i * interval '1 minute' END, '2000-01-01Z'
  FROM generate_series(1, 50000) i;
ANALYZE docket.graphs, docket.runs, docket.tasks, docket.task_steps, docket.task_waits, docket.task_events;

SELECT cmp_ok(pg_temp.pages('docket.tasks'), '>', 300::bigint, 'fixture: docket.tasks spans hundreds of pages');
SELECT cmp_ok(pg_temp.pages('docket.task_waits'), '>', 300::bigint, 'fixture: docket.task_waits too');

SET plan_cache_mode = force_generic_plan;

-------------------------------------------------------------------------------
-- await_due and await_tasks: the look for ready work of a queue (1,000 live
-- tasks of q3, none due yet) is served by runs_ready_queue
-------------------------------------------------------------------------------
SELECT cmp_ok(pg_temp.cost($$SELECT docket.await_due('q3', 0)$$, 'docket.runs'), '<=', 6::bigint,
  'await_due: its look reads a handful of docket.runs buffers');
SELECT cmp_ok(pg_temp.cost($$SELECT count(*) FROM docket.await_tasks('q3', 10, 30000, 10, 0)$$,
                           'docket.runs'), '<=', 12::bigint,
  'await_tasks: its look and its claim at the timeout read a handful');

-------------------------------------------------------------------------------
-- spawn_task: the idempotency lookup
-------------------------------------------------------------------------------
PREPARE tap_idem(text, text, text) AS
  SELECT t.run_id FROM docket.tasks t WHERE t.tenant_key = $1 AND t.queue = $2 AND t.idempotency_key = $3;
SELECT is(pg_temp.indexes($$SELECT t.run_id FROM docket.tasks t
                             WHERE t.tenant_key = 't2' AND t.queue = 'q2' AND t.idempotency_key = 'key-2'$$),
  'tasks_idempotency', 'idempotency lookup (custom plan): tasks_idempotency');
SELECT is(pg_temp.indexes($$EXECUTE tap_idem('t2', 'q2', 'key-2')$$), 'tasks_idempotency',
  'idempotency lookup (generic plan): tasks_idempotency');
SELECT is(pg_temp.index_cond($$EXECUTE tap_idem('t2', 'q2', 'key-2')$$, 'tasks_idempotency'),
  '((tenant_key = $1) AND (queue = $2) AND (idempotency_key = $3))', 'on all three key columns');
SELECT is(pg_temp.seqscans($$EXECUTE tap_idem('t2', 'q2', 'key-2')$$), '', 'no sequential scan');

-------------------------------------------------------------------------------
-- emit_event / _task_wake_parents: event waiters by (tenant_key, target)
-------------------------------------------------------------------------------
PREPARE tap_waiters(text, text) AS
  DELETE FROM docket.task_waits tw
   WHERE tw.kind = 'event' AND tw.tenant_key = $1 AND tw.target = $2
     AND NOT EXISTS (SELECT 1 FROM docket.runs x WHERE x.run_id = tw.run_id AND x.claim_token IS NOT NULL)
  RETURNING tw.run_id, tw.step_name;
SELECT is(pg_temp.indexes($$DELETE FROM docket.task_waits tw
                             WHERE tw.kind = 'event' AND tw.tenant_key = 't2' AND tw.target = 'event-2'
                               AND NOT EXISTS (SELECT 1 FROM docket.runs x WHERE x.run_id = tw.run_id AND x.claim_token IS NOT NULL)
                            RETURNING tw.run_id, tw.step_name$$),
  'runs_pkey,task_waits_event', 'event waiters (custom plan): task_waits_event, then runs by primary key');
SELECT is(pg_temp.indexes($$EXECUTE tap_waiters('t2', 'event-2')$$), 'runs_pkey,task_waits_event',
  'event waiters (generic plan): the same');
SELECT is(pg_temp.index_cond($$EXECUTE tap_waiters('t2', 'event-2')$$, 'task_waits_event'),
  '((tenant_key = $1) AND (target = $2))', 'on both columns');
SELECT is(pg_temp.seqscans($$EXECUTE tap_waiters('t2', 'event-2')$$), '', 'no sequential scan');

-------------------------------------------------------------------------------
-- Steps by run
-------------------------------------------------------------------------------
PREPARE tap_steps(text) AS
  SELECT s.step_name, s.value FROM docket.task_steps s WHERE s.run_id = $1 ORDER BY s.step_name;
PREPARE tap_step(text, text) AS
  SELECT s.value FROM docket.task_steps s WHERE s.run_id = $1 AND s.step_name = $2;
SELECT is(pg_temp.indexes($$SELECT s.step_name, s.value FROM docket.task_steps s WHERE s.run_id = 'r20001' ORDER BY s.step_name$$),
  'task_steps_pkey', 'step_states (custom plan): task_steps_pkey');
SELECT is(pg_temp.indexes($$EXECUTE tap_steps('r20001')$$), 'task_steps_pkey', 'step_states (generic plan): task_steps_pkey');
SELECT is(pg_temp.seqscans($$EXECUTE tap_steps('r20001')$$), '', 'no sequential scan');
SELECT is(pg_temp.indexes($$SELECT s.value FROM docket.task_steps s WHERE s.run_id = 'r20001' AND s.step_name = 'step#2'$$),
  'task_steps_pkey', 'one step (custom plan): task_steps_pkey');
SELECT is(pg_temp.indexes($$EXECUTE tap_step('r20001', 'step#2')$$), 'task_steps_pkey', 'one step (generic plan): task_steps_pkey');
SELECT is(pg_temp.index_cond($$EXECUTE tap_step('r20001', 'step#2')$$, 'task_steps_pkey'),
  '((run_id = $1) AND (step_name = $2))', 'on both key columns');

-------------------------------------------------------------------------------
-- claim_tasks: the claimed batch joins tasks and runs by primary key
-------------------------------------------------------------------------------
PREPARE tap_claim(timestamptz, int, bigint, int, text) AS
  SELECT d.run_id, d.claim_token, d.claim_attempt, d.checkpoint_seq, t.task_name, t.params,
         t.headers, t.cancel_at, t.deadline_at, t.first_started_at, t.max_duration_ms, r.document
    FROM docket.claim_due($1, $2, $3, $4, NULL, $5) d
    JOIN docket.tasks t ON t.run_id = d.run_id
    JOIN docket.runs r ON r.run_id = d.run_id
   WHERE d.outcome = 'lease'
   ORDER BY d.run_id;
SELECT is(pg_temp.indexes($$EXECUTE tap_claim('2040-03-01Z', 10, 30000, 10, 'q1')$$), 'runs_pkey,tasks_pkey',
  'claim_tasks (generic plan): tasks and runs by primary key');
SELECT is(pg_temp.seqscans($$EXECUTE tap_claim('2040-03-01Z', 10, 30000, 10, 'q1')$$), '', 'no sequential scan');

-------------------------------------------------------------------------------
-- The C++ task path's statements (src/pg/task_*.cpp), as prepared there
-------------------------------------------------------------------------------
-- claim_tasks: the leases' task rows and steps by primary key
PREPARE tap_leases(text[]) AS
  SELECT r.run_id, t.run_id IS NOT NULL, t.task_name, t.params, t.headers, t.cancel_at,
         t.first_started_at, t.deadline_at, t.max_duration_ms, (r.document ->> 'attempt')::int,
         r.document ->> 'wake_reason',
         coalesce((SELECT jsonb_object_agg(s.step_name, s.value) FROM docket.task_steps s
                    WHERE s.run_id = r.run_id), '{}'::jsonb)
    FROM docket.runs r LEFT JOIN docket.tasks t ON t.run_id = r.run_id
   WHERE r.run_id = ANY($1) ORDER BY r.run_id;
SELECT is(pg_temp.indexes($$EXECUTE tap_leases('{r20001,r20002,r20003}')$$), 'runs_pkey,task_steps_pkey,tasks_pkey',
  'claim_tasks leases (generic plan): runs, tasks and steps by primary key');
SELECT is(pg_temp.seqscans($$EXECUTE tap_leases('{r20001,r20002,r20003}')$$), '', 'no sequential scan');

-- complete_tasks: one fenced UPDATE over the batch's arrays (sorted by run id in
-- C++), a nested loop that reads and locks each run by the primary key in the
-- arrays' order (src/pg/task_complete.cpp, word for word); no planner setting
-- on the functions.
PREPARE tap_complete(text[], uuid[], jsonb[], timestamptz, text, text) AS
  UPDATE docket.runs r
     SET document = (r.document - '{waiting,id,graph_id,graph_hash,status,checkpoint_seq,started_at}'::text[])
         || jsonb_build_object('result', i.result),
         status = $5, checkpoint_seq = r.checkpoint_seq + 1,
         checkpoint_type = $6::docket.checkpoint_type, updated_at = $4,
         claim_token = NULL, claimed_at = NULL, wake_at = NULL,
         claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL,
         event_seq = r.event_seq + 1,
         completed_seq = coalesce(r.completed_seq, r.event_seq + 1),
         completed_at = CASE WHEN r.completed_seq IS NULL THEN $4 ELSE r.completed_at END
    FROM unnest($1::text[], $2::uuid[], $3::jsonb[]) AS i(id, token, result)
   WHERE r.run_id = i.id AND r.claim_token = i.token
     AND r.graph_hash = 'task' AND (r.deadline_at IS NULL OR r.deadline_at > $4)
  RETURNING r.run_id, r.event_seq, r.completed_seq;
SELECT is(pg_temp.batch_plan($$EXECUTE tap_complete('{r20001,r20002}', ARRAY[gen_random_uuid(), gen_random_uuid()],
                                                     '{1,2}', '2040-03-01Z', 'completed', 'run_completed')$$),
  'indexes: runs_pkey ((run_id = (i.id)::text)); loop: Nested Loop,Function Scan,Index Scan; others: none',
  'complete_tasks (generic plan): a nested loop over the arrays, in their order (the lock order), each run by primary key');

-- complete_task (one run): the same statement with one-element arrays
SELECT is(pg_temp.indexes($$EXECUTE tap_complete('{r20001}', ARRAY[gen_random_uuid()], '{1}', '2040-03-01Z',
                                                'completed', 'run_completed')$$), 'runs_pkey',
  'complete_task (generic plan): runs by primary key');
SELECT is(pg_temp.seqscans($$EXECUTE tap_complete('{r20001}', ARRAY[gen_random_uuid()], '{1}', '2040-03-01Z',
                                                 'completed', 'run_completed')$$), '', 'no sequential scan');

-- complete_steps / complete_step: the look for stored steps, the fenced refresh
-- (and the claim-attempt reset of a run storing a new step), then the insert of
-- the new ones (src/pg/task_steps.cpp)
PREPARE tap_steps_look(text[], text[]) AS
  SELECT k.run_id, k.step_name, s.value FROM unnest($1, $2) AS k (run_id, step_name)
   CROSS JOIN LATERAL (SELECT s.value FROM docket.task_steps s
                        WHERE s.run_id = k.run_id AND s.step_name = k.step_name LIMIT 1) s;
SELECT is(pg_temp.indexes($$EXECUTE tap_steps_look('{r20001,r20002}', '{s,t}')$$), 'task_steps_pkey',
  'complete_steps'' look (generic plan): one probe of task_steps_pkey per step');
SELECT is(pg_temp.seqscans($$EXECUTE tap_steps_look('{r20001,r20002}', '{s,t}')$$), '', 'no sequential scan');
PREPARE tap_steps_held(timestamptz, text[], uuid[], bigint[]) AS
  UPDATE docket.runs r SET claimed_at = greatest(r.claimed_at, $1),
         claim_renewed_at = CASE WHEN r.claim_renewed_at < $1 - coalesce(r.lease_ms, 30000) * interval '0.5 millisecond'
                                 THEN greatest(r.claimed_at, $1) ELSE r.claim_renewed_at END,
         claim_attempts = CASE WHEN k.n > 0 THEN 0 ELSE r.claim_attempts END,
         event_seq = r.event_seq + k.n
    FROM unnest($2::text[], $3::uuid[], $4::bigint[]) AS k (run_id, token, n)
   WHERE r.run_id = k.run_id AND r.claim_token = k.token
     AND r.graph_hash = 'task' AND (r.deadline_at IS NULL OR r.deadline_at > $1)
  RETURNING r.run_id, r.claim_token, r.event_seq;
SET enable_hashjoin = off;  -- held_statement is planned with nested loops only (pg/planning.hpp)
SET enable_mergejoin = off;
SELECT is(pg_temp.batch_plan($$EXECUTE tap_steps_held('2040-03-01Z', '{r20001,r20002}',
                                                       ARRAY[gen_random_uuid(), gen_random_uuid()], '{1,0}')$$),
  'indexes: runs_pkey ((run_id = (k.run_id)::text)); loop: Nested Loop,Function Scan,Index Scan; others: none',
  'complete_steps'' refresh (generic plan): a nested loop over the arrays, in their order (run_id order), each run by primary key');
RESET enable_hashjoin;
RESET enable_mergejoin;
PREPARE tap_steps_insert(text[], text[], jsonb[], bigint[], timestamptz) AS
  INSERT INTO docket.task_steps AS s (run_id, step_name, value, completed_at, seq)
  SELECT u.run_id, u.step_name, u.value, $5, u.base + row_number() OVER (PARTITION BY u.run_id ORDER BY u.step_name)
    FROM unnest($1, $2, $3, $4) AS u (run_id, step_name, value, base)
   ORDER BY u.run_id, u.step_name
  ON CONFLICT ON CONSTRAINT task_steps_pkey DO NOTHING
  RETURNING s.run_id, s.step_name, s.value;
SELECT is(pg_temp.seqscans($$EXECUTE tap_steps_insert('{r20001}', '{s}', '{1}', '{0}', '2040-03-01Z')$$), '',
  'complete_steps'' insert: no sequential scan (its conflicts are checked on task_steps_pkey)');


-- finishing: the tasks' own waiters, and their parents by child run id
PREPARE tap_release(text[]) AS
  WITH own AS (DELETE FROM docket.task_waits w WHERE w.run_id = ANY($1)),
       parents AS (DELETE FROM docket.task_waits w WHERE w.kind = 'child' AND w.target = ANY($1)
                   RETURNING w.run_id, w.step_name)
  SELECT run_id, step_name FROM parents ORDER BY run_id, step_name;
SELECT is(pg_temp.indexes($$EXECUTE tap_release('{r20001,c20001-1}')$$), 'task_waits_child,task_waits_pkey',
  'finishing (generic plan): own waiters by task_waits_pkey, parents by task_waits_child');
SELECT is(pg_temp.seqscans($$EXECUTE tap_release('{r20001,c20001-1}')$$), '', 'no sequential scan');

-------------------------------------------------------------------------------
-- cleanup: finished runs by age through runs_finished
-------------------------------------------------------------------------------
PREPARE tap_finished(timestamptz, int) AS
  DELETE FROM docket.runs x
   WHERE x.run_id = ANY (ARRAY(
     SELECT y.run_id FROM docket.runs y
      WHERE y.status IN ('completed', 'failed', 'cancelled') AND y.updated_at < $1
      ORDER BY y.updated_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED));
SELECT is(pg_temp.indexes($$DELETE FROM docket.runs x
   WHERE x.run_id = ANY (ARRAY(
     SELECT y.run_id FROM docket.runs y
      WHERE y.status IN ('completed', 'failed', 'cancelled') AND y.updated_at < '2040-01-08Z'
      ORDER BY y.updated_at LIMIT 1000 FOR UPDATE SKIP LOCKED))$$),
  'runs_finished,runs_pkey', 'cleanup (custom plan): runs_finished picks, runs_pkey deletes');
SELECT is(pg_temp.indexes($$EXECUTE tap_finished('2040-01-08Z', 1000)$$), 'runs_finished,runs_pkey',
  'cleanup (generic plan): the same');
SELECT is(pg_temp.index_cond($$EXECUTE tap_finished('2040-01-08Z', 1000)$$, 'runs_finished'), '(updated_at < $1)',
  'the horizon is the index condition');
SELECT is(pg_temp.seqscans($$EXECUTE tap_finished('2040-01-08Z', 1000)$$), '', 'no sequential scan');

PREPARE tap_events(timestamptz, int) AS
  DELETE FROM docket.task_events e
   WHERE e.ctid = ANY (ARRAY(
     SELECT f.ctid FROM docket.task_events f
      WHERE f.emitted_at < $1
      ORDER BY f.emitted_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED));
SELECT ok(position('task_events_emitted' IN pg_temp.indexes($$EXECUTE tap_events('2000-01-02Z', 1000)$$)) > 0,
  'cleanup of emitted events picks them through task_events_emitted');

-------------------------------------------------------------------------------
-- The real calls, with the default plan cache mode: buffers read per call
-------------------------------------------------------------------------------
RESET plan_cache_mode;
SELECT set_config('docket.fake_now', '2040-03-01 00:00:00+00', true);

SELECT cmp_ok(pg_temp.cost($$SELECT docket.spawn_task('job', '{}', 'q2', 'tenant:t2', '{"idempotency_key": "key-2"}')$$,
                           'docket.tasks'), '<=', 12::bigint,
  'a duplicate spawn_task (idempotency lookup) reads a handful of docket.tasks buffers');
SELECT cmp_ok(pg_temp.cost($$SELECT docket.emit_event('nobody-waits-%s', '{}', 'tenant:t2')$$, 'docket.task_waits'),
  '<=', 12::bigint, 'emit_event (waiters by kind, tenant, event) reads a handful of docket.task_waits buffers');

-- Every finish looks up the finishing task's parents (child waiters).
CREATE TEMP TABLE fin AS
  SELECT s.run_id FROM generate_series(1, 7) i, LATERAL docket.spawn_task('job', jsonb_build_object('i', i), 'q-fin', 'tenant:t2') s;
CREATE TEMP TABLE fin_claim AS
  SELECT c.*, row_number() OVER (ORDER BY c.run_id) AS i FROM docket.claim_tasks('q-fin', 7, now => '2040-03-01Z') c;
SELECT is((SELECT count(*)::int FROM fin_claim), 7, 'seven tasks are claimed');
SELECT cmp_ok(pg_temp.cost($$SELECT docket.complete_task(run_id, claim_token) FROM fin_claim WHERE i = %s$$,
                           'docket.task_waits'), '<=', 12::bigint,
  'complete_task looks up the finishing task''s waiters in a handful of docket.task_waits buffers');

CREATE TEMP TABLE st AS SELECT s.run_id FROM docket.spawn_task('job', '{}', 'q-steps') s;
CREATE TEMP TABLE st_claim AS SELECT c.* FROM docket.claim_tasks('q-steps', now => '2040-03-01Z') c;
SELECT cmp_ok(pg_temp.cost($$SELECT docket.complete_step(run_id, claim_token, 'step-%s', '1') FROM st_claim$$,
                           'docket.task_steps'), '<=', 20::bigint,
  'complete_step reads a handful of docket.task_steps buffers');
SELECT cmp_ok(pg_temp.cost($$SELECT count(*) FROM st_claim, docket.step_states(run_id, claim_token)$$,
                           'docket.task_steps'), '<=', 8::bigint, 'step_states too');

-- Claims kept alive by heartbeats past the claimers' TTL leave the range of
-- runs_claimed the expired class reads: it is keyed on claim_renewed_at, which a
-- heartbeat moves to the new claimed_at (claim_started_at stays).
CREATE TEMP TABLE hb AS SELECT s.run_id FROM docket.spawn_task('job', '{}', 'q-hb') s;
CREATE TEMP TABLE hb_claim AS SELECT c.* FROM docket.claim_tasks('q-hb', 1, 30000, now => '2040-03-01Z') c;
SELECT set_config('docket.fake_now', '2040-03-01 00:00:40+00', true);
SELECT docket.heartbeat(run_id, claim_token) FROM hb_claim;
SELECT is((SELECT (claim_started_at, claim_renewed_at, claimed_at)::text FROM docket.runs r JOIN hb USING (run_id)),
          ('2040-03-01 00:00:00+00'::timestamptz, '2040-03-01 00:00:40+00'::timestamptz,
           '2040-03-01 00:00:40+00'::timestamptz)::text,
  'a heartbeat renews the claim (claim_renewed_at = the new claimed_at); the claim''s start stays');
-- A step renews only once half the lease (30 s) has passed since the last renewal.
SELECT set_config('docket.fake_now', '2040-03-01 00:00:45+00', true);
SELECT docket.complete_step(run_id, claim_token, 'early', '1') FROM hb_claim;
SELECT is((SELECT (claim_renewed_at, claimed_at)::text FROM docket.runs r JOIN hb USING (run_id)),
          ('2040-03-01 00:00:40+00'::timestamptz, '2040-03-01 00:00:45+00'::timestamptz)::text,
  'a step 5 s after the renewal refreshes claimed_at only');
SELECT set_config('docket.fake_now', '2040-03-01 00:01:00+00', true);
SELECT docket.complete_step(run_id, claim_token, 'late', '1') FROM hb_claim;
SELECT is((SELECT (claim_renewed_at, claimed_at)::text FROM docket.runs r JOIN hb USING (run_id)),
          ('2040-03-01 00:01:00+00'::timestamptz, '2040-03-01 00:01:00+00'::timestamptz)::text,
  'a step 20 s after it (more than half the lease) renews the claim too');
-- 2,000 such claims, written as heartbeats leave them (an UPDATE in this
-- transaction would leave their old index entries live to it): a claim of
-- their queue reads a handful of docket.runs buffers, not every long task.
INSERT INTO docket.runs (run_id, queue, graph_id, graph_hash, status, checkpoint_seq, checkpoint_type,
                         started_at, updated_at, document, claim_token, claimed_at, claim_attempts,
                         claim_started_at, claim_renewed_at, lease_ms, event_seq)
SELECT 'long' || i, 'q-long', 'job', 'task', 'running', 0, 'run_initialized', '2040-03-01Z', '2040-03-01Z',
       jsonb_build_object('id', 'long' || i, 'graph_id', 'job', 'graph_hash', 'task', 'status', 'running',
                          'checkpoint_seq', 0, 'started_at', '2040-03-01T00:00:00Z', 'attempt', 1),
       gen_random_uuid(), '2040-03-01 00:00:40+00', 1, '2040-03-01Z', '2040-03-01 00:00:40+00', 30000, 1
  FROM generate_series(1, 2000) i;
INSERT INTO docket.tasks (run_id, tenant_key, queue, task_name, params, headers, max_attempts, created_at)
SELECT 'long' || i, '', 'q-long', 'job', '{}', '{}', 5, '2040-03-01Z' FROM generate_series(1, 2000) i;
SELECT set_config('docket.fake_now', '2040-03-01 00:00:45+00', true);
SELECT cmp_ok(pg_temp.cost($$SELECT count(*) FROM docket.claim_tasks('q-long', 10, 30000)$$, 'docket.runs'),
  '<=', 12::bigint, 'claim_tasks 35 s past the start of 2,000 renewed claims reads a handful of docket.runs buffers');
SELECT cmp_ok(pg_temp.cost($$SELECT count(*) FROM docket.claim_due(claim_limit => 10, queue => 'q-long')$$, 'docket.runs'),
  '<=', 12::bigint, 'claim_due of that queue too');
-- Once the heartbeats stop, the claims expire as before.
SELECT set_config('docket.fake_now', '2040-03-01 00:01:20+00', true);
SELECT is((SELECT count(*)::int FROM docket.claim_tasks('q-long', 2000, 30000)), 2000,
  'without further heartbeats the 2,000 claims expire and are claimed again');
SELECT set_config('docket.fake_now', '2040-03-01 00:00:00+00', true);

-- cleanup: a batch of 10 costs a few buffers per deleted task, not a scan
CREATE TEMP TABLE gone AS SELECT 0::bigint AS n;
SELECT cmp_ok(pg_temp.cost($$UPDATE gone SET n = docket.cleanup(interval '52 days', 10)$$, 'docket.runs'), '<',
  pg_temp.pages('docket.runs') / 10, 'cleanup(batch 10) reads a small part of docket.runs');
SELECT is((SELECT n FROM gone), 10::bigint, 'and deletes 10 runs a call');
-- The events' horizon: 2000-01-09, past the fixture's oldest events only.
SELECT set_config('docket.fake_now', '2000-03-01 00:00:00+00', true);
SELECT cmp_ok(pg_temp.cost($$UPDATE gone SET n = docket.cleanup(interval '52 days', 10)$$, 'docket.task_events'), '<',
  pg_temp.pages('docket.task_events') / 10, 'and a small part of docket.task_events');
SELECT set_config('docket.fake_now', '2040-03-01 00:00:00+00', true);

DEALLOCATE tap_idem;
DEALLOCATE tap_waiters;
DEALLOCATE tap_steps;
DEALLOCATE tap_step;
DEALLOCATE tap_claim;
DEALLOCATE tap_finished;
DEALLOCATE tap_events;
DEALLOCATE tap_leases;
DEALLOCATE tap_complete;
DEALLOCATE tap_steps_look;
DEALLOCATE tap_steps_held;
DEALLOCATE tap_release;

SELECT * FROM finish();
ROLLBACK;
