-- Per-task leases and eager deadlines (issue 10 items 1 and 2).
-- Leases: a claim made by claim_tasks keeps its lease_ms; no claimer passing a
-- shorter TTL (claim_tasks' lease_ms or claim_due's orphan_ttl_ms) takes it over
-- before that lease has passed since the claim's last refresh, and
-- heartbeat(extend_ms) keeps it until now + extend_ms. A claim without a lease
-- (claim_due's) still expires by the next claimer's TTL (seed 000).
-- Deadlines: a task past max_duration_ms or cancel_after_ms is cancelled by the
-- next claim of its queue even when it waits, sleeps, backs off or was never
-- claimed: its wake time is capped at the deadline. Times in 2041 (docket.fake_now).
BEGIN;
SELECT plan(74);
SET LOCAL timezone = 'UTC';

\ir lib/task_helpers.sql

-- claim_l(n, s, lease): claims task n's queue at t(s) with lease_ms = lease; keeps the
-- token; the wake_reason, or NULL when nothing was returned.
CREATE FUNCTION pg_temp.claim_l(n text, s double precision, lease bigint DEFAULT 30000)
  RETURNS text LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  PERFORM pg_temp.at(s);
  SELECT * INTO c FROM docket.claim_tasks(n, 1, lease, 10, pg_temp.t(s)) x;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  INSERT INTO toks VALUES (n, c.claim_token) ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token;
  RETURN coalesce(c.wake_reason, 'new');
END $$;
CREATE FUNCTION pg_temp.state(n text) RETURNS text LANGUAGE sql AS
  $$ SELECT docket.task_result('system', pg_temp.id(n)) ->> 'state' $$;
CREATE FUNCTION pg_temp.reason(n text) RETURNS text LANGUAGE sql AS
  $$ SELECT document ->> 'cancel_reason' FROM docket.runs WHERE run_id = pg_temp.id(n) $$;

-------------------------------------------------------------------------------
-- Leases
-------------------------------------------------------------------------------
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('long');
SELECT is(pg_temp.claim_l('long', 0, 600000), 'new', 'long: claimed with a 10 minute lease');
SELECT is((pg_temp.r('long')).lease_ms, 600000::bigint, 'the lease is stored with the claim');
SELECT is(pg_temp.claim_l('long', 10, 5000), NULL, 'a claimer with a 5 s lease does not take it after 10 s');
SELECT is((SELECT count(*)::int FROM docket.claim_due(pg_temp.t(10), 1, 5000, 10, NULL, 'long')), 0,
  'nor does claim_due with a 5 s orphan TTL');
SELECT is(pg_temp.claim_l('long', 599.9, 5000), NULL, 'nor just before the lease has passed');
SELECT is(pg_temp.claim_l('long', 600.1, 5000), 'recovered', 'once the lease has passed, the claim expires');
SELECT is((pg_temp.r('long')).lease_ms, 5000::bigint, 'the new claim carries its own lease');

-- A step's refresh renews the lease from its time.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('stepper');
SELECT is(pg_temp.claim_l('stepper', 0, 60000), 'new', 'stepper: claimed with a 60 s lease');
SELECT pg_temp.at(50);
SELECT docket.complete_step(pg_temp.id('stepper'), pg_temp.tok('stepper'), 's1', '1');
SELECT is(pg_temp.claim_l('stepper', 100, 1000), NULL, 'a step at 50 s keeps it past the first lease');
SELECT is(pg_temp.claim_l('stepper', 110.5, 1000), 'recovered', 'expired 60 s after the step');

-- heartbeat(extend_ms): the claim lives until now + extend_ms at least.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('hb');
SELECT is(pg_temp.claim_l('hb', 0, 10000), 'new', 'hb: claimed with a 10 s lease');
SELECT pg_temp.at(5);
SELECT lives_ok($$SELECT docket.heartbeat(pg_temp.id('hb'), pg_temp.tok('hb'), 3600000)$$,
  'hb: heartbeat extends it by an hour at 5 s');
SELECT is(pg_temp.claim_l('hb', 100, 10000), NULL, 'not taken over after the lease');
SELECT is(pg_temp.claim_l('hb', 3604.9, 1), NULL, 'nor by a 1 ms TTL before now + extend_ms');
SELECT is(pg_temp.claim_l('hb', 3605.1, 10000), 'recovered', 'expired once now + extend_ms has passed');

-- A shorter extension never shortens the lease.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('hs');
SELECT is(pg_temp.claim_l('hs', 0, 600000), 'new', 'hs: claimed with a 10 minute lease');
SELECT pg_temp.at(1);
SELECT docket.heartbeat(pg_temp.id('hs'), pg_temp.tok('hs'), 1000);
SELECT is(pg_temp.claim_l('hs', 100, 5000), NULL, 'a 1 s extension does not shorten the lease');

-- A plain heartbeat renews the lease from its time.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('hp');
SELECT is(pg_temp.claim_l('hp', 0, 10000), 'new', 'hp: claimed with a 10 s lease');
SELECT pg_temp.at(8);
SELECT docket.heartbeat(pg_temp.id('hp'), pg_temp.tok('hp'));
SELECT is(pg_temp.claim_l('hp', 17.9, 10000), NULL, 'a heartbeat at 8 s keeps it to 18 s');
SELECT is(pg_temp.claim_l('hp', 18.1, 10000), 'recovered', 'and no longer');

-- Runs claimed by claim_due have no lease: the next claimer's TTL decides (seed 000).
SELECT docket.save_graph('g-lease', 'h-lease', '{}');
SELECT docket.insert_run('tenantless', jsonb_build_object('id', 'plain-1', 'graph_id', 'g-lease',
  'graph_hash', 'h-lease', 'status', 'running', 'checkpoint_seq', 0, 'started_at', '2041-01-01T00:00:00Z'),
  'run_initialized', pg_temp.t(0), 'plain');
SELECT is((SELECT outcome || '/' || claim_attempt FROM docket.claim_due(pg_temp.t(0), 1, 600000, 10, NULL, 'plain')),
  'lease/1', 'plain: claimed by claim_due with a 10 minute TTL');
SELECT is((SELECT lease_ms FROM docket.runs WHERE run_id = 'plain-1'), NULL::bigint, 'claim_due grants no lease');
SELECT is((SELECT outcome || '/' || claim_attempt FROM docket.claim_due(pg_temp.t(5.1), 1, 5000, 10, NULL, 'plain')),
  'lease/2', 'plain: a claimer with a 5 s TTL takes it over after 5 s');
SELECT is((SELECT count(*)::int FROM docket.claim_due(pg_temp.t(9.9), 1, 5000, 10, NULL, 'plain')), 0,
  'plain: and the new claim too expires by TTL alone (not before 5 s)');

-------------------------------------------------------------------------------
-- Deadlines: waiting on an event without a timeout
-------------------------------------------------------------------------------
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('we', 'tenantless', '{"max_duration_ms": 60000}');
SELECT is(pg_temp.claim_l('we', 0), 'new', 'we: claimed (deadline at 60 s)');
SELECT pg_temp.at(1);
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('we'), pg_temp.tok('we'), 'wait', 'never')),
  'suspended', 'we: waits for an event that never comes, without a timeout');
