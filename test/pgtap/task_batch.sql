-- The batched worker calls: complete_tasks and complete_steps. Every outcome
-- (completed / stored / kept, stale, cancelled, not_found, overdue -> cancelled),
-- mixed batches with rows in input order, each element fenced on its own (a
-- stale or cancelled element never raises and never affects the others), the
-- claim refresh of stored and kept steps, and the argument rules (22023, and
-- then nothing changes). The clock is docket.fake_now in 2041; claims pass the
-- same `now`.
BEGIN;
SELECT plan(70);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql
\ir lib/err.sql

-- out_tasks(q): the rows of a complete_tasks call q as 'name:outcome' in output order,
-- with run ids replaced by fixture names.
CREATE FUNCTION pg_temp.name_of(rid text) RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT coalesce((SELECT name FROM ids WHERE run_id = rid), rid) $$;
CREATE FUNCTION pg_temp.out_tasks(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; out text[] := '{}';
BEGIN
  FOR r IN EXECUTE q LOOP
    out := out || (pg_temp.name_of(r.run_id) || ':' || r.outcome);
  END LOOP;
  RETURN array_to_string(out, ' ');
END $$;
-- out_steps(q): the rows of a complete_steps call q as 'name/step:outcome=value'.
CREATE FUNCTION pg_temp.out_steps(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; out text[] := '{}';
BEGIN
  FOR r IN EXECUTE q LOOP
    out := out || (pg_temp.name_of(r.run_id) || '/' || r.step_name || ':' || r.outcome || '='
                   || coalesce(r.value::text, 'NULL'));
  END LOOP;
  RETURN array_to_string(out, ' ');
END $$;

-------------------------------------------------------------------------------
-- complete_tasks: every outcome in one mixed batch
-------------------------------------------------------------------------------
-- a, b: held; c: cancelled; d: reclaimed after its claim expired (old token stale);
-- e: past max_duration_ms (10 s, from its first start at t(35)); x: already completed.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn(n) FROM unnest(ARRAY['a', 'b', 'c', 'd', 'x']) n;
SELECT pg_temp.spawn('e', 'tenantless', '{"max_duration_ms": 10000}');
SELECT is(pg_temp.claim('d', 0) ->> 'wake_reason', 'new', 'd: claimed at t(0)');
SELECT pg_temp.keep('d', 'd-old');
SELECT is((SELECT string_agg(pg_temp.claim(n, 35) ->> 'wake_reason', ',') FROM unnest(ARRAY['a', 'b', 'c', 'e', 'x']) n),
  'new,new,new,new,new', 'a, b, c, e, x: claimed at t(35)');
SELECT is(pg_temp.claim('d', 40) ->> 'wake_reason', 'recovered', 'd: its claim expired and was taken over at t(40)');
SELECT pg_temp.at(41);
SELECT ok(docket.cancel_task('tenantless', pg_temp.id('c'), 'stop'), 'c: cancelled');
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('x'), pg_temp.tok('x'), '"early"')$$, 'x: completed');

SELECT pg_temp.at(50);
SELECT is(pg_temp.out_tasks($$SELECT * FROM docket.complete_tasks(
            ARRAY[pg_temp.id('e'), pg_temp.id('a'), pg_temp.id('d'), 'no-such-task', pg_temp.id('c'),
                  pg_temp.id('x'), pg_temp.id('b')],
            ARRAY[pg_temp.tok('e'), pg_temp.tok('a'), pg_temp.tok('d-old'), gen_random_uuid(), pg_temp.tok('c'),
                  pg_temp.tok('x'), pg_temp.tok('b')],
            ARRAY['"e"', '{"r": "a"}', '"d"', '"n"', '"c"', '"x"', NULL]::jsonb[])$$),
  'e:cancelled a:completed d:stale no-such-task:not_found c:cancelled x:stale b:completed',
  'one row per element, in input order: completed, stale, not_found, cancelled, overdue -> cancelled');

SELECT is(jsonb_build_object('status', (pg_temp.r('a')).status, 'result', (pg_temp.r('a')).document -> 'result',
                             'claimed', (pg_temp.r('a')).claim_token IS NOT NULL, 'updated_at', (pg_temp.r('a')).updated_at),
  jsonb_build_object('status', 'completed', 'result', '{"r": "a"}'::jsonb, 'claimed', false, 'updated_at', pg_temp.t(50)),
  'a: completed with its result at now, claim released');
