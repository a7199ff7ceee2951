-- Hostile input (issue 8): size caps. Each cap is a setting (superusers only)
-- with a documented default; a value over it raises 54000 (limit_exceeded)
-- before anything changes. The size is the value's jsonb size, what
-- pg_column_size() reports for it. Each cap is tested at the boundary: a value
-- exactly at the cap passes, the same size with the cap one byte lower fails
-- and changes nothing. Times in 2041 (docket.fake_now).
BEGIN;
SELECT plan(63);
SET LOCAL TimeZone = 'UTC';

\ir lib/task_helpers.sql
\ir lib/err.sql

CREATE FUNCTION pg_temp.everything() RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.snap() || jsonb_build_object(
    'run_events', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.run_id, x.seq) FROM docket.run_events x),
    'graphs', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.graph_id, x.graph_hash) FROM docket.graphs x),
    'schedules', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.schedule_name) FROM docket.schedules x)) $$;
CREATE FUNCTION pg_temp.sqlstate(q text) RETURNS text LANGUAGE sql AS
  $$ SELECT left(pg_temp.err(q), 5) $$;
-- cap(name, bytes): SET LOCAL docket.max_<name>_bytes = bytes.
CREATE FUNCTION pg_temp.cap(name text, bytes int) RETURNS void LANGUAGE sql AS
  $$ SELECT set_config('docket.max_' || name || '_bytes', bytes::text, true) $$;
-- pad(n): a JSON object {"pad": "xx..."} with n x's.
CREATE FUNCTION pg_temp.pad(n int) RETURNS jsonb LANGUAGE sql IMMUTABLE AS
  $$ SELECT jsonb_build_object('pad', repeat('x', n)) $$;
-- before(): remembers everything; unchanged(): compares with it.
CREATE FUNCTION pg_temp.before() RETURNS void LANGUAGE sql AS $$
  DELETE FROM snaps WHERE name = 'before';
  INSERT INTO snaps VALUES ('before', pg_temp.everything()) $$;
CREATE FUNCTION pg_temp.unchanged() RETURNS boolean LANGUAGE sql AS
  $$ SELECT pg_temp.everything() = (SELECT s FROM snaps WHERE name = 'before') $$;

\o /dev/null
SELECT pg_temp.at(0);
SELECT docket.now();  -- loads the library, which defines the settings
\o

-- Defaults, and who may change them.
SELECT is(current_setting('docket.max_document_bytes'), '1MB', 'docket.max_document_bytes defaults to 1MB');
SELECT is(current_setting('docket.max_params_bytes'), '1MB', 'docket.max_params_bytes defaults to 1MB');
SELECT is(current_setting('docket.max_result_bytes'), '1MB', 'docket.max_result_bytes defaults to 1MB');
SELECT is(current_setting('docket.max_payload_bytes'), '1MB', 'docket.max_payload_bytes defaults to 1MB');
SELECT is(current_setting('docket.max_error_bytes'), '64kB', 'docket.max_error_bytes defaults to 64kB');
SELECT is(current_setting('docket.max_headers_bytes'), '64kB', 'docket.max_headers_bytes defaults to 64kB');
CREATE ROLE docket_tap_sizes NOLOGIN;
SELECT is(pg_temp.err($$SET LOCAL ROLE docket_tap_sizes; SET LOCAL docket.max_params_bytes = '1GB'$$),
  '42501 permission denied to set parameter "docket.max_params_bytes"',
  'a role that is not a superuser cannot raise a cap');

-- At the defaults, a huge value is refused.
SELECT pg_temp.before();
SELECT is(pg_temp.err($$SELECT * FROM docket.spawn_task('huge', pg_temp.pad(2 * 1024 * 1024))$$),
  format('54000 limit_exceeded: params is %s bytes, over docket.max_params_bytes (1048576 bytes)',
         pg_column_size(pg_temp.pad(2 * 1024 * 1024))),
  'params of 2MB: 54000 at the default cap, the message names the setting');
SELECT ok(pg_temp.unchanged(), 'nothing spawned');