SELECT is(pg_temp.state('we'), 'waiting', 'we: task_result says waiting');
SELECT is((pg_temp.r('we')).wake_at, pg_temp.t(60), 'we: due at its deadline');
SELECT is(pg_temp.claim_l('we', 59.9), NULL, 'we: not claimed before the deadline');
SELECT is(pg_temp.claim_l('we', 60.5), NULL, 'we: the claim after the deadline returns nothing');
SELECT is(pg_temp.state('we'), 'cancelled', 'we: it cancelled the task');
SELECT is(pg_temp.reason('we'), 'max_duration_ms', 'we: reason max_duration_ms');
SELECT is((SELECT count(*)::int FROM docket.task_waits WHERE run_id = pg_temp.id('we')), 0,
  'we: its waiter row is gone');
SELECT is(docket.emit_event('never', '1', 'tenantless'), true, 'a late emit finds no waiter');
SELECT is(pg_temp.state('we'), 'cancelled', 'we: still cancelled');

-- An event that comes before the deadline wakes the task as usual.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('wk', 'tenantless', '{"max_duration_ms": 60000}');
SELECT is(pg_temp.claim_l('wk', 0), 'new', 'wk: claimed');
SELECT pg_temp.at(1);
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('wk'), pg_temp.tok('wk'), 'wait', 'go')),
  'suspended', 'wk: waits for go');
SELECT pg_temp.at(10);
SELECT is(docket.emit_event('go', '"now"', 'tenantless'), true, 'go is emitted at 10 s');
SELECT is(pg_temp.claim_l('wk', 10), 'event', 'wk: woken by the event');
SELECT is((SELECT status FROM docket.await_event(pg_temp.id('wk'), pg_temp.tok('wk'), 'wait', 'go')),
  'received', 'wk: receives it');

-- An event wait with a timeout after the deadline: due at the deadline.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('wt', 'tenantless', '{"max_duration_ms": 60000}');
SELECT is(pg_temp.claim_l('wt', 0), 'new', 'wt: claimed');
SELECT docket.await_event(pg_temp.id('wt'), pg_temp.tok('wt'), 'wait', 'never-wt', 3600000);
SELECT is((pg_temp.r('wt')).wake_at, pg_temp.t(60), 'wt: a one hour timeout is due at the deadline');
SELECT is(pg_temp.claim_l('wt', 61), NULL, 'wt: claimed after the deadline: nothing returned');
SELECT is(pg_temp.state('wt'), 'cancelled', 'wt: cancelled');

-- Without a deadline a wait is unchanged: waiting, no wake time.
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('wn');
SELECT is(pg_temp.claim_l('wn', 0), 'new', 'wn: claimed (no deadline)');
SELECT docket.await_event(pg_temp.id('wn'), pg_temp.tok('wn'), 'wait', 'never-wn');
SELECT is((pg_temp.r('wn')).status || '/' || coalesce((pg_temp.r('wn')).wake_at::text, 'none'), 'waiting/none',
  'wn: waits with no wake time');

