#!/usr/bin/env bash
# Install and upgrade paths (docs/run-store.md, "Installing and upgrading"):
# 1. CREATE EXTENSION docket runs the install script of the newest version
#    (sql/docket--<newest>.sql, assembled from sql/install/<newest>/) alone;
#    installing the oldest version and updating along the chain of upgrade
#    scripts gives the same catalog, object by object, column order included,
#    and the same pg_dump --schema-only.
# 2. A grant recipe of earlier versions is revoked by the update.
# 3. Data written under the previous version (claimed tasks and their tokens,
#    whole task documents that read the same and narrow at their next transition,
#    a checkpointed step, a sleep, an event wait) works after the update.
set -euo pipefail
oldest=$(ls sql/docket--*.sql | grep -v -- '--.*--' | sed 's/.*docket--\(.*\)\.sql/\1/' | sort -V | head -1)
newest=$(sed -n "s/^default_version = '\(.*\)'/\1/p" docket.control)
previous=$(ls sql/docket--*--"$newest".sql | sed 's/.*docket--\(.*\)--.*/\1/')
[ "$oldest" != "$newest" ] || { echo "no upgrade path: the oldest version is the newest"; exit 1; }

# The fresh install below must run the install script of this tree: PostgreSQL
# takes the install script of the target version whenever one exists, and runs
# the chain only when none does.
installed="$(pg_config --sharedir)/extension/docket--$newest.sql"
[ -f "sql/docket--$newest.sql" ] || { echo "no install script sql/docket--$newest.sql"; exit 1; }
cmp -s "sql/docket--$newest.sql" "$installed" ||
  { echo "$installed is not this tree's sql/docket--$newest.sql (make install)"; exit 1; }

dbs=(docket_fresh docket_upgraded docket_previous)
for db in "${dbs[@]}"; do
  psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
done
psql -X -q -v ON_ERROR_STOP=1 -d docket_fresh -c "CREATE EXTENSION docket"
# A role granted the grant recipe of earlier versions (table privileges, EXECUTE
# on every function) before the update: the update revokes all of it (the
# catalogs below compare ACLs too). Roles are cluster-wide: dropped at the end.
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP ROLE IF EXISTS docket_old_recipe" \
  -c "CREATE ROLE docket_old_recipe NOLOGIN"
psql -X -q -v ON_ERROR_STOP=1 -d docket_upgraded >/dev/null <<SQL
CREATE EXTENSION docket VERSION '$oldest';
GRANT USAGE ON SCHEMA docket TO docket_old_recipe;
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA docket TO docket_old_recipe;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA docket TO docket_old_recipe, PUBLIC;
SELECT docket.save_graph('g', 'h', '{}');
SELECT docket.insert_run('tenant:a', '{"id": "kept", "graph_id": "g", "graph_hash": "h",
  "status": "running", "checkpoint_seq": 0, "started_at": "2030-01-01T00:00:00Z"}',
  'run_initialized', '2030-01-01 00:00:00+00');
ALTER EXTENSION docket UPDATE;
SQL