SELECT is((pg_temp.r('b')).document -> 'result', 'null'::jsonb, 'b: a NULL result element is a JSON null result');
SELECT is(docket.task_result('tenantless', pg_temp.id('b')) - 'queue' - 'attempts' - 'task_name',
  jsonb_build_object('state', 'completed', 'result', 'null'::jsonb, 'error', NULL),
  'task_result of b: completed, result null');
SELECT is(docket.task_result('tenantless', pg_temp.id('a')) -> 'result', '{"r": "a"}'::jsonb,
  'task_result of a: its result');
SELECT is(jsonb_build_object('status', (pg_temp.r('d')).status, 'token', (pg_temp.r('d')).claim_token,
                             'claimed_at', (pg_temp.r('d')).claimed_at),
  jsonb_build_object('status', 'running', 'token', pg_temp.tok('d'), 'claimed_at', pg_temp.t(40)),
  'd: the stale element changed nothing: still running under the new claim');
SELECT is((pg_temp.r('c')).document ->> 'cancel_reason', 'stop', 'c: still cancelled with its own reason');
SELECT is((pg_temp.r('x')).document -> 'result', '"early"'::jsonb, 'x: keeps its first result');
SELECT is(jsonb_build_object('status', (pg_temp.r('e')).status, 'reason', (pg_temp.r('e')).document ->> 'cancel_reason',
                             'claimed', (pg_temp.r('e')).claim_token IS NOT NULL),
  jsonb_build_object('status', 'cancelled', 'reason', 'max_duration_ms', 'claimed', false),
  'e: past max_duration_ms, cancelled by the call (reason max_duration_ms)');
SELECT is(docket.task_result('tenantless', pg_temp.id('e')) ->> 'state', 'cancelled', 'task_result of e: cancelled');

SELECT is(pg_temp.out_tasks($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('a'), pg_temp.id('e')],
                                ARRAY[pg_temp.tok('a'), pg_temp.tok('e')], ARRAY['1', '1']::jsonb[])$$),
  'a:stale e:cancelled', 'again: a finished task is stale, a cancelled one cancelled');
SELECT is(pg_temp.out_tasks($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('d')], ARRAY[pg_temp.tok('d')],
                                ARRAY['"d"']::jsonb[])$$),
  'd:completed', 'd under its new token: completed');
SELECT is(pg_temp.out_tasks($$SELECT * FROM docket.complete_tasks('{}', '{}', '{}')$$), '',
  'empty arrays: no rows, no error');

-- A parent awaiting a child finished by a batch is woken.
SELECT pg_temp.at(60);
SELECT pg_temp.spawn(n) FROM unnest(ARRAY['parent', 'child']) n;
SELECT is(pg_temp.claim('parent', 60) ->> 'wake_reason', 'new', 'parent: claimed');
SELECT is(pg_temp.claim('child', 60) ->> 'wake_reason', 'new', 'child: claimed');
SELECT is((SELECT status FROM docket.await_task(pg_temp.id('parent'), pg_temp.tok('parent'), 'join', pg_temp.id('child'))),
  'suspended', 'parent: awaits the child');
SELECT pg_temp.at(61);
SELECT is(pg_temp.out_tasks($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('child')], ARRAY[pg_temp.tok('child')],
                                ARRAY['{"v": 1}']::jsonb[])$$),
  'child:completed', 'the child is completed in a batch');
SELECT is(jsonb_build_object('wake_at', (pg_temp.r('parent')).wake_at, 'reason', (pg_temp.r('parent')).document ->> 'wake_reason',
                             'waits', (SELECT count(*) FROM docket.task_waits w WHERE w.run_id = pg_temp.id('parent'))),
  jsonb_build_object('wake_at', pg_temp.t(61), 'reason', 'child', 'waits', 0),
  'the parent awaiting it is due now (wake_reason child)');

