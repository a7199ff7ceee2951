-- Task history (issue 9 item 1): every task transition appends its events to
-- the run's event log in the same transaction, and docket.task_history pages
-- them. Each path below checks the order, the payloads and the recorded times
-- of its events. Times in 2041 (docket.fake_now).
BEGIN;
SELECT plan(76);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql

-- The types of task n's history, in order, and the event with number k.
CREATE FUNCTION pg_temp.types(n text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(h.type, ',' ORDER BY h.seq), '')
    FROM docket.task_history('system', pg_temp.id(n)) h $$;
CREATE FUNCTION pg_temp.ev(n text, k bigint) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('type', h.type, 'payload', h.payload, 'at', h.recorded_at)
    FROM docket.task_history('system', pg_temp.id(n), k - 1, 1) h $$;
CREATE FUNCTION pg_temp.e(type text, payload jsonb, s double precision) RETURNS jsonb
  LANGUAGE sql AS $$ SELECT jsonb_build_object('type', type, 'payload', payload, 'at', pg_temp.t(s)) $$;
CREATE FUNCTION pg_temp.ts(s double precision) RETURNS jsonb LANGUAGE sql AS
  $$ SELECT to_jsonb(pg_temp.t(s)) $$;
-- seqs 1..n with no gap, and the run's counter at the last one.
CREATE FUNCTION pg_temp.numbered(n text) RETURNS boolean LANGUAGE sql AS $$
  WITH h AS (SELECT * FROM docket.task_history('system', pg_temp.id(n), 0, 10000))
  SELECT (SELECT array_agg(seq ORDER BY seq) FROM h)
           = array(SELECT generate_series(1::bigint, (SELECT count(*) FROM h)))
     AND (SELECT max(seq) FROM h) = (SELECT event_seq FROM docket.runs WHERE run_id = pg_temp.id(n)) $$;
-- The types of the rows task n's history has in docket.run_events itself.
CREATE FUNCTION pg_temp.logged(n text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(e.type, ',' ORDER BY e.seq), '')
    FROM docket.run_events e WHERE e.run_id = pg_temp.id(n) $$;

-------------------------------------------------------------------------------
-- Success: spawned, claimed, step_completed, completed
-------------------------------------------------------------------------------
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('ok');
SELECT pg_temp.claim('ok', 1);
SELECT docket.complete_step(pg_temp.id('ok'), pg_temp.tok('ok'), 'a', '1');
SELECT docket.complete_step(pg_temp.id('ok'), pg_temp.tok('ok'), 'a', '2');  -- replay: kept
SELECT pg_temp.at(2);
SELECT docket.complete_task(pg_temp.id('ok'), pg_temp.tok('ok'), '"done"');
SELECT is(pg_temp.types('ok'), 'spawned,claimed,step_completed,completed',
  'success: spawned, claimed, step_completed (once: a replayed step records nothing), completed');
SELECT is(pg_temp.ev('ok', 1), pg_temp.e('spawned', '{}', 0), 'spawned at the spawn');
SELECT is(pg_temp.ev('ok', 2), pg_temp.e('claimed', '{"attempt": 1}', 1), 'claimed with attempt 1, at the claim');
SELECT is(pg_temp.ev('ok', 3), pg_temp.e('step_completed', '{"step_name": "a"}', 1), 'step_completed with its name');
SELECT is(pg_temp.ev('ok', 4), pg_temp.e('completed', '{}', 2), 'completed at the completion');
SELECT ok(pg_temp.numbered('ok'), 'numbered 1..4 without a gap; the run''s event_seq is 4');

-- The batch calls record the same events.
SELECT pg_temp.spawn('batch');
SELECT pg_temp.claim('batch', 3);
SELECT docket.complete_steps(ARRAY[pg_temp.id('batch'), pg_temp.id('batch')],
  ARRAY[pg_temp.tok('batch'), pg_temp.tok('batch')], ARRAY['y', 'x'], ARRAY['1'::jsonb, '2']);
SELECT docket.complete_tasks(ARRAY[pg_temp.id('batch')], ARRAY[pg_temp.tok('batch')], ARRAY[NULL::jsonb]);
SELECT is(pg_temp.types('batch'), 'spawned,claimed,step_completed,step_completed,completed',
  'complete_steps and complete_tasks: one step_completed per stored step, then completed');
SELECT is((SELECT string_agg(h.payload ->> 'step_name', ',' ORDER BY h.seq)
             FROM docket.task_history('system', pg_temp.id('batch')) h WHERE h.type = 'step_completed'),
  'x,y', 'the steps of one call in step name order');
