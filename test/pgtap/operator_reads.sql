-- Operator reads (sql/upgrade/0.3.0/90_operator_reads.sql): inspect_task and
-- list_poisoned, for roles that hold no table privilege (the dashboard and
-- docketctl read through them). Each keeps to its scope, shows no claim token,
-- and a tenant-bound role gets 42501 outside its tenants.
BEGIN;
SELECT plan(22);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql

\ir lib/as_role.sql

-------------------------------------------------------------------------------
-- inspect_task
-------------------------------------------------------------------------------
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('seen', 'tenant:a', '{"headers": {"h": "1"}, "max_attempts": 3}');
SELECT pg_temp.claim('seen', 1);
SELECT pg_temp.at(2);
SELECT docket.complete_step(pg_temp.id('seen'), pg_temp.tok('seen'), 'fetch', '{"n": 1}');
SELECT is(docket.inspect_task('tenant:a', pg_temp.id('seen')) - 'run_id',
  jsonb_build_object('tenant_id', 'a', 'task_name', 'job_seen', 'queue', 'seen',
    'params', '{}'::jsonb, 'headers', '{"h": "1"}'::jsonb, 'max_attempts', 3, 'retry', NULL,
    'idempotency_key', NULL, 'created_at', pg_temp.t(0), 'cancel_at', NULL, 'deadline_at', NULL,
    'status', 'running', 'started_at', pg_temp.t(0), 'updated_at', pg_temp.t(0),
    'checkpoint_seq', 0,
    'steps', jsonb_build_array(jsonb_build_object('step_name', 'fetch', 'value', '{"n": 1}'::jsonb,
                                                  'completed_at', pg_temp.t(2)))),
  'inspect_task: the task''s facts and its stored steps');
SELECT is(docket.inspect_task('tenant:a', pg_temp.id('seen')) ->> 'run_id', pg_temp.id('seen'), 'with its run id');
SELECT ok(NOT (docket.inspect_task('system', pg_temp.id('seen'))::text LIKE '%' || pg_temp.tok('seen') || '%'),
  'never the claim token (the task is claimed)');
SELECT is(docket.inspect_task('system', pg_temp.id('seen')) ->> 'task_name', 'job_seen', 'system sees it');
SELECT is(docket.inspect_task('tenant:b', pg_temp.id('seen')), NULL, 'another tenant: NULL');
SELECT is(docket.inspect_task('tenantless', pg_temp.id('seen')), NULL, 'tenantless: NULL');
SELECT is(docket.inspect_task('system', 'no-such-run'), NULL, 'an unknown run: NULL');
SELECT throws_ok($$SELECT docket.inspect_task(NULL, 'x')$$, '22023', NULL, 'a NULL scope: 22023');

-------------------------------------------------------------------------------
-- list_poisoned: poisoned runs of tenants a and b and without a tenant
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('p1', 'tenant:a');
SELECT pg_temp.spawn('p2', 'tenant:b');
SELECT pg_temp.spawn('p3', 'tenantless');
SELECT pg_temp.spawn('p4', 'tenant:a');
UPDATE docket.runs r SET poisoned_at = pg_temp.t(10 + x.k), poison_reason = 'max_claim_attempts_exceeded',
                         claim_attempts = 10
  FROM (VALUES ('p1', 3), ('p2', 1), ('p3', 2), ('p4', 3)) AS x(n, k)
 WHERE r.run_id = pg_temp.id(x.n);
CREATE FUNCTION pg_temp.names(scope docket.scope, lim int DEFAULT 100, after_at timestamptz DEFAULT NULL,
                              after_id text DEFAULT NULL) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(i.name, ',' ORDER BY p.ordinality)
    FROM docket.list_poisoned(scope, lim, after_at, after_id) WITH ORDINALITY p
    JOIN ids i ON i.run_id = p.run_id $$;
CREATE FUNCTION pg_temp.order_of(a text, b text) RETURNS text LANGUAGE sql AS
  $$ SELECT CASE WHEN pg_temp.id(a) < pg_temp.id(b) THEN a || ',' || b ELSE b || ',' || a END $$;
SELECT is(pg_temp.names('system'), 'p2,p3,' || pg_temp.order_of('p1', 'p4'),
  'system: every poisoned run, oldest poisoning first, ties by run id');
