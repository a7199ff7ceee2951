-- A task's stored document is narrow: the row keeps only what its columns do
-- not say (attempt, wake_reason, waiting, result, error, cancel_reason, ...),
-- and every reader sees the whole document, its id, graph_id, graph_hash,
-- status, checkpoint_seq and started_at composed from the columns
-- (docket._run_document): get_run, inspect_run, retry_poisoned_run and what
-- mutate_run hands a mutation (emit_event and cancel_task decide on it). A
-- document that has an "id" (a commit or mutate_run stored the runtime's, or a
-- row from before 0.3.0) is shown as stored, and the task's next transition
-- narrows it again. The clock is docket.fake_now in 2041.
BEGIN;
SELECT plan(25);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql

CREATE FUNCTION pg_temp.doc(n text) RETURNS jsonb LANGUAGE sql AS
  $$ SELECT document FROM docket.runs WHERE run_id = pg_temp.id(n) $$;
CREATE FUNCTION pg_temp.seen(n text) RETURNS jsonb LANGUAGE sql AS
  $$ SELECT docket.fetch_run('system', pg_temp.id(n)) $$;
-- The whole document of task n as 0.2.0 stored it: the row's columns and `rest`.
CREATE FUNCTION pg_temp.whole(n text, rest jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', r.run_id, 'graph_id', r.graph_id, 'graph_hash', 'task',
                            'status', r.status, 'checkpoint_seq', r.checkpoint_seq,
                            'started_at', docket._iso(r.started_at)) || rest
    FROM docket.runs r WHERE r.run_id = pg_temp.id(n) $$;
-- A mutation that changes nothing and returns the run it was handed.
CREATE FUNCTION public.tap_doc_seen(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql STABLE AS
  $$ SELECT ROW('no_change', NULL, NULL, NULL, NULL, run)::docket.mutation_decision $$;

-------------------------------------------------------------------------------
-- Spawned, claimed, suspended, resumed, completed
-------------------------------------------------------------------------------
SELECT pg_temp.at(0.000042);
SELECT pg_temp.spawn('a');
SELECT is(pg_temp.doc('a'), '{"attempt": 1, "wake_reason": "new"}', 'a spawned task stores two keys');
SELECT is(pg_temp.seen('a'),
          jsonb_build_object('id', pg_temp.id('a'), 'graph_id', 'job_a', 'graph_hash', 'task',
                             'status', 'running', 'checkpoint_seq', 0,
                             'started_at', '2041-01-01T00:00:00.000042Z', 'attempt', 1, 'wake_reason', 'new'),
          'fetch_run shows its whole document, started_at with six fraction digits in UTC');
SELECT is(docket.inspect_run('system', pg_temp.id('a')) -> 'run', pg_temp.seen('a'),
          'inspect_run shows the same document');
SELECT is(docket.fetch_run('tenant:other', pg_temp.id('a')), NULL, 'out of scope: still NULL');

SELECT is(pg_temp.claim('a', 1) ->> 'wake_reason', 'new', 'a: claimed');
SELECT is(pg_temp.doc('a'), '{"attempt": 1, "wake_reason": "new"}', 'a claim leaves the stored document as it is');
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('a'), pg_temp.tok('a'), 'w', 'ev')), 'suspended',
          'a: suspended on event ev');
SELECT is(pg_temp.doc('a') - 'waiting', '{"attempt": 1, "wake_reason": "event", "wake_pending": true}',
          'the suspended task stores its wake reason and its wait, no status and no sequence');
SELECT is(pg_temp.seen('a'), pg_temp.whole('a', pg_temp.doc('a')), 'fetch_run: the columns and the stored keys');
SELECT is(pg_temp.seen('a') ->> 'status', 'waiting', '... its status from the column (waiting)');
SELECT is(pg_temp.seen('a') ->> 'checkpoint_seq', '1', '... and its sequence (1)');
SELECT is(docket.mutate_run('system', pg_temp.id('a'), 'public.tap_doc_seen(jsonb,jsonb)') -> 'value',
          pg_temp.seen('a'), 'mutate_run hands a mutation the whole document');

-- emit_event resumes a through mutate_run (task_resume decides on the status it
-- is handed), whose commit stores the whole document task_resume returned.
SELECT pg_temp.at(2);
SELECT ok(docket.emit_event('ev', '{"k": 1}'), 'ev emitted');
SELECT is(pg_temp.doc('a'), pg_temp.seen('a'), 'the resumed task stores a whole document, shown as stored');
SELECT is(pg_temp.seen('a') ->> 'status' || ' ' || (pg_temp.seen('a') ->> 'checkpoint_seq') || ' '
            || (pg_temp.seen('a') ->> 'wake_reason'),
          'running 2 event', 'resumed: running, sequence 2, woken by the event');

SELECT is(pg_temp.claim('a', 3) ->> 'wake_reason', 'event', 'a: claimed again');
SELECT is((SELECT string_agg(outcome, ',') FROM docket.complete_tasks(ARRAY[pg_temp.id('a')],
                                                                     ARRAY[pg_temp.tok('a')], ARRAY['{"ok": 1}'::jsonb])),
          'completed', 'a: completed');
SELECT is(pg_temp.doc('a'), '{"attempt": 1, "result": {"ok": 1}, "woke_seq": 4, "wake_reason": "event"}',
          'its completion narrows the stored document again and adds the result');
SELECT is(pg_temp.seen('a'), pg_temp.whole('a', pg_temp.doc('a')), 'fetch_run: completed, sequence 3, the result');

-------------------------------------------------------------------------------
-- A retried failure; a whole document from before 0.3.0; an operator's recovery
-------------------------------------------------------------------------------
SELECT pg_temp.at(10);
SELECT pg_temp.spawn('b');
SELECT pg_temp.claim('b', 10);
-- As an upgraded database holds it: the whole document in the row.
UPDATE docket.runs SET document = pg_temp.whole('b', document) WHERE run_id = pg_temp.id('b');
SELECT is(pg_temp.seen('b'), pg_temp.doc('b'), 'a whole stored document is shown as stored');
SELECT is((SELECT disposition FROM docket.fail_task(pg_temp.id('b'), pg_temp.tok('b'), '{"e": 1}')), 'retry_scheduled',
          'b: failed, to be retried');
SELECT is(pg_temp.doc('b'), '{"attempt": 2, "last_error": {"e": 1}, "wake_reason": "retry"}',
          'the failure narrows it: attempt 2 and the error');

UPDATE docket.runs SET poisoned_at = pg_temp.t(11), poison_reason = 'test'
 WHERE run_id = pg_temp.id('b');
SELECT is(docket.retry_poisoned_run('system', pg_temp.id('b'), pg_temp.t(12)), pg_temp.whole('b', pg_temp.doc('b')),
          'retry_poisoned_run returns the whole document');

-------------------------------------------------------------------------------
-- docket._run_document on its own
-------------------------------------------------------------------------------
SELECT is(docket._run_document('{"x": 1}', 'r1', 'g', 'h1', 'running', 4, pg_temp.t(0)), '{"x": 1}',
          'a run that is not a task: its document as stored, with or without an id');
SELECT is(docket._run_document('{"id": "r1", "status": "waiting"}', 'r1', 'g', 'task', 'running', 4, pg_temp.t(0)),
          '{"id": "r1", "status": "waiting"}', 'a task document with an id: as stored');

SELECT * FROM finish();
ROLLBACK;
