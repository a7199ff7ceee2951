-- The event log (EventStore): append_events and list_events.
BEGIN;
SELECT plan(91);

SELECT is((SELECT count(*) FROM docket.runs), 0::bigint, 'the store starts empty');

CREATE FUNCTION pg_temp.doc(id text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'ev-graph', 'graph_hash', 'ev-hash',
                            'status', 'running', 'checkpoint_seq', 0,
                            'started_at', '2030-01-01T00:00:00Z')
$$;

DO $fixture$
BEGIN
  PERFORM docket.save_graph('ev-graph', 'ev-hash', '{}');
  PERFORM docket.insert_run('tenant:a', pg_temp.doc('ev-a'), 'run_initialized', '2030-01-01T00:00:00Z');
  PERFORM docket.insert_run('tenant:b', pg_temp.doc('ev-b'), 'run_initialized', '2030-01-01T00:00:00Z');
  PERFORM docket.insert_run('tenantless', pg_temp.doc('ev-n'), 'run_initialized', '2030-01-01T00:00:00Z');
END
$fixture$;

-- The log of a run as one comparable value.
CREATE FUNCTION pg_temp.log(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_array(seq, type, payload) ORDER BY seq), '[]')
    FROM docket.run_events WHERE run_id = run
$$;

-- Every event row, to prove a refused append changed nothing.
CREATE FUNCTION pg_temp.all_events() RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_array(run_id, seq, type, payload, recorded_at)
                            ORDER BY run_id, seq), '[]')
    FROM docket.run_events
$$;

-------------------------------------------------------------------------------
-- Appending
-------------------------------------------------------------------------------

SET LOCAL docket.fake_now = '2030-02-03 04:05:06.789012+00';
SELECT lives_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
  '[{"seq": 1, "type": "started", "payload": null},
    {"seq": 2, "type": "step", "payload": {"n": 1, "list": [1, "two", null]}},
    {"seq": 3, "type": "note", "payload": "text"}]')$$,
  'a run''s first events start at seq 1');
SELECT is(pg_temp.log('ev-a'),
          '[[1, "started", null], [2, "step", {"n": 1, "list": [1, "two", null]}], [3, "note", "text"]]',
          'events are stored in order with type and payload as given');
SELECT is((SELECT payload FROM docket.run_events WHERE run_id = 'ev-a' AND seq = 1), 'null'::jsonb,
          'a JSON null payload is kept as JSON null');
SELECT is((SELECT array_agg(DISTINCT recorded_at) FROM docket.run_events WHERE run_id = 'ev-a'),
          ARRAY['2030-02-03 04:05:06.789012+00'::timestamptz],
          'recorded_at is the store clock (docket.now())');
RESET docket.fake_now;

SELECT lives_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
  '[{"seq": 4, "type": "t4", "payload": 4}, {"seq": 5, "type": "t5", "payload": [5]}]')$$,
  'later events continue at last + 1');
SELECT is((SELECT array_agg(seq ORDER BY seq) FROM docket.run_events WHERE run_id = 'ev-a'),
          '{1,2,3,4,5}'::bigint[], 'the log has seqs 1..5 with no gaps');
SELECT lives_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
  '[{"payload": {"k": "v"}, "type": "t6", "seq": 6}]')$$, 'key order inside an event is free');
SELECT lives_ok($$SELECT docket.append_events('system', 'ev-a',
  '[{"seq": 7, "type": "by-system", "payload": true}]')$$, 'system may append to any run');
SELECT lives_ok($$SELECT docket.append_events('tenantless', 'ev-n',
  '[{"seq": 1, "type": "n1", "payload": false}]')$$, 'tenantless appends to a tenantless run');
SELECT lives_ok($$SELECT docket.append_events('tenant:b', 'ev-b',
  '[{"seq": 1, "type": "b1", "payload": {}}]')$$, 'each run has its own sequence');
SELECT is(pg_temp.log('ev-b'), '[[1, "b1", {}]]', 'ev-b''s log is separate from ev-a''s');

-- An empty array is a no-op, even for a run that does not exist or is not visible.
CREATE TEMP TABLE before_noop AS SELECT pg_temp.all_events() AS events;
SELECT lives_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[]')$$,
                'an empty array is accepted');