---------------------------------------------------------------------------
-- documents: insert_run, commit, mutate_run's proposal, save_graph
---------------------------------------------------------------------------
\o /dev/null
SELECT docket.save_graph('g-sz', 'h1', '{"nodes": []}');
\o
CREATE FUNCTION pg_temp.doc(id text, seq bigint, n int DEFAULT 100) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'g-sz', 'graph_hash', 'h1', 'status', 'running',
                            'checkpoint_seq', seq, 'started_at', '2041-01-01T00:00:00Z') || pg_temp.pad(n) $$;
SELECT pg_temp.cap('document', pg_column_size(pg_temp.doc('sz-1', 0)));
SELECT is(pg_temp.sqlstate($$SELECT docket.insert_run('tenantless', pg_temp.doc('sz-1', 0), 'run_initialized', pg_temp.t(0), 'q-sz')$$),
  'no er', 'insert_run: a document exactly at docket.max_document_bytes is stored');
SELECT pg_temp.cap('document', pg_column_size(pg_temp.doc('sz-2', 0)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate($$SELECT docket.insert_run('tenantless', pg_temp.doc('sz-2', 0), 'run_initialized', pg_temp.t(0), 'q-sz')$$),
  '54000', 'insert_run: one byte over: 54000');
SELECT ok(pg_temp.unchanged(), 'and no run was inserted');

CREATE TEMP TABLE lease AS SELECT claim_token FROM docket.claim_due(queue => 'q-sz');
SELECT pg_temp.cap('document', pg_column_size(pg_temp.doc('sz-1', 1)));
SELECT is(pg_temp.sqlstate(format($$SELECT docket.commit('tenantless', pg_temp.doc('sz-1', 1), 0, %L, 'node_completed', 'retain_claim')$$,
                                  (SELECT claim_token FROM lease))),
  'no er', 'commit: a document exactly at the cap is committed');
SELECT pg_temp.cap('document', pg_column_size(pg_temp.doc('sz-1', 2)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate(format($$SELECT docket.commit('tenantless', pg_temp.doc('sz-1', 2), 1, %L, 'node_completed', 'retain_claim')$$,
                                  (SELECT claim_token FROM lease))),
  '54000', 'commit: one byte over: 54000');
SELECT ok(pg_temp.unchanged(), 'and the run is unchanged');

-- A mutation proposing the stored run with checkpoint_seq + 1 and pad(arg.n).
CREATE SCHEMA tap_sz;
CREATE FUNCTION tap_sz.grow(run jsonb, arg jsonb) RETURNS docket.mutation_decision
LANGUAGE sql IMMUTABLE AS $$
  SELECT ROW('commit',
             run || jsonb_build_object('checkpoint_seq', (run ->> 'checkpoint_seq')::bigint + 1)
                 || pg_temp.pad((arg ->> 'n')::int),
             'signal_received', 'immediate', NULL, NULL)::docket.mutation_decision $$;
SELECT pg_temp.cap('document', pg_column_size((SELECT document FROM docket.runs WHERE run_id = 'sz-1')
                                              || '{"checkpoint_seq": 3}' || pg_temp.pad(150)));
SELECT is(docket.mutate_run('tenantless', 'sz-1', 'tap_sz.grow(jsonb, jsonb)', '{"n": 150}') ->> 'outcome',
  'committed', 'mutate_run: a proposed document exactly at the cap is committed');
SELECT pg_temp.cap('document', pg_column_size((SELECT document FROM docket.runs WHERE run_id = 'sz-1')
                                              || '{"checkpoint_seq": 4}' || pg_temp.pad(150)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate($$SELECT docket.mutate_run('tenantless', 'sz-1', 'tap_sz.grow(jsonb, jsonb)', '{"n": 150}')$$),
  '54000', 'mutate_run: a proposal one byte over: 54000');
SELECT ok(pg_temp.unchanged(), 'and the run is unchanged');

SELECT pg_temp.cap('document', pg_column_size(pg_temp.pad(200)));
SELECT is(pg_temp.sqlstate($$SELECT docket.save_graph('g-sz2', 'h1', pg_temp.pad(200))$$),
  'no er', 'save_graph: a definition exactly at the cap is saved');
SELECT pg_temp.cap('document', pg_column_size(pg_temp.pad(200)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate($$SELECT docket.save_graph('g-sz3', 'h1', pg_temp.pad(200))$$),
  '54000', 'save_graph: one byte over: 54000');
SELECT ok(pg_temp.unchanged(), 'and no graph was saved');
RESET docket.max_document_bytes;

---------------------------------------------------------------------------
-- params and headers: spawn_task, spawn_tasks, schedule_task
---------------------------------------------------------------------------
SELECT pg_temp.cap('params', pg_column_size(pg_temp.pad(300)));
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.spawn_task('sz-task', pg_temp.pad(300), 'q-p')$$),
  'no er', 'spawn_task: params exactly at docket.max_params_bytes are accepted');
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.spawn_tasks('sz-task', ARRAY[pg_temp.pad(1), pg_temp.pad(300)], 'q-p')$$),
  'no er', 'spawn_tasks: so is every element at the cap');
