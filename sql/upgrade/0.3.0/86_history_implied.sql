
-------------------------------------------------------------------------------
-- Task history: the events a run row already states (issue 9 item 1's cost)
-------------------------------------------------------------------------------
-- Two events of a task are facts its run row keeps anyway, so they are read
-- from the row instead of being written to docket.run_events as a tuple and a
-- key of their own (src/pg/events.cpp merges them into the pages by number):
-- - spawned: number 1 of every spawned task, recorded at the run's
--   started_at, which nothing changes (the spawn sets the run's event_seq to
--   1 and logs nothing; a run the run store inserts starts at 0, and its first
--   append_events is logged as number 1);
-- - completed: the task layer's completion sets completed_seq and
--   completed_at in its own UPDATE. A second completion of the same run (only
--   after a mutate_run revived it) finds them taken and writes its event to
--   the log as before.
-- - step_completed: each step row the task layer stores keeps its event's
--   number in task_steps.seq, beside its completed_at (rows stored by a wait,
--   and before 0.3.0, have none: their events, if any, are in the log).
-- A no-op task's history thus costs one log row (claimed) instead of three,
-- a spawn none, and a stored step none. Neither runs column is an index key:
-- the completion stays HOT.
ALTER TABLE docket.runs ADD COLUMN completed_seq bigint, ADD COLUMN completed_at timestamptz;
ALTER TABLE docket.task_steps ADD COLUMN seq bigint;
COMMENT ON COLUMN docket.task_steps.seq IS
  'the number of the step''s step_completed event in its run''s history, which the step row states instead of docket.run_events (NULL: none)';
COMMENT ON COLUMN docket.runs.completed_seq IS
  'the number of the task''s completed event, which the row states instead of docket.run_events (NULL: none)';
COMMENT ON COLUMN docket.runs.completed_at IS
  'when the task layer completed the task: the completed event''s recorded_at (NULL: not completed)';
