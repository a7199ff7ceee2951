
-------------------------------------------------------------------------------
-- Progress resets the claim-attempt (poison) counter (src/pg/task_steps.cpp)
-------------------------------------------------------------------------------
-- A stored step is progress, as a commit is: the step's fenced claim refresh
-- also sets claim_attempts to 0 (same statement, no extra write), so a task
-- that keeps storing new steps is not poisoned by the worker crashes between
-- them. A replayed (kept) step or a heartbeat is not progress. claim_tasks
-- still reports such a task as recovered when its claim had expired.
COMMENT ON FUNCTION docket.complete_step(text, uuid, text, jsonb) IS
  'Stores a step result and refreshes the claim, under the claim token, in one statement. Completing a step twice keeps the first value; returns the stored value. A newly stored step is progress: it resets the task''s claim-attempt (poison) counter; a replayed one does not.';
COMMENT ON FUNCTION docket.complete_steps(text[], uuid[], text[], jsonb[]) IS
  'Stores a batch of step results, each fenced on its own token: one row per element, in input order, outcome stored, kept (already completed: value is the first stored value), stale, cancelled or not_found. A stored or kept step refreshes its task''s claim; a stored one also resets its task''s claim-attempt (poison) counter. Rows are locked in run_id order. NULL or unequal arrays, NULL elements and a duplicate (run_id, step_name) raise 22023.';
