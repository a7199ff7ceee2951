-- spawn_task: every option, its defaults, idempotency, bad input (22023, nothing
-- created) and spawning inside the caller's transaction. Times are in 2040 (far
-- from the real clock), set through docket.fake_now.
BEGIN;
SELECT plan(112);

-- t(s): s seconds after 2040-01-01 00:00:00 UTC; at(s) moves docket.now() there.
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$ SELECT '2040-01-01 00:00:00+00'::timestamptz + make_interval(secs => s) $$;
CREATE FUNCTION pg_temp.at(s double precision) RETURNS text
  LANGUAGE sql AS $$ SELECT set_config('docket.fake_now', pg_temp.t(s)::text, true) $$;

CREATE TEMP TABLE ids (name text PRIMARY KEY, run_id text, attempt int, created boolean);
-- Spawns and remembers the outcome under `name`.
CREATE FUNCTION pg_temp.spawn(name text, task text, params jsonb DEFAULT '{}',
                              q text DEFAULT 'default', owner text DEFAULT 'tenantless',
                              opts jsonb DEFAULT '{}') RETURNS text
  LANGUAGE plpgsql AS $$
DECLARE s record;
BEGIN
  SELECT * INTO STRICT s FROM docket.spawn_task(task, params, q, owner::docket.scope, opts);
  INSERT INTO ids VALUES (name, s.run_id, s.attempt, s.created);
  RETURN s.run_id;
END $$;
CREATE FUNCTION pg_temp.id(name text) RETURNS text
  LANGUAGE sql AS $$ SELECT run_id FROM ids WHERE ids.name = id.name $$;
CREATE FUNCTION pg_temp.task(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT to_jsonb(t) FROM docket.tasks t WHERE t.run_id = pg_temp.id(name) $$;
CREATE FUNCTION pg_temp.run(name text) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT to_jsonb(r) - 'claim_started_at' - 'claim_renewed_at' - 'event_seq' - 'completed_seq' - 'completed_at' - 'claimed_seq' - 'claimed_attempt' FROM docket.runs r WHERE r.run_id = pg_temp.id(name) $$;
-- Everything spawn_task writes, for "nothing changed" checks.
CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'runs', (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.run_id), '[]') FROM docket.runs r),
    'tasks', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.run_id), '[]') FROM docket.tasks t),
    'graphs', (SELECT coalesce(jsonb_agg(to_jsonb(g) ORDER BY g.graph_id, g.graph_hash), '[]')
                 FROM docket.graphs g)) $$;
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);

SELECT pg_temp.at(0);

-------------------------------------------------------------------------------
-- Defaults
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('plain', 'send_mail');
SELECT ok(pg_temp.id('plain') ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  'spawn_task: the run id is a fresh uuid');
SELECT is((SELECT (attempt, created)::text FROM ids WHERE name = 'plain'), '(1,t)',
  'spawn_task: attempt 1, created');
SELECT is(pg_temp.run('plain') - 'document',
  jsonb_build_object('run_id', pg_temp.id('plain'), 'tenant_id', NULL, 'queue', 'default',
    'graph_id', 'send_mail', 'graph_hash', 'task', 'status', 'running', 'checkpoint_seq', 0,
    'checkpoint_type', 'run_initialized', 'started_at', pg_temp.t(0), 'updated_at', pg_temp.t(0),
    'wake_at', pg_temp.t(0), 'claim_token', NULL, 'claimed_at', NULL, 'claim_attempts', 0,
    'claim_abandons', 0, 'poisoned_at', NULL, 'poison_reason', NULL, 'deadline_at', NULL,
    'lease_ms', NULL),
  'the run: tenantless, queue default, graph (task name, task), running, due now, unclaimed');
SELECT is(docket.fetch_run('system', pg_temp.id('plain')),
  jsonb_build_object('id', pg_temp.id('plain'), 'graph_id', 'send_mail', 'graph_hash', 'task',
    'status', 'running', 'checkpoint_seq', 0, 'started_at', '2040-01-01T00:00:00.000000Z',
    'attempt', 1, 'wake_reason', 'new'),
  'the run document: identity, attempt 1, wake_reason new');
