-------------------------------------------------------------------------------
-- Tables
-------------------------------------------------------------------------------

-- What spawn_task fixed once; never updated except first_started_at/deadline_at.
CREATE TABLE docket.tasks (
  -- deferred: spawn_task claims the idempotency key before it inserts the run
  run_id           text PRIMARY KEY REFERENCES docket.runs (run_id) ON DELETE CASCADE
                   DEFERRABLE INITIALLY DEFERRED,
  tenant_key       text NOT NULL,             -- '' for tenantless, else the tenant id
  queue            text NOT NULL,
  task_name        text NOT NULL,
  params           jsonb NOT NULL,
  headers          jsonb NOT NULL,
  max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
  retry            jsonb NOT NULL,
  idempotency_key  text,
  cancel_at        timestamptz,               -- cancel_after_ms: not started by then
  max_duration_ms  bigint,
  first_started_at timestamptz,               -- recorded at first claim when a deadline applies
  deadline_at      timestamptz,               -- first_started_at + max_duration_ms
  created_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX tasks_idempotency ON docket.tasks (tenant_key, queue, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
COMMENT ON TABLE docket.tasks IS 'spawn-time facts of a task (a run whose graph_hash is ''task'')';

CREATE TABLE docket.task_steps (
  run_id       text NOT NULL REFERENCES docket.runs (run_id) ON DELETE CASCADE,
  step_name    text NOT NULL,
  value        jsonb,
  completed_at timestamptz NOT NULL,
  PRIMARY KEY (run_id, step_name)
);
COMMENT ON TABLE docket.task_steps IS 'checkpointed step results; the first value of a step wins and replays on every attempt';

-- One row per (scope, event name): a slot that await_event and emit_event both lock
-- first, so an emit racing an await is never lost. emitted_at NULL = not emitted yet.
CREATE TABLE docket.task_events (
  tenant_key  text NOT NULL,
  event_name  text NOT NULL,
  payload     jsonb,
  emitted_at  timestamptz,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_key, event_name)
);
CREATE INDEX task_events_emitted ON docket.task_events (emitted_at);
COMMENT ON TABLE docket.task_events IS 'emitted events (first emit wins) and the slots waiters lock';

CREATE TABLE docket.task_waits (
  run_id     text NOT NULL REFERENCES docket.runs (run_id) ON DELETE CASCADE,
  step_name  text NOT NULL,
  kind       text NOT NULL CHECK (kind IN ('event', 'child')),
  tenant_key text NOT NULL,
  target     text NOT NULL,                   -- event name or child run id
  timeout_at timestamptz,
  PRIMARY KEY (run_id, step_name)
);
CREATE INDEX task_waits_target ON docket.task_waits (kind, tenant_key, target);
COMMENT ON TABLE docket.task_waits IS 'tasks suspended on an event or a child task';

-- Retention: finished runs by age.
CREATE INDEX runs_finished ON docket.runs (updated_at)
  WHERE status IN ('completed', 'failed', 'cancelled');

REVOKE ALL ON docket.tasks, docket.task_steps, docket.task_events, docket.task_waits FROM PUBLIC;

-- A claim batch is small; tell the planner so joins on it use the indexes.
ALTER FUNCTION docket.claim_due(timestamptz, int, bigint, int, text, text) ROWS 10;

