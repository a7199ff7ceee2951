-- docket 0.3.0: the install script of the current version. CREATE EXTENSION
-- docket runs it alone; databases of earlier versions reach the same schema by
-- ALTER EXTENSION docket UPDATE (docket--0.1.0.sql, then the upgrade scripts),
-- and test/suites/upgrade.sh checks that both give the same catalog.
--
-- This script is assembled by the Makefile from sql/install/0.3.0/*.sql in
-- name order (one file per concern), followed by the 0.3.0 upgrade's roles
-- piece (sql/upgrade/0.3.0/99_roles.sql), which both scripts share: the roles,
-- every grant and which functions are SECURITY DEFINER are decided there, once.
-- Edit the pieces, never the assembled file. Every object is created here once,
-- in its final form; a change to the schema of 0.3.0 goes into a piece here
-- and into the upgrade pieces (sql/upgrade/0.3.0/), which migrate what exists.
--
-- Every object lives in schema docket; every function pins its search_path
-- (but docket.now(), docket._run_document and docket._run_row_valid, which
-- name no object); nothing is granted to PUBLIC. Lock order (deadlock
-- freedom): an event slot (docket.task_events row) before any run; a child
-- run before its parent; several runs in run_id order (docs/tasks.md, "Lock
-- order").

\echo Use "CREATE EXTENSION docket" to load this file. \quit

-- The schema must be docket's own: created now by CREATE EXTENSION, or created
-- empty beforehand by the role that installs docket. A schema that another
-- role owns, or that already holds objects or default privileges, could carry
-- that role's functions, types or grants into docket: refused (42501).
DO $$
DECLARE
  owner oid;
BEGIN
  SELECT n.nspowner INTO owner FROM pg_catalog.pg_namespace n WHERE n.nspname = 'docket';
  IF owner IS DISTINCT FROM (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
    RAISE EXCEPTION 'schema docket is owned by role %, not by %, who installs docket',
      owner::regrole, current_user USING ERRCODE = '42501';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.relnamespace = 'docket'::regnamespace)
     OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'docket'::regnamespace)
     OR EXISTS (SELECT 1 FROM pg_catalog.pg_type t WHERE t.typnamespace = 'docket'::regnamespace)
     OR EXISTS (SELECT 1 FROM pg_catalog.pg_default_acl d WHERE d.defaclnamespace = 'docket'::regnamespace) THEN
    RAISE EXCEPTION 'schema docket already holds objects or default privileges: docket installs only into an empty schema of its own'
      USING ERRCODE = '42501';
  END IF;
END $$;