SELECT is(pg_temp.task('plain'),
  jsonb_build_object('run_id', pg_temp.id('plain'), 'tenant_key', '', 'queue', 'default',
    'task_name', 'send_mail', 'params', '{}'::jsonb, 'headers', '{}'::jsonb, 'max_attempts', 5,
    'retry', NULL,
    'idempotency_key', NULL, 'cancel_at', NULL, 'max_duration_ms', NULL,
    'first_started_at', NULL, 'deadline_at', NULL, 'created_at', pg_temp.t(0)),
  'the task row: params {}, headers {}, max_attempts 5, no retry policy (NULL: the defaults), no key or deadlines');
SELECT is((SELECT definition FROM docket.graphs WHERE graph_id = 'send_mail' AND graph_hash = 'task'),
  '{"kind": "task"}'::jsonb, 'the task name is published as graph (name, task)');

SELECT pg_temp.spawn('plain2', 'send_mail');
SELECT isnt(pg_temp.id('plain2'), pg_temp.id('plain'), 'a second spawn of the same name is another task');
SELECT is((SELECT count(*)::int FROM docket.graphs WHERE graph_id = 'send_mail'), 1,
  'and the graph is published once');

-------------------------------------------------------------------------------
-- Every option
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('full', 'charge', '{"amount": 5}', 'billing', 'tenant:acme',
  '{"max_attempts": 3,
    "retry": {"kind": "exponential", "base_ms": 2000, "factor": 1.5, "max_ms": 60000, "jitter": 0.2},
    "idempotency_key": "invoice-42", "delay_ms": 5000, "headers": {"trace": "abc"},
    "cancel_after_ms": 60000, "max_duration_ms": 600000}');
SELECT is(pg_temp.task('full'),
  jsonb_build_object('run_id', pg_temp.id('full'), 'tenant_key', 'acme', 'queue', 'billing',
    'task_name', 'charge', 'params', '{"amount": 5}'::jsonb, 'headers', '{"trace": "abc"}'::jsonb,
    'max_attempts', 3,
    'retry', '{"kind": "exponential", "base_ms": 2000, "factor": 1.5, "max_ms": 60000, "jitter": 0.2}'::jsonb,
    'idempotency_key', 'invoice-42', 'cancel_at', pg_temp.t(65), 'max_duration_ms', 600000,
    'first_started_at', NULL, 'deadline_at', NULL, 'created_at', pg_temp.t(0)),
  'every option lands in the task row (cancel_at = due time + cancel_after_ms)');
SELECT is((pg_temp.run('full') ->> 'tenant_id', pg_temp.run('full') ->> 'queue',
           (pg_temp.run('full') ->> 'wake_at')::timestamptz)::text,
  ('acme', 'billing', pg_temp.t(5))::text, 'the run: tenant acme, queue billing, due after delay_ms');

SELECT pg_temp.spawn('colon', 'job', owner => 'tenant:a:b');
SELECT is((pg_temp.task('colon') ->> 'tenant_key') || '|' || (pg_temp.run('colon') ->> 'tenant_id'),
  'a:b|a:b', 'a tenant id may contain a colon');

SELECT pg_temp.spawn('params-array', 'job', '[1, 2]');
SELECT is(pg_temp.task('params-array') -> 'params', '[1, 2]'::jsonb, 'params are stored verbatim (any JSON)');

-- retry: partial policies are completed with the defaults
SELECT pg_temp.spawn('r-fixed', 'job', opts => '{"retry": {"kind": "fixed"}}');
SELECT is(pg_temp.task('r-fixed') -> 'retry',
  '{"kind": "fixed", "base_ms": 1000, "factor": 2, "max_ms": 300000, "jitter": 0}'::jsonb,
  'retry {kind fixed}: the other keys take their defaults');
SELECT pg_temp.spawn('r-none', 'job', opts => '{"retry": {"kind": "none"}}');
SELECT is(pg_temp.task('r-none') -> 'retry' ->> 'kind', 'none', 'retry {kind none}');
SELECT pg_temp.spawn('r-empty', 'job', opts => '{"retry": {}}');
SELECT is(pg_temp.task('r-empty') -> 'retry',
  '{"kind": "exponential", "base_ms": 1000, "factor": 2, "max_ms": 300000, "jitter": 0}'::jsonb,
  'retry {}: the default policy');
