#!/usr/bin/env bash
# bench/worker: the C++ WorkerPool (client/) with no-op handlers, on its own
# throwaway cluster, next to the raw SKIP LOCKED loop of bench/claim in the same
# run. See bench/README.md ("## bench/worker").
#   bash bench/worker/run.sh            (about 5-6 minutes on 2 cores)
#   a) drain: BENCH_TASKS pre-spawned tasks at each concurrency in BENCH_CONCURRENCY,
#      against the raw loop over as many jobs (pgbench running bench.raw_cycle(10)
#      with as many clients, and the same loop driven from C++ threads), and the
#      task layer's SQL alone (pgbench, bench.task_cycle_in) for SQL_SECONDS on
#      the same backlog just before the pool drains it.
#   b) wake-to-start latency: LAT_COUNT tasks spawned every LAT_INTERVAL_MS into an
#      idle pool (poll interval LAT_POLL_MS): NOTIFY on with the default
#      docket.notify_interval_ms (100 ms debounce per backend), NOTIFY on with 0,
#      and NOTIFY off (the pool only polls).
# Knobs (environment): BENCH_PORT (54352), BENCH_TASKS (100000), BENCH_CONCURRENCY
# ("10 50"), LAT_COUNT (300), LAT_INTERVAL_MS (10), LAT_POLL_MS (1000), SQL_SECONDS (8),
# SQL_BACKLOG (25000: spawned on top of BENCH_TASKS for the SQL-only phase),
# BENCH_INSTALL (1: make install first), BENCH_BUILD (client/build),
# BENCH_OUT (/tmp/docket-bench-worker.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
claim=bench/claim  # the raw SKIP LOCKED baseline (setup.sql, raw_cycle.pgbench)
here=bench/worker

PORT=${BENCH_PORT:-54352}
N=${BENCH_TASKS:-100000}
CONCURRENCY=${BENCH_CONCURRENCY:-"10 50"}
LAT_COUNT=${LAT_COUNT:-300}
LAT_INTERVAL_MS=${LAT_INTERVAL_MS:-10}
LAT_POLL_MS=${LAT_POLL_MS:-1000}
SQL_SECONDS=${SQL_SECONDS:-8}
SQL_BACKLOG=${SQL_BACKLOG:-25000}
BUILD=${BENCH_BUILD:-client/build}
OUT=${BENCH_OUT:-/tmp/docket-bench-worker.txt}
DB=bench_worker
DSN="dbname=$DB"

export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
PGBIN=$(pg_config --bindir)

if [ "${BENCH_INSTALL:-1}" = 1 ]; then
  flock /tmp/docket-build.lock make -s install >/dev/null
fi
cmake -S client -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j2 --target bench_worker >/dev/null
BENCH=$BUILD/bench_worker

# Production durability (fsync, synchronous_commit, full_page_writes on) unless
# BENCH_FSYNC=off.
DOCKET_FSYNC=${BENCH_FSYNC:-on} DOCKET_PGPORT=$PORT bash scripts/cluster.sh start
trap 'DOCKET_PGPORT=$PORT bash scripts/cluster.sh stop' EXIT
# Autovacuum stays on: a drain of 100,000 tasks runs for minutes and leaves a dead
# row version per claim and per completion, as a real queue does. The driver also
# vacuums between phases, so no phase inherits another's dead rows.

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d $DB "$@"; }
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }
say() { echo "$*" | tee -a "$OUT"; }
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }  # field <line> <key>
ratio() { echo "scale=2; $1 / $2" | bc; }

