
-------------------------------------------------------------------------------
-- The task path in C++ (src/core/task.*, src/pg/task_*.cpp)
-------------------------------------------------------------------------------
-- Every per-task call is a C entry point: a fenced statement whose WHERE
-- clause holds the core's TaskMatch facts (run, token, task, deadline), and
-- on a miss the core's fence judges the locked row in the documented order
-- (not_found DK003, cancelled DK010, stale_fence DK001, overdue DK010).
--
-- The batch calls (and the single calls, which share their statements) lock
-- every run they hold explicitly in run_id order, in their first statement:
-- run_id = ANY(ARRAY(SELECT ... ORDER BY run_id FOR NO KEY UPDATE)), whatever
-- plan reads the rows (docs/tasks.md, "Lock order"; test/pgtap/task_explain.sql,
-- test/isolation/specs/task_batch_lock_order.spec).
--
-- A stored step is progress, as a commit is: the step's fenced claim refresh
-- also sets claim_attempts to 0 (same statement, no extra write), so a task
-- that keeps storing new steps is not poisoned by the worker crashes between
-- them. A replayed (kept) step or a heartbeat is not progress.
--
-- Eager deadlines: a task with a max_duration_ms deadline never sleeps, waits
-- or backs off past it. Its wake time is capped at the deadline, and a wait
-- without one (an event wait without a timeout, a child wait) is due at the
-- deadline, so the claim path meets the task there like any due task and
-- cancels it (src/core/task.hpp, bound_by_deadline).

CREATE FUNCTION docket.claim_tasks(queue text, claim_limit int DEFAULT 1,
                                   lease_ms bigint DEFAULT 30000,
                                   max_claim_attempts int DEFAULT 10,
                                   now timestamptz DEFAULT docket.now())
  RETURNS TABLE (run_id text, claim_token uuid, task_name text, params jsonb, headers jsonb,
                 attempt int, checkpoint_seq bigint, wake_reason text, steps jsonb)
  LANGUAGE c VOLATILE ROWS 10
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_claim_tasks';
COMMENT ON FUNCTION docket.claim_tasks(text, int, bigint, int, timestamptz) IS
  'Claims up to claim_limit due tasks of a queue (run-store claim_due). lease_ms is the lease each claim is granted and the TTL this call applies to others'' claims: a claim is taken over only once both its holder''s lease and lease_ms have passed since its last refresh. One row per leased task, in run_id order, with what a runner needs, why it woke (new, retry, sleep, event, timeout, child, recovered) and its completed steps (steps: step name -> value, {} when none). Poisoned and deadline-cancelled tasks are recorded, not returned; plain runs in the queue are handed back. A now further than docket.max_clock_skew (default 5min) from docket.now() raises 22023.';

CREATE FUNCTION docket.await_due(queue text, timeout_ms int DEFAULT 1000)
  RETURNS boolean
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_await_due';
COMMENT ON FUNCTION docket.await_due(text, int) IS
  'Waits for work of a queue: true at once when a run of the queue is ready to claim (for a caller bound to tenants: one of theirs), else waits up to timeout_ms (0 to 3600000) until a transaction that makes one ready commits and returns true, or returns false at the timeout (a wake-up whose work another claimer took first does not end the wait). The waiting backend shows wait_event_type Extension; committing producers set its latch without NOTIFY''s lock (docs/tasks.md, "Waking workers"). Holds a snapshot while it waits, as any statement does: keep timeout_ms short on a busy database. NULL arguments, a bad queue name or a timeout out of range raise 22023. The wait holds the statement''s snapshot, which holds back vacuum in the whole database: keep timeout_ms short and call again (docket''s pool waits at most 100 ms per call).';

CREATE FUNCTION docket.await_tasks(queue text, claim_limit int DEFAULT 1,
                                   lease_ms bigint DEFAULT 30000,
                                   max_claim_attempts int DEFAULT 10,
                                   timeout_ms int DEFAULT 1000)
  RETURNS TABLE (run_id text, claim_token uuid, task_name text, params jsonb, headers jsonb,
                 attempt int, checkpoint_seq bigint, wake_reason text, steps jsonb)
  LANGUAGE c VOLATILE ROWS 10
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_await_tasks';
COMMENT ON FUNCTION docket.await_tasks(text, int, bigint, int, int) IS
  'claim_tasks after a wait: unless a task of the queue is ready to claim, first waits up to timeout_ms (0 to 3600000) for a transaction that makes one ready to commit (as await_due), then claims up to claim_limit as claim_tasks does, at docket.now() when it claims, woken or timed out (the claim at the timeout is a poll: it takes the timers that fell due and the expired claims, which no commit announces). A worker''s waiting connection claims a task within one round trip of its producer''s commit, without NOTIFY. Same columns, arguments and errors as claim_tasks; a timeout out of range raises 22023. The wait holds the statement''s snapshot, which holds back vacuum in the whole database: keep timeout_ms short and call again (docket''s pool waits at most 100 ms per call).';

