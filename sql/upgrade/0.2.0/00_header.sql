-- docket 0.1.0 -> 0.2.0: the task layer.
-- A task is a run of the run store: its graph_id is the task name, its graph_hash
-- is 'task'. Every transition of a task goes through run-store primitives
-- (insert_run, claim_due, refresh_claim, commit, mutate_run, abandon_claim); the
-- tables below only hold what a task adds: spawn options, step results, events
-- and waiters. See docs/tasks.md.
--
-- Lock order (deadlock freedom): an event slot (docket.task_events row) before
-- any run; a child run before its parent; several runs in run_id order.

\echo Use "ALTER EXTENSION docket UPDATE TO '0.2.0'" to load this file. \quit

