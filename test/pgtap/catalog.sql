-- The catalog rules of docket: every function pins its search_path (but the
-- clock, docket.now(), which names no object and is called on every claim,
-- docket._run_document, likewise, called once per document read, and
-- docket._run_row_valid, the CHECK of docket.runs, called per written row), has a
-- comment and is not executable by PUBLIC; the public API is SECURITY DEFINER
-- and executable only through the four docket roles, internal helpers by no
-- role; no table or sequence carries a privilege for anyone but its owner;
-- every object of the extension lives in schema docket; and a role without
-- grants gets nothing (test/pgtap/roles.sql checks each role's capabilities).
BEGIN;
SELECT plan(29);

SELECT cmp_ok((SELECT count(*)::int FROM pg_proc WHERE pronamespace = 'docket'::regnamespace),
              '>=', 15, 'schema docket has the run-store functions');

SELECT is_empty($$
  SELECT p.oid::regprocedure
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'docket'
     AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false)
     AND p.oid NOT IN ('docket.now()'::regprocedure,
                       'docket._run_document(jsonb, text, text, text, text, bigint, timestamptz)'::regprocedure,
                       'docket._run_row_valid(text, bigint, integer, integer, uuid, timestamptz, timestamptz, text)'::regprocedure)
$$, 'every docket function but the clock, the document composer and the row check sets search_path = pg_catalog, pg_temp');

SELECT is(
  (SELECT proconfig FROM pg_proc WHERE oid = 'docket.now()'::regprocedure), NULL,
  'docket.now() (a C function that names no object) runs without a search_path switch');
SELECT is(
  (SELECT proconfig FROM pg_proc
    WHERE oid = 'docket._run_document(jsonb, text, text, text, text, bigint, timestamptz)'::regprocedure),
  NULL, 'docket._run_document (a C function that names no object, called once per document read) neither');
SELECT is(
  (SELECT proconfig FROM pg_proc
    WHERE oid = 'docket._run_row_valid(text, bigint, integer, integer, uuid, timestamptz, timestamptz, text)'::regprocedure),
  NULL, 'docket._run_row_valid (a C function that names no object, the CHECK of every written run row) neither');

SELECT is_empty($$
  SELECT p.oid::regprocedure
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'docket' AND coalesce(obj_description(p.oid, 'pg_proc'), '') = ''
$$, 'every docket function has a comment');

-- A NULL proacl is the default ACL, which lets PUBLIC execute.
SELECT is_empty($$
  SELECT p.oid::regprocedure
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'docket'
     AND (p.proacl IS NULL
          OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
                      WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))
$$, 'no docket function is executable by PUBLIC');

-- Pure functions that read no table are granted without SECURITY DEFINER.
SELECT is_empty($$
  SELECT p.oid::regprocedure
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'docket'
     AND p.prosecdef IS DISTINCT FROM (
           EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee <> p.proowner)
           AND p.oid NOT IN ('docket.now()'::regprocedure,
                             'docket.cron_next(text, timestamptz)'::regprocedure,
                             'docket.task_resume(jsonb, jsonb)'::regprocedure,
                             'docket.task_cancel(jsonb, jsonb)'::regprocedure))
$$, 'exactly the granted functions are SECURITY DEFINER (but the clock and pure functions)');

-- A new function without a grant decision fails here: it is either internal
-- (named _..., executable by its owner only) or granted to a docket role.
SELECT is_empty($$
  SELECT p.oid::regprocedure, a.grantee::regrole
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace,
         aclexplode(p.proacl) a
   WHERE n.nspname = 'docket' AND a.grantee <> p.proowner
     AND (a.grantee = 0 OR a.grantee::regrole::text NOT IN
            ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator')
          OR p.proname LIKE '\_%')
$$, 'functions are executable by the docket roles only, internal helpers (_...) by none');
SELECT is_empty($$
  SELECT p.oid::regprocedure
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'docket' AND p.proname NOT LIKE '\_%'
     AND p.prorettype <> 'trigger'::regtype
     AND NOT EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
                      WHERE a.grantee = 'docket_operator'::regrole)
