-- Hostile input (issue 8): a caller-supplied `now` further than
-- docket.max_clock_skew (default 5min, superusers only) from docket.now()
-- (docket.fake_now when set, else the clock) is refused with 22023 and
-- changes nothing, in either direction, for every function that takes one:
-- claim_due, claim_tasks, refresh_claim, release_claim, abandon_claim,
-- retry_poisoned_run. Exactly at the bound is accepted. Times in 2041
-- (docket.fake_now), but for the real-clock checks at the end, which compare
-- with clock_timestamp() an hour away (no timing in them).
BEGIN;
SELECT plan(27);
SET LOCAL TimeZone = 'UTC';

\ir lib/task_helpers.sql
\ir lib/err.sql

-- Everything docket stores, to prove that a refused call changed nothing.
CREATE FUNCTION pg_temp.everything() RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.snap() || jsonb_build_object(
    'run_events', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.run_id, x.seq) FROM docket.run_events x),
    'graphs', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.graph_id, x.graph_hash) FROM docket.graphs x)) $$;
-- sqlstate(q): the SQLSTATE q raises, or 'no error'.
CREATE FUNCTION pg_temp.sqlstate(q text) RETURNS text LANGUAGE sql AS
  $$ SELECT left(pg_temp.err(q), 5) $$;

SELECT pg_temp.at(0);
SELECT docket.now() IS NOT NULL AS loaded;  -- loads the library, which defines the settings
SELECT is(current_setting('docket.max_clock_skew'), '5min', 'docket.max_clock_skew defaults to 5 minutes');

CREATE ROLE docket_tap_skew NOLOGIN;
SELECT is(pg_temp.err($$SET LOCAL ROLE docket_tap_skew; SET LOCAL docket.max_clock_skew = '100d'$$),
  '42501 permission denied to set parameter "docket.max_clock_skew"',
  'a role that is not a superuser cannot widen the bound');

-- A plain run claimed at t(0), a poisoned one, and a task due at t(0).
SELECT docket.save_graph('g-clock', 'h1', '{"nodes": []}');
CREATE FUNCTION pg_temp.doc(id text, seq bigint) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('id', id, 'graph_id', 'g-clock', 'graph_hash', 'h1', 'status', 'running',
                            'checkpoint_seq', seq, 'started_at', '2041-01-01T00:00:00Z') $$;
SELECT docket.insert_run('tenantless', pg_temp.doc('ck-1', 0), 'run_initialized', pg_temp.t(0), 'q-clock');
SELECT docket.insert_run('tenantless', pg_temp.doc('ck-p', 0), 'run_initialized', pg_temp.t(0), 'q-clock-p');
CREATE TEMP TABLE lease AS SELECT claim_token FROM docket.claim_due(queue => 'q-clock');
SELECT count(*) FROM docket.claim_due(queue => 'q-clock-p', orphan_ttl_ms => 1, max_claim_attempts => 1);
SELECT pg_temp.at(1);
SELECT count(*) FROM docket.claim_due(queue => 'q-clock-p', orphan_ttl_ms => 1, max_claim_attempts => 1);
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('ck');
INSERT INTO snaps VALUES ('before', pg_temp.everything());

-- One microsecond past the bound, either way: refused, nothing changed.
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.claim_tasks('ck', 1, now => %L)$$,
                                  pg_temp.t(300.000001))),
  '22023', 'claim_tasks: now 5 minutes and 1 microsecond ahead of docket.now() is refused');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.claim_tasks('ck', 1, now => %L)$$,
                                  pg_temp.t(-300.000001))),
  '22023', 'claim_tasks: as far behind, too');