CREATE FUNCTION docket.complete_task(run_id text, claim_token uuid,
                                     result jsonb DEFAULT NULL)
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_complete_task';
COMMENT ON FUNCTION docket.complete_task(text, uuid, jsonb) IS
  'Finishes a task with its result under its claim token (DK003 unknown, DK010 cancelled or past max_duration_ms, DK001 stale) and wakes tasks awaiting it. A result or step value over docket.max_result_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.complete_tasks(run_ids text[], claim_tokens uuid[], results jsonb[])
  RETURNS TABLE (run_id text, outcome text)
  LANGUAGE c VOLATILE ROWS 10
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_complete_tasks';
COMMENT ON FUNCTION docket.complete_tasks(text[], uuid[], jsonb[]) IS
  'Finishes a batch of tasks, each fenced on its own token: one row per element, in input order, outcome completed, stale (the token no longer holds the claim), cancelled (cancelled, or past max_duration_ms: cancelled by this call) or not_found. A NULL result is JSON null. Rows are locked in run_id order. NULL or unequal arrays, NULL run ids or tokens and duplicate run ids raise 22023. A result or step value over docket.max_result_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.complete_step(run_id text, claim_token uuid, step_name text,
                                     value jsonb)
  RETURNS jsonb
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_complete_step';
COMMENT ON FUNCTION docket.complete_step(text, uuid, text, jsonb) IS
  'Stores a step result and refreshes the claim, under the claim token, in one statement. Completing a step twice keeps the first value; returns the stored value. A newly stored step is progress: it resets the task''s claim-attempt (poison) counter; a replayed one does not. A result or step value over docket.max_result_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.complete_steps(run_ids text[], claim_tokens uuid[], step_names text[],
                                      step_values jsonb[])
  RETURNS TABLE (run_id text, step_name text, outcome text, value jsonb)
  LANGUAGE c VOLATILE ROWS 10
  SET search_path = pg_catalog, pg_temp
  SET jit = off
  AS 'MODULE_PATHNAME', 'docket_complete_steps';
COMMENT ON FUNCTION docket.complete_steps(text[], uuid[], text[], jsonb[]) IS
  'Stores a batch of step results, each fenced on its own token: one row per element, in input order, outcome stored, kept (already completed: value is the first stored value), stale, cancelled or not_found. A stored or kept step refreshes its task''s claim; a stored one also resets its task''s claim-attempt (poison) counter. Rows are locked in run_id order. NULL or unequal arrays, NULL elements and a duplicate (run_id, step_name) raise 22023. A result or step value over docket.max_result_bytes (default 1MB) raises 54000.';

CREATE FUNCTION docket.step_states(run_id text, claim_token uuid)
  RETURNS TABLE (step_name text, value jsonb)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_step_states';
COMMENT ON FUNCTION docket.step_states(text, uuid) IS
  'The steps this task has completed, under its claim token (DK001 stale, DK010 cancelled).';

CREATE FUNCTION docket.heartbeat(run_id text, claim_token uuid, extend_ms bigint DEFAULT NULL)
  RETURNS void
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_heartbeat';
COMMENT ON FUNCTION docket.heartbeat(text, uuid, bigint) IS
  'Extends a running task''s claim (DK001 stale, DK010 cancelled or overdue). With extend_ms (0 .. ten years) the claim does not expire before now + extend_ms, whatever TTL a claimer passes; without it, for another lease.';

CREATE FUNCTION docket.fail_task(run_id text, claim_token uuid, error jsonb,
                                 retry boolean DEFAULT true)
  RETURNS TABLE (disposition text, retry_at timestamptz)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_fail_task';
COMMENT ON FUNCTION docket.fail_task(text, uuid, jsonb, boolean) IS
  'Records a failed attempt under the claim token; the task''s retry policy and attempt budget decide: retry_scheduled (with retry_at), failed (also at once with retry => false), or cancelled (past max_duration_ms). An error over docket.max_error_bytes (default 64kB) raises 54000.';

CREATE FUNCTION docket.defer_task(run_id text, claim_token uuid,
                                  max_defers int DEFAULT 20,
                                  base_ms int DEFAULT 1000, cap_ms int DEFAULT 60000)
  RETURNS text
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_defer_task';
COMMENT ON FUNCTION docket.defer_task(text, uuid, int, int, int) IS
  'Hands a claimed task back without using an attempt (for a worker that does not know its task name): run-store abandon_claim with a jittered backoff of base_ms * 2^defers capped at cap_ms; poisoned after max_defers. Returns rescheduled, poisoned or stale.';

CREATE FUNCTION docket.sleep_until(run_id text, claim_token uuid, step_name text,
                                   wake_at timestamptz)
  RETURNS TABLE (status text, resume_at timestamptz)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_sleep_until';
COMMENT ON FUNCTION docket.sleep_until(text, uuid, text, timestamptz) IS
  'Durable sleep: records the wake time as a step (a replay keeps the first one) and releases the claim until then (status suspended), or returns elapsed when the time has come.';

CREATE FUNCTION docket.await_event(run_id text, claim_token uuid, step_name text,
                                   event_name text, timeout_ms bigint DEFAULT NULL)
  RETURNS TABLE (status text, payload jsonb)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_await_event';
COMMENT ON FUNCTION docket.await_event(text, uuid, text, text, bigint) IS
  'Waits for an event in the task''s scope: received (with the payload) at once if it was emitted, timeout once timeout_ms has passed, else suspended (claim released until the event or the timeout). The outcome is stored as the step''s result, so a replay sees the same outcome.';

CREATE FUNCTION docket.await_task(run_id text, claim_token uuid, step_name text,
                                  child_run_id text)
  RETURNS TABLE (status text, outcome jsonb)
  LANGUAGE c VOLATILE
  SET search_path = pg_catalog, pg_temp
  AS 'MODULE_PATHNAME', 'docket_await_task';
COMMENT ON FUNCTION docket.await_task(text, uuid, text, text) IS
  'Joins a child task: its outcome {state, result, error} once it has finished (stored as the step''s result), else suspended (claim released) until it finishes. No polling, no held worker slot.';
