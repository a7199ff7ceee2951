-- Plans of the schedule statements (sql/upgrade/0.3.0/40_schedules.sql),
-- pinned as generic plans: fire_schedules' due probe, which every pool's poll
-- loop runs, is a range of schedules_due (empty when nothing is due), and
-- list_schedules reads an index in name order for every scope. Each PREPARE
-- repeats the statement text of the plpgsql functions; change both together.
CREATE EXTENSION docket;
SET plan_cache_mode = force_generic_plan;
SET docket.fake_now = '2030-01-01 00:00:00+00';

-- 2000 schedules: a quarter tenantless, the rest over 30 tenants.
SELECT count(*) FROM (
  SELECT docket.schedule_task('s-' || lpad(i::text, 4, '0'), (i % 60) || ' ' || (i % 24) || ' * * *', 'job',
                              owner_scope => CASE WHEN i % 4 = 0 THEN 'tenantless' ELSE 'tenant:t' || (i % 30) END)
    FROM generate_series(1, 2000) i) scheduled;
ANALYZE docket.schedules;

-- fire_schedules: the due schedules, oldest tick first, skipping those locked.
PREPARE due (timestamptz, int) AS SELECT d.schedule_name, d.cron, d.task_name, d.params, d.queue, d.owner_scope, d.options, d.next_run_at FROM docket.schedules d WHERE d.next_run_at <= $1 ORDER BY d.next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED;
EXPLAIN (COSTS OFF) EXECUTE due ('2030-01-01 00:00:00+00', 1000);

-- list_schedules: system, then one owner scope.
PREPARE list_all AS SELECT s.schedule_name, s.cron, s.task_name, s.queue, s.owner_scope, s.next_run_at FROM docket.schedules s ORDER BY s.schedule_name;
EXPLAIN (COSTS OFF) EXECUTE list_all;
PREPARE list_scope (docket.scope) AS SELECT s.schedule_name, s.cron, s.task_name, s.queue, s.owner_scope, s.next_run_at FROM docket.schedules s WHERE s.tenant_key = CASE WHEN $1 = 'tenantless' THEN '' ELSE substr($1, 8) END ORDER BY s.schedule_name;
EXPLAIN (COSTS OFF) EXECUTE list_scope ('tenant:t1');

DROP EXTENSION docket CASCADE;