SELECT pg_temp.spawn('r-bounds', 'job',
  opts => '{"retry": {"base_ms": 0, "max_ms": 0, "factor": 1, "jitter": 1}}');
SELECT is(pg_temp.task('r-bounds') -> 'retry',
  '{"kind": "exponential", "base_ms": 0, "factor": 1, "max_ms": 0, "jitter": 1}'::jsonb,
  'retry: the lowest base_ms, max_ms, factor and the highest jitter are accepted');
SELECT pg_temp.spawn('attempts-1', 'job', opts => '{"max_attempts": 1}');
SELECT pg_temp.spawn('attempts-1000', 'job', opts => '{"max_attempts": 1000}');
SELECT is((pg_temp.task('attempts-1') ->> 'max_attempts') || ',' || (pg_temp.task('attempts-1000') ->> 'max_attempts'),
  '1,1000', 'max_attempts 1 and 1000 are accepted');
-- The validator takes any integral JSON number (2.0 = 2); the stored value must follow it.
SELECT lives_ok($$SELECT pg_temp.spawn('attempts-2.0', 'job', opts => '{"max_attempts": 2.0}')$$,
  'max_attempts 2.0 (an integral number) is accepted');
SELECT is((pg_temp.task('attempts-2.0') ->> 'max_attempts')::int, 2, 'and stored as the integer 2');
SELECT lives_ok($$SELECT pg_temp.spawn('duration-1e3', 'job', opts => '{"max_duration_ms": 1000.0}')$$,
  'max_duration_ms 1000.0 is accepted');
SELECT is((pg_temp.task('duration-1e3') ->> 'max_duration_ms')::bigint, 1000::bigint,
  'and stored as the integer 1000');

-- run_at and delay_ms
SELECT pg_temp.spawn('run-at', 'job', opts => '{"run_at": "2040-02-01T00:00:00Z"}');
SELECT is((pg_temp.run('run-at') ->> 'wake_at')::timestamptz, '2040-02-01T00:00:00Z'::timestamptz,
  'run_at: due then');
SELECT pg_temp.spawn('run-at-offset', 'job', opts => '{"run_at": "2040-01-01T05:00:10+05:00"}');
SELECT is((pg_temp.run('run-at-offset') ->> 'wake_at')::timestamptz, pg_temp.t(10),
  'run_at with a UTC offset');
SELECT pg_temp.spawn('run-at-past', 'job', opts => '{"run_at": "2039-12-31T00:00:00Z"}');
SELECT is((pg_temp.run('run-at-past') ->> 'wake_at')::timestamptz, '2039-12-31T00:00:00Z'::timestamptz,
  'run_at in the past: due at once (kept as given)');
SELECT pg_temp.spawn('delay-0', 'job', opts => '{"delay_ms": 0}');
SELECT is((pg_temp.run('delay-0') ->> 'wake_at')::timestamptz, pg_temp.t(0), 'delay_ms 0: due now');
SELECT pg_temp.spawn('delay-1500', 'job', opts => '{"delay_ms": 1500}');
SELECT is((pg_temp.run('delay-1500') ->> 'wake_at')::timestamptz, pg_temp.t(1.5), 'delay_ms 1500');
SELECT pg_temp.spawn('cancel-run-at', 'job',
  opts => '{"run_at": "2040-01-01T00:01:00Z", "cancel_after_ms": 500}');
SELECT is((pg_temp.task('cancel-run-at') ->> 'cancel_at')::timestamptz, pg_temp.t(60.5),
  'cancel_after_ms counts from run_at');
SELECT pg_temp.spawn('cancel-now', 'job', opts => '{"cancel_after_ms": 1}');
SELECT is((pg_temp.task('cancel-now') ->> 'cancel_at')::timestamptz, pg_temp.t(0.001),
  'cancel_after_ms counts from now without run_at or delay_ms');
SELECT pg_temp.spawn('max-duration', 'job', opts => '{"max_duration_ms": 1}');
SELECT is((pg_temp.task('max-duration') ->> 'max_duration_ms', pg_temp.task('max-duration') ->> 'deadline_at')::text,
  '(1,)', 'max_duration_ms is kept; the deadline is fixed at the first start, not at spawn');