for db in docket_fresh docket_upgraded; do
  version=$(psql -X -At -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'docket'")
  [ "$version" = "$newest" ] || { echo "$db: version $version, expected $newest"; exit 1; }
done

# pg_dump leaves out the members of an extension: for docket it dumps the
# CREATE EXTENSION statement (and the rows of its configuration table,
# docket.tenant_bindings, which --schema-only leaves out too), nothing of its
# tables, functions, types or grants. Its output is compared anyway (below),
# but the real comparison is this description of the catalog: every object of
# schema docket with what defines it.
describe() {
  psql -X -At -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT line FROM (
  SELECT 'schema ' || n.nspname || ' owner=' || pg_get_userbyid(n.nspowner)
         || ' acl=' || coalesce(n.nspacl::text, '') AS line
    FROM pg_namespace n WHERE n.nspname = 'docket'
  UNION ALL
  SELECT 'extension ' || e.extname || ' ' || e.extversion || ' relocatable=' || e.extrelocatable
         || ' config=' || coalesce((SELECT string_agg(c::regclass::text, ',') FROM unnest(e.extconfig) c), '')
         || ' condition=' || coalesce(e.extcondition::text, '')
    FROM pg_extension e WHERE e.extname = 'docket'
  UNION ALL
  -- every member of the extension, whatever its kind
  SELECT 'member ' || pg_describe_object(d.classid, d.objid, d.objsubid)
    FROM pg_depend d
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'docket')
  UNION ALL
  SELECT 'function ' || p.oid::regprocedure || ' ' || pg_get_functiondef(p.oid)
         || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '')
         || ' acl=' || coalesce(p.proacl::text, '') || ' rows=' || p.prorows
         || ' owner=' || pg_get_userbyid(p.proowner)
    FROM pg_proc p WHERE p.pronamespace = 'docket'::regnamespace
  UNION ALL
  SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' acl=' || coalesce(c.relacl::text, '')
         || ' comment=' || coalesce(obj_description(c.oid, 'pg_class'), '')
         || ' options=' || coalesce(c.reloptions::text, '') || ' persistence=' || c.relpersistence::text
         || ' rowsecurity=' || c.relrowsecurity || ' owner=' || pg_get_userbyid(c.relowner)
    FROM pg_class c WHERE c.relnamespace = 'docket'::regnamespace
  UNION ALL
  -- attnum: a table's columns in the same order, not only the same columns
  SELECT 'column ' || c.relname || '.' || a.attname || ' #' || a.attnum || ' '
         || format_type(a.atttypid, a.atttypmod)
         || ' notnull=' || a.attnotnull || ' collation=' || a.attcollation
         || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
         || ' comment=' || coalesce(col_description(c.oid, a.attnum), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE c.relnamespace = 'docket'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'dropped column ' || c.relname || ' #' || a.attnum
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
   WHERE c.relnamespace = 'docket'::regnamespace AND a.attisdropped
  UNION ALL
  SELECT 'index ' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE c.relnamespace = 'docket'::regnamespace
  UNION ALL
  SELECT 'constraint ' || conrelid::regclass || ' ' || contypid::regtype || ' ' || conname || ' '
         || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace = 'docket'::regnamespace
  UNION ALL
  SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled=' || t.tgenabled::text
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE c.relnamespace = 'docket'::regnamespace AND NOT t.tgisinternal
  UNION ALL
  SELECT 'type ' || t.typname || ' ' || t.typtype::text || ' '
         || coalesce((SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                        FROM pg_enum e WHERE e.enumtypid = t.oid), '')
         || ' base=' || coalesce(format_type(nullif(t.typbasetype, 0), t.typtypmod), '')
         || ' notnull=' || t.typnotnull || ' default=' || coalesce(t.typdefault, '')
         || ' comment=' || coalesce(obj_description(t.oid, 'pg_type'), '')
         || ' acl=' || coalesce(t.typacl::text, '') || ' owner=' || pg_get_userbyid(t.typowner)
    FROM pg_type t WHERE t.typnamespace = 'docket'::regnamespace
) AS catalog ORDER BY line;
SQL
}
describe docket_fresh >"${TMPDIR:-/tmp}/docket_fresh.catalog"
describe docket_upgraded >"${TMPDIR:-/tmp}/docket_upgraded.catalog"
if ! diff "${TMPDIR:-/tmp}/docket_fresh.catalog" "${TMPDIR:-/tmp}/docket_upgraded.catalog"; then
  echo "catalog of $oldest + ALTER EXTENSION UPDATE (>) differs from the install script of $newest (<)"
  exit 1
fi
count=$(wc -l <"${TMPDIR:-/tmp}/docket_fresh.catalog")
[ "$count" -gt 400 ] || { echo "catalog description suspiciously short ($count lines)"; exit 1; }
for kind in member function relation column index constraint trigger type; do
  grep -q "^$kind " "${TMPDIR:-/tmp}/docket_fresh.catalog" || { echo "no $kind in the catalog description"; exit 1; }
done
rm -f "${TMPDIR:-/tmp}/docket_fresh.catalog" "${TMPDIR:-/tmp}/docket_upgraded.catalog"

# pg_dump --schema-only: the same output for both (what it gives is shown),
# but its comments and the random key of \restrict (pg_dump 15.14 and later).
dump() { pg_dump --schema-only --no-owner -d "$1" | grep -v '^--\|^$\|^\\restrict \|^\\unrestrict '; }
if ! diff <(dump docket_fresh) <(dump docket_upgraded); then
  echo "pg_dump --schema-only of $oldest + ALTER EXTENSION UPDATE (>) differs from $newest's install (<)"
  exit 1
fi
echo "pg_dump --schema-only of either (extension members left out):"
dump docket_fresh | grep -v '^SET \|^SELECT pg_catalog.set_config' | sed 's/^/  /'

kept=$(psql -X -At -d docket_upgraded -c "SELECT docket.fetch_run('tenant:a', 'kept') ->> 'id'")
[ "$kept" = "kept" ] || { echo "the run inserted before the update is gone"; exit 1; }

