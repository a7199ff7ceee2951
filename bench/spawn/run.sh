#!/usr/bin/env bash
# bench/spawn: spawning SPAWN_TASKS tasks set-based in one statement against an
# INSERT ... SELECT of the same rows (task name, params, queue, status, due and
# creation time) into a plain table with a primary key and one index
# (bench/spawn/setup.sql), same cluster, same run, production durability.
# See bench/README.md ("## bench/spawn").
#   bash bench/spawn/run.sh            (about 1-2 minutes on 2 cores at the defaults)
# Each round uses a fresh database (so neither side inherits the other's table
# or dead rows), runs CHECKPOINT, then times both statements (psql \timing, one
# autocommit statement each, its commit included); the order alternates between
# rounds and the best round of each side is reported.
# docket's statement: docket.spawn_tasks(task_name, params jsonb[], queue,
# owner_scope, options) when installed, else
#   SELECT count(*) FROM generate_series(1, N) g, LATERAL docket.spawn_task(...)
# A round whose docket statement took longer than SPAWN_MAX_SECONDS ends the
# rounds (the plpgsql docket.spawn_task of 0.2.0 per row in one statement was superlinear in the row
# count: 100,000 rows take many minutes), so the bench stays bounded.
# Knobs (environment): BENCH_PORT (54361), SPAWN_TASKS (100000), SPAWN_ROUNDS (2),
# SPAWN_MAX_SECONDS (60), SPAWN_TIMEOUT (600 s: docket's statement is cancelled
# after that; its rate is then reported as an upper bound),
# BENCH_FSYNC (on), BENCH_INSTALL (1: make install first),
# BENCH_OUT (/tmp/docket-bench-spawn.txt), BENCH_RESULTS (key=value results are
# appended there, for bench/run_all.sh; default none).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/spawn

PORT=${BENCH_PORT:-54361}
N=${SPAWN_TASKS:-100000}
ROUNDS=${SPAWN_ROUNDS:-2}
MAX_SECONDS=${SPAWN_MAX_SECONDS:-60}
TIMEOUT=${SPAWN_TIMEOUT:-600}
OUT=${BENCH_OUT:-/tmp/docket-bench-spawn.txt}
RESULTS=${BENCH_RESULTS:-/dev/null}

. bench/lib.sh
bench_cluster_setup

# timed <db> <sql> [timeout_s]: runs one statement in autocommit, prints its
# duration in ms (nothing if it failed or was cancelled by the timeout).
timed() {
  local out
  out=$(PGOPTIONS="-c statement_timeout=${3:-0}s" psql -X -q -v ON_ERROR_STOP=1 -d "$1" \
    -c '\timing on' -c "$2" 2>&1) || return 0
  echo "$out" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
}

: >"$OUT"
say "docket bench/spawn, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
say "durability: fsync, synchronous_commit, full_page_writes $(psql -X -At -c 'SHOW fsync')"

plain_sql="INSERT INTO bench.plain_tasks (task_name, params, queue, status, due, created_at)
  SELECT 'noop', jsonb_build_object('i', g), 'spawn', 'pending', now(), now()
  FROM generate_series(1, $N) g"

say ""
say "spawn: $N tasks in one statement, $ROUNDS rounds (ms, tasks/s)"
say "$(printf '  %-6s %-58s %10s %10s' round system ms per_s)"
best_docket=0
best_plain=0
slow=0
for ((r = 1; r <= ROUNDS && slow == 0; r++)); do
  db=bench_spawn_$r
  psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
  psql -X -q -v ON_ERROR_STOP=1 -d $db -f $here/setup.sql >/dev/null
  if [ "$(psql -X -At -d $db -c "SELECT (to_regproc('docket.spawn_tasks') IS NOT NULL)::int")" = 1 ]; then
    docket_label="docket.spawn_tasks (one call, params jsonb[])"
    docket_sql="SELECT count(*) FROM docket.spawn_tasks('noop',
      ARRAY(SELECT jsonb_build_object('i', g) FROM generate_series(1, $N) g),
      'spawn', 'tenantless', '{}')"
  else
    docket_label="SELECT docket.spawn_task(...) FROM generate_series"
    docket_sql="SELECT count(*) FROM generate_series(1, $N) g,
      LATERAL docket.spawn_task('noop', jsonb_build_object('i', g), 'spawn') s"
  fi
  psql -X -q -d $db -c "VACUUM (ANALYZE)" -c "CHECKPOINT"
  if ((r % 2 == 1)); then order="plain docket"; else order="docket plain"; fi
  for system in $order; do
    if [ $system = docket ]; then
      ms=$(timed $db "$docket_sql" "$TIMEOUT")
      label=$docket_label
      if [ -z "$ms" ]; then
        ms=$((TIMEOUT * 1000))
        label="$label: FAILED or cancelled after $TIMEOUT s (rate below is an upper bound)"
        say "  NOTE: docket's statement failed or exceeded SPAWN_TIMEOUT=$TIMEOUT s"
        result spawn.timed_out 1
      fi
      [ "$(echo "$ms > $MAX_SECONDS * 1000" | bc)" = 1 ] && slow=1
    else
      ms=$(timed $db "$plain_sql")
      [ -n "$ms" ] || { say "  plain INSERT failed"; exit 1; }
      label="plain table: INSERT ... SELECT (primary key + 1 index)"
    fi
    per_s=$(echo "scale=0; $N * 1000 / $ms" | bc)
    say "$(printf '  %-6s %-58s %10s %10s' "$r" "$label" "$ms" "$per_s")"
    if [ $system = docket ]; then
      [ "$per_s" -gt "$best_docket" ] && best_docket=$per_s
    else
      [ "$per_s" -gt "$best_plain" ] && best_plain=$per_s
    fi
  done
  psql -X -q -c "DROP DATABASE $db"
  [ $slow = 1 ] && [ "$r" -lt "$ROUNDS" ] &&
    say "  (docket's statement took more than $MAX_SECONDS s: no further rounds)"
done
result spawn.docket "$best_docket"
result spawn.plain "$best_plain"

say ""
say "best of $((r - 1)) round(s): docket $best_docket tasks/s, plain table $best_plain rows/s"
say "ratio (target >= 0.3): docket / plain INSERT ... SELECT $(ratio "$best_docket" "$best_plain")"
say "(summary also in $OUT)"
