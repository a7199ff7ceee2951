-- claim_tasks' lease is written through the table and index access methods
-- (src/pg/run_write.cpp) for a run whose document is an object without
-- wake_pending. It must write exactly the row the statement wrote (the lease's
-- columns; for a task one event more, stated by the row in claimed_seq and
-- claimed_attempt), return the same attempt and wake reason, keep every index
-- whole, and leave to the statement, in the same batch, a run whose lease
-- wakes it (its woke event goes to the log), a document value its casts read
-- otherwise or raise on, a counter at its end, and everything under a
-- trigger or with docket.direct_writes off.
BEGIN;
SELECT plan(20);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql
\ir lib/direct_writes.sql

-- The row of task n without what differs between two tasks of the fixture or
-- two leases (the token).
CREATE FUNCTION pg_temp.row_of(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(r) - '{run_id,queue,graph_id,claim_token}'::text[] FROM docket.runs r
   WHERE r.run_id = pg_temp.id(n) $$;
-- What claim_tasks returned for task n (the last claim, kept in `got`).
CREATE TEMP TABLE got (name text PRIMARY KEY, facts jsonb);
CREATE FUNCTION pg_temp.take(q text, lim int DEFAULT 10) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE c record; k bigint := 0;
BEGIN
  FOR c IN SELECT * FROM docket.claim_tasks(q, lim, 30000, 10, docket.now()) LOOP
    INSERT INTO got SELECT i.name, jsonb_build_object('attempt', c.attempt, 'wake_reason', c.wake_reason,
                                                      'checkpoint_seq', c.checkpoint_seq, 'steps', c.steps)
      FROM ids i WHERE i.run_id = c.run_id
    ON CONFLICT (name) DO UPDATE SET facts = EXCLUDED.facts;
    INSERT INTO toks SELECT i.name, c.claim_token FROM ids i WHERE i.run_id = c.run_id
    ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token;
    k := k + 1;
  END LOOP;
  RETURN k;
END $$;
CREATE FUNCTION pg_temp.spawn_in(n text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE id text;
BEGIN
  SELECT s.run_id INTO STRICT id FROM docket.spawn_task('job', '{}', q) s;
  INSERT INTO ids VALUES (n, id);
END $$;
CREATE FUNCTION pg_temp.history(n text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(h.type, ',' ORDER BY h.seq) FROM docket.task_history('system', pg_temp.id(n)) h $$;

-- The same lease through this path (a) and through the statement (b).
SELECT pg_temp.at(0);
SELECT pg_temp.spawn(n) FROM unnest(ARRAY['a', 'b']) n;
CREATE TEMP TABLE spawned AS SELECT pg_temp.row_of('a') AS row;
SELECT pg_temp.at(1);
SELECT is(pg_temp.take('a'), 1::bigint, 'a: claimed');
SET LOCAL docket.direct_writes = off;
SELECT is(pg_temp.take('b'), 1::bigint, 'b: claimed by the statement');
RESET docket.direct_writes;
SELECT is(pg_temp.row_of('a'), pg_temp.row_of('b'), 'a: the row the statement writes');
SELECT isnt(pg_temp.row_of('a'), (SELECT row FROM spawned), 'and the row changed');
SELECT is((SELECT facts FROM got WHERE name = 'a'), (SELECT facts FROM got WHERE name = 'b'),
          'claim_tasks returns the same facts');
SELECT is((SELECT jsonb_build_object('event_seq', event_seq, 'claimed_seq', claimed_seq,
                                     'claimed_attempt', claimed_attempt, 'claim_attempts', claim_attempts,
                                     'claimed_at', claimed_at, 'wake_at', wake_at,
                                     'has_token', claim_token IS NOT NULL)
             FROM docket.runs WHERE run_id = pg_temp.id('a')),
          jsonb_build_object('event_seq', 2, 'claimed_seq', 2, 'claimed_attempt', 1, 'claim_attempts', 1,
                             'claimed_at', pg_temp.t(1), 'wake_at', NULL, 'has_token', true),
          'a: one event more, stated by the row with its attempt');
SELECT is(pg_temp.history('a'), 'spawned,claimed', 'a: its history has the claim');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds the leased versions');
SET LOCAL enable_seqscan = off;
SELECT is((SELECT count(*) FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL
             AND claim_token IS NOT NULL AND run_id IN (pg_temp.id('a'), pg_temp.id('b'))), 2::bigint,
          'runs_claimed finds both');
RESET enable_seqscan;

-- One batch of a queue: a task that slept (wake_pending: the statement, which
-- logs its woke event), one whose woke_seq would make this lease a wake (the
-- statement), one whose attempt is a JSON string (the statement's cast reads
-- it), and fresh ones around them (this path).
SELECT pg_temp.at(2);
SELECT pg_temp.spawn_in('m1', 'mix');
SELECT pg_temp.at(2.5);
SELECT pg_temp.spawn_in(n, 'mix') FROM unnest(ARRAY['m2', 'm3', 'm4', 'm5']) n;
SELECT is(pg_temp.take('mix', 1), 1::bigint, 'm1: claimed');
SELECT is((SELECT status FROM docket.sleep_until(pg_temp.id('m1'), pg_temp.tok('m1'), 'nap', pg_temp.t(3))),
          'suspended', 'm1: sleeps until t(3)');
UPDATE docket.runs SET event_seq = 5, document = document || '{"woke_seq": 5}'
 WHERE run_id = pg_temp.id('m2');
UPDATE docket.runs SET document = document || '{"attempt": "4"}' WHERE run_id = pg_temp.id('m3');
SELECT pg_temp.at(4);
SELECT is(pg_temp.take('mix'), 5::bigint, 'all five claimed in one batch');
SELECT is((SELECT jsonb_object_agg(g.name, jsonb_build_object('attempt', g.facts -> 'attempt',
                                                              'wake_reason', g.facts -> 'wake_reason'))
             FROM got g WHERE g.name LIKE 'm%'),
          '{"m1": {"attempt": 1, "wake_reason": "sleep"}, "m2": {"attempt": 1, "wake_reason": "new"},
            "m3": {"attempt": 4, "wake_reason": "new"}, "m4": {"attempt": 1, "wake_reason": "new"},
            "m5": {"attempt": 1, "wake_reason": "new"}}'::jsonb,
          'each with its attempt and wake reason');
SELECT is((SELECT jsonb_object_agg(n, pg_temp.history(n)) FROM unnest(ARRAY['m1', 'm2', 'm3', 'm4', 'm5']) n),
          '{"m1": "spawned,claimed,sleeping,woke,claimed", "m2": "spawned,woke,claimed",
            "m3": "spawned,claimed", "m4": "spawned,claimed", "m5": "spawned,claimed"}'::jsonb,
          'the woke events are logged, and every lease is a claimed event');
SELECT is((SELECT jsonb_object_agg(n, (SELECT claimed_attempt FROM docket.runs WHERE run_id = pg_temp.id(n)))
             FROM unnest(ARRAY['m3', 'm4']) n),
          '{"m3": 4, "m4": 1}'::jsonb, 'claimed_attempt is the document''s attempt');
SELECT is(pg_temp.unindexed(), '{}'::text[], 'every index holds them');

-- An attempt the statement's cast raises on: the statement raises (22P02).
SELECT pg_temp.at(5);
SELECT pg_temp.spawn('x');
UPDATE docket.runs SET document = document || '{"attempt": 1.5}' WHERE run_id = pg_temp.id('x');
SELECT throws_ok($$ SELECT pg_temp.take('x') $$, '22P02', NULL,
                 'an attempt that is no integer raises as the statement does');
-- A counter at its end: the statement raises (22003).
UPDATE docket.runs SET document = document || '{"attempt": 1}', event_seq = 9223372036854775807
 WHERE run_id = pg_temp.id('x');
SELECT throws_ok($$ SELECT pg_temp.take('x') $$, '22003', 'bigint out of range',
                 'an event counter at its end raises as the statement does');

-- A BEFORE UPDATE trigger: the statement leases, and the trigger fires.
UPDATE docket.runs SET event_seq = 1 WHERE run_id = pg_temp.id('x');
CREATE TRIGGER tap_runs_seen BEFORE UPDATE ON docket.runs FOR EACH ROW EXECUTE FUNCTION pg_temp.saw();
SELECT is(pg_temp.take('x'), 1::bigint, 'with a trigger the task is claimed');
SELECT results_eq($$ SELECT run_id FROM seen $$, $$ VALUES (pg_temp.id('x')) $$, 'and the trigger fired');
DROP TRIGGER tap_runs_seen ON docket.runs;

SELECT * FROM finish();
ROLLBACK;