SELECT pg_temp.spawn('headers-empty', 'job', opts => '{"headers": {}}');
SELECT is(pg_temp.task('headers-empty') -> 'headers', '{}'::jsonb, 'headers {}');
SELECT pg_temp.spawn('headers-nested', 'job', opts => '{"headers": {"a": {"b": [1, null]}}}');
SELECT is(pg_temp.task('headers-nested') -> 'headers', '{"a": {"b": [1, null]}}'::jsonb,
  'headers are stored verbatim');

-------------------------------------------------------------------------------
-- Names: sizes
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('name-255', repeat('n', 255));
SELECT is(pg_temp.task('name-255') ->> 'task_name', repeat('n', 255), 'a 255-byte task name is accepted');
SELECT pg_temp.spawn('name-utf8', repeat('é', 127) || 'n');
SELECT is(octet_length(pg_temp.task('name-utf8') ->> 'task_name'), 255,
  'a 255-byte multibyte task name is accepted');
SELECT pg_temp.spawn('queue-128', 'job', q => repeat('q', 128));
SELECT is(pg_temp.run('queue-128') ->> 'queue', repeat('q', 128), 'a 128-byte queue is accepted');
SELECT pg_temp.spawn('key-255', 'job', opts => jsonb_build_object('idempotency_key', repeat('k', 255)));
SELECT is(pg_temp.task('key-255') ->> 'idempotency_key', repeat('k', 255), 'a 255-byte idempotency key is accepted');

-------------------------------------------------------------------------------
-- Idempotency: (scope, queue, key)
-------------------------------------------------------------------------------
SELECT pg_temp.at(100);
SELECT pg_temp.spawn('idem', 'order', '{"n": 1}', 'orders', 'tenant:acme', '{"idempotency_key": "order-1"}');
INSERT INTO snaps VALUES ('idem', pg_temp.snap());
SELECT is((SELECT created FROM ids WHERE name = 'idem'), true, 'the first spawn with a key creates');
SELECT pg_temp.at(101);
SELECT pg_temp.spawn('idem-dup', 'order', '{"n": 1}', 'orders', 'tenant:acme', '{"idempotency_key": "order-1"}');
SELECT is((SELECT (run_id = pg_temp.id('idem'), attempt, created)::text FROM ids WHERE name = 'idem-dup'),
  '(t,1,f)', 'the same key, scope and queue returns the existing task, created = false');
SELECT pg_temp.spawn('idem-dup-other', 'other_name', '{"n": 2}', 'orders', 'tenant:acme',
  '{"idempotency_key": "order-1", "delay_ms": 99000, "max_attempts": 9, "headers": {"x": 1}}');
SELECT is((SELECT (run_id = pg_temp.id('idem'), created)::text FROM ids WHERE name = 'idem-dup-other'),
  '(t,f)', 'the key decides: another name, params and options still return the existing task');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'idem'),
  'duplicates change nothing: no run, task row or graph added, the existing task untouched');
SELECT pg_temp.spawn('idem-q2', 'order', '{"n": 1}', 'orders-2', 'tenant:acme', '{"idempotency_key": "order-1"}');
SELECT is((SELECT (run_id <> pg_temp.id('idem'), created)::text FROM ids WHERE name = 'idem-q2'),
  '(t,t)', 'the same key in another queue creates a new task');
SELECT pg_temp.spawn('idem-t2', 'order', '{"n": 1}', 'orders', 'tenant:other', '{"idempotency_key": "order-1"}');
SELECT is((SELECT (run_id <> pg_temp.id('idem'), created)::text FROM ids WHERE name = 'idem-t2'),
  '(t,t)', 'the same key in another tenant creates a new task');
SELECT pg_temp.spawn('idem-tl', 'order', '{"n": 1}', 'orders', 'tenantless', '{"idempotency_key": "order-1"}');
SELECT is((SELECT (run_id NOT IN (pg_temp.id('idem'), pg_temp.id('idem-t2')), created)::text FROM ids WHERE name = 'idem-tl'),
  '(t,t)', 'the same key tenantless creates a new task');
