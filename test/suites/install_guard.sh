#!/usr/bin/env bash
# CREATE EXTENSION docket refuses (42501) a pre-existing schema docket that
# another role owns, or that already holds objects or default privileges, and
# installs into an empty schema of the installing role.
set -euo pipefail
db=docket_install_guard
fresh() {
  psql -X -q -v ON_ERROR_STOP=1 -d postgres \
    -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
}
expect_refused() {  # expect_refused <what> <setup sql>
  fresh
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "$2"
  local out
  if out=$(psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -d "$db" -c "CREATE EXTENSION docket" 2>&1); then
    echo "FAIL: $1: CREATE EXTENSION succeeded"; exit 1
  fi
  grep -q "42501" <<<"$out" || { echo "FAIL: $1: expected 42501, got: $out"; exit 1; }
  [ "$(psql -X -At -d "$db" -c "SELECT count(*) FROM pg_extension WHERE extname = 'docket'")" = 0 ] ||
    { echo "FAIL: $1: the extension exists"; exit 1; }
  echo "ok: $1: refused with 42501"
}
psql -X -q -d postgres -c "DROP ROLE IF EXISTS docket_guard_other" -c "CREATE ROLE docket_guard_other NOLOGIN"
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS docket_guard_other" >/dev/null' EXIT

expect_refused "a schema owned by another role" \
  "CREATE SCHEMA docket AUTHORIZATION docket_guard_other"
expect_refused "a schema holding a function" \
  "CREATE SCHEMA docket; CREATE FUNCTION docket.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT now()'"
expect_refused "a schema holding a table" \
  "CREATE SCHEMA docket; CREATE TABLE docket.runs (run_id text)"
expect_refused "a schema with default privileges" \
  "CREATE SCHEMA docket; ALTER DEFAULT PRIVILEGES IN SCHEMA docket GRANT EXECUTE ON FUNCTIONS TO docket_guard_other"

fresh
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE SCHEMA docket" -c "CREATE EXTENSION docket"
echo "ok: an empty schema of the installing role"
fresh
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION docket"
echo "ok: no schema: CREATE EXTENSION creates it"
