-- Helpers shared by the task_steps, task_sleep, task_events and task_children
-- pgTAP files (included with \ir; not a test of its own).

-- t(s): s seconds after 2041-01-01 00:00:00 UTC.
CREATE FUNCTION pg_temp.t(s double precision) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS
  $$ SELECT '2041-01-01 00:00:00+00'::timestamptz + round(s * 1e6)::bigint * interval '1 microsecond' $$;
-- at(s): moves docket.now() to t(s).
CREATE FUNCTION pg_temp.at(s double precision) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('docket.fake_now', docket._iso(pg_temp.t(s)), true);
END $$;

-- Every task gets its own queue (named like the task) so a claim takes exactly it.
CREATE TEMP TABLE ids (name text PRIMARY KEY, run_id text NOT NULL);
CREATE TEMP TABLE toks (name text PRIMARY KEY, token uuid);
CREATE FUNCTION pg_temp.spawn(n text, scope docket.scope DEFAULT 'tenantless',
                              opts jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
DECLARE id text;
BEGIN
  SELECT s.run_id INTO STRICT id FROM docket.spawn_task('job_' || n, '{}', n, scope, opts) s;
  INSERT INTO ids VALUES (n, id);
END $$;
CREATE FUNCTION pg_temp.id(n text) RETURNS text LANGUAGE sql STABLE AS
  $$ SELECT run_id FROM ids WHERE name = n $$;
CREATE FUNCTION pg_temp.tok(n text) RETURNS uuid LANGUAGE sql STABLE AS
  $$ SELECT token FROM toks WHERE name = n $$;
-- keep(n, k): remembers task n's current token under k.
CREATE FUNCTION pg_temp.keep(n text, k text) RETURNS void LANGUAGE sql AS
  $$ INSERT INTO toks VALUES (k, pg_temp.tok(n)) $$;
-- claim(n, s): at t(s), claims task n from its queue (30 s lease); keeps its token;
-- returns {attempt, wake_reason, checkpoint_seq}, or NULL when nothing was claimed.
CREATE FUNCTION pg_temp.claim(n text, s double precision) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE c record;
BEGIN
  PERFORM pg_temp.at(s);
  SELECT * INTO c FROM docket.claim_tasks(n, 1, now => pg_temp.t(s)) x;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF c.run_id <> pg_temp.id(n) THEN
    RAISE EXCEPTION 'claimed % instead of %', c.run_id, n;
  END IF;
  INSERT INTO toks VALUES (n, c.claim_token)
  ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token;
  RETURN jsonb_build_object('attempt', c.attempt, 'wake_reason', c.wake_reason,
                            'checkpoint_seq', c.checkpoint_seq);
END $$;
CREATE FUNCTION pg_temp.r(n text) RETURNS docket.runs LANGUAGE sql AS
  $$ SELECT * FROM docket.runs WHERE run_id = pg_temp.id(n) $$;
CREATE FUNCTION pg_temp.steps(n text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('step', s.step_name, 'value', s.value,
                                               'at', s.completed_at) ORDER BY s.step_name), '[]')
    FROM docket.task_steps s WHERE s.run_id = pg_temp.id(n) $$;
-- Everything the task layer stores, to prove that a rejected call changed nothing.
CREATE FUNCTION pg_temp.snap() RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'runs', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.run_id) FROM docket.runs x),
    'tasks', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.run_id) FROM docket.tasks x),
    'steps', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.run_id, x.step_name) FROM docket.task_steps x),
    'waits', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.run_id, x.step_name) FROM docket.task_waits x),
    'events', (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.tenant_key, x.event_name) FROM docket.task_events x)) $$;
CREATE TEMP TABLE snaps (name text PRIMARY KEY, s jsonb);
CREATE FUNCTION pg_temp.stale(n text) RETURNS text LANGUAGE sql AS
  $$ SELECT format('stale_fence: task %s is not held by this claim token', pg_temp.id(n)) $$;
CREATE FUNCTION pg_temp.cancelled(n text) RETURNS text LANGUAGE sql AS
  $$ SELECT format('cancelled: task %s was cancelled', pg_temp.id(n)) $$;