SELECT ok(pg_temp.numbered('batch'), 'numbered without a gap');

-------------------------------------------------------------------------------
-- A retry after a failure, then failure for good
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('retry', opts => '{"max_attempts": 2, "retry": {"kind": "fixed", "base_ms": 5000}}');
SELECT pg_temp.claim('retry', 10);
SELECT docket.fail_task(pg_temp.id('retry'), pg_temp.tok('retry'), '{"message": "boom"}');
SELECT pg_temp.claim('retry', 15);
SELECT pg_temp.at(16);
SELECT docket.fail_task(pg_temp.id('retry'), pg_temp.tok('retry'), '{"message": "again"}');
SELECT is(pg_temp.types('retry'), 'spawned,claimed,attempt_failed,retry_scheduled,claimed,attempt_failed,failed',
  'retry: each attempt''s claim and failure, the retry in between, then failed');
SELECT is(pg_temp.ev('retry', 3), pg_temp.e('attempt_failed', '{"attempt": 1, "error": {"message": "boom"}}', 10),
  'attempt_failed keeps the first attempt''s error');
SELECT is(pg_temp.ev('retry', 4),
  pg_temp.e('retry_scheduled', jsonb_build_object('attempt', 2, 'retry_at', pg_temp.ts(15)), 10),
  'retry_scheduled: the next attempt and when');
SELECT is(pg_temp.ev('retry', 5), pg_temp.e('claimed', '{"attempt": 2}', 15), 'claimed again: attempt 2');
SELECT is(pg_temp.ev('retry', 6), pg_temp.e('attempt_failed', '{"attempt": 2, "error": {"message": "again"}}', 16),
  'the second attempt''s error is kept too');
SELECT is(pg_temp.ev('retry', 7), pg_temp.e('failed', '{"error": {"message": "again"}}', 16), 'failed with the last error');

-- retry => false: failed at once, whatever attempts remain.
SELECT pg_temp.spawn('permanent', opts => '{"max_attempts": 5}');
SELECT pg_temp.claim('permanent', 20);
SELECT docket.fail_task(pg_temp.id('permanent'), pg_temp.tok('permanent'), '"nope"', retry => false);
SELECT is(pg_temp.types('permanent'), 'spawned,claimed,attempt_failed,failed', 'retry => false: attempt_failed, failed');

-- An error longer than 8192 bytes of JSON is kept cut, marked truncated.
SELECT pg_temp.spawn('big', opts => '{"max_attempts": 1}');
SELECT pg_temp.claim('big', 21);
SELECT docket.fail_task(pg_temp.id('big'), pg_temp.tok('big'), to_jsonb(repeat('é', 5000)));
SELECT is((pg_temp.ev('big', 3) -> 'payload' -> 'error') - 'prefix', '{"truncated": true, "bytes": 10002}',
  'a long error: truncated, with its size in bytes');
SELECT ok(length((pg_temp.ev('big', 3) -> 'payload' -> 'error' ->> 'prefix')::text) BETWEEN 4000 AND 4096,
  'and its prefix, cut at a character boundary');
SELECT is(docket.task_result('system', pg_temp.id('big')) -> 'error', to_jsonb(repeat('é', 5000)),
  'task_result keeps the whole error');

-------------------------------------------------------------------------------
-- Sleep and wake
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('nap');
SELECT pg_temp.claim('nap', 30);
SELECT docket.sleep_until(pg_temp.id('nap'), pg_temp.tok('nap'), 'zz', pg_temp.t(40));
SELECT is(pg_temp.claim('nap', 39), NULL, 'not due before its wake time');
SELECT pg_temp.claim('nap', 41);
SELECT is(pg_temp.types('nap'), 'spawned,claimed,sleeping,woke,claimed', 'sleep: sleeping, then woke and claimed');
SELECT is(pg_temp.ev('nap', 3), pg_temp.e('sleeping', jsonb_build_object('until', pg_temp.ts(40)), 30),
  'sleeping until its wake time');
SELECT is(pg_temp.ev('nap', 4), pg_temp.e('woke', '{"reason": "sleep"}', 41), 'woke (sleep) at the claim that resumed it');
-- The claim expires; the task is claimed again: no second woke.
SELECT pg_temp.claim('nap', 100);
SELECT is(pg_temp.types('nap'), 'spawned,claimed,sleeping,woke,claimed,claimed',
  'a claim after an expired one records claimed only: the task woke once');
SELECT ok(pg_temp.numbered('nap'), 'numbered without a gap');

