#!/usr/bin/env bash
# bench/worker/sustained.sh: a drain long enough for the claim scans' dead
# index entries to pile up between vacuums, at the server's default
# autovacuum_naptime with docket's own vacuum off and on, against the raw
# two-commit loop at batch 100 over as many jobs (bench/README.md, "Twenty-first
# session" and "Twenty-second session").
#   bash bench/worker/sustained.sh     (about 8 minutes on 2 cores at the defaults)
# For each case of SUSTAIN_CASES ("1min/0 1min/5s": autovacuum_naptime, by ALTER
# SYSTEM on the throwaway cluster, / docket.vacuum_naptime, by ALTER DATABASE; 0
# turns docket's own vacuum off): a fresh database, SUSTAIN_TASKS (1500000) pre-spawned no-op tasks
# drained by bench_worker drain at concurrency SUSTAIN_CONCURRENCY (10), then the
# raw loop (bench/worker/raw_two_commit.pgbench, batch 100, as many clients)
# over as many jobs. Both print their rate per SUSTAIN_WINDOW (5) seconds: rows
# updated in docket.runs per second / 2 (a claim and a completion per task), and
# pgbench's progress lines times the batch (the statistics lag by up to a
# second, so a window's figure is approximate; the whole drain's is exact).
# Knobs (environment): BENCH_PORT (54356), SUSTAIN_TASKS, SUSTAIN_CONCURRENCY,
# SUSTAIN_CASES, SUSTAIN_WINDOW, BENCH_INSTALL (1), BENCH_BUILD (client/build),
# BENCH_FSYNC (on), BENCH_OUT (/tmp/docket-bench-sustained.txt).
# A benchmark, not a test: nothing here fails on a figure.
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=${BENCH_PORT:-54356}
N=${SUSTAIN_TASKS:-1500000}
C=${SUSTAIN_CONCURRENCY:-10}
CASES=${SUSTAIN_CASES:-"1min/0 1min/5s"}
WINDOW=${SUSTAIN_WINDOW:-5}
BUILD=${BENCH_BUILD:-client/build}
OUT=${BENCH_OUT:-/tmp/docket-bench-sustained.txt}
DB=bench_sustained
DSN="dbname=$DB"

. bench/lib.sh
bench_cluster_setup
bench_worker_build

# spawn <count>: no-op tasks in queue "sustained", two sessions; untimed.
spawn() {
  local half=$(($1 / 2))
  spawn_tasks_range sustained noop 1 "$half" &
  spawn_tasks_range sustained noop $((half + 1)) "$1"
  wait
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks"
}
updated() { q -c "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relid = 'docket.runs'::regclass"; }
# vacuums <table> [manual before]: autovacuum's and the manual count since then
# (docket's own vacuum counts as manual, as does the spawn's VACUUM ANALYZE).
vacuums() {
  q -c "SELECT autovacuum_count || ' by autovacuum, ' || vacuum_count - ${2:-0} || ' manual'
          FROM pg_stat_user_tables WHERE relid = '$1'::regclass"
}
manual() { q -c "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = '$1'::regclass"; }

: >"$OUT"
say "docket bench/worker sustained, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
say "durability: fsync, synchronous_commit, full_page_writes $(psql -X -At -c 'SHOW fsync')"
say "$N tasks (docket) or jobs (raw) per drain, concurrency $C; rates per $WINDOW s window"

declare -A rate
for nap in $CASES; do
  psql -X -q -c "ALTER SYSTEM SET autovacuum_naptime = '${nap%/*}'" -c "SELECT pg_reload_conf()" >/dev/null
  psql -X -q -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" \
    -c "ALTER DATABASE $DB SET docket.vacuum_naptime = '${nap#*/}'"
  q -c "CREATE EXTENSION docket"
  q -f bench/claim/setup.sql >/dev/null
  say ""
  say "autovacuum_naptime = ${nap%/*}, docket.vacuum_naptime = ${nap#*/}"

  spawn "$N"
  base=$(updated) manual0=$(manual docket.runs)
  line_file=$(mktemp)
  "$BENCH" drain "$DSN" sustained "$C" "$N" >"$line_file" &
  pid=$!
  windows="" prev=$base tprev=$(now)
  while kill -0 "$pid" 2>/dev/null; do
    sleep "$WINDOW"
    count=$(updated) t=$(now)
    # The last window ends with the drain: its own length.
    windows="$windows $(echo "($count - $prev) / 2 / ($t - $tprev)" | bc)"
    prev=$count tprev=$t
  done
  wait "$pid"
  line=$(cat "$line_file")
  rm -f "$line_file"
  rate[docket.$nap]=$(field "$line" tasks_per_s)
  say "  docket drain: $(field "$line" tasks_per_s) tasks/s over $(field "$line" seconds) s, mean claim_tasks $(field "$line" claim_ms) ms, vacuums of docket.runs: $(vacuums docket.runs "$manual0")"
  say "    tasks/s per window:$windows"

  q -c "SELECT bench.load_raw(1, $N)" >/dev/null
  q -c "VACUUM (ANALYZE) bench.raw_jobs"
  raw_manual0=$(manual bench.raw_jobs)
  t=$(now)
  progress=$(raw_two_commit "$C" 100 "$N" -P "$WINDOW" | sed -n 's/^progress: [0-9.]* s, \([0-9.]*\) tps.*/\1/p' |
    awk '{printf " %d", $1 * 100}')
  secs=$(printf '%.2f' "$(elapsed "$t")")
  done_jobs=$(q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'done'")
  rate[raw.$nap]=$(echo "scale=0; $done_jobs / $secs" | bc)
  say "  raw loop b100: ${rate[raw.$nap]} jobs/s over $secs s, vacuums of bench.raw_jobs: $(vacuums bench.raw_jobs "$raw_manual0")"
  say "    jobs/s per window:$progress"
done
psql -X -q -c "ALTER SYSTEM RESET autovacuum_naptime" -c "SELECT pg_reload_conf()" >/dev/null

say ""
say "ratios (docket tasks/s / raw jobs/s, whole drains)"
for nap in $CASES; do
  say "  autovacuum_naptime / docket.vacuum_naptime $nap: $(ratio "${rate[docket.$nap]}" "${rate[raw.$nap]}")"
done
first=${CASES%% *} last=${CASES##* }
say "  docket in case $last / in case $first: $(ratio "${rate[docket.$last]}" "${rate[docket.$first]}")"
say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
say "(summary also in $OUT)"
