#!/usr/bin/env bash
# bench/worker/wait.sh: what waiting for results (Client::wait, polling
# task_result with backoff; no NOTIFY on completion) costs the workers' drain.
# On its own throwaway cluster with production durability: the raw two-commit
# loop (bench/worker's baseline, pgbench, batch 100 and 10) over WAIT_TASKS jobs,
# then the WorkerPool draining WAIT_TASKS pre-spawned no-op tasks with 0 and
# each count of WAIT_WAITERS producer threads waiting for every task's result
# (bench_worker drain-wait). Ratios against the raw loop of the same run.
# Knobs: BENCH_PORT (54355), WAIT_TASKS (20000), WAIT_CONCURRENCY (10),
# WAIT_WAITERS ("10 100"), BENCH_FSYNC (on), BENCH_INSTALL (1),
# BENCH_BUILD (client/build), BENCH_OUT (/tmp/docket-bench-wait.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
claim=bench/claim
here=bench/worker

PORT=${BENCH_PORT:-54355}
N=${WAIT_TASKS:-20000}
C=${WAIT_CONCURRENCY:-10}
WAITERS=${WAIT_WAITERS:-"10 100"}
BUILD=${BENCH_BUILD:-client/build}
OUT=${BENCH_OUT:-/tmp/docket-bench-wait.txt}
DB=bench_wait
DSN="dbname=$DB"

. bench/lib.sh
bench_cluster_setup
bench_worker_build

spawn() {  # spawn <queue> <count>: untimed, set-based
  spawn_tasks_range "$1" noop 1 "$2"
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks"
}
raw_next=1
raw_loop() {  # raw_loop <batch>: sets raw_rate (jobs/s)
  local batch=$1 before t secs
  q -c "SELECT bench.load_raw($raw_next, $((raw_next + N - 1)))" >/dev/null
  raw_next=$((raw_next + N))
  q -c "VACUUM (ANALYZE) bench.raw_jobs"
  before=$(q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'done'")
  t=$(now)
  raw_two_commit "$C" "$batch" "$N" >/dev/null
  secs=$(elapsed "$t")
  raw_rate=$(echo "scale=0; ($(q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'done'") - $before) / $secs" | bc)
}

: >"$OUT"
say "docket bench/worker/wait.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
say "durability: fsync $(psql -X -At -c 'SHOW fsync'), synchronous_commit $(psql -X -At -c 'SHOW synchronous_commit')"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB"
q -c "CREATE EXTENSION docket"
q -f $claim/setup.sql >/dev/null
q -f $here/setup.sql >/dev/null

raw_loop 100
raw100=$raw_rate
raw_loop 10
raw10=$raw_rate
say "raw two-commit loop c$C: batch 100 $raw100 jobs/s, batch 10 $raw10 jobs/s"
for w in 0 $WAITERS; do
  spawn "wait$w" "$N"
  line=$("$BENCH" drain-wait "$DSN" "wait$w" "$C" "$N" "$w")
  rate=$(field "$line" tasks_per_s)
  say "pool c$C, $w waiters: $rate tasks/s ($(field "$line" seconds) s, $(field "$line" waits) waits done in $(field "$line" wait_seconds) s): / raw b100 $(ratio "$rate" "$raw100"), / raw b10 $(ratio "$rate" "$raw10")"
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks, bench.raw_jobs"
done