-------------------------------------------------------------------------------
-- An event wait with a timeout: woken by the timeout, and one woken by the event
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('late');
SELECT pg_temp.claim('late', 200);
SELECT docket.await_event(pg_temp.id('late'), pg_temp.tok('late'), 'w', 'never', 5000);
SELECT pg_temp.claim('late', 206);
SELECT is(pg_temp.types('late'), 'spawned,claimed,waiting,woke,claimed', 'event wait: waiting, woke, claimed');
SELECT is(pg_temp.ev('late', 3),
  pg_temp.e('waiting', jsonb_build_object('event', 'never', 'timeout_at', pg_temp.ts(205)), 200),
  'waiting on the event, with its timeout');
SELECT is(pg_temp.ev('late', 4), pg_temp.e('woke', '{"reason": "timeout"}', 206), 'woke by the timeout');

SELECT pg_temp.spawn('ping');
SELECT pg_temp.claim('ping', 210);
SELECT docket.await_event(pg_temp.id('ping'), pg_temp.tok('ping'), 'w', 'ping-event');
SELECT pg_temp.at(211);
SELECT docket.emit_event('ping-event', '{"n": 1}');
SELECT pg_temp.claim('ping', 212);
SELECT is(pg_temp.ev('ping', 3), pg_temp.e('waiting', '{"event": "ping-event"}', 210), 'waiting without a timeout');
SELECT is(pg_temp.ev('ping', 4), pg_temp.e('woke', '{"reason": "event"}', 212), 'woke by the event');

-------------------------------------------------------------------------------
-- A child join
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('parent');
SELECT pg_temp.spawn('child');
SELECT pg_temp.claim('parent', 300);
SELECT docket.await_task(pg_temp.id('parent'), pg_temp.tok('parent'), 'join', pg_temp.id('child'));
SELECT pg_temp.claim('child', 301);
SELECT docket.complete_task(pg_temp.id('child'), pg_temp.tok('child'), '7');
SELECT pg_temp.claim('parent', 302);
SELECT is(pg_temp.types('parent'), 'spawned,claimed,waiting,woke,claimed', 'child join: waiting, woke, claimed');
SELECT is(pg_temp.ev('parent', 3), pg_temp.e('waiting', jsonb_build_object('child', pg_temp.id('child')), 300),
  'waiting on the child');
SELECT is(pg_temp.ev('parent', 4), pg_temp.e('woke', '{"reason": "child"}', 302), 'woke by the child');
SELECT is(pg_temp.types('child'), 'spawned,claimed,completed', 'the child''s own history');

-------------------------------------------------------------------------------
-- Cancelled while running; cancelled by a deadline
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('stop');
SELECT pg_temp.claim('stop', 400);
SELECT pg_temp.at(401);
SELECT docket.cancel_task('system', pg_temp.id('stop'), 'operator said so');
SELECT docket.cancel_task('system', pg_temp.id('stop'), 'twice');  -- already cancelled: nothing
SELECT is(pg_temp.types('stop'), 'spawned,claimed,cancelled', 'cancel while running: cancelled, once');
SELECT is(pg_temp.ev('stop', 3), pg_temp.e('cancelled', '{"reason": "operator said so"}', 401), 'with its reason');

SELECT pg_temp.spawn('slow', opts => '{"max_duration_ms": 1000}');
SELECT pg_temp.claim('slow', 410);
SELECT pg_temp.at(412);
SELECT docket.complete_tasks(ARRAY[pg_temp.id('slow')], ARRAY[pg_temp.tok('slow')], ARRAY['1'::jsonb]);
SELECT is(pg_temp.types('slow'), 'spawned,claimed,cancelled', 'past max_duration_ms: cancelled by the completion');
SELECT is(pg_temp.ev('slow', 3) -> 'payload', '{"reason": "max_duration_ms"}', 'with the deadline''s reason');

-------------------------------------------------------------------------------
-- Poisoned after crashes
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('crashy');
SELECT pg_temp.at(500);
SELECT count(*) FROM docket.claim_tasks('crashy', 1, 1000, 2, pg_temp.t(500));
SELECT count(*) FROM docket.claim_tasks('crashy', 1, 1000, 2, pg_temp.t(502));
SELECT count(*) FROM docket.claim_tasks('crashy', 1, 1000, 2, pg_temp.t(504));
SELECT is(pg_temp.types('crashy'), 'spawned,claimed,claimed,poisoned', 'crashes: claimed twice, then poisoned');
SELECT is(pg_temp.ev('crashy', 4), pg_temp.e('poisoned', '{"reason": "max_claim_attempts_exceeded"}', 504),
  'poisoned with its reason, at the claim that found it');