SELECT pg_temp.spawn('idem-tl-dup', 'order', '{}', 'orders', 'tenantless', '{"idempotency_key": "order-1"}');
SELECT is((SELECT (run_id = pg_temp.id('idem-tl'), created)::text FROM ids WHERE name = 'idem-tl-dup'),
  '(t,f)', 'and a duplicate of that one returns it');
SELECT pg_temp.spawn('idem-other-key', 'order', '{"n": 1}', 'orders', 'tenant:acme', '{"idempotency_key": "order-2"}');
SELECT is((SELECT created FROM ids WHERE name = 'idem-other-key'), true, 'another key creates');
SELECT pg_temp.spawn('idem-nokey', 'order', '{"n": 1}', 'orders', 'tenant:acme');
SELECT is((SELECT created FROM ids WHERE name = 'idem-nokey'), true, 'no key always creates');
SELECT is((SELECT count(*)::int FROM docket.tasks WHERE idempotency_key = 'order-1'), 4,
  'order-1 exists once per (scope, queue): acme/orders, acme/orders-2, other/orders, tenantless/orders');

-- A duplicate reports the existing task's current attempt.
SELECT pg_temp.at(200);
CREATE TEMP TABLE c AS SELECT * FROM docket.claim_tasks('orders-2', 10, now => pg_temp.t(200));
SELECT is((SELECT run_id FROM c), pg_temp.id('idem-q2'), 'the orders-2 task is claimed');
SELECT is((SELECT disposition FROM docket.fail_task((SELECT run_id FROM c), (SELECT claim_token FROM c), '"e"')),
  'retry_scheduled', 'and fails its first attempt');
SELECT pg_temp.spawn('idem-q2-dup', 'order', '{}', 'orders-2', 'tenant:acme', '{"idempotency_key": "order-1"}');
SELECT is((SELECT (run_id = pg_temp.id('idem-q2'), attempt, created)::text FROM ids WHERE name = 'idem-q2-dup'),
  '(t,2,f)', 'a duplicate returns the existing task with its current attempt');

-------------------------------------------------------------------------------
-- Bad input: 22023 "bad_argument: ...", nothing created
-------------------------------------------------------------------------------
INSERT INTO snaps VALUES ('before-bad', pg_temp.snap());

-- NULL in each argument
SELECT throws_ok($$SELECT docket.spawn_task(NULL)$$, '22023',
  'bad_argument: task_name must not be NULL', 'NULL task_name');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', NULL)$$, '22023',
  'bad_argument: params must not be NULL', 'NULL params');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', NULL)$$, '22023',
  'bad_argument: queue must be a non-empty name of at most 128 bytes', 'NULL queue');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', 'default', NULL)$$, '22023',
  'bad_argument: owner_scope must not be NULL', 'NULL owner_scope');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', 'default', 'tenantless', NULL)$$, '22023',
  'bad_argument: options must be a JSON object', 'NULL options');

-- names
SELECT throws_ok($$SELECT docket.spawn_task('')$$, '22023',
  'bad_argument: task_name must be non-empty text of at most 255 bytes', 'empty task name');
SELECT throws_ok($$SELECT docket.spawn_task(repeat('n', 256))$$, '22023',
  'bad_argument: task_name must be non-empty text of at most 255 bytes', 'a 256-byte task name');
SELECT throws_ok($$SELECT docket.spawn_task(repeat('é', 128))$$, '22023',
  'bad_argument: task_name must be non-empty text of at most 255 bytes',
  'a 128-character task name of 256 bytes (the limit is in bytes)');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', '')$$, '22023',
  'bad_argument: queue must be a non-empty name of at most 128 bytes', 'empty queue');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', repeat('q', 129))$$, '22023',
  'bad_argument: queue must be a non-empty name of at most 128 bytes', 'a 129-byte queue');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', repeat('é', 64) || 'q')$$, '22023',
  'bad_argument: queue must be a non-empty name of at most 128 bytes', 'a 65-character queue of 129 bytes');

-- owner scope
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', 'default', 'system')$$, '22023',
  'bad_argument: owner_scope must be ''tenantless'' or ''tenant:<id>'', not ''system''',
  'system is not an owner scope');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', '{}', 'default', 'tenant:')$$, '23514', NULL,
  'a malformed scope violates the domain');