SELECT pg_temp.cap('params', pg_column_size(pg_temp.pad(300)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.spawn_task('sz-task', pg_temp.pad(300), 'q-p')$$),
  '54000', 'spawn_task: one byte over: 54000');
SELECT is(pg_temp.err($$SELECT * FROM docket.spawn_tasks('sz-task', ARRAY[pg_temp.pad(1), pg_temp.pad(300)], 'q-p')$$),
  format('54000 limit_exceeded: params[2] is %s bytes, over docket.max_params_bytes (%s bytes)',
         pg_column_size(pg_temp.pad(300)), pg_column_size(pg_temp.pad(300)) - 1),
  'spawn_tasks: one element one byte over: 54000, naming the element');
SELECT is(pg_temp.sqlstate($$SELECT docket.schedule_task('sz-sched', '* * * * *', 'sz-task', pg_temp.pad(300))$$),
  '54000', 'schedule_task: params one byte over: 54000');
SELECT ok(pg_temp.unchanged(), 'and nothing was spawned or scheduled');
RESET docket.max_params_bytes;

SELECT pg_temp.cap('headers', pg_column_size(pg_temp.pad(120)));
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.spawn_task('sz-task', '{}', 'q-h', options => jsonb_build_object('headers', pg_temp.pad(120)))$$),
  'no er', 'spawn_task: headers exactly at docket.max_headers_bytes are accepted');
SELECT pg_temp.cap('headers', pg_column_size(pg_temp.pad(120)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.spawn_task('sz-task', '{}', 'q-h', options => jsonb_build_object('headers', pg_temp.pad(120)))$$),
  '54000', 'spawn_task: headers one byte over: 54000');
SELECT is(pg_temp.err($$SELECT * FROM docket.spawn_tasks('sz-task', ARRAY['{}'::jsonb, '{}'], 'q-h', options => jsonb_build_array('{}'::jsonb, jsonb_build_object('headers', pg_temp.pad(120))))$$),
  format('54000 limit_exceeded: options[2].headers is %s bytes, over docket.max_headers_bytes (%s bytes)',
         pg_column_size(pg_temp.pad(120)), pg_column_size(pg_temp.pad(120)) - 1),
  'spawn_tasks: one element''s headers one byte over: 54000, naming the element');
SELECT ok(pg_temp.unchanged(), 'and nothing was spawned');
RESET docket.max_headers_bytes;

---------------------------------------------------------------------------
-- results and step values: complete_task(s), complete_step(s)
---------------------------------------------------------------------------
\o /dev/null
SELECT pg_temp.spawn('r1');
SELECT pg_temp.spawn('r2');
SELECT pg_temp.claim('r1', 1);
SELECT pg_temp.claim('r2', 1);
\o
SELECT pg_temp.cap('result', pg_column_size(pg_temp.pad(400)));
SELECT is(pg_temp.sqlstate(format($$SELECT docket.complete_step(%L, %L, 's1', pg_temp.pad(400))$$, pg_temp.id('r1'), pg_temp.tok('r1'))),
  'no er', 'complete_step: a value exactly at docket.max_result_bytes is stored');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.complete_steps(ARRAY[%L], ARRAY[%L]::uuid[], ARRAY['s2'], ARRAY[pg_temp.pad(400)])$$,
                                  pg_temp.id('r1'), pg_temp.tok('r1'))),
  'no er', 'complete_steps: likewise');
