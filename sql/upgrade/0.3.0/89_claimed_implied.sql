
-------------------------------------------------------------------------------
-- Task history: the latest claimed event stated by the run row
-------------------------------------------------------------------------------
-- claim_tasks logged a claimed event per lease: a tuple and a key of
-- docket.run_events on every claim, the one log row a no-op task still
-- wrote. The lease's own UPDATE now states it in the row (claimed_seq,
-- claimed_attempt, at claim_started_at, which only a lease sets), and
-- src/pg/events.cpp merges it into the pages by number. The task's next
-- lease logs it before stating its own (a claim_due lease clears the columns
-- after logging it). Rows claimed before this version have logged theirs:
-- the columns start NULL.
ALTER TABLE docket.runs ADD COLUMN claimed_seq bigint, ADD COLUMN claimed_attempt integer;
COMMENT ON COLUMN docket.runs.claimed_seq IS
  'the number of the task''s latest claimed event, which the row states instead of docket.run_events until the next lease logs it (NULL: none)';
COMMENT ON COLUMN docket.runs.claimed_attempt IS
  'the attempt of the latest claimed event (claimed_seq), its payload''s "attempt"';
