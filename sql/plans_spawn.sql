-- Plans of the spawn path (src/pg/task_spawn.cpp) and of the cascade that
-- replaces its foreign keys (sql/upgrade/0.3.0/30_spawn.sql), pinned as generic
-- plans: the idempotency lookup by tasks_idempotency (its text repeats
-- task_spawn.cpp's word for word; change both together), and deleting runs'
-- heads and task rows by index (the trigger's joins, with the deleted ids
-- as arrays instead of its transition table).
CREATE EXTENSION docket;
SET plan_cache_mode = force_generic_plan;

-- 3000 tasks over three names, two queues and two tenants, a third with keys.
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY(SELECT jsonb_build_object('i', i) FROM generate_series(1, 1000) i), 'q1');
SELECT count(*) FROM docket.spawn_tasks('mail', ARRAY(SELECT jsonb_build_object('i', i) FROM generate_series(1, 1000) i), 'q2', 'tenant:a');
SELECT count(*) FROM docket.spawn_tasks('job', ARRAY(SELECT jsonb_build_object('i', i) FROM generate_series(1, 1000) i), 'q1', 'tenant:b',
  (SELECT jsonb_agg(jsonb_build_object('idempotency_key', 'key-' || i)) FROM generate_series(1, 1000) i));
ANALYZE docket.tasks, docket.runs, docket.run_heads;

-- spawn: the tasks that already hold some keys.
PREPARE existing (text, text, text[]) AS SELECT t.idempotency_key, t.run_id, r.attempt FROM unnest($3) AS k (key) CROSS JOIN LATERAL (SELECT t.idempotency_key, t.run_id FROM docket.tasks t WHERE t.tenant_key = $1 AND t.queue = $2 AND t.idempotency_key = k.key LIMIT 1) t CROSS JOIN LATERAL (SELECT (r.document ->> 'attempt')::int AS attempt FROM docket.runs r WHERE r.run_id = t.run_id LIMIT 1) r;
EXPLAIN (COSTS OFF) EXECUTE existing ('b', 'q1', '{key-1,key-2}');

-- deleting runs: their heads by (started_at, run_id) on run_heads_list (run_heads
-- has no primary key: sql/upgrade/0.3.0/50_spawn_write_set.sql), task rows by
-- primary key.
PREPARE heads_gone (text[], timestamptz[]) AS DELETE FROM docket.run_heads h USING unnest($1, $2) AS g(run_id, started_at) WHERE h.started_at = g.started_at AND h.run_id = g.run_id;
EXPLAIN (COSTS OFF) EXECUTE heads_gone ('{a,b}', '{2040-01-01Z,2040-01-01Z}');
PREPARE tasks_gone (text[]) AS DELETE FROM docket.tasks t USING unnest($1) AS g(run_id) WHERE t.run_id = g.run_id;
EXPLAIN (COSTS OFF) EXECUTE tasks_gone ('{a,b}');

DROP EXTENSION docket CASCADE;