SELECT pg_temp.cap('result', pg_column_size(pg_temp.pad(400)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate(format($$SELECT docket.complete_step(%L, %L, 's3', pg_temp.pad(400))$$, pg_temp.id('r1'), pg_temp.tok('r1'))),
  '54000', 'complete_step: one byte over: 54000');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.complete_steps(ARRAY[%L], ARRAY[%L]::uuid[], ARRAY['s3'], ARRAY[pg_temp.pad(400)])$$,
                                  pg_temp.id('r1'), pg_temp.tok('r1'))),
  '54000', 'complete_steps: one byte over: 54000');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.complete_task(%L, %L, pg_temp.pad(400))$$, pg_temp.id('r1'), pg_temp.tok('r1'))),
  '54000', 'complete_task: a result one byte over: 54000');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.complete_tasks(ARRAY[%L, %L], ARRAY[%L, %L]::uuid[], ARRAY['{}', pg_temp.pad(400)])$$,
                                  pg_temp.id('r1'), pg_temp.id('r2'), pg_temp.tok('r1'), pg_temp.tok('r2'))),
  '54000', 'complete_tasks: one result one byte over: 54000 for the whole call');
SELECT ok(pg_temp.unchanged(), 'and no step was stored, no task completed');
SELECT pg_temp.cap('result', pg_column_size(pg_temp.pad(400)));
SELECT is(pg_temp.sqlstate(format($$SELECT docket.complete_task(%L, %L, pg_temp.pad(400))$$, pg_temp.id('r1'), pg_temp.tok('r1'))),
  'no er', 'complete_task: a result exactly at the cap completes the task');
SELECT is((SELECT array_agg(outcome) FROM docket.complete_tasks(ARRAY[pg_temp.id('r2')], ARRAY[pg_temp.tok('r2')], ARRAY[pg_temp.pad(400)])),
  ARRAY['completed'], 'complete_tasks: likewise');
RESET docket.max_result_bytes;