# spawn <queue> <count>: no-op tasks, two sessions, 10000 per transaction (untimed).
spawn() {
  local queue=$1 count=$2 half
  half=$((count / 2))
  spawn_range "$queue" 1 "$half" &
  spawn_range "$queue" $((half + 1)) "$count"
  wait
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks"
}
spawn_range() {
  local queue=$1 first=$2 last=$3 b
  for ((b = first; b <= last; b += 10000)); do
    echo "SELECT count(*) FROM generate_series($b, $(((b + 9999) < last ? b + 9999 : last))) g,
            LATERAL docket.spawn_task('noop', jsonb_build_object('i', g), '$queue') s;"
  done | q >/dev/null
}
raw_next=1
load_raw() {  # load_raw <count>: pending raw jobs (untimed)
  q -c "SELECT bench.load_raw($raw_next, $((raw_next + $1 - 1)))" >/dev/null
  raw_next=$((raw_next + $1))
  q -c "VACUUM (ANALYZE) bench.raw_jobs"
}
raw_done() { q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'done'"; }

: >"$OUT"
say "docket bench/worker, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
say "PROVISIONAL: measured on a shared 2-core machine; repeat on a quiet one before quoting"

psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB"
q -c "CREATE EXTENSION docket"
q -f $claim/setup.sql >/dev/null
q -f $here/setup.sql >/dev/null

###############################################################################
# a) drain
###############################################################################
say ""
say "drain: $N pre-spawned no-op tasks per phase (tasks/s; raw: jobs/s over $N jobs)"
say "$(printf '  %-11s %-44s %9s %8s' concurrency system per_s seconds)"
declare -A rate
for c in $CONCURRENCY; do
  # One backlog per concurrency: first the task layer's SQL alone (pgbench running
  # bench.task_cycle_in: claim_tasks(10) + complete_task per task in one
  # transaction) for SQL_SECONDS, then the pool drains N of what is left, so both
  # work on a table of the same size.
  queue=drain$c
  spawn "$queue" $((N + SQL_BACKLOG))
  completed() { q -c "SELECT count(*) FROM docket.runs WHERE queue = '$queue' AND status = 'completed'"; }
  before=$(completed)
  "$PGBIN/pgbench" -n -c "$c" -j 2 -T "$SQL_SECONDS" -D claim_limit=10 -D concurrency="$c" \
    -f $here/task_cycle.pgbench $DB >/dev/null 2>&1
  rate[sql.$c]=$((($(completed) - before) / SQL_SECONDS))
  due=$(q -c "SELECT count(*) FROM docket.runs WHERE queue = '$queue' AND status = 'running'")
  [ "$due" -ge "$N" ] || spawn "$queue" $((N - due))
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks"

  line=$("$BENCH" drain "$DSN" "$queue" "$c" "$N")
  rate[pool.$c]=$(field "$line" tasks_per_s)
  say "$(printf '  %-11s %-44s %9s %8s' "$c" "WorkerPool (claim_tasks batch 10)" "${rate[pool.$c]}" "$(field "$line" seconds)")"
  say "$(printf '  %-11s %-44s %9s %8s' "$c" "SQL only: pgbench claim_tasks(10)+complete_task" "${rate[sql.$c]}" "$SQL_SECONDS")"

  load_raw "$N"
  before=$(raw_done)
  t=$(now)
  "$PGBIN/pgbench" -n -c "$c" -j 2 -t $((N / (c * 10))) -D claim_limit=10 \
    -f $claim/raw_cycle.pgbench $DB >/dev/null 2>&1
  secs=$(elapsed "$t")
  rate[raw.$c]=$(echo "scale=0; ($(raw_done) - $before) / $secs" | bc)
  say "$(printf '  %-11s %-44s %9s %8.2f' "$c" "raw loop: pgbench bench.raw_cycle(10)" "${rate[raw.$c]}" "$secs")"

  load_raw "$N"
  line=$("$BENCH" rawloop "$DSN" "$c" 10 "$N")
  rate[rawcpp.$c]=$(field "$line" jobs_per_s)
  say "$(printf '  %-11s %-44s %9s %8s' "$c" "raw loop from C++ threads, per-job commit" "${rate[rawcpp.$c]}" "$(field "$line" seconds)")"
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks, bench.raw_jobs"
done

###############################################################################
# b) wake-to-start latency into an idle pool
###############################################################################
say ""
say "wake-to-start: $LAT_COUNT tasks spawned every $LAT_INTERVAL_MS ms into an idle pool (concurrency 10, poll interval $LAT_POLL_MS ms)"
say "$(printf '  %-44s %8s %8s %8s %8s' configuration p50_ms p90_ms p99_ms max_ms)"
declare -A lat
latency() {  # latency <key> <label> <listen> <notify_interval_ms|default>
  local line
  line=$("$BENCH" latency "$DSN" "lat_$1" "$LAT_COUNT" "$LAT_INTERVAL_MS" "$LAT_POLL_MS" "$3" "$4")
  lat[$1.p50]=$(field "$line" p50_ms)
  lat[$1.p99]=$(field "$line" p99_ms)
  say "$(printf '  %-44s %8s %8s %8s %8s' "$2" "${lat[$1.p50]}" "$(field "$line" p90_ms)" "${lat[$1.p99]}" "$(field "$line" max_ms)")"
}
latency notify0 "NOTIFY on, notify_interval_ms = 0" 1 0
latency notify100 "NOTIFY on, notify_interval_ms = 100 (default)" 1 default
latency poll "NOTIFY off (LISTEN off, polling only)" 0 default

###############################################################################
say ""
say "targets: drain >= 0.5x the raw loop; wake-to-start p50 < 5 ms, p99 < 15 ms with NOTIFY on"
for c in $CONCURRENCY; do
  say "  drain at concurrency $(printf '%-3s' "$c"): pool / pgbench raw loop $(ratio "${rate[pool.$c]}" "${rate[raw.$c]}"), pool / C++ raw loop $(ratio "${rate[pool.$c]}" "${rate[rawcpp.$c]}"), pool / SQL only $(ratio "${rate[pool.$c]}" "${rate[sql.$c]}")"
done
say "  NOTIFY on, interval 0:   p50 ${lat[notify0.p50]} ms, p99 ${lat[notify0.p99]} ms"
say "  NOTIFY on, interval 100: p50 ${lat[notify100.p50]} ms, p99 ${lat[notify100.p99]} ms"
say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
say "(summary also in $OUT)"