SELECT lives_ok($$SELECT docket.append_events('tenant:a', 'ev-unknown', '[]')$$,
                'an empty array for an unknown run is a no-op, not not_found');
SELECT lives_ok($$SELECT docket.append_events('tenant:b', 'ev-a', '[]')$$,
                'an empty array for another tenant''s run is a no-op');
SELECT is(pg_temp.all_events(), (SELECT events FROM before_noop), 'empty appends changed nothing');

-------------------------------------------------------------------------------
-- Refused appends change nothing
-------------------------------------------------------------------------------

CREATE TEMP TABLE snapshot AS SELECT pg_temp.all_events() AS events;

-- NULL arguments, before anything else (even with an empty array).
SELECT throws_ok($$SELECT docket.append_events(NULL, 'ev-a', '[]')$$, '22023',
                 'bad_argument: scope must not be NULL', 'append: NULL scope');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', NULL, '[]')$$, '22023',
                 'bad_argument: run_id must not be NULL', 'append: NULL run_id');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', NULL)$$, '22023',
                 'bad_argument: events must not be NULL', 'append: NULL events');
SELECT throws_ok($$SELECT docket.append_events('tenant:', 'ev-a', '[]')$$, '23514', NULL,
                 'append: a malformed scope is the domain check violation');

-- Shape: the array.
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '{"seq": 8, "type": "t", "payload": 1}')$$,
                 '22023', 'bad_argument: events must be a JSON array', 'an object instead of an array');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', 'null')$$,
                 '22023', 'bad_argument: events must be a JSON array', 'JSON null instead of an array');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '8')$$,
                 '22023', 'bad_argument: events must be a JSON array', 'a number instead of an array');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '"[]"')$$,
                 '22023', 'bad_argument: events must be a JSON array', 'a string instead of an array');

-- Shape: the elements.
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[8]')$$,
                 '22023', 'bad_argument: events[0] must be a JSON object', 'a number element');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[null]')$$,
                 '22023', 'bad_argument: events[0] must be a JSON object', 'a null element');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '["x"]')$$,
                 '22023', 'bad_argument: events[0] must be a JSON object', 'a string element');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[[8, "t", 1]]')$$,
                 '22023', 'bad_argument: events[0] must be a JSON object', 'an array element');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{}]')$$,
                 '22023', 'bad_argument: events[0] must have the keys seq, type and payload',
                 'an empty object');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0] must have the keys seq, type and payload',
                 'seq missing');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 8, "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0] must have the keys seq, type and payload',
                 'type missing');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 8, "type": "t"}]')$$,
                 '22023', 'bad_argument: events[0] must have the keys seq, type and payload',
                 'payload missing (JSON null must be spelled out)');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 8, "type": "t", "payload": 1, "at": "now"}]')$$,
                 '22023', 'bad_argument: events[0] must have only the keys seq, type and payload',
                 'an extra key');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 8, "type": "t", "Payload": 1}]')$$,
                 '22023', 'bad_argument: events[0] must have the keys seq, type and payload',
                 'keys are case-sensitive');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": "8", "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1', 'seq as a string');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": null, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1', 'seq null');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": true, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1', 'seq boolean');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 8.5, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1', 'seq fractional');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 0, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1', 'seq 0');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": -8, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1', 'seq negative');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 9223372036854775808, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1',
                 'seq beyond bigint');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 1e30, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq must be an integer >= 1', 'seq huge');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 8, "type": "", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].type must be a non-empty string', 'type empty');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 8, "type": 8, "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].type must be a non-empty string', 'type a number');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 8, "type": null, "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].type must be a non-empty string', 'type null');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 8, "type": ["t"], "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].type must be a non-empty string', 'type an array');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 8, "type": "ok", "payload": 1}, {"seq": 9, "type": "", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[1].type must be a non-empty string',
                 'the message names the offending element');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 8, "type": "ok", "payload": 1}, {"seq": 9, "type": "ok", "payload": 1}, 3]')$$,
                 '22023', 'bad_argument: events[2] must be a JSON object',
                 'a bad third element refuses the whole array');