---------------------------------------------------------------------------
-- errors: fail_task
---------------------------------------------------------------------------
\o /dev/null
SELECT pg_temp.spawn('f1');
SELECT pg_temp.claim('f1', 2);
\o
SELECT pg_temp.cap('error', pg_column_size(pg_temp.pad(500)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate(format($$SELECT docket.fail_task(%L, %L, pg_temp.pad(500))$$, pg_temp.id('f1'), pg_temp.tok('f1'))),
  '54000', 'fail_task: an error one byte over docket.max_error_bytes: 54000');
SELECT ok(pg_temp.unchanged(), 'and no attempt was recorded');
SELECT pg_temp.cap('error', pg_column_size(pg_temp.pad(500)));
SELECT is(pg_temp.sqlstate(format($$SELECT docket.fail_task(%L, %L, pg_temp.pad(500))$$, pg_temp.id('f1'), pg_temp.tok('f1'))),
  'no er', 'fail_task: an error exactly at the cap is recorded');
RESET docket.max_error_bytes;

---------------------------------------------------------------------------
-- payloads: emit_event, append_events
---------------------------------------------------------------------------
SELECT pg_temp.cap('payload', pg_column_size(pg_temp.pad(600)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.err($$SELECT docket.emit_event('sz-event', pg_temp.pad(600))$$),
  format('54000 limit_exceeded: payload is %s bytes, over docket.max_payload_bytes (%s bytes)',
         pg_column_size(pg_temp.pad(600)), pg_column_size(pg_temp.pad(600)) - 1),
  'emit_event: a payload one byte over docket.max_payload_bytes: 54000');
SELECT ok(pg_temp.unchanged(), 'and no event was emitted');
SELECT pg_temp.cap('payload', pg_column_size(pg_temp.pad(600)));
SELECT is(docket.emit_event('sz-event', pg_temp.pad(600)), true, 'emit_event: a payload exactly at the cap is emitted');
SELECT is((SELECT payload FROM docket.task_events WHERE event_name = 'sz-event'), pg_temp.pad(600), 'and stored');
SELECT is(docket.emit_event('sz-null'), true, 'a NULL payload is no size at all');

CREATE FUNCTION pg_temp.events(seq int) RETURNS jsonb LANGUAGE sql AS
  $$ SELECT jsonb_build_array(jsonb_build_object('seq', seq, 'type', 't', 'payload', pg_temp.pad(600))) $$;
SELECT pg_temp.cap('payload', pg_column_size(pg_temp.events(1)));
SELECT is(pg_temp.sqlstate($$SELECT docket.append_events('tenantless', 'sz-1', pg_temp.events(1))$$),
  'no er', 'append_events: an events array exactly at the cap is appended');
SELECT pg_temp.cap('payload', pg_column_size(pg_temp.events(2)) - 1);
SELECT pg_temp.before();
SELECT is(pg_temp.sqlstate($$SELECT docket.append_events('tenantless', 'sz-1', pg_temp.events(2))$$),
  '54000', 'append_events: one byte over: 54000');
SELECT ok(pg_temp.unchanged(), 'and nothing was appended');
RESET docket.max_payload_bytes;

---------------------------------------------------------------------------
-- the tenant id of an owner scope: at most 1000 bytes (as a bound tenant),
-- in every call that creates something in a scope; a longer one is 22023
-- before anything is stored. A read scope is not capped.
---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.owner(n int) RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT 'tenant:' || repeat('t', n) $$;
SELECT pg_temp.before();
SELECT is(pg_temp.err(format($$SELECT docket.insert_run(%L, pg_temp.doc('sz-t1', 0), 'run_initialized', pg_temp.t(0), 'q-sz')$$,
                             pg_temp.owner(1001))),
  '22023 bad_argument: owner_scope''s tenant id is 1001 bytes, over 1000',
  'insert_run: an owner tenant of 1001 bytes: 22023');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.spawn_task('sz-t', '{}', 'q-sz', %L)$$, pg_temp.owner(1001))),
  '22023', 'spawn_task: an owner tenant of 1001 bytes: 22023');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.spawn_tasks('sz-t', ARRAY['{}'::jsonb], 'q-sz', %L)$$, pg_temp.owner(1001))),
  '22023', 'spawn_tasks: an owner tenant of 1001 bytes: 22023');
SELECT is(pg_temp.err(format($$SELECT docket.emit_event('sz-t', NULL, %L)$$, pg_temp.owner(1001))),
  '22023 bad_argument: owner_scope''s tenant id is 1001 bytes, over 1000',
  'emit_event: an owner tenant of 1001 bytes: 22023');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.schedule_task('sz-t', '* * * * *', 'sz-t', '{}', 'q-sz', %L)$$, pg_temp.owner(1001))),
  '22023', 'schedule_task: an owner tenant of 1001 bytes: 22023');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.insert_run(%L, pg_temp.doc('sz-t1', 0), 'run_initialized', pg_temp.t(0), 'q-sz')$$,
                                  'tenant:' || repeat('€', 334))),
  '22023', 'the cap counts bytes: 334 three-byte characters (1002 bytes) are over it');
SELECT ok(pg_temp.unchanged(), 'and nothing was stored by any of them');
SELECT is(docket.insert_run(pg_temp.owner(1000), pg_temp.doc('sz-t1', 0), 'run_initialized', pg_temp.t(0), 'q-sz') ->> 'id',
  'sz-t1', 'insert_run: an owner tenant of exactly 1000 bytes is stored');
SELECT is((SELECT count(*) FROM docket.spawn_task('sz-t', '{}', 'q-sz', pg_temp.owner(1000))), 1::bigint,
  'spawn_task: so is a task''s');
SELECT is(docket.emit_event('sz-t', NULL, pg_temp.owner(1000)), true, 'emit_event: and an event''s');
SELECT is((SELECT octet_length(tenant_id) FROM docket.runs WHERE run_id = 'sz-t1'), 1000,
  'the run carries the whole tenant id');
SELECT is(jsonb_array_length(docket.list_runs(pg_temp.owner(1001), 10) -> 'entries'), 0,
  'a read scope over the cap is not refused: it sees that tenant''s runs, here none');

SELECT * FROM finish();
ROLLBACK;
