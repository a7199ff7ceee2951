-- docket's own vacuum of docket.runs (src/pg/vacuum.cpp): a claim that finds
-- the table's dead rows past its autovacuum threshold starts a background
-- worker that vacuums the table, counted as a manual vacuum (vacuum_count);
-- autovacuum_enabled = false on the table, docket.vacuum_naptime = 0 and a
-- table owner that may not log in each turn it off. The claim that starts
-- the worker says so at DEBUG1; the vacuum's end is awaited by polling the
-- statistics (at most 60 s). Each switch's test is followed by the same claim
-- with the switch back on.
CREATE EXTENSION docket;
SET docket.vacuum_naptime = '10ms';
SHOW docket.vacuum_naptime;
RESET docket.vacuum_naptime;
SHOW docket.vacuum_naptime;
SET docket.vacuum_naptime = '10ms';

-- n tasks spawned, claimed and completed: 2n dead row versions in docket.runs
-- (a fresh table: threshold 1000 + 0.02 * reltuples).
CREATE FUNCTION pg_temp.churn(n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE ids text[]; tokens uuid[]; results jsonb[];
BEGIN
  PERFORM docket.spawn_tasks('noop', array_fill('{}'::jsonb, ARRAY[n]), 'vac');
  LOOP
    SELECT array_agg(run_id), array_agg(claim_token), array_agg('{}'::jsonb)
      INTO ids, tokens, results FROM docket.claim_tasks('vac', claim_limit => 500, lease_ms => 60000);
    EXIT WHEN ids IS NULL;
    PERFORM docket.complete_tasks(ids, tokens, results);
  END LOOP;
END $$;
CREATE FUNCTION pg_temp.vacuums() RETURNS bigint LANGUAGE sql AS $$
  SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'docket.runs'::regclass $$;
-- Whether vacuum_count passes `seen` within `secs` seconds.
CREATE FUNCTION pg_temp.vacuumed_after(seen bigint, secs int) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE deadline timestamptz := clock_timestamp() + make_interval(secs => secs);
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    IF pg_temp.vacuums() > seen THEN RETURN true; END IF;
    IF clock_timestamp() > deadline THEN RETURN false; END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;
END $$;
CREATE TEMP TABLE seen (n bigint);

-- A claim's look at DEBUG1: the message says a worker was started.
CREATE FUNCTION pg_temp.claim_one() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM pg_sleep(0.05);  -- past the naptime since the churn's last look
  SET LOCAL client_min_messages = debug1;
  SELECT count(*) INTO n FROM docket.claim_tasks('vac', claim_limit => 1, lease_ms => 60000);
  RETURN n;
END $$;

-- Past the threshold: the next claim starts the worker.
SELECT pg_temp.churn(3000);
SELECT pg_stat_force_next_flush();  -- the churn's counts reach the statistics when idle
INSERT INTO seen SELECT pg_temp.vacuums();
SELECT pg_temp.claim_one() AS claimed;
SELECT pg_temp.vacuumed_after((SELECT n FROM seen), 60) AS docket_vacuumed;
SELECT n_dead_tup < 1000 AS dead_rows_gone FROM pg_stat_user_tables WHERE relid = 'docket.runs'::regclass;

-- Off for the table (autovacuum is off for it too): no worker.
ALTER TABLE docket.runs SET (autovacuum_enabled = false);
SELECT pg_temp.churn(3000);
SELECT pg_stat_force_next_flush();
UPDATE seen SET n = pg_temp.vacuums();
SELECT pg_temp.claim_one() AS claimed;
-- And on again: the same claim starts it.
ALTER TABLE docket.runs RESET (autovacuum_enabled);
SELECT pg_temp.claim_one() AS claimed;
SELECT pg_temp.vacuumed_after((SELECT n FROM seen), 60) AS docket_vacuumed;

-- docket.vacuum_naptime = 0: no look, no worker.
SELECT pg_temp.churn(3000);
SET docket.vacuum_naptime = 0;
SELECT pg_stat_force_next_flush();
UPDATE seen SET n = pg_temp.vacuums();
SELECT pg_temp.claim_one() AS claimed;
SET docket.vacuum_naptime = '10ms';
SELECT pg_temp.claim_one() AS claimed;
SELECT pg_temp.vacuumed_after((SELECT n FROM seen), 60) AS docket_vacuumed;

-- A table owner that may not log in: no worker (it could not connect), and
-- the look says why.
CREATE ROLE docket_vacuum_nobody;  -- NOLOGIN
SELECT pg_temp.churn(3000);
ALTER TABLE docket.runs OWNER TO docket_vacuum_nobody;
SELECT pg_stat_force_next_flush();
UPDATE seen SET n = pg_temp.vacuums();
SELECT pg_temp.claim_one() AS claimed;
ALTER TABLE docket.runs OWNER TO CURRENT_USER;
SELECT pg_temp.claim_one() AS claimed;
SELECT pg_temp.vacuumed_after((SELECT n FROM seen), 60) AS docket_vacuumed;

-- Nor one that may log in but not connect to this database.
CREATE ROLE docket_vacuum_login LOGIN;
SELECT pg_temp.churn(3000);
DO $$ BEGIN EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC', current_database()); END $$;
ALTER TABLE docket.runs OWNER TO docket_vacuum_login;
SELECT pg_stat_force_next_flush();
UPDATE seen SET n = pg_temp.vacuums();
SELECT pg_temp.claim_one() AS claimed;
DO $$ BEGIN EXECUTE format('GRANT CONNECT ON DATABASE %I TO docket_vacuum_login', current_database()); END $$;
SELECT pg_temp.claim_one() AS claimed;
SELECT pg_temp.vacuumed_after((SELECT n FROM seen), 60) AS docket_vacuumed;
ALTER TABLE docket.runs OWNER TO CURRENT_USER;
DO $$ BEGIN
  EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM docket_vacuum_login', current_database());
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO PUBLIC', current_database());
END $$;
DROP ROLE docket_vacuum_login;

-- Only a superuser sets it: a role that could make every claim look at the
-- statistics must not.
SET ROLE docket_vacuum_nobody;
SET docket.vacuum_naptime = '1ms';
RESET ROLE;
DROP ROLE docket_vacuum_nobody;

DROP EXTENSION docket CASCADE;
