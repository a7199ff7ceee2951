-------------------------------------------------------------------------------
-- Run ids compare bytewise (COLLATE "C") in every table (docket.run_events'
-- already did): a key descent compares by memcmp rather than the database
-- collation's strcoll, and the primary keys order run ids as the claim scans
-- and the batch calls' lock order do. Every run id column changes together,
-- so a join of two of them keeps its indexes. Changing the collation
-- rebuilds the indexes on these columns (not the tables).
-------------------------------------------------------------------------------
ALTER TABLE docket.task_waits ALTER COLUMN run_id TYPE text COLLATE "C",
                              ALTER COLUMN target TYPE text COLLATE "C";
ALTER TABLE docket.runs ALTER COLUMN run_id TYPE text COLLATE "C";
ALTER TABLE docket.run_heads ALTER COLUMN run_id TYPE text COLLATE "C";
ALTER TABLE docket.tasks ALTER COLUMN run_id TYPE text COLLATE "C";
ALTER TABLE docket.task_steps ALTER COLUMN run_id TYPE text COLLATE "C";
ALTER TABLE docket.schedules ALTER COLUMN last_run_id TYPE text COLLATE "C";
