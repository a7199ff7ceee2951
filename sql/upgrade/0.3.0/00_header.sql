-- docket 0.2.0 -> 0.3.0: the task path in C++, batched worker calls.
-- This script is assembled by the Makefile from sql/upgrade/0.3.0/*.sql in name
-- order (one file per concern); edit the pieces, never the assembled file.

\echo Use "ALTER EXTENSION docket UPDATE TO '0.3.0'" to load this file. \quit
