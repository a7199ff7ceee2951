#!/usr/bin/env bash
# Upgrade path: installing the oldest version and updating along the chain gives
# the same schema as a fresh install of the newest, and keeps existing runs.
set -euo pipefail
oldest=$(ls sql/docket--*.sql | grep -v -- '--.*--' | sed 's/.*docket--\(.*\)\.sql/\1/' | sort -V | head -1)
newest=$(sed -n "s/^default_version = '\(.*\)'/\1/p" docket.control)

psql -X -q -v ON_ERROR_STOP=1 -d postgres \
  -c "DROP DATABASE IF EXISTS docket_fresh" -c "CREATE DATABASE docket_fresh" \
  -c "DROP DATABASE IF EXISTS docket_upgraded" -c "CREATE DATABASE docket_upgraded"
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

version=$(psql -X -At -d docket_upgraded -c "SELECT extversion FROM pg_extension WHERE extname = 'docket'")
[ "$version" = "$newest" ] || { echo "updated to $version, expected $newest"; exit 1; }

# Extension members are not in pg_dump's output, so compare the catalog itself.
describe() {
  psql -X -At -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT line FROM (
  SELECT 'function ' || p.oid::regprocedure || ' ' || pg_get_functiondef(p.oid)
         || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '')
         || ' acl=' || coalesce(p.proacl::text, '') || ' rows=' || p.prorows AS line
    FROM pg_proc p WHERE p.pronamespace = 'docket'::regnamespace
  UNION ALL
  SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' acl=' || coalesce(c.relacl::text, '')
         || ' comment=' || coalesce(obj_description(c.oid, 'pg_class'), '')
    FROM pg_class c WHERE c.relnamespace = 'docket'::regnamespace
  UNION ALL
  SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
         || ' notnull=' || a.attnotnull || ' collation=' || a.attcollation
         || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE c.relnamespace = 'docket'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'index ' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE c.relnamespace = 'docket'::regnamespace
  UNION ALL
  SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace = 'docket'::regnamespace
  UNION ALL
  SELECT 'type ' || t.typname || ' ' || t.typtype::text || ' '
         || coalesce((SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                        FROM pg_enum e WHERE e.enumtypid = t.oid), '')
    FROM pg_type t WHERE t.typnamespace = 'docket'::regnamespace
) AS catalog ORDER BY line;
SQL
}
if ! diff <(describe docket_fresh) <(describe docket_upgraded); then
  echo "schema of $oldest + ALTER EXTENSION UPDATE differs from a fresh install of $newest"
  exit 1
fi
count=$(describe docket_fresh | wc -l)
[ "$count" -gt 100 ] || { echo "catalog description suspiciously short ($count lines)"; exit 1; }
kept=$(psql -X -At -d docket_upgraded -c "SELECT docket.fetch_run('tenant:a', 'kept') ->> 'id'")
[ "$kept" = "kept" ] || { echo "the run inserted before the update is gone"; exit 1; }
# DROP EXTENSION leaves the docket roles (cluster-wide, granted to applications).
psql -X -q -v ON_ERROR_STOP=1 -d docket_fresh -c "DROP EXTENSION docket"
roles=$(psql -X -At -d postgres -c "SELECT count(*) FROM pg_roles WHERE rolname IN
  ('docket_reader', 'docket_producer', 'docket_worker', 'docket_operator') AND NOT rolcanlogin")
[ "$roles" = 4 ] || { echo "DROP EXTENSION dropped docket roles ($roles of 4 left)"; exit 1; }
echo "upgrade $oldest -> $newest: schema identical to a fresh install, data kept, old grants revoked"
psql -X -q -d postgres -c "DROP DATABASE docket_fresh" -c "DROP DATABASE docket_upgraded"
psql -X -q -d postgres -c "DROP ROLE docket_old_recipe"