-------------------------------------------------------------------------------
-- complete_tasks: bad arguments raise 22023 and change nothing
-------------------------------------------------------------------------------
SELECT pg_temp.at(70);
SELECT pg_temp.spawn('v');
SELECT is(pg_temp.claim('v', 70) ->> 'wake_reason', 'new', 'v: claimed');
INSERT INTO snaps VALUES ('tasks-bad', pg_temp.snap());
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(NULL, ARRAY[pg_temp.tok('v')], ARRAY['1']::jsonb[])$$),
  '22023 bad_argument: run_ids must not be NULL', 'run_ids NULL: 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v')], NULL, ARRAY['1']::jsonb[])$$),
  '22023 bad_argument: claim_tokens must not be NULL', 'claim_tokens NULL: 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v')], ARRAY[pg_temp.tok('v')], NULL)$$),
  '22023 bad_argument: results must not be NULL', 'results NULL: 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v')], ARRAY[pg_temp.tok('v')],
                                                            ARRAY['1', '2']::jsonb[])$$),
  '22023 bad_argument: run_ids and results must have the same length, got 1 and 2', 'unequal lengths: 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v')], '{}', ARRAY['1']::jsonb[])$$),
  '22023 bad_argument: run_ids and claim_tokens must have the same length, got 1 and 0', 'an empty array beside a full one: 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v'), NULL],
                                                            ARRAY[pg_temp.tok('v'), gen_random_uuid()], ARRAY['1', '2']::jsonb[])$$),
  '22023 bad_argument: run_ids must not contain NULL (element 2)', 'a NULL run id: 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v'), 'other'],
                                                            ARRAY[pg_temp.tok('v'), NULL], ARRAY['1', '2']::jsonb[])$$),
  '22023 bad_argument: claim_tokens must not contain NULL (element 2)', 'a NULL claim token: 22023');
SELECT is(pg_temp.err($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v'), pg_temp.id('v')],
                                                            ARRAY[pg_temp.tok('v'), pg_temp.tok('v')], ARRAY['1', '2']::jsonb[])$$),
  '22023 bad_argument: task ' || pg_temp.id('v') || ' appears twice (element 2)', 'the same run id twice: 22023');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'tasks-bad'),
  'the rejected batches changed nothing (v still held, nothing completed)');
SELECT is(pg_temp.out_tasks($$SELECT * FROM docket.complete_tasks(ARRAY[pg_temp.id('v')], ARRAY[pg_temp.tok('v')],
                                ARRAY['1']::jsonb[])$$), 'v:completed', 'v: then completes');

-------------------------------------------------------------------------------
-- complete_steps: every outcome in one mixed batch
-------------------------------------------------------------------------------
-- f, g: held; h: cancelled; i: reclaimed (old token stale); j: past max_duration_ms.
SELECT pg_temp.at(100);
SELECT pg_temp.spawn(n) FROM unnest(ARRAY['f', 'g', 'h', 'i']) n;
SELECT pg_temp.spawn('j', 'tenantless', '{"max_duration_ms": 10000}');
SELECT is(pg_temp.claim('i', 100) ->> 'wake_reason', 'new', 'i: claimed at t(100)');
SELECT pg_temp.keep('i', 'i-old');
SELECT is((SELECT string_agg(pg_temp.claim(n, 135) ->> 'wake_reason', ',') FROM unnest(ARRAY['f', 'g', 'h', 'j']) n),
  'new,new,new,new', 'f, g, h, j: claimed at t(135)');
SELECT is(pg_temp.claim('i', 140) ->> 'wake_reason', 'recovered', 'i: taken over at t(140)');
SELECT pg_temp.at(141);
SELECT ok(docket.cancel_task('tenantless', pg_temp.id('h'), 'stop'), 'h: cancelled');
SELECT is(docket.complete_step(pg_temp.id('g'), pg_temp.tok('g'), 'done', '"first"'), '"first"'::jsonb,
  'g: step done completed at t(141)');
SELECT is((pg_temp.r('g')).claimed_at, pg_temp.t(141), 'g: claim refreshed at t(141)');

SELECT pg_temp.at(150);
SELECT is(pg_temp.out_steps($$SELECT * FROM docket.complete_steps(
            ARRAY[pg_temp.id('j'), pg_temp.id('g'), pg_temp.id('f'), pg_temp.id('i'), 'no-such-task',
                  pg_temp.id('h'), pg_temp.id('f'), pg_temp.id('j')],
            ARRAY[pg_temp.tok('j'), pg_temp.tok('g'), pg_temp.tok('f'), pg_temp.tok('i-old'), gen_random_uuid(),
                  pg_temp.tok('h'), pg_temp.tok('f'), pg_temp.tok('j')],
            ARRAY['s1', 'done', 's1', 's1', 's1', 's1', 's2', 's2'],
            ARRAY['1', '"second"', '{"f": 1}', '1', '1', '1', 'null', '2']::jsonb[])$$),
  'j/s1:cancelled=NULL g/done:kept="first" f/s1:stored={"f": 1} i/s1:stale=NULL no-such-task/s1:not_found=NULL '
  'h/s1:cancelled=NULL f/s2:stored=null j/s2:cancelled=NULL',
  'one row per element, in input order: stored, kept (first value), stale, not_found, cancelled, overdue -> cancelled');
