-- bench/spawn setup: the baseline, a plain task table with a primary key and one
-- index, in the bench's own schema (never part of the extension).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS docket;
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TABLE bench.plain_tasks (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_name  text NOT NULL,
  params     jsonb NOT NULL,
  queue      text NOT NULL,
  status     text NOT NULL,
  due        timestamptz NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX plain_tasks_due ON bench.plain_tasks (queue, due);
