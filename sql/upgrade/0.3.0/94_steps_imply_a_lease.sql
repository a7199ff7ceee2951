-- claim_tasks reads a task's steps only when its row has been leased before
-- (claim_started_at is set: every lease sets it and nothing clears it, and a
-- task stores steps only under a lease), so a batch of first leases reads no
-- steps (src/pg/task_claim.cpp). 0.2.0 had no claim_started_at, and
-- 10_run_store.sql sets it only for the runs claimed during the update. A
-- 0.2.0 task that stored steps and is not claimed now (sleeping, waiting, its
-- claim released or expired) gets the time of its first step, when a lease
-- held it. No index reads the column of an unclaimed row.
UPDATE docket.runs r SET claim_started_at = s.first_at
  FROM (SELECT run_id, min(completed_at) AS first_at FROM docket.task_steps GROUP BY run_id) s
 WHERE r.run_id = s.run_id AND r.claim_started_at IS NULL;