-- Shape errors come before the lookup.
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-unknown', '[{"seq": 1}]')$$,
                 '22023', 'bad_argument: events[0] must have the keys seq, type and payload',
                 'a malformed event for an unknown run is bad_argument, not not_found');
SELECT throws_ok($$SELECT docket.append_events('tenant:b', 'ev-a', '{}')$$,
                 '22023', 'bad_argument: events must be a JSON array',
                 'a malformed array for an invisible run is bad_argument, not not_found');

-- The lookup under the scope: not_found (DK003).
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-unknown', '[{"seq": 1, "type": "t", "payload": 1}]')$$,
                 'DK003', 'not_found: run ev-unknown is not visible in this scope', 'an unknown run');
SELECT throws_ok($$SELECT docket.append_events('tenant:b', 'ev-a', '[{"seq": 8, "type": "t", "payload": 1}]')$$,
                 'DK003', 'not_found: run ev-a is not visible in this scope', 'another tenant''s run');
SELECT throws_ok($$SELECT docket.append_events('tenantless', 'ev-a', '[{"seq": 8, "type": "t", "payload": 1}]')$$,
                 'DK003', 'not_found: run ev-a is not visible in this scope',
                 'tenantless cannot append to a tenant run');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-n', '[{"seq": 2, "type": "t", "payload": 1}]')$$,
                 'DK003', 'not_found: run ev-n is not visible in this scope',
                 'a tenant cannot append to a tenantless run');
SELECT throws_ok($$SELECT docket.append_events('tenant:b', 'ev-a', '[{"seq": 99, "type": "t", "payload": 1}]')$$,
                 'DK003', 'not_found: run ev-a is not visible in this scope',
                 'the lookup comes before the seq check');

-- Seqs must continue the run's last seq by +1 each (ev-a has 1..7).
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 9, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq is 9, expected 8 (run ev-a has events up to 7)',
                 'a gap');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 7, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq is 7, expected 8 (run ev-a has events up to 7)',
                 'a repeated seq');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a', '[{"seq": 1, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq is 1, expected 8 (run ev-a has events up to 7)',
                 'starting over');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 8, "type": "t", "payload": 1}, {"seq": 10, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[1].seq is 10, expected 9 (run ev-a has events up to 7)',
                 'a gap inside the array');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 8, "type": "t", "payload": 1}, {"seq": 8, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[1].seq is 8, expected 9 (run ev-a has events up to 7)',
                 'a duplicate inside the array');