SELECT is(pg_temp.steps('f'),
  jsonb_build_array(jsonb_build_object('step', 's1', 'value', '{"f": 1}'::jsonb, 'at', pg_temp.t(150)),
                    jsonb_build_object('step', 's2', 'value', 'null'::jsonb, 'at', pg_temp.t(150))),
  'f: both steps stored at now (a JSON null value is a value)');
SELECT is((pg_temp.r('f')).claimed_at, pg_temp.t(150), 'f: stored steps refresh the claim');
SELECT is(pg_temp.steps('g'),
  jsonb_build_array(jsonb_build_object('step', 'done', 'value', '"first"'::jsonb, 'at', pg_temp.t(141))),
  'g: the first value and its completion time are kept');
SELECT is((pg_temp.r('g')).claimed_at, pg_temp.t(150), 'g: a kept step refreshes the claim too');
SELECT is(jsonb_build_object('steps', pg_temp.steps('i'), 'token', (pg_temp.r('i')).claim_token,
                             'claimed_at', (pg_temp.r('i')).claimed_at),
  jsonb_build_object('steps', '[]'::jsonb, 'token', pg_temp.tok('i'), 'claimed_at', pg_temp.t(140)),
  'i: the stale element stored nothing and left the new claim alone');
SELECT is(jsonb_build_object('steps', pg_temp.steps('h'), 'status', (pg_temp.r('h')).status),
  jsonb_build_object('steps', '[]'::jsonb, 'status', 'cancelled'), 'h: nothing stored, still cancelled');
SELECT is(jsonb_build_object('steps', pg_temp.steps('j'), 'status', (pg_temp.r('j')).status,
                             'reason', (pg_temp.r('j')).document ->> 'cancel_reason'),
  jsonb_build_object('steps', '[]'::jsonb, 'status', 'cancelled', 'reason', 'max_duration_ms'),
  'j: past max_duration_ms, cancelled by the call; nothing stored');
SELECT is(jsonb_build_object('status', (pg_temp.r('f')).status, 'status_g', (pg_temp.r('g')).status,
                             'seq', (pg_temp.r('f')).checkpoint_seq),
  jsonb_build_object('status', 'running', 'status_g', 'running', 'seq', 0),
  'f and g keep running (steps commit no new run version)');

SELECT pg_temp.at(155);
SELECT is(pg_temp.out_steps($$SELECT * FROM docket.complete_steps(ARRAY[pg_temp.id('f'), pg_temp.id('i')],
            ARRAY[pg_temp.tok('f'), pg_temp.tok('i')], ARRAY['s1', 's1'], ARRAY['{"f": 2}', '"i"']::jsonb[])$$),
  'f/s1:kept={"f": 1} i/s1:stored="i"', 'a later batch: kept with the first value; i under its new token: stored');
SELECT is((pg_temp.r('f')).claimed_at, pg_temp.t(155), 'the kept step refreshed the claim again');
SELECT is(pg_temp.out_steps($$SELECT * FROM docket.complete_steps('{}', '{}', '{}', '{}')$$), '',
  'empty arrays: no rows, no error');
SELECT is(docket.complete_step(pg_temp.id('f'), pg_temp.tok('f'), 's2', '7'), 'null'::jsonb,
  'complete_step sees the batch''s steps (first value wins)');
SELECT results_eq($$SELECT step_name, value FROM docket.step_states(pg_temp.id('f'), pg_temp.tok('f'))$$,
  $$VALUES ('s1', '{"f": 1}'::jsonb), ('s2', 'null'::jsonb)$$, 'step_states: the batch''s steps');

-------------------------------------------------------------------------------
-- complete_steps: bad arguments raise 22023 and change nothing
-------------------------------------------------------------------------------
SELECT pg_temp.at(160);
INSERT INTO snaps VALUES ('steps-bad', pg_temp.snap());
CREATE FUNCTION pg_temp.bad_steps(ids text[], toks uuid[], names text[], vals jsonb[]) RETURNS text
  LANGUAGE sql AS $$ SELECT pg_temp.err(format('SELECT * FROM docket.complete_steps(%L, %L, %L, %L)', ids, toks, names, vals)) $$;