-------------------------------------------------------------------------------
-- Deadlines: waiting on a child, sleeping, backing off, deferred
-------------------------------------------------------------------------------
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('wc', 'tenantless', '{"max_duration_ms": 60000}');
SELECT pg_temp.spawn('child');
SELECT is(pg_temp.claim_l('wc', 0), 'new', 'wc: claimed');
SELECT is((SELECT status FROM docket.await_task(pg_temp.id('wc'), pg_temp.tok('wc'), 'join', pg_temp.id('child'))),
  'suspended', 'wc: awaits its child');
SELECT is(pg_temp.state('wc'), 'waiting', 'wc: waiting');
SELECT is(pg_temp.claim_l('wc', 61), NULL, 'wc: claimed after the deadline: nothing returned');
SELECT is(pg_temp.state('wc'), 'cancelled', 'wc: cancelled');
SELECT is(pg_temp.claim_l('child', 62), 'new', 'the child runs');
SELECT lives_ok($$SELECT docket.complete_task(pg_temp.id('child'), pg_temp.tok('child'), '1')$$,
  'the child completes');
SELECT is(pg_temp.state('wc'), 'cancelled', 'wc: stays cancelled');

SELECT pg_temp.at(0);
SELECT pg_temp.spawn('sl', 'tenantless', '{"max_duration_ms": 60000}');
SELECT is(pg_temp.claim_l('sl', 0), 'new', 'sl: claimed');
SELECT is((SELECT resume_at FROM docket.sleep_until(pg_temp.id('sl'), pg_temp.tok('sl'), 'nap', pg_temp.t(3600))),
  pg_temp.t(3600), 'sl: sleeps for an hour (the step keeps its wake time)');
SELECT is(pg_temp.state('sl'), 'sleeping', 'sl: sleeping');
SELECT is((pg_temp.r('sl')).wake_at, pg_temp.t(60), 'sl: due at its deadline');
SELECT is(pg_temp.claim_l('sl', 61), NULL, 'sl: claimed after the deadline: nothing returned');
SELECT is(pg_temp.state('sl') || '/' || pg_temp.reason('sl'), 'cancelled/max_duration_ms', 'sl: cancelled');

SELECT pg_temp.at(0);
SELECT pg_temp.spawn('rt', 'tenantless',
  '{"max_duration_ms": 60000, "retry": {"kind": "fixed", "base_ms": 3600000}}');
SELECT is(pg_temp.claim_l('rt', 0), 'new', 'rt: claimed');
SELECT pg_temp.at(1);
SELECT is((SELECT disposition || ' ' || retry_at::text FROM docket.fail_task(pg_temp.id('rt'), pg_temp.tok('rt'), '"boom"')),
  'retry_scheduled ' || pg_temp.t(60)::text, 'rt: an hour''s backoff is cut to the deadline');
SELECT is(pg_temp.claim_l('rt', 61), NULL, 'rt: claimed after the deadline: nothing returned');
SELECT is(pg_temp.state('rt'), 'cancelled', 'rt: cancelled');

SELECT pg_temp.at(0);
SELECT pg_temp.spawn('df', 'tenantless', '{"max_duration_ms": 60000}');
SELECT is(pg_temp.claim_l('df', 0), 'new', 'df: claimed');
SELECT pg_temp.at(1);
SELECT is(docket.defer_task(pg_temp.id('df'), pg_temp.tok('df'), 20, 3600000, 3600000), 'rescheduled',
  'df: deferred for an hour');
SELECT is((pg_temp.r('df')).wake_at, pg_temp.t(60), 'df: due at its deadline');

-------------------------------------------------------------------------------
-- Deadlines: never claimed (cancel_after_ms)
-------------------------------------------------------------------------------
SELECT pg_temp.at(0);
SELECT pg_temp.spawn('nc', 'tenantless', '{"cancel_after_ms": 1000}');
SELECT pg_temp.spawn('nd', 'tenantless', '{"cancel_after_ms": 1000, "delay_ms": 10000}');
SELECT is(pg_temp.state('nc'), 'pending', 'nc: pending');
SELECT is(pg_temp.claim_l('nc', 2), NULL, 'nc: the first claim, after cancel_after_ms, returns nothing');
SELECT is(pg_temp.state('nc') || '/' || pg_temp.reason('nc'), 'cancelled/cancel_after_ms', 'nc: cancelled');
SELECT is(pg_temp.claim_l('nd', 5), NULL, 'nd: not due yet at 5 s');
SELECT is(pg_temp.state('nd'), 'sleeping', 'nd: still waiting for its delay');
SELECT is(pg_temp.claim_l('nd', 11.5), NULL, 'nd: claimed 1.5 s after it became due: nothing returned');
SELECT is(pg_temp.state('nd') || '/' || pg_temp.reason('nd'), 'cancelled/cancel_after_ms', 'nd: cancelled');

SELECT * FROM finish();
ROLLBACK;