SELECT throws_ok($$SELECT docket.append_events('tenant:a', 'ev-a',
                   '[{"seq": 9, "type": "t", "payload": 1}, {"seq": 8, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq is 9, expected 8 (run ev-a has events up to 7)',
                 'descending seqs');
SELECT throws_ok($$SELECT docket.append_events('tenant:b', 'ev-b', '[{"seq": 3, "type": "t", "payload": 1}]')$$,
                 '22023', 'bad_argument: events[0].seq is 3, expected 2 (run ev-b has events up to 1)',
                 'the expected seq is per run');

SELECT is(pg_temp.all_events(), (SELECT events FROM snapshot), 'no refused append changed anything');

-------------------------------------------------------------------------------
-- Listing
-------------------------------------------------------------------------------

SELECT results_eq($$SELECT seq, type, payload FROM docket.list_events('tenant:a', 'ev-a')$$,
                  $$VALUES (1::bigint, 'started'::text, 'null'::jsonb),
                           (2, 'step', '{"n": 1, "list": [1, "two", null]}'),
                           (3, 'note', '"text"'), (4, 't4', '4'), (5, 't5', '[5]'),
                           (6, 't6', '{"k": "v"}'), (7, 'by-system', 'true')$$,
                  'list_events with the defaults: every event in seq order');
SELECT results_eq($$SELECT recorded_at FROM docket.list_events('tenant:a', 'ev-a', 0, 1)$$,
                  $$VALUES ('2030-02-03 04:05:06.789012+00'::timestamptz)$$,
                  'list_events returns recorded_at');
SELECT results_eq($$SELECT seq FROM docket.list_events('tenant:a', 'ev-a', 2)$$,
                  $$VALUES (3::bigint), (4), (5), (6), (7)$$, 'after_seq is exclusive');
SELECT results_eq($$SELECT seq FROM docket.list_events('tenant:a', 'ev-a', 2, 2)$$,
                  $$VALUES (3::bigint), (4)$$, 'page_limit bounds the page');
SELECT results_eq($$SELECT seq FROM docket.list_events('tenant:a', 'ev-a', 4, 2)$$,
                  $$VALUES (5::bigint), (6)$$, 'the next page continues after the last seq');
SELECT is_empty($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', 7)$$,
                'after the last seq: no rows');
SELECT is_empty($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', 9223372036854775807)$$,
                'after_seq at the bigint maximum: no rows');
SELECT results_eq($$SELECT count(*) FROM docket.list_events('tenant:a', 'ev-a', 0, 10000)$$,
                  $$VALUES (7::bigint)$$, 'page_limit 10000 is allowed');
SELECT results_eq($$SELECT seq, type FROM docket.list_events('system', 'ev-a', 6)$$,
                  $$VALUES (7::bigint, 'by-system'::text)$$, 'system lists any run''s events');
SELECT results_eq($$SELECT seq, type, payload FROM docket.list_events('tenantless', 'ev-n')$$,
                  $$VALUES (1::bigint, 'n1'::text, 'false'::jsonb)$$, 'tenantless lists a tenantless run');
SELECT is_empty($$SELECT * FROM docket.list_events('tenant:b', 'ev-a')$$,
                'another tenant gets no rows');
SELECT is_empty($$SELECT * FROM docket.list_events('tenantless', 'ev-a')$$,
                'tenantless gets no rows for a tenant run');
SELECT is_empty($$SELECT * FROM docket.list_events('tenant:a', 'ev-n')$$,
                'a tenant gets no rows for a tenantless run');
SELECT is_empty($$SELECT * FROM docket.list_events('tenant:a:x', 'ev-a')$$,
                'tenant a:x gets no rows for tenant a''s run');
SELECT is_empty($$SELECT * FROM docket.list_events('system', 'ev-unknown')$$,
                'an unknown run has no rows');
SELECT is_empty($$SELECT * FROM docket.list_events('tenant:a', 'ev-b')$$,
                'tenant a does not see ev-b''s events');

SELECT throws_ok($$SELECT * FROM docket.list_events(NULL, 'ev-a')$$, '22023',
                 'bad_argument: scope must not be NULL', 'list_events: NULL scope');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', NULL)$$, '22023',
                 'bad_argument: run_id must not be NULL', 'list_events: NULL run_id');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', NULL)$$, '22023',
                 'bad_argument: after_seq must not be NULL', 'list_events: NULL after_seq');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', 0, NULL)$$, '22023',
                 'bad_argument: page_limit must not be NULL', 'list_events: NULL page_limit');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', -1)$$, '22023',
                 'bad_argument: after_seq must be >= 0', 'list_events: negative after_seq');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', 0, 0)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000', 'list_events: page_limit 0');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', 0, -5)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000',
                 'list_events: negative page_limit');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', 0, 10001)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000',
                 'list_events: page_limit 10001');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:a', 'ev-a', 0, 2147483647)$$, '22023',
                 'bad_argument: page_limit must be between 1 and 10000',
                 'list_events: page_limit INT_MAX');
SELECT throws_ok($$SELECT * FROM docket.list_events('tenant:', 'ev-a')$$, '23514', NULL,
                 'list_events: a malformed scope is the domain check violation');

-- The log goes with its run.
SELECT lives_ok($$SELECT docket.append_events('tenant:b', 'ev-b',
  '[{"seq": 2, "type": "b2", "payload": null}, {"seq": 3, "type": "b3", "payload": null}]')$$,
  'a multi-event append after earlier refusals');
SELECT results_eq($$SELECT seq, type FROM docket.list_events('tenant:b', 'ev-b', 1)$$,
                  $$VALUES (2::bigint, 'b2'::text), (3, 'b3')$$, 'and it is listed');

SELECT * FROM finish();
ROLLBACK;