-------------------------------------------------------------------------------
-- Deferral of a task the worker does not know
-------------------------------------------------------------------------------
SELECT pg_temp.spawn('unknown');
SELECT pg_temp.claim('unknown', 600);
SELECT docket.defer_task(pg_temp.id('unknown'), pg_temp.tok('unknown'), 3, 1000, 60000);
SELECT is(pg_temp.types('unknown'), 'spawned,claimed,deferred', 'an unknown task handed back: deferred');
SELECT is((pg_temp.ev('unknown', 3) -> 'payload' ->> 'defers')::int, 1, 'the first deferral');
SELECT is((pg_temp.ev('unknown', 3) -> 'payload' ->> 'retry_at')::timestamptz,
  (SELECT wake_at FROM docket.runs WHERE run_id = pg_temp.id('unknown')), 'with the time it is due again');
SELECT ok(pg_temp.numbered('unknown'), 'numbered without a gap');

-------------------------------------------------------------------------------
-- The events the run row states: spawned, the latest claimed and completed
-- cost no log row
-------------------------------------------------------------------------------
SELECT is(pg_temp.logged('ok'), '',
  'a completed task''s log holds neither spawned, claimed, step_completed nor completed: its rows state them');
SELECT is((SELECT array_agg(s.step_name || ':' || s.seq) FROM docket.task_steps s WHERE s.run_id = pg_temp.id('ok')),
  '{a:3}', 'the step row keeps its event''s number');
SELECT is((SELECT string_agg(s.step_name || ':' || s.seq, ',' ORDER BY s.step_name) FROM docket.task_steps s WHERE s.run_id = pg_temp.id('batch')),
  'x:3,y:4', 'the steps of one call numbered in step name order');
SELECT is((SELECT string_agg(h.seq || ':' || h.type, ',' ORDER BY h.seq) FROM docket.task_history('system', pg_temp.id('batch'), 2, 2) h),
  '3:step_completed,4:step_completed', 'a page of step rows');
SELECT pg_temp.spawn('lean');
SELECT is(pg_temp.logged('lean'), '', 'a spawn writes no log row');
SELECT is(pg_temp.types('lean'), 'spawned', 'and its history starts with spawned, number 1');
SELECT pg_temp.at(700);
SELECT pg_temp.claim('lean', 701);
SELECT pg_temp.at(702);
SELECT docket.complete_tasks(ARRAY[pg_temp.id('lean')], ARRAY[pg_temp.tok('lean')], ARRAY['1'::jsonb]);
SELECT is(pg_temp.logged('lean'), '', 'a no-op task writes no log row');
SELECT is(pg_temp.ev('lean', 2), pg_temp.e('claimed', '{"attempt": 1}', 701),
  'its claimed event: number 2, attempt 1, at the claim, from the row');
SELECT is((SELECT array[claimed_seq, claimed_attempt] FROM docket.runs WHERE run_id = pg_temp.id('lean')),
  array[2::bigint, 1], 'the row keeps the latest claim''s number and attempt');
SELECT is(pg_temp.ev('lean', 3), pg_temp.e('completed', '{}', 702), 'completed, number 3, at the completion');
SELECT is((SELECT array[completed_seq::text, completed_at::text] FROM docket.runs WHERE run_id = pg_temp.id('lean')),
  array['3', pg_temp.t(702)::text], 'the row keeps the completion''s number and time');
-- A run revived by an operator's mutation and completed again: the row
-- already states the first completion, so the second one is logged.
CREATE FUNCTION pg_temp.revive(run jsonb, arg jsonb) RETURNS docket.mutation_decision
  LANGUAGE sql IMMUTABLE AS $$
  SELECT ROW('commit', run || jsonb_build_object('status', 'running',
               'checkpoint_seq', (run ->> 'checkpoint_seq')::int + 1),
             'run_initialized', 'immediate', NULL, NULL)::docket.mutation_decision $$;
SELECT pg_temp.at(710);
SELECT docket.mutate_run('system', pg_temp.id('lean'), 'pg_temp.revive(jsonb,jsonb)'::regprocedure);
SELECT pg_temp.claim('lean', 711);
SELECT pg_temp.at(712);
SELECT docket.complete_task(pg_temp.id('lean'), pg_temp.tok('lean'), '2');
SELECT is(pg_temp.types('lean'), 'spawned,claimed,completed,claimed,completed',
  'revived and completed again: both completions, in order');