# Data of the previous version. The library loaded is this tree's, whose claim
# statement reads columns that only the update to the newest version adds: the
# claim of the previous version's claim_tasks is therefore made by its library's
# lease statement (git show d020e05^:src/pg/claim.cpp, "UPDATE docket.runs SET
# claim_token = gen_random_uuid() ..."); everything else below is the previous
# version's own functions: spawn_task, complete_step, sleep_until, await_event.
# The clock is fake_now: no wall time is read.
t0='2030-01-01 00:00:00+00'
psql -X -q -v ON_ERROR_STOP=1 -d docket_previous >/dev/null <<SQL
CREATE EXTENSION docket VERSION '$previous';
SET docket.fake_now = '$t0';
SELECT docket.spawn_task(n, jsonb_build_object('n', n), 'up')
  FROM unnest(ARRAY['up_done', 'up_step', 'up_sleep', 'up_wait', 'up_stuck', 'up_new']) AS n;
UPDATE docket.runs SET claim_token = gen_random_uuid(), claimed_at = docket.now(), wake_at = NULL,
       claim_attempts = claim_attempts + 1
 WHERE run_id IN (SELECT run_id FROM docket.tasks
                   WHERE task_name IN ('up_done', 'up_step', 'up_sleep', 'up_wait', 'up_stuck'));
CREATE TABLE public.tokens AS
  SELECT t.task_name, r.run_id, r.claim_token FROM docket.tasks t JOIN docket.runs r USING (run_id);
SELECT docket.complete_step(run_id, claim_token, 'fetch', '{"v": 1}')
  FROM public.tokens WHERE task_name = 'up_step';
SELECT docket.complete_step(run_id, claim_token, 'before_nap', '{"v": 2}')
  FROM public.tokens WHERE task_name = 'up_sleep';
SELECT docket.sleep_until(run_id, claim_token, 'nap', '2030-01-01 01:00:00+00')
  FROM public.tokens WHERE task_name = 'up_sleep';
SELECT docket.await_event(run_id, claim_token, 'ev', 'upgrade-event')
  FROM public.tokens WHERE task_name = 'up_wait';
-- What fetch_run shows under the previous version: the stored document.
CREATE TABLE public.docs AS SELECT run_id, document AS doc FROM docket.runs;
ALTER EXTENSION docket UPDATE;
SQL

clock=$t0
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d docket_previous -c "SET docket.fake_now = '$clock'" -c "$1"; }
check() {  # check <what> <expected> <one statement>, at $clock
  local got
  got=$(sql "$3")
  [ "$got" = "$2" ] || { echo "FAIL: $1: expected '$2', got '$got'"; exit 1; }
  echo "ok: $1"
}
token() { echo "(SELECT claim_token FROM public.tokens WHERE task_name = '$1')"; }
run() { echo "(SELECT run_id FROM public.tokens WHERE task_name = '$1')"; }
claimed() { echo "(SELECT $1 FROM public.claimed WHERE task_name = '$2')"; }

check "the update reached $newest" "$newest" \
  "SELECT extversion FROM pg_extension WHERE extname = 'docket'"
check "every document of $previous reads as before the update" 0 \
  "SELECT count(*) FROM public.docs WHERE docket.fetch_run('system', run_id) IS DISTINCT FROM doc"
check "states after the update" \
  "up_done|running,up_new|pending,up_sleep|sleeping,up_step|running,up_stuck|running,up_wait|waiting" \
  "SELECT string_agg(task_name || '|' || (docket.task_result('tenantless', run_id) ->> 'state'), ','
            ORDER BY task_name) FROM public.tokens"
check "the claims of $previous keep their start (the expired class reads claim_started_at)" 3 \
  "SELECT count(*) FROM docket.runs WHERE claim_token IS NOT NULL AND claim_started_at = claimed_at"
check "the claims of $previous are renewed at their claimed_at (the expired class reads claim_renewed_at)" 3 \
  "SELECT count(*) FROM docket.runs WHERE claim_token IS NOT NULL AND claim_renewed_at = claimed_at"
check "every run with a step has a claim start (claim_tasks reads no steps for a first lease)" 0 \
  "SELECT count(*) FROM docket.runs r WHERE r.claim_started_at IS NULL
      AND EXISTS (SELECT 1 FROM docket.task_steps s WHERE s.run_id = r.run_id)"