-- options
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '[]')$$, '22023',
  'bad_argument: options must be a JSON object', 'options: an array');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => 'null')$$, '22023',
  'bad_argument: options must be a JSON object', 'options: JSON null');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"maxAttempts": 3}')$$, '22023',
  'bad_argument: unknown spawn option "maxAttempts"', 'an unknown option key');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_attempts": 3, "priority": 1}')$$, '22023',
  'bad_argument: unknown spawn option "priority"', 'an unknown key beside valid ones');

SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_attempts": "3"}')$$, '22023',
  'bad_argument: option max_attempts must be an integer, got "3"', 'max_attempts: a string');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_attempts": null}')$$, '22023',
  'bad_argument: option max_attempts must be an integer, got null', 'max_attempts: JSON null');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_attempts": 0}')$$, '22023',
  'bad_argument: option max_attempts must be an integer between 1 and 1000, got 0', 'max_attempts: 0');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_attempts": 1001}')$$, '22023',
  'bad_argument: option max_attempts must be an integer between 1 and 1000, got 1001', 'max_attempts: 1001');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_attempts": 2.5}')$$, '22023',
  'bad_argument: option max_attempts must be an integer between 1 and 1000, got 2.5', 'max_attempts: 2.5');

SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": "fast"}')$$, '22023',
  'bad_argument: option retry must be an object', 'retry: a string');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": null}')$$, '22023',
  'bad_argument: option retry must be an object', 'retry: JSON null');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"delay": 1}}')$$, '22023',
  'bad_argument: unknown retry key "delay"', 'retry: an unknown key');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"kind": "linear"}}')$$, '22023',
  'bad_argument: retry kind must be "none", "fixed" or "exponential"', 'retry: an unknown kind');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"kind": 1}}')$$, '22023',
  'bad_argument: retry kind must be "none", "fixed" or "exponential"', 'retry: kind not a string');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"base_ms": -1}}')$$, '22023',
  'bad_argument: option base_ms must be an integer between 0 and 31536000000, got -1', 'retry: base_ms < 0');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"base_ms": "10"}}')$$, '22023',
  'bad_argument: option base_ms must be an integer, got "10"', 'retry: base_ms a string');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"max_ms": 1.5}}')$$, '22023',
  'bad_argument: option max_ms must be an integer between 0 and 31536000000, got 1.5', 'retry: max_ms not an integer');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"factor": 0.5}}')$$, '22023',
  'bad_argument: retry factor must be a number between 1 and 100', 'retry: factor < 1');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"factor": 101}}')$$, '22023',
  'bad_argument: retry factor must be a number between 1 and 100', 'retry: factor > 100');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"factor": "2"}}')$$, '22023',
  'bad_argument: retry factor must be a number between 1 and 100', 'retry: factor a string');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"jitter": 1.5}}')$$, '22023',
  'bad_argument: retry jitter must be a number between 0 and 1', 'retry: jitter > 1');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"jitter": -0.1}}')$$, '22023',
  'bad_argument: retry jitter must be a number between 0 and 1', 'retry: jitter < 0');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"retry": {"jitter": null}}')$$, '22023',
  'bad_argument: retry jitter must be a number between 0 and 1', 'retry: jitter JSON null');

SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"idempotency_key": 5}')$$, '22023',
  'bad_argument: option idempotency_key must be a string', 'idempotency_key: a number');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"idempotency_key": null}')$$, '22023',
  'bad_argument: option idempotency_key must be a string', 'idempotency_key: JSON null');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"idempotency_key": ""}')$$, '22023',
  'bad_argument: idempotency_key must be non-empty text of at most 255 bytes', 'idempotency_key: empty');
SELECT throws_ok(format('SELECT docket.spawn_task(%L, options => %L)', 'fresh',
                        jsonb_build_object('idempotency_key', repeat('k', 256))), '22023',
  'bad_argument: idempotency_key must be non-empty text of at most 255 bytes', 'idempotency_key: 256 bytes');

SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"run_at": "2040-01-02T00:00:00Z", "delay_ms": 5}')$$, '22023',
  'bad_argument: options run_at and delay_ms exclude each other', 'run_at and delay_ms together');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"run_at": 1700000000}')$$, '22023',
  'bad_argument: option run_at must be a timestamp string', 'run_at: a number');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"run_at": "soon"}')$$, '22023',
  'bad_argument: option run_at is not a timestamp: soon', 'run_at: not a timestamp');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"run_at": "2040-13-45T00:00:00Z"}')$$, '22023',
  'bad_argument: option run_at is not a timestamp: 2040-13-45T00:00:00Z', 'run_at: out of range fields');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"run_at": "infinity"}')$$, '22023',
  'bad_argument: option run_at must be finite', 'run_at: infinity');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"delay_ms": -1}')$$, '22023',
  'bad_argument: option delay_ms must be an integer between 0 and 315360000000, got -1', 'delay_ms < 0');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"delay_ms": "5"}')$$, '22023',
  'bad_argument: option delay_ms must be an integer, got "5"', 'delay_ms: a string');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"delay_ms": 0.5}')$$, '22023',
  'bad_argument: option delay_ms must be an integer between 0 and 315360000000, got 0.5', 'delay_ms: a fraction');

SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"headers": []}')$$, '22023',
  'bad_argument: option headers must be a JSON object', 'headers: an array');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"headers": null}')$$, '22023',
  'bad_argument: option headers must be a JSON object', 'headers: JSON null');

SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"cancel_after_ms": 0}')$$, '22023',
  'bad_argument: option cancel_after_ms must be an integer between 1 and 315360000000, got 0', 'cancel_after_ms: 0');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"cancel_after_ms": true}')$$, '22023',
  'bad_argument: option cancel_after_ms must be an integer, got true', 'cancel_after_ms: a boolean');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_duration_ms": 0}')$$, '22023',
  'bad_argument: option max_duration_ms must be an integer between 1 and 315360000000, got 0', 'max_duration_ms: 0');
SELECT throws_ok($$SELECT docket.spawn_task('fresh', options => '{"max_duration_ms": "1"}')$$, '22023',
  'bad_argument: option max_duration_ms must be an integer, got "1"', 'max_duration_ms: a string');

-- A bad option on a duplicate key is still rejected (validation comes before the lookup).
SELECT throws_ok($$SELECT docket.spawn_task('order', '{}', 'orders', 'tenant:acme',
                     '{"idempotency_key": "order-1", "max_attempts": 0}')$$, '22023',
  'bad_argument: option max_attempts must be an integer between 1 and 1000, got 0',
  'a duplicate key with a bad option is rejected too');

SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'before-bad'),
  'rejected spawns created nothing: no run, task row or graph');
SELECT is((SELECT count(*)::int FROM docket.graphs WHERE graph_id = 'fresh'), 0,
  'not even the graph of the rejected task name');

-------------------------------------------------------------------------------
-- The caller's transaction
-------------------------------------------------------------------------------
SAVEPOINT before_spawn;
SELECT pg_temp.spawn('rolled-back', 'in_tx', opts => '{"idempotency_key": "tx-1"}');
SELECT is((SELECT count(*)::int FROM docket.runs WHERE run_id = pg_temp.id('rolled-back')), 1,
  'inside the transaction the task exists');
ROLLBACK TO SAVEPOINT before_spawn;
SELECT is((SELECT count(*)::int FROM docket.runs WHERE graph_id = 'in_tx'), 0,
  'a rolled-back spawn leaves no run');
SELECT is((SELECT count(*)::int FROM docket.tasks WHERE task_name = 'in_tx' OR idempotency_key = 'tx-1'), 0,
  'and no task row');
SELECT is((SELECT count(*)::int FROM docket.graphs WHERE graph_id = 'in_tx'), 0,
  'and no graph');
SELECT pg_temp.spawn('after-rollback', 'in_tx', opts => '{"idempotency_key": "tx-1"}');
SELECT is((SELECT created FROM ids WHERE name = 'after-rollback'), true,
  'the rolled-back key is free again: a new spawn creates');

SAVEPOINT keep;
SELECT pg_temp.spawn('released', 'in_tx2');
RELEASE SAVEPOINT keep;
SELECT is((SELECT count(*)::int FROM docket.runs WHERE graph_id = 'in_tx2'), 1,
  'a released savepoint keeps its spawn');

SELECT * FROM finish();
ROLLBACK;