$$, 'every public function is granted to the operator');
SELECT is_empty($$
  SELECT p.oid::regprocedure
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'docket' AND p.prosecdef
     AND NOT ('search_path=pg_catalog, pg_temp' = ANY (p.proconfig))
$$, 'every SECURITY DEFINER function pins its search_path');
SELECT is_empty($$
  SELECT c.oid::regclass, a.grantee::regrole, a.privilege_type
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
         aclexplode(coalesce(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's'::"char"
                                                       ELSE 'r'::"char" END, c.relowner))) a
   WHERE n.nspname = 'docket' AND a.grantee <> c.relowner
  UNION ALL
  SELECT c.oid::regclass, a.grantee::regrole, a.privilege_type
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute t ON t.attrelid = c.oid AND t.attacl IS NOT NULL,
         aclexplode(t.attacl) a
   WHERE n.nspname = 'docket'
$$, 'no docket table, sequence or column carries a privilege for anyone but its owner');
SELECT is_empty($$
  SELECT d.defaclrole::regrole, d.defaclobjtype FROM pg_default_acl d
   WHERE d.defaclnamespace = 'docket'::regnamespace
$$, 'no default privileges in schema docket');

SELECT is_empty($$
  SELECT c.oid::regclass, a.privilege_type
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
         aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
   WHERE n.nspname = 'docket' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
     AND a.grantee = 0 AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
$$, 'no docket table is writable by PUBLIC');

SELECT is_empty($$
  SELECT c.oid::regclass, t.attname, a.privilege_type
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute t ON t.attrelid = c.oid AND t.attacl IS NOT NULL,
         aclexplode(t.attacl) a
   WHERE n.nspname = 'docket' AND a.grantee = 0
$$, 'no docket column carries a privilege for PUBLIC');

SELECT is_empty($$
  SELECT c.oid::regclass, a.privilege_type
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
         aclexplode(coalesce(c.relacl, acldefault('s', c.relowner))) a
   WHERE n.nspname = 'docket' AND c.relkind = 'S' AND a.grantee = 0
$$, 'no docket sequence is usable by PUBLIC');

-- Members of the extension (tables, functions, types ...), wherever they are.
SELECT is_empty($$
  SELECT pg_describe_object(d.classid, d.objid, d.objsubid)
    FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
   WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'docket' AND d.deptype = 'e'
     AND CASE d.classid
           WHEN 'pg_class'::regclass
             THEN (SELECT relnamespace FROM pg_class WHERE oid = d.objid)
           WHEN 'pg_proc'::regclass
             THEN (SELECT pronamespace FROM pg_proc WHERE oid = d.objid)
           WHEN 'pg_type'::regclass
             THEN (SELECT typnamespace FROM pg_type WHERE oid = d.objid)
           WHEN 'pg_operator'::regclass
             THEN (SELECT oprnamespace FROM pg_operator WHERE oid = d.objid)
           WHEN 'pg_collation'::regclass
             THEN (SELECT collnamespace FROM pg_collation WHERE oid = d.objid)
           WHEN 'pg_conversion'::regclass
             THEN (SELECT connamespace FROM pg_conversion WHERE oid = d.objid)
           WHEN 'pg_ts_config'::regclass
             THEN (SELECT cfgnamespace FROM pg_ts_config WHERE oid = d.objid)
           WHEN 'pg_opclass'::regclass
             THEN (SELECT opcnamespace FROM pg_opclass WHERE oid = d.objid)
           WHEN 'pg_opfamily'::regclass
             THEN (SELECT opfnamespace FROM pg_opfamily WHERE oid = d.objid)
           ELSE NULL  -- an object kind without a schema (event trigger, cast ...)
         END IS DISTINCT FROM 'docket'::regnamespace
$$, 'every object of the extension lives in schema docket');

SELECT is((SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'docket'),
          'docket', 'the extension is installed in schema docket');

-------------------------------------------------------------------------------
-- Roles: a caller needs grants on functions and tables alike.
-------------------------------------------------------------------------------

CREATE ROLE docket_tap_nobody NOLOGIN;
GRANT USAGE ON SCHEMA docket TO docket_tap_nobody;