SELECT is(pg_temp.err(format($$SELECT * FROM docket.claim_tasks('ck', 1, now => %L)$$, pg_temp.t(86400 * 365))),
  '22023 bad_argument: now is ahead of docket''s clock by more than docket.max_clock_skew (300000 ms)',
  'the message names the setting');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.claim_due(now => %L, queue => 'ck')$$,
                                  pg_temp.t(300.000001))),
  '22023', 'claim_due: refused');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.refresh_claim('ck-1', %L, %L)$$,
                                  (SELECT claim_token FROM lease), pg_temp.t(86400 * 3650))),
  '22023', 'refresh_claim: a now ten years ahead (a claim that would never expire) is refused');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.release_claim('ck-1', %L, %L)$$,
                                  (SELECT claim_token FROM lease), pg_temp.t(-301))),
  '22023', 'release_claim: refused');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.abandon_claim('ck-1', %L, 0, %L, %L, 3)$$,
                                  (SELECT claim_token FROM lease), pg_temp.t(301), pg_temp.t(400))),
  '22023', 'abandon_claim: refused');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.retry_poisoned_run('tenantless', 'ck-p', %L)$$, pg_temp.t(301))),
  '22023', 'retry_poisoned_run: refused');
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.claim_due(now => 'infinity', queue => 'ck')$$),
  '22023', 'an infinite now: refused');
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.claim_due(now => '-infinity', queue => 'ck')$$),
  '22023', 'a minus-infinite now: refused');
SELECT is(pg_temp.everything(), (SELECT s FROM snaps WHERE name = 'before'),
  'nothing changed: no claim, refresh, release, abandon or recovery happened');

-- Exactly at the bound: accepted.
SELECT is(docket.refresh_claim('ck-1', (SELECT claim_token FROM lease), pg_temp.t(300)), true,
  'refresh_claim: a now exactly 5 minutes ahead is accepted');
SELECT is((SELECT claimed_at FROM docket.runs WHERE run_id = 'ck-1'), pg_temp.t(300), 'and used');
SELECT is((SELECT count(*)::int FROM docket.claim_tasks('ck', 1, now => pg_temp.t(-300))), 0,
  'claim_tasks: a now exactly 5 minutes behind is accepted (the task is not due yet then)');
SELECT is((SELECT count(*)::int FROM docket.claim_tasks('ck', 1, now => pg_temp.t(300))), 1,
  'claim_tasks: 5 minutes ahead is accepted, and claims');
SELECT is(docket.retry_poisoned_run('tenantless', 'ck-p', pg_temp.t(-300)) ->> 'id', 'ck-p',
  'retry_poisoned_run: 5 minutes behind is accepted');

-- The reference moves with docket.fake_now.
SELECT pg_temp.at(86400);
SELECT is(pg_temp.sqlstate(format($$SELECT docket.release_claim('ck-1', %L, %L)$$,
                                  (SELECT claim_token FROM lease), pg_temp.t(300))),
  '22023', 'the bound is measured from docket.fake_now when it is set');
SELECT is(pg_temp.sqlstate(format($$SELECT docket.release_claim('ck-1', %L, %L)$$,
                                  (SELECT claim_token FROM lease), pg_temp.t(86400 - 299))),
  'no er', 'a now within it is accepted');

-- A superuser may widen it (a test or a migration that replays history).
SET LOCAL docket.max_clock_skew = '1h';
SELECT is(current_setting('docket.max_clock_skew'), '1h', 'a superuser sets docket.max_clock_skew');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.claim_due(now => %L, queue => 'none')$$,
                                  pg_temp.t(86400 + 3600))),
  'no er', 'an hour ahead is within a bound of 1h');
SELECT is(pg_temp.sqlstate(format($$SELECT * FROM docket.claim_due(now => %L, queue => 'none')$$,
                                  pg_temp.t(86400 + 3600.001))),
  '22023', 'and a millisecond more is not');
SET LOCAL docket.max_clock_skew = 0;
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.claim_due(queue => 'none')$$),
  'no er', 'with a bound of 0 the default now (docket.now()) is still accepted');
RESET docket.max_clock_skew;

-- Without fake_now the reference is the clock.
RESET docket.fake_now;
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.claim_due(now => clock_timestamp() + interval '1 hour', queue => 'none')$$),
  '22023', 'real clock: an hour ahead is refused');
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.claim_due(now => clock_timestamp() - interval '1 hour', queue => 'none')$$),
  '22023', 'real clock: an hour behind is refused');
SELECT is(pg_temp.sqlstate($$SELECT * FROM docket.claim_due(now => clock_timestamp(), queue => 'none')$$),
  'no er', 'real clock: the clock itself is accepted');

SELECT * FROM finish();
ROLLBACK;
