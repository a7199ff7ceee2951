-- spawn_tasks: one task per element, set-based, with spawn_task's semantics per
-- element (options, idempotency keys, errors: 22023 and nothing written); the
-- time-ordered run ids; and the guards that replace the spawn path's foreign
-- keys. Times are in 2040, set through docket.fake_now.
BEGIN;
SELECT plan(50);

CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2040-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
SELECT set_config('docket.fake_now', pg_temp.t(0)::text, true);

-- Everything a spawn writes, for "nothing changed" checks.
CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'runs', (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.run_id), '[]') FROM docket.runs r),
    'heads', (SELECT coalesce(jsonb_agg(to_jsonb(h) ORDER BY h.run_id), '[]') FROM docket.run_heads h),
    'tasks', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.run_id), '[]') FROM docket.tasks t),
    'graphs', (SELECT coalesce(jsonb_agg(to_jsonb(g) ORDER BY g.graph_id, g.graph_hash), '[]')
                 FROM docket.graphs g)) $$;
-- A task's rows without its id, to compare a spawn_tasks element with a spawn_task call.
CREATE FUNCTION pg_temp.shape(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'run', (SELECT to_jsonb(r) - 'run_id' - 'document' FROM docket.runs r WHERE r.run_id = id),
    'document', (SELECT r.document - 'id' FROM docket.runs r WHERE r.run_id = id),
    'head', (SELECT to_jsonb(h) - 'run_id' FROM docket.run_heads h WHERE h.run_id = id),
    'task', (SELECT to_jsonb(t) - 'run_id' FROM docket.tasks t WHERE t.run_id = id)) $$;
CREATE TEMP TABLE got (name text, n bigint, run_id text, attempt int, created boolean);
CREATE FUNCTION pg_temp.spawn(name text, task text, params jsonb[], q text DEFAULT 'default',
                              owner text DEFAULT 'tenantless', opts jsonb DEFAULT '{}') RETURNS bigint
  LANGUAGE sql AS $$
  WITH s AS (INSERT INTO got SELECT name, o.n, o.run_id, o.attempt, o.created
               FROM docket.spawn_tasks(task, params, q, owner::docket.scope, opts) WITH ORDINALITY
                    AS o(run_id, attempt, created, n) RETURNING 1)
  SELECT count(*) FROM s $$;
CREATE FUNCTION pg_temp.id(name text, n bigint) RETURNS text
  LANGUAGE sql AS $$ SELECT run_id FROM got WHERE got.name = id.name AND got.n = id.n $$;

-------------------------------------------------------------------------------
-- One row per element, in input order
-------------------------------------------------------------------------------
SELECT is(pg_temp.spawn('three', 'mail', ARRAY['{"to": 1}', '{"to": 2}', '{"to": 3}']::jsonb[], 'mq',
                        'tenant:acme', '{"max_attempts": 3, "headers": {"h": 1}, "delay_ms": 5000}'),
          3::bigint, 'three elements: three rows');
SELECT is((SELECT array_agg((attempt, created)::text ORDER BY n) FROM got WHERE name = 'three'),
          ARRAY['(1,t)', '(1,t)', '(1,t)'], 'each created, attempt 1');
SELECT is((SELECT array_agg(t.params ORDER BY g.n) FROM got g JOIN docket.tasks t USING (run_id)
            WHERE g.name = 'three'),
          ARRAY['{"to": 1}', '{"to": 2}', '{"to": 3}']::jsonb[], 'rows come in input order (params)');