SELECT is(pg_temp.bad_steps(NULL, ARRAY[pg_temp.tok('f')], ARRAY['n'], ARRAY['1']::jsonb[]),
  '22023 bad_argument: run_ids must not be NULL', 'run_ids NULL: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f')], NULL, ARRAY['n'], ARRAY['1']::jsonb[]),
  '22023 bad_argument: claim_tokens must not be NULL', 'claim_tokens NULL: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f')], ARRAY[pg_temp.tok('f')], NULL, ARRAY['1']::jsonb[]),
  '22023 bad_argument: step_names must not be NULL', 'step_names NULL: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f')], ARRAY[pg_temp.tok('f')], ARRAY['n'], NULL),
  '22023 bad_argument: step_values must not be NULL', 'step_values NULL: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f')], ARRAY[pg_temp.tok('f')], ARRAY['n', 'm'], ARRAY['1']::jsonb[]),
  '22023 bad_argument: run_ids and step_names must have the same length, got 1 and 2', 'unequal lengths: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f'), NULL], ARRAY[pg_temp.tok('f'), pg_temp.tok('f')], ARRAY['n', 'm'],
                            ARRAY['1', '2']::jsonb[]),
  '22023 bad_argument: run_ids must not contain NULL (element 2)', 'a NULL run id: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f'), pg_temp.id('g')], ARRAY[pg_temp.tok('f'), NULL], ARRAY['n', 'm'],
                            ARRAY['1', '2']::jsonb[]),
  '22023 bad_argument: claim_tokens must not contain NULL (element 2)', 'a NULL claim token: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f'), pg_temp.id('g')], ARRAY[pg_temp.tok('f'), pg_temp.tok('g')],
                            ARRAY['n', NULL], ARRAY['1', '2']::jsonb[]),
  '22023 bad_argument: step_names must not contain NULL (element 2)', 'a NULL step name: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f'), pg_temp.id('g')], ARRAY[pg_temp.tok('f'), pg_temp.tok('g')],
                            ARRAY['n', 'm'], ARRAY['1', NULL]::jsonb[]),
  '22023 bad_argument: step_values must not contain NULL (element 2)', 'a NULL step value: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f'), pg_temp.id('g')], ARRAY[pg_temp.tok('f'), pg_temp.tok('g')],
                            ARRAY['n', ''], ARRAY['1', '2']::jsonb[]),
  '22023 bad_argument: step_name must be non-empty text of at most 255 bytes', 'an empty step name: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f'), pg_temp.id('g')], ARRAY[pg_temp.tok('f'), pg_temp.tok('g')],
                            ARRAY['n', repeat('s', 256)], ARRAY['1', '2']::jsonb[]),
  '22023 bad_argument: step_name must be non-empty text of at most 255 bytes', 'a step name over 255 bytes: 22023');
SELECT is(pg_temp.bad_steps(ARRAY[pg_temp.id('f'), pg_temp.id('g'), pg_temp.id('f')],
                            ARRAY[pg_temp.tok('f'), pg_temp.tok('g'), pg_temp.tok('f')],
                            ARRAY['n', 'n', 'n'], ARRAY['1', '2', '3']::jsonb[]),
  '22023 bad_argument: step n of task ' || pg_temp.id('f') || ' appears twice (element 3)',
  'the same (run_id, step_name) twice: 22023');
SELECT is(pg_temp.snap(), (SELECT s FROM snaps WHERE name = 'steps-bad'),
  'the rejected batches changed nothing (no step stored, no claim refreshed)');
SELECT is(pg_temp.out_steps($$SELECT * FROM docket.complete_steps(ARRAY[pg_temp.id('f'), pg_temp.id('g'), pg_temp.id('f')],
            ARRAY[pg_temp.tok('f'), pg_temp.tok('g'), pg_temp.tok('f')], ARRAY['n', 'n', 'm'],
            ARRAY['1', '2', '3']::jsonb[])$$),
  'f/n:stored=1 g/n:stored=2 f/m:stored=3', 'one run may appear with several steps');

-------------------------------------------------------------------------------
-- Two tokens of the same run in one complete_steps: each element on its own
-------------------------------------------------------------------------------
SELECT is(pg_temp.out_steps($$SELECT * FROM docket.complete_steps(ARRAY[pg_temp.id('i'), pg_temp.id('i')],
            ARRAY[pg_temp.tok('i-old'), pg_temp.tok('i')], ARRAY['t1', 't2'], ARRAY['1', '2']::jsonb[])$$),
  'i/t1:stale=NULL i/t2:stored=2', 'the old token is stale, the current one stores its step');
SELECT is(pg_temp.steps('i') -> -1 ->> 'step', 't2', 'only the current token''s step is stored');

SELECT * FROM finish();
ROLLBACK;
