
-------------------------------------------------------------------------------
-- Per-task leases and eager deadlines (issue 10 items 1 and 2; docs/tasks.md
-- "Leases" and "Deadlines")
-------------------------------------------------------------------------------
-- The lease a claim was granted: claim_tasks stores its lease_ms here (capped
-- at ten years), claim_due stores NULL. A claim with a lease is expired only
-- once now - claimed_at exceeds both the claimer's TTL and this lease, so a
-- claimer passing a shorter TTL cannot take a task over before its holder's
-- lease has passed; a claim without one expires by the claimer's TTL alone
-- (seed 000's claim_due, unchanged). heartbeat(extend_ms) moves claimed_at so
-- that the claim lives until now + extend_ms at least. The column is checked
-- on the rows of the runs_claimed range the expired class already reads (no
-- index holds it: a refresh stays a HOT update), and written by the claim's
-- own UPDATE (no extra statement).
ALTER TABLE docket.runs ADD COLUMN lease_ms bigint;

-- Eager deadlines need no schema: a task with a max_duration_ms deadline never
-- sleeps, waits or backs off past it. Its wake time is capped at the deadline,
-- and a wait without one (an event wait without a timeout, a child wait) is due
-- at the deadline, so the claim path meets the task there like any due task
-- and cancels it (src/core/task.hpp, bound_by_deadline).

COMMENT ON FUNCTION docket.heartbeat(text, uuid, bigint) IS
  'Extends a running task''s claim (DK001 stale, DK010 cancelled or overdue). With extend_ms (0 .. ten years) the claim does not expire before now + extend_ms, whatever TTL a claimer passes; without it, for another lease.';
COMMENT ON FUNCTION docket.claim_tasks(text, int, bigint, int, timestamptz) IS
  'Claims up to claim_limit due tasks of a queue (run-store claim_due). lease_ms is the lease each claim is granted and the TTL this call applies to others'' claims: a claim is taken over only once both its holder''s lease and lease_ms have passed since its last refresh. One row per leased task, in run_id order, with what a runner needs, why it woke (new, retry, sleep, event, timeout, child, recovered) and its completed steps (steps: step name -> value, {} when none). Poisoned and deadline-cancelled tasks are recorded, not returned; plain runs in the queue are handed back.';