SELECT is(pg_temp.ev('lean', 3) || pg_temp.ev('lean', 5),
  pg_temp.e('completed', '{}', 702) || pg_temp.e('completed', '{}', 712),
  'the first completion keeps its number and time; the second has its own');
SELECT is(pg_temp.logged('lean'), 'claimed,completed',
  'the second completion is in the log, and so is the first claim, which the second lease logged');
SELECT is(pg_temp.ev('lean', 2) || pg_temp.ev('lean', 4),
  pg_temp.e('claimed', '{"attempt": 1}', 701) || pg_temp.e('claimed', '{"attempt": 1}', 711),
  'each claim keeps its number and time, logged or stated by the row');
SELECT ok(pg_temp.numbered('lean'), 'numbered without a gap');
SELECT is((SELECT string_agg(h.type, ',' ORDER BY h.seq) FROM docket.task_history('system', pg_temp.id('lean'), 2, 2) h),
  'completed,claimed', 'a page that starts after the spawned event and ends past the row''s completed event');
SELECT is((SELECT count(*) FROM docket.task_history('tenant:acme', pg_temp.id('lean'))), 0::bigint,
  'outside the scope: none of the row''s events either');
-- A claim_due lease of a task (the run store's claim, which states no claim of
-- its own) logs the claim the row stated, and clears the row's columns.
SELECT pg_temp.spawn('viadue');
SELECT pg_temp.claim('viadue', 800);
SELECT is((SELECT count(*)::int FROM docket.claim_due(pg_temp.t(900), 1, 1000, queue => 'viadue')
            WHERE outcome = 'lease'), 1, 'claim_due steals the expired claim of a task');
SELECT is(pg_temp.logged('viadue'), 'claimed', 'the task''s claim went to the log');
SELECT is(pg_temp.ev('viadue', 2), pg_temp.e('claimed', '{"attempt": 1}', 800), 'as the row stated it');
SELECT is((SELECT array[claimed_seq, claimed_attempt] FROM docket.runs WHERE run_id = pg_temp.id('viadue')),
  array[NULL::bigint, NULL], 'and the row states no claim any more');
SELECT ok(pg_temp.numbered('viadue'), 'numbered without a gap');
-- A run the run store inserted states no spawned event, whatever its graph.
SELECT docket.save_graph('th-graph', 'task', '{}');
SELECT docket.insert_run('tenantless', jsonb_build_object('id', 'th-store', 'graph_id', 'th-graph',
  'graph_hash', 'task', 'status', 'running', 'checkpoint_seq', 0,
  'started_at', '2041-01-01T00:00:00Z'), 'run_initialized', pg_temp.t(720));
SELECT docket.append_events('system', 'th-store', '[{"seq": 1, "type": "note", "payload": null}]');
SELECT is((SELECT string_agg(h.seq || ':' || h.type, ',') FROM docket.task_history('system', 'th-store') h),
  '1:note', 'a run-store run: only its own events');

-------------------------------------------------------------------------------
-- Paging, scope, and the run store's own appends
-------------------------------------------------------------------------------
SELECT is((SELECT string_agg(h.seq::text, ',' ORDER BY h.seq) FROM docket.task_history('system', pg_temp.id('retry'), 2, 3) h),
  '3,4,5', 'after_seq and page_limit page the history');
SELECT pg_temp.spawn('mine', 'tenant:acme');
SELECT is((SELECT count(*) FROM docket.task_history('tenant:acme', pg_temp.id('mine'))), 1::bigint,
  'the owner''s scope sees the history');
SELECT is((SELECT count(*) FROM docket.task_history('tenant:other', pg_temp.id('mine'))), 0::bigint,
  'another tenant sees no rows');
SELECT is((SELECT count(*) FROM docket.task_history('system', 'no-such-run')), 0::bigint, 'an unknown run: no rows');
SELECT throws_ok($$SELECT * FROM docket.task_history('system', pg_temp.id('ok'), -1)$$, '22023',
  'bad_argument: after_seq must be >= 0', 'a negative after_seq: 22023');
SELECT throws_ok($$SELECT docket.append_events('system', pg_temp.id('ok'), '[{"seq": 4, "type": "note", "payload": null}]')$$,
  '22023', NULL, 'append_events after the task''s events: seq 4 is taken');
SELECT lives_ok($$SELECT docket.append_events('system', pg_temp.id('ok'), '[{"seq": 5, "type": "note", "payload": null}]')$$,
  'append_events continues the same numbering');
SELECT ok(pg_temp.numbered('ok'), 'and the counter follows it');

SELECT * FROM finish();
ROLLBACK;