SELECT ok((SELECT bool_and(run_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
             FROM got WHERE name = 'three'), 'run ids are version 7 UUIDs (time-ordered)');
SELECT is((SELECT array_agg(run_id ORDER BY n) FROM got WHERE name = 'three'),
          (SELECT array_agg(run_id ORDER BY run_id COLLATE "C") FROM got WHERE name = 'three'),
          'and ascend in input order');
SELECT is((SELECT count(DISTINCT run_id)::int FROM got WHERE name = 'three'), 3, 'three distinct tasks');

-- Each element is what spawn_task makes of the same arguments.
SELECT run_id AS single FROM docket.spawn_task('mail', '{"to": 2}', 'mq', 'tenant:acme',
                         '{"max_attempts": 3, "headers": {"h": 1}, "delay_ms": 5000}') \gset
SELECT is(pg_temp.shape(pg_temp.id('three', 2)), pg_temp.shape(:'single'),
          'an element''s run, head, document and task row are spawn_task''s');
SELECT is((SELECT wake_at FROM docket.runs WHERE run_id = pg_temp.id('three', 1)), pg_temp.t(5),
          'shared options apply to every element (delay_ms)');
SELECT is((SELECT count(*)::int FROM docket.run_heads WHERE run_id IN (SELECT run_id FROM got WHERE name = 'three')),
          3, 'every run has its head');
SELECT is((SELECT jsonb_array_length(docket.list_runs('tenant:acme', 10) -> 'entries')), 4,
          'list_runs sees the tenant''s four tasks');

SELECT is(pg_temp.spawn('none', 'mail', '{}'::jsonb[]), 0::bigint, 'an empty array spawns nothing');

-- One options object without a key (scalars, the ids built in place) and an
-- array of one object per element (per-element arrays) write the same rows.
SELECT is(pg_temp.spawn('uniform', 'rich', ARRAY['{"a": 1}', '{"a": 2}']::jsonb[], 'rq', 'tenant:r',
                        '{"max_attempts": 2, "retry": {"kind": "fixed"}, "headers": {"x": "y"},
                          "run_at": "2040-01-01T00:00:07Z", "cancel_after_ms": 1000, "max_duration_ms": 60000}'),
          2::bigint, 'shared options, no key: two tasks');
SELECT is(pg_temp.spawn('per-element', 'rich', ARRAY['{"a": 1}', '{"a": 2}']::jsonb[], 'rq', 'tenant:r',
                        (SELECT jsonb_agg(o) FROM (VALUES (1), (2)) v(i), LATERAL (SELECT
                          '{"max_attempts": 2, "retry": {"kind": "fixed"}, "headers": {"x": "y"},
                            "run_at": "2040-01-01T00:00:07Z", "cancel_after_ms": 1000, "max_duration_ms": 60000}'::jsonb AS o) x)),
          2::bigint, 'the same options per element: two tasks');
SELECT is((SELECT jsonb_agg(pg_temp.shape(run_id) ORDER BY n) FROM got WHERE name = 'per-element'),
          (SELECT jsonb_agg(pg_temp.shape(run_id) ORDER BY n) FROM got WHERE name = 'uniform'),
          'both ways write the same runs, documents, heads and task rows');
SELECT is((SELECT (t.retry ->> 'kind') || ' ' || t.max_duration_ms || ' ' || (t.cancel_at = pg_temp.t(8))
             FROM docket.tasks t WHERE t.run_id = pg_temp.id('uniform', 2)),
          'fixed 60000 true', 'retry, max_duration_ms and cancel_at (run_at + cancel_after_ms) are stored');
SELECT is((SELECT bool_and(docket.fetch_run('system', run_id) ->> 'id' = run_id) FROM docket.runs
            WHERE run_id IN (SELECT run_id FROM got WHERE name IN ('uniform', 'per-element', 'three'))),
          true, 'every document carries its own run id');
SELECT is((SELECT array_agg(DISTINCT document::text) FROM docket.runs
            WHERE run_id IN (SELECT run_id FROM got WHERE name IN ('uniform', 'per-element', 'three'))),
          ARRAY['{"attempt": 1, "wake_reason": "new"}'],
          'every spawned row stores the same narrow document (the rest is columns)');
SELECT is((SELECT docket.fetch_run('system', run_id) FROM got WHERE name = 'three' AND n = 1),
          jsonb_build_object('id', pg_temp.id('three', 1), 'graph_id', 'mail', 'graph_hash', 'task',
                             'status', 'running', 'checkpoint_seq', 0,
                             'started_at', '2040-01-01T00:00:00.000000Z', 'attempt', 1, 'wake_reason', 'new'),
          'fetch_run shows the spawned run''s whole document');

-------------------------------------------------------------------------------
-- Per-element options and idempotency keys
-------------------------------------------------------------------------------
SELECT is(pg_temp.spawn('each', 'job', ARRAY['{}', '{}', '{}', '{}']::jsonb[], 'kq', 'tenantless',
                        '[{"idempotency_key": "b"}, {"idempotency_key": "a", "max_attempts": 2},
                          {"idempotency_key": "b", "max_attempts": 9}, {"run_at": "2040-01-02T00:00:00Z"}]'),
          4::bigint, 'an options array: one object per element');
SELECT is((SELECT array_agg(created ORDER BY n) FROM got WHERE name = 'each'),
          ARRAY[true, true, false, true], 'a key repeated in the batch creates once');
SELECT is(pg_temp.id('each', 3), pg_temp.id('each', 1), 'and names the first element''s task');
SELECT is((SELECT max_attempts FROM docket.tasks WHERE run_id = pg_temp.id('each', 1)), 5,
          'whose options are the first element''s');
SELECT is((SELECT max_attempts FROM docket.tasks WHERE run_id = pg_temp.id('each', 2)), 2,
          'each element has its own options');
SELECT is((SELECT wake_at FROM docket.runs WHERE run_id = pg_temp.id('each', 4)), '2040-01-02Z'::timestamptz,
          'run_at of the fourth element');
SELECT is(pg_temp.spawn('again', 'job', ARRAY['{}', '{}']::jsonb[], 'kq', 'tenantless',
                        '[{"idempotency_key": "a"}, {"idempotency_key": "c"}]'), 2::bigint,
          'a second batch with a taken key');
SELECT is((SELECT array_agg((run_id = pg_temp.id('each', 2), attempt, created)::text ORDER BY n)
             FROM got WHERE name = 'again'),
          ARRAY['(t,1,f)', '(f,1,t)'], 'the taken key returns the existing task, the new key creates');
SELECT is(pg_temp.spawn('otherq', 'job', ARRAY['{}']::jsonb[], 'kq2', 'tenantless', '{"idempotency_key": "a"}'),
          1::bigint, 'the same key in another queue');
SELECT is((SELECT created FROM got WHERE name = 'otherq'), true, 'is another task');

-------------------------------------------------------------------------------
-- Bad input: 22023, nothing written
-------------------------------------------------------------------------------
CREATE TEMP TABLE snaps AS SELECT pg_temp.snap() AS s;
SELECT throws_ok($$SELECT docket.spawn_tasks(NULL, ARRAY['{}']::jsonb[])$$, '22023',
  'bad_argument: task_name must not be NULL', 'NULL task_name');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', NULL)$$, '22023',
  'bad_argument: params must not be NULL', 'NULL params');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}', NULL]::jsonb[])$$, '22023',
  'bad_argument: params[2] must not be NULL', 'a NULL element');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}']::jsonb[], '')$$, '22023',
  'bad_argument: queue must be a non-empty name of at most 128 bytes', 'an empty queue');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}']::jsonb[], 'q', 'system')$$, '22023',
  'bad_argument: owner_scope must be ''tenantless'' or ''tenant:<id>'', not ''system''', 'system scope');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}']::jsonb[], 'q', 'tenantless', NULL)$$, '22023',
  'bad_argument: options must be a JSON object or an array of one per element', 'NULL options');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}']::jsonb[], 'q', 'tenantless', '"x"')$$, '22023',
  'bad_argument: options must be a JSON object', 'options: a string');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}', '{}']::jsonb[], 'q', 'tenantless', '[{}]')$$, '22023',
  'bad_argument: options is an array of 1 elements for 2 params', 'an options array of another length');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}', '{}']::jsonb[], 'q', 'tenantless', '[{}, 5]')$$, '22023',
  'bad_argument: element 2: options must be a JSON object', 'an options element that is not an object');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}', '{}', '{}']::jsonb[], 'q', 'tenantless',
                     '[{}, {}, {"max_attempts": 0}]')$$, '22023',
  'bad_argument: element 3: option max_attempts must be an integer between 1 and 1000, got 0',
  'a bad option in the third element names it');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}', '{}']::jsonb[], 'q', 'tenantless',
                     '{"retry": {"factor": 0.5}}')$$, '22023',
  'bad_argument: retry factor must be a number between 1 and 100', 'a bad shared option: spawn_task''s message');
