-------------------------------------------------------------------------------
-- Waking workers without NOTIFY: docket.await_due and docket.await_tasks
-- (src/pg/wake.cpp, src/pg/task_claim.cpp)
-------------------------------------------------------------------------------
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
