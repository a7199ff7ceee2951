
-------------------------------------------------------------------------------
-- The task layer: tables (see docs/tasks.md)
-- A task is a run of the run store: its graph_id is the task name, its graph_hash
-- is 'task'. The tables below only hold what a task adds: spawn options, step
-- results, events and waiters.
-------------------------------------------------------------------------------

-- What spawn_task fixed once; never updated except first_started_at/deadline_at.
-- No foreign key to docket.runs (a spawn writes the task, its run and its head
-- from the same values): deleting runs deletes their task rows (runs_deleted).
CREATE TABLE docket.tasks (
  run_id           text COLLATE "C" PRIMARY KEY,
  tenant_key       text NOT NULL,             -- '' for tenantless, else the tenant id
  queue            text NOT NULL,
  task_name        text NOT NULL,
  params           jsonb NOT NULL,
  headers          jsonb NOT NULL,
  max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
  -- A task spawned without a retry option stores no policy (NULL: the
  -- defaults) instead of the same 95-byte object in every row.
  retry            jsonb,
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
COMMENT ON COLUMN docket.tasks.retry IS
  'the retry policy (the defaults completed by the retry option); NULL: the defaults, {"kind": "exponential", "base_ms": 1000, "factor": 2, "max_ms": 300000, "jitter": 0}';

-- A stored step keeps the number of its step_completed event (seq) beside its
-- completed_at, instead of a row in docket.run_events (rows stored by a wait,
-- and before 0.3.0, have none: their events, if any, are in the log). No
-- foreign key: every writer holds the run's row lock, and deleting runs
-- deletes their steps (runs_deleted).
CREATE TABLE docket.task_steps (
  run_id       text COLLATE "C" NOT NULL,
  step_name    text NOT NULL,
  value        jsonb,
  completed_at timestamptz NOT NULL,
  seq          bigint,
  PRIMARY KEY (run_id, step_name)
) WITH (autovacuum_vacuum_scale_factor = 0.05,
        autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE docket.task_steps IS 'checkpointed step results; the first value of a step wins and replays on every attempt';
COMMENT ON COLUMN docket.task_steps.seq IS
  'the number of the step''s step_completed event in its run''s history, which the step row states instead of docket.run_events (NULL: none)';

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
  run_id     text COLLATE "C" NOT NULL REFERENCES docket.runs (run_id) ON DELETE CASCADE,
  step_name  text NOT NULL,
  kind       text NOT NULL CHECK (kind IN ('event', 'child')),
  tenant_key text NOT NULL,
  target     text COLLATE "C" NOT NULL,       -- event name or child run id
  timeout_at timestamptz,
  PRIMARY KEY (run_id, step_name)
);
-- One index per kind of wait, their predicates disjoint, so a lookup of one
-- kind can use only its own index, whatever the statistics say: an emitted
-- event's waiters by (tenant, event name); a finishing task's parents by the
-- child's run id alone (a batch of finished tasks is one index scan). (One
-- index on (kind, tenant_key, target) let a plan made while the table was
-- empty look parents up by kind alone, reading every child wait per call.)
CREATE INDEX task_waits_event ON docket.task_waits (tenant_key, target) WHERE kind = 'event';
CREATE INDEX task_waits_child ON docket.task_waits (target) WHERE kind = 'child';
COMMENT ON TABLE docket.task_waits IS 'tasks suspended on an event or a child task';

REVOKE ALL ON docket.tasks, docket.task_steps, docket.task_events, docket.task_waits FROM PUBLIC;