SELECT throws_ok($$SELECT docket.spawn_tasks('x', ARRAY['{}']::jsonb[], 'kq', 'tenantless',
                     '[{"idempotency_key": "a", "delay_ms": -1}]')$$, '22023',
  'bad_argument: element 1: option delay_ms must be an integer between 0 and 315360000000, got -1',
  'a bad option on a taken key is still rejected');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps), 'rejected batches wrote nothing: no run, head, task or graph');

-------------------------------------------------------------------------------
-- The guards in place of the foreign keys
-------------------------------------------------------------------------------
SELECT throws_ok($$DELETE FROM docket.graphs WHERE graph_id = 'mail'$$, '23503',
  'graph mail @ task is referenced by runs', 'a referenced graph cannot be deleted');
SELECT throws_ok($$UPDATE docket.graphs SET graph_hash = 'other' WHERE graph_id = 'mail'$$, '23503',
  'graph mail @ task is referenced by runs', 'nor re-keyed');
SELECT lives_ok($$UPDATE docket.graphs SET definition = definition WHERE graph_id = 'mail'$$,
  'an update that keeps the key is allowed');
SELECT throws_ok($$TRUNCATE docket.graphs$$, '23503', NULL, 'graphs cannot be truncated while runs exist');
SELECT docket.save_graph('unused', 'h', '{}');
SELECT lives_ok($$DELETE FROM docket.graphs WHERE graph_id = 'unused'$$, 'an unreferenced graph can be deleted');
DELETE FROM docket.runs WHERE run_id = pg_temp.id('three', 1);
SELECT is((SELECT count(*)::int FROM docket.run_heads WHERE run_id = pg_temp.id('three', 1)), 0,
  'deleting a run deletes its head');
SELECT is((SELECT count(*)::int FROM docket.tasks WHERE run_id = pg_temp.id('three', 1)), 0,
  'and its task row');
SELECT is((SELECT count(*)::int FROM docket.run_heads WHERE run_id = pg_temp.id('three', 2)), 1,
  'and nothing else');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_constraint WHERE contype = 'f' AND conrelid IN
                        ('docket.run_heads'::regclass, 'docket.tasks'::regclass)),
  'no foreign key is checked per spawned row');

SELECT * FROM finish();
ROLLBACK;