SELECT is(pg_temp.names('tenant:a'), pg_temp.order_of('p1', 'p4'), 'a tenant: its own');
SELECT is(pg_temp.names('tenantless'), 'p3', 'tenantless: the runs without a tenant');
SELECT is((SELECT to_jsonb(p) - 'run_id' FROM docket.list_poisoned('tenant:b') p),
  jsonb_build_object('tenant_id', 'b', 'queue', 'p2', 'graph_id', 'job_p2', 'graph_hash', 'task',
    'poisoned_at', pg_temp.t(11), 'poison_reason', 'max_claim_attempts_exceeded',
    'claim_attempts', 10, 'claim_abandons', 0), 'the row''s columns');
SELECT is(pg_temp.names('system', 2), 'p2,p3', 'page_limit cuts the page');
SELECT is(pg_temp.names('system', 2, pg_temp.t(12), pg_temp.id('p3')),
  pg_temp.order_of('p1', 'p4'), 'the next page starts after the last row');
SELECT throws_ok($$SELECT * FROM docket.list_poisoned('system', 0)$$, '22023', NULL, 'page_limit 0: 22023');
SELECT throws_ok($$SELECT * FROM docket.list_poisoned('system', 10, now(), NULL)$$, '22023', NULL,
  'half a cursor: 22023');

-- The statement can be served by the runs_poisoned index (the same text as
-- the function's, generic plan; sequential scans off, since these fixtures are
-- a few rows without statistics).
SET LOCAL plan_cache_mode = force_generic_plan;
SET LOCAL enable_seqscan = off;
PREPARE poisoned (docket.scope, int, timestamptz, text) AS
  SELECT r.run_id FROM docket.runs r WHERE r.poisoned_at IS NOT NULL
     AND ($3 IS NULL OR (r.poisoned_at, r.run_id) > ($3, $4))
     AND ($1 = 'system' OR ($1 = 'tenantless' AND r.tenant_id IS NULL)
          OR (left($1, 7) = 'tenant:' AND r.tenant_id = substr($1, 8)))
   ORDER BY r.poisoned_at, r.run_id LIMIT $2;
CREATE FUNCTION pg_temp.plan() RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; out text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE poisoned (''system'', 10, NULL, NULL)' LOOP
    out := out || line || E'\n';
  END LOOP;
  RETURN out;
END $$;
SELECT ok(pg_temp.plan() ~ '(Index|Index Only|Bitmap Index) Scan (using|on) runs_poisoned', 'list_poisoned''s statement reads the runs_poisoned index');
RESET enable_seqscan;

-------------------------------------------------------------------------------
-- Roles: a reader with no table privilege; a role bound to tenant a
-------------------------------------------------------------------------------
CREATE ROLE tap_or_reader NOLOGIN;
GRANT docket_reader TO tap_or_reader;
CREATE ROLE tap_or_bound NOLOGIN;
GRANT docket_reader TO tap_or_bound;
SELECT docket.bind_tenant('tap_or_bound', 'a');
SELECT is(pg_temp.as_role('tap_or_reader', format($q$SELECT docket.inspect_task('tenant:a', %L) ->> 'task_name'$q$, pg_temp.id('seen'))),
  'job_seen', 'a reader without table privileges inspects a task');
SELECT is(pg_temp.as_role('tap_or_reader', $q$SELECT count(*)::text FROM docket.list_poisoned('system')$q$),
  '4', 'and lists the poisoned runs');
SELECT is(pg_temp.as_role('tap_or_bound', $q$SELECT count(*)::text FROM docket.list_poisoned('tenant:a')$q$),
  '2', 'a role bound to a: its tenant''s poisoned runs');
SELECT is(left(pg_temp.as_role('tap_or_bound', $q$SELECT count(*)::text FROM docket.list_poisoned('system')$q$), 5),
  '42501', 'and 42501 for the system scope');
SELECT is(left(pg_temp.as_role('tap_or_bound', format($q$SELECT docket.inspect_task('tenant:b', %L)::text$q$, pg_temp.id('p2'))), 5),
  '42501', 'and for another tenant''s task');

SELECT * FROM finish();
ROLLBACK;