-- A role with EXECUTE on fetch_run only (granted directly, not through a
-- docket role): the function runs as docket's owner, so it reads.
CREATE ROLE docket_tap_exec_only NOLOGIN;
GRANT USAGE ON SCHEMA docket TO docket_tap_exec_only;
GRANT EXECUTE ON FUNCTION docket.fetch_run(docket.scope, text) TO docket_tap_exec_only;

-- The documented recipe for a read-only role.
CREATE ROLE docket_tap_reader NOLOGIN;
GRANT docket_reader TO docket_tap_reader;

-- Runs `sql` as `who` and returns 'ok' or '<SQLSTATE> <message>'. pgTAP's own
-- bookkeeping stays with the test's role, so the switch happens in here.
CREATE FUNCTION pg_temp.as_role(who text, sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  outcome text := 'ok';
BEGIN
  EXECUTE format('SET LOCAL ROLE %I', who);
  BEGIN
    EXECUTE sql;
  EXCEPTION WHEN OTHERS THEN
    outcome := SQLSTATE || ' ' || SQLERRM;
  END;
  RESET ROLE;
  RETURN outcome;
END
$$;

SELECT is(left(pg_temp.as_role('docket_tap_nobody', 'SELECT * FROM docket.claim_due()'), 5),
          '42501', 'USAGE on the schema alone does not let a role claim (42501)');
SELECT is(pg_temp.as_role('docket_tap_nobody',
                          $q$SELECT * FROM docket.claim_due(now => '2030-01-01T00:00:00Z')$q$),
          '42501 permission denied for function claim_due',
          'claim_due itself is refused, not only its docket.now() default');
SELECT is(pg_temp.as_role('docket_tap_nobody', 'SELECT * FROM docket.runs'),
          '42501 permission denied for table runs',
          'USAGE on the schema alone does not let a role read docket.runs');
SELECT is(pg_temp.as_role('docket_tap_nobody', $q$SELECT docket.fetch_run('system', 'x')$q$),
          '42501 permission denied for function fetch_run',
          'USAGE on the schema alone does not let a role fetch');
SELECT is(pg_temp.as_role('docket_tap_exec_only', $q$SELECT docket.fetch_run('system', 'x')$q$),
          'ok', 'EXECUTE is enough: fetch_run is SECURITY DEFINER');
SELECT is(pg_temp.as_role('docket_tap_exec_only', 'SELECT * FROM docket.runs'),
          '42501 permission denied for table runs', 'but the table stays closed');
SELECT is(pg_temp.as_role('docket_tap_reader',
                          $q$SELECT docket.fetch_run('system', 'x'), docket.inspect_run('system', 'x'),
                                    docket.list_runs('system', 5),
                                    (SELECT count(*) FROM docket.list_events('system', 'x'))$q$),
          'ok', 'docket_reader is enough to read');
SELECT is(pg_temp.as_role('docket_tap_reader', $q$SELECT docket.append_events('system', 'x', '[]')$q$),
          '42501 permission denied for function append_events',
          'the reader cannot append events');
SELECT is(pg_temp.as_role('docket_tap_reader',
                          $q$INSERT INTO docket.graphs VALUES ('g', 'h', '{}', now())$q$),
          '42501 permission denied for table graphs', 'the reader cannot write tables');

-- Keys that end in or hold the run id have no duplicates to merge:
-- deduplication is off for them, on for the rest.
SELECT is((SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_class c
            WHERE c.relnamespace = 'docket'::regnamespace AND c.relkind = 'i'
              AND 'deduplicate_items=off' = ANY(c.reloptions)),
          ARRAY['run_heads_graph', 'run_heads_list', 'run_heads_tenant', 'runs_claimed',
                'runs_ready', 'runs_ready_queue'],
          'deduplication is off for the claim and list indexes only');

-- A leased task's row is wider than its spawned one: its pages keep room for
-- the in-place versions of its refreshes and steps.
SELECT is((SELECT array_agg(o ORDER BY o) FROM pg_class c, unnest(c.reloptions) o
            WHERE c.oid = 'docket.runs'::regclass AND o LIKE '%fillfactor=%'),
          ARRAY['fillfactor=60'], 'docket.runs leaves 40% of each page for HOT versions');

SELECT * FROM finish();
ROLLBACK;