got=$(sql "SELECT docket.complete_task($(run up_done), gen_random_uuid(), '{}')" 2>&1 || true)
grep -q "stale_fence" <<<"$got" || { echo "FAIL: another token: expected stale_fence (DK001), got: $got"; exit 1; }
echo "ok: another token is refused (DK001) for a task claimed under $previous"
sql "SELECT docket.complete_task($(run up_done), $(token up_done), '{\"ok\": true}')" >/dev/null
check "the token of $previous completes its task" 'completed|{"ok": true}' \
  "SELECT r ->> 'state' || '|' || (r -> 'result')::text FROM docket.task_result('tenantless', $(run up_done)) r"
check "its row stores a narrow document, read whole" 'false|completed|1|true' \
  "SELECT (r.document ? 'id')::text || '|' || (d ->> 'status') || '|' || (d ->> 'checkpoint_seq') || '|'
          || (d ->> 'id' = r.run_id AND d ->> 'started_at' = docs.doc ->> 'started_at')::text
     FROM docket.runs r, docket.fetch_run('system', r.run_id) d, public.docs
    WHERE r.run_id = $(run up_done) AND docs.run_id = r.run_id"
check "the step checkpointed under $previous is visible to its token" 'fetch|{"v": 1}' \
  "SELECT step_name || '|' || value::text FROM docket.step_states($(run up_step), $(token up_step))"
check "its replay keeps the first value" '{"v": 1}' \
  "SELECT docket.complete_step($(run up_step), $(token up_step), 'fetch', '{\"v\": 2}')::text"
sql "SELECT docket.complete_task($(run up_step), $(token up_step))" >/dev/null
check "the task with the step completes" completed \
  "SELECT docket.task_result('tenantless', $(run up_step)) ->> 'state'"
check "its history reads" t \
  "SELECT bool_or(type = 'completed') FROM docket.task_history('tenantless', $(run up_step))"
check "the event is emitted" t "SELECT docket.emit_event('upgrade-event', '{\"x\": 1}')"
check "and wakes the task awaiting it since $previous" pending \
  "SELECT docket.task_result('tenantless', $(run up_wait)) ->> 'state'"
# An hour later: the sleep is due, and the claim of the stuck task has expired.
clock='2030-01-01 01:00:00+00'
sql "CREATE TABLE public.claimed AS SELECT * FROM docket.claim_tasks('up', 10, 30000)" >/dev/null
check "one claim serves the woken, the slept, the stuck and the new task" \
  "up_new|new|1,up_sleep|sleep|1,up_stuck|recovered|1,up_wait|event|1" \
  "SELECT string_agg(task_name || '|' || wake_reason || '|' || attempt, ',' ORDER BY task_name)
     FROM public.claimed"
check "the step stored under $previous before the sleep comes with its claim" '{"v": 2}' \
  "SELECT steps -> 'before_nap' FROM public.claimed WHERE task_name = 'up_sleep'"
check "the sleep of $previous has elapsed" "elapsed|true" \
  "SELECT status || '|' || (resume_at = '2030-01-01 01:00:00+00') FROM docket.sleep_until($(claimed run_id up_sleep),
     $(claimed claim_token up_sleep), 'nap', '2030-01-01 02:00:00+00')"
check "the wait of $previous receives the event" 'received|{"x": 1}' \
  "SELECT status || '|' || payload::text FROM docket.await_event($(claimed run_id up_wait),
     $(claimed claim_token up_wait), 'ev', 'upgrade-event')"
check "the claimed tasks complete" "completed,completed,completed,completed" \
  "SELECT string_agg(outcome, ',') FROM docket.complete_tasks(
     ARRAY(SELECT run_id FROM public.claimed ORDER BY run_id),
     ARRAY(SELECT claim_token FROM public.claimed ORDER BY run_id),
     ARRAY(SELECT 'null'::jsonb FROM public.claimed))"
check "every task is completed" "6" \
  "SELECT count(*) FROM public.tokens WHERE docket.task_result('tenantless', run_id) ->> 'state' = 'completed'"

# DROP EXTENSION leaves the docket roles (cluster-wide, granted to applications).
psql -X -q -v ON_ERROR_STOP=1 -d docket_fresh -c "DROP EXTENSION docket"
roles=$(psql -X -At -d postgres -c "SELECT count(*) FROM pg_roles WHERE rolname IN
  ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator') AND NOT rolcanlogin")
[ "$roles" = 4 ] || { echo "DROP EXTENSION dropped docket roles ($roles of 4 left)"; exit 1; }
echo "install of $newest == $oldest + updates (catalog, column order, pg_dump); data of $previous works after the update; old grants revoked"
for db in "${dbs[@]}"; do
  psql -X -q -d postgres -c "DROP DATABASE $db"
done
psql -X -q -d postgres -c "DROP ROLE docket_old_recipe"
