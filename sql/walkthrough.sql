-- The psql-visible walkthrough of a run's life: the same session `make demo` narrates,
-- pinned by expected/walkthrough.out.
\i demo/run_life.sql
DROP EXTENSION docket CASCADE;
