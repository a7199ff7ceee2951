#!/usr/bin/env bash
# bench/worker: the C++ WorkerPool (client/) on its own throwaway cluster with
# production durability, next to a raw SKIP LOCKED loop driven by pgbench on the
# same cluster in the same run. See bench/README.md ("## bench/worker").
#   bash bench/worker/run.sh            (about 3 minutes on 2 cores at the defaults)
#   a) drain: BENCH_TASKS pre-spawned no-op tasks at each concurrency in
#      BENCH_CONCURRENCY (bench_worker drain: the pool's defaults, then claims of
#      up to 100, then the defaults with the runners as fibers), against the raw two-commit loop
#      (raw_two_commit.pgbench: one statement claims up to BATCH jobs with SKIP
#      LOCKED and commits, one statement marks them done fenced on their tokens and
#      commits) over as many jobs with as many pgbench clients, at batch 100 and 10.
#      The batch-100 baseline brackets the pool's drains (one run before them, one
#      after; the ratios take the mean), so that the machine's drift during the
#      phase moves both sides of a ratio.
#   b) steps: STEPS_TASKS tasks of STEPS checkpointed steps each (bench_worker
#      drain-steps) at each concurrency of STEPS_CONCURRENCY (default: the first
#      of BENCH_CONCURRENCY, 200 and 400), then the same with the runners as fibers
#      (WorkerPoolOptions::runner_threads = STEPS_RUNNER_THREADS), against the raw
#      loop at batch 100 and the first concurrency of BENCH_CONCURRENCY, run before
#      and after each concurrency's two drains (the mean).
#   c) wake-to-start latency with the default pool settings (bench_worker wake):
#      a trickle (WAKE_COUNT tasks, one per transaction every WAKE_INTERVAL_MS) and
#      bursts (WAKE_COUNT tasks in transactions of WAKE_BURST every WAKE_BURST_MS).
#   d) BENCH_EXTRA=1 adds the older comparisons: the task layer's SQL alone
#      (pgbench, bench.task_cycle_in) and the raw loop from C++ threads per
#      concurrency, and the latency mode with explicit settings (NOTIFY on with
#      docket.notify_interval_ms 0 and default, NOTIFY off).
# Knobs (environment): BENCH_PORT (54352), BENCH_TASKS (100000), BENCH_CONCURRENCY
# ("10 50"), STEPS_TASKS (40000), STEPS (3), STEPS_CONCURRENCY ("10 200 400"),
# STEPS_POOL_BATCH (drain-steps' claim batch; default the pool's),
# STEPS_RUNNER_THREADS (2: a drain and each steps drain again with
# runner_threads = 2, the runners as fibers on two threads; 0: not),
# WAKE_COUNT (300), WAKE_INTERVAL_MS (10), WAKE_BURST (10), WAKE_BURST_MS (100),
# BENCH_EXTRA (0), BENCH_FSYNC (on),
# BENCH_INSTALL (1: make install first), BENCH_BUILD (client/build),
# BENCH_OUT (/tmp/docket-bench-worker.txt), BENCH_RESULTS (a file to which
# key=value results are appended, for bench/run_all.sh; default none).
# With BENCH_EXTRA=1: SQL_SECONDS (8), LAT_COUNT (300), LAT_INTERVAL_MS (10),
# LAT_POLL_MS (1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
claim=bench/claim  # bench.raw_jobs, bench.load_raw, bench.run_doc (setup.sql)
here=bench/worker

PORT=${BENCH_PORT:-54352}
N=${BENCH_TASKS:-100000}
CONCURRENCY=${BENCH_CONCURRENCY:-"10 50"}
STEPS_TASKS=${STEPS_TASKS:-40000}
STEPS=${STEPS:-3}
STEPS_CONCURRENCY=${STEPS_CONCURRENCY:-"${CONCURRENCY%% *} 200 400"}
STEPS_RUNNER_THREADS=${STEPS_RUNNER_THREADS:-2}
WAKE_COUNT=${WAKE_COUNT:-300}
WAKE_INTERVAL_MS=${WAKE_INTERVAL_MS:-10}
WAKE_BURST=${WAKE_BURST:-10}
WAKE_BURST_MS=${WAKE_BURST_MS:-100}
EXTRA=${BENCH_EXTRA:-0}
SQL_SECONDS=${SQL_SECONDS:-8}
LAT_COUNT=${LAT_COUNT:-300}
LAT_INTERVAL_MS=${LAT_INTERVAL_MS:-10}
LAT_POLL_MS=${LAT_POLL_MS:-1000}
BUILD=${BENCH_BUILD:-client/build}
OUT=${BENCH_OUT:-/tmp/docket-bench-worker.txt}
RESULTS=${BENCH_RESULTS:-/dev/null}
DB=bench_worker
DSN="dbname=$DB"

. bench/lib.sh
bench_cluster_setup
bench_worker_build
# Autovacuum stays on: a drain of 100,000 tasks leaves a dead row version per
# claim and per completion, as a real queue does. The driver also vacuums between
# phases, so no phase inherits another's dead rows.
row() { say "$(printf '  %-11s %-56s %9s %8s' "$@")"; }

# spawn <queue> <count> [task]: tasks with no params of note, untimed, two sessions
# of 10000 per transaction; set-based docket.spawn_tasks when installed.
spawn() {
  local queue=$1 count=$2 task=${3:-noop} half
  half=$((count / 2))
  spawn_range "$queue" "$task" 1 "$half" &
  spawn_range "$queue" "$task" $((half + 1)) "$count"
  wait
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks"
}
has_spawn_tasks=0  # set once the database exists
spawn_range() {
  local queue=$1 task=$2 first=$3 last=$4 b e
  if [ "$has_spawn_tasks" = 1 ]; then
    spawn_tasks_range "$queue" "$task" "$first" "$last"
    return
  fi
  for ((b = first; b <= last; b += 10000)); do
    e=$(((b + 9999) < last ? b + 9999 : last))
    echo "SELECT count(*) FROM generate_series($b, $e) g,
            LATERAL docket.spawn_task('$task', jsonb_build_object('i', g), '$queue') s;"
  done | q >/dev/null
}
raw_next=1
load_raw() {  # load_raw <count>: pending raw jobs (untimed)
  q -c "SELECT bench.load_raw($raw_next, $((raw_next + $1 - 1)))" >/dev/null
  raw_next=$((raw_next + $1))
  q -c "VACUUM (ANALYZE) bench.raw_jobs"
}
raw_done() { q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'done'"; }

# raw_loop <clients> <batch>: the raw two-commit loop over N fresh jobs; sets
# raw_rate (jobs done over the wall-clock time of the pgbench run, connections
# included, as the pool's figure includes its start) and raw_secs.
raw_loop() {
  local c=$1 batch=$2 before t
  load_raw "$N"
  before=$(raw_done)
  t=$(now)
  raw_two_commit "$c" "$batch" "$N" >/dev/null
  raw_secs=$(printf '%.2f' "$(elapsed "$t")")
  raw_rate=$(echo "scale=0; ($(raw_done) - $before) / $raw_secs" | bc)
}

: >"$OUT"
say "docket bench/worker, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
say "durability: fsync, synchronous_commit, full_page_writes $(psql -X -At -c 'SHOW fsync')"

psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB"
q -c "CREATE EXTENSION docket"
q -f $claim/setup.sql >/dev/null
q -f $here/setup.sql >/dev/null
has_spawn_tasks=$(q -c "SELECT (to_regproc('docket.spawn_tasks') IS NOT NULL)::int")
say "spawning (untimed) with $([ "$has_spawn_tasks" = 1 ] && echo docket.spawn_tasks || echo 'docket.spawn_task per row')"

###############################################################################
# a) drain
###############################################################################
say ""
say "drain: $N pre-spawned no-op tasks per phase (tasks/s; raw: jobs/s over $N jobs)"
row concurrency system per_s seconds
declare -A rate
for c in $CONCURRENCY; do
  queue=drain$c
  # The baseline brackets the pool's drains: the raw loop at batch 100 runs
  # before and after them, and the ratios take the mean of the two, so that a
  # drift of the machine's other load during the phase moves both sides.
  raw_loop "$c" 100
  raw_before=$raw_rate
  row "$c" "raw two-commit loop, batch 100 (pgbench), before" "$raw_rate" "$raw_secs"
  if [ "$EXTRA" = 1 ]; then
    # The task layer's SQL alone (claim_tasks(10) + complete_task per task in one
    # transaction, pgbench) for SQL_SECONDS on the backlog the pool then drains.
    spawn "$queue" $((N + 25000))
    completed() { q -c "SELECT count(*) FROM docket.runs WHERE queue = '$queue' AND status = 'completed'"; }
    before=$(completed)
    "$PGBIN/pgbench" -n -c "$c" -j 2 -T "$SQL_SECONDS" -D claim_limit=10 -D concurrency="$c" \
      -f $here/task_cycle.pgbench $DB >/dev/null 2>&1
    rate[sql.$c]=$((($(completed) - before) / SQL_SECONDS))
    due=$(q -c "SELECT count(*) FROM docket.runs WHERE queue = '$queue' AND status = 'running'")
    [ "$due" -ge "$N" ] || spawn "$queue" $((N - due))
  else
    spawn "$queue" "$N"
  fi

  line=$("$BENCH" drain "$DSN" "$queue" "$c" "$N")
  rate[pool.$c]=$(field "$line" tasks_per_s)
  row "$c" "WorkerPool, no-op tasks (bench_worker drain)" "${rate[pool.$c]}" "$(field "$line" seconds)"
  result "worker.pool.c$c" "${rate[pool.$c]}"
  [ "$EXTRA" = 1 ] && row "$c" "SQL only: pgbench claim_tasks(10)+complete_task" "${rate[sql.$c]}" "$SQL_SECONDS"

  # The pool configured like the raw loop at batch 100: claims of up to 100
  # (batch_size 100, prefetch 100 - c, at least 10). (Two claiming connections,
  # BENCH_POOL_CLAIMERS=2, were slower in every run through the fourteenth
  # session and are no longer part of the suite.)
  spawn "$queue" "$N"
  prefetch=$((100 - c))
  [ "$prefetch" -ge 10 ] || prefetch=10
  line=$(BENCH_POOL_BATCH=100 BENCH_POOL_PREFETCH=$prefetch "$BENCH" drain "$DSN" "$queue" "$c" "$N")
  rate[pool100x1.$c]=$(field "$line" tasks_per_s)
  row "$c" "WorkerPool, batch 100, prefetch $prefetch" "${rate[pool100x1.$c]}" "$(field "$line" seconds)"
  result "worker.pool_b100x1.c$c" "${rate[pool100x1.$c]}"

  # The default pool with its runners as fibers on STEPS_RUNNER_THREADS threads.
  if [ "$STEPS_RUNNER_THREADS" -gt 0 ]; then
    spawn "$queue" "$N"
    line=$(BENCH_RUNNER_THREADS=$STEPS_RUNNER_THREADS "$BENCH" drain "$DSN" "$queue" "$c" "$N")
    rate[poolf.$c]=$(field "$line" tasks_per_s)
    row "$c" "WorkerPool, runners as fibers on $STEPS_RUNNER_THREADS threads" "${rate[poolf.$c]}" "$(field "$line" seconds)"
    result "worker.pool_fibers.c$c" "${rate[poolf.$c]}"
  fi

  # The second half of the bracket (the first ran before the drains), then
  # batch 10 once.
  raw_loop "$c" 100
  row "$c" "raw two-commit loop, batch 100 (pgbench), after" "$raw_rate" "$raw_secs"
  rate[raw100.$c]=$(mean "$raw_before" "$raw_rate")
  row "$c" "  raw batch 100, mean of before and after" "${rate[raw100.$c]}" ""
  result "worker.raw_b100.c$c" "${rate[raw100.$c]}"
  raw_loop "$c" 10
  rate[raw10.$c]=$raw_rate
  row "$c" "raw two-commit loop, batch 10 (pgbench)" "$raw_rate" "$raw_secs"
  result "worker.raw_b10.c$c" "$raw_rate"

  if [ "$EXTRA" = 1 ]; then
    load_raw "$N"
    line=$("$BENCH" rawloop "$DSN" "$c" 10 "$N")
    rate[rawcpp.$c]=$(field "$line" jobs_per_s)
    row "$c" "raw loop from C++ threads, batch 10, per-job commit" "${rate[rawcpp.$c]}" "$(field "$line" seconds)"
  fi
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks, docket.task_steps, bench.raw_jobs"
done

###############################################################################
# b) tasks with checkpointed steps
###############################################################################
say ""
say "steps: $STEPS_TASKS pre-spawned tasks of $STEPS checkpointed steps each"
c0=${CONCURRENCY%% *}
for c in $STEPS_CONCURRENCY; do
  # Bracketed as the drains are: the raw loop at batch 100 and concurrency c0
  # (its best) before and after this concurrency's two steps drains.
  raw_loop "$c0" 100
  raw_before=$raw_rate
  row "$c0" "raw two-commit loop, batch 100 (pgbench), before" "$raw_rate" "$raw_secs"
  # The claim batch: the pool's default (100, with the automatic prefetch)
  # unless STEPS_POOL_BATCH sets one.
  batch=${STEPS_POOL_BATCH:-default}
  spawn "steps$c" "$STEPS_TASKS" steps
  if [ "$batch" = default ]; then
    line=$("$BENCH" drain-steps "$DSN" "steps$c" "$c" "$STEPS_TASKS" "$STEPS")
  else
    line=$(BENCH_POOL_BATCH=$batch "$BENCH" drain-steps "$DSN" "steps$c" "$c" "$STEPS_TASKS" "$STEPS")
  fi
  rate[steps.$c]=$(field "$line" tasks_per_s)
  row "$c" "WorkerPool, $STEPS steps per task, claim batch $batch (drain-steps)" "${rate[steps.$c]}" "$(field "$line" seconds)"
  row "$c" "  (steps/s)" "$(field "$line" steps_per_s)" ""
  result "worker.steps.c$c" "${rate[steps.$c]}"
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks, docket.task_steps"
  # The same with the runners as fibers on STEPS_RUNNER_THREADS threads.
  if [ "$STEPS_RUNNER_THREADS" -gt 0 ]; then
    spawn "fsteps$c" "$STEPS_TASKS" steps
    line=$(BENCH_RUNNER_THREADS=$STEPS_RUNNER_THREADS "$BENCH" drain-steps "$DSN" "fsteps$c" "$c" "$STEPS_TASKS" "$STEPS")
    rate[fsteps.$c]=$(field "$line" tasks_per_s)
    row "$c" "  the same, runners as fibers on $STEPS_RUNNER_THREADS threads" "${rate[fsteps.$c]}" "$(field "$line" seconds)"
    result "worker.steps_fibers.c$c" "${rate[fsteps.$c]}"
    q -c "VACUUM (ANALYZE) docket.runs, docket.tasks, docket.task_steps"
  fi
  raw_loop "$c0" 100
  row "$c0" "raw two-commit loop, batch 100 (pgbench), after" "$raw_rate" "$raw_secs"
  rate[rawsteps.$c]=$(mean "$raw_before" "$raw_rate")
  row "$c0" "  raw batch 100, mean of before and after" "${rate[rawsteps.$c]}" ""
  result "worker.raw_b100_steps.c$c" "${rate[rawsteps.$c]}"
done

###############################################################################
# c) wake-to-start latency, default pool settings
###############################################################################
say ""
say "wake-to-start, default pool settings and session settings (ms from before the spawn's COMMIT to the handler;"
say "after: from the COMMIT's return, the spawner's own WAL flush taken out; commit: the COMMIT's duration)"
say "$(printf '  %-52s %8s %8s %8s %8s %9s %9s %10s' pattern p50_ms p90_ms p99_ms max_ms after_p50 after_p99 commit_p50)"
wake() {  # wake <key> <label> <pattern> <interval_ms> <burst>
  local line
  line=$("$BENCH" wake "$DSN" "wake_$1" "$3" "$WAKE_COUNT" "$4" "$5")
  say "$(printf '  %-52s %8s %8s %8s %8s %9s %9s %10s' "$2" "$(field "$line" p50_ms)" "$(field "$line" p90_ms)" \
    "$(field "$line" p99_ms)" "$(field "$line" max_ms)" "$(field "$line" after_commit_p50_ms)" \
    "$(field "$line" after_commit_p99_ms)" "$(field "$line" commit_p50_ms)")"
  result "worker.wake.$1.p50_ms" "$(field "$line" p50_ms)"
  result "worker.wake.$1.p99_ms" "$(field "$line" p99_ms)"
  result "worker.wake.$1.after_p50_ms" "$(field "$line" after_commit_p50_ms)"
  result "worker.wake.$1.after_p99_ms" "$(field "$line" after_commit_p99_ms)"
  result "worker.wake.$1.commit_p50_ms" "$(field "$line" commit_p50_ms)"
}
wake trickle "trickle: $WAKE_COUNT tasks, 1 per transaction every $WAKE_INTERVAL_MS ms" trickle "$WAKE_INTERVAL_MS" 1
wake burst "bursts: $WAKE_COUNT tasks, $WAKE_BURST per transaction every $WAKE_BURST_MS ms" burst "$WAKE_BURST_MS" "$WAKE_BURST"

if [ "$EXTRA" = 1 ]; then
  say ""
  say "latency mode: $LAT_COUNT tasks every $LAT_INTERVAL_MS ms into an idle pool (concurrency 10, poll $LAT_POLL_MS ms)"
  say "$(printf '  %-52s %8s %8s %8s %8s' configuration p50_ms p90_ms p99_ms max_ms)"
  latency() {  # latency <key> <label> <listen> <notify_interval_ms|default>
    local line
    line=$("$BENCH" latency "$DSN" "lat_$1" "$LAT_COUNT" "$LAT_INTERVAL_MS" "$LAT_POLL_MS" "$3" "$4")
    say "$(printf '  %-52s %8s %8s %8s %8s' "$2" "$(field "$line" p50_ms)" "$(field "$line" p90_ms)" \
      "$(field "$line" p99_ms)" "$(field "$line" max_ms)")"
  }
  latency notify0 "NOTIFY on, notify_interval_ms = 0" 1 0
  latency notify100 "NOTIFY on, notify_interval_ms default" 1 default
  latency poll "NOTIFY off (polling only)" 0 default
fi

###############################################################################
say ""
say "ratios (targets: drain >= 0.8x raw batch 100; steps >= 0.3x raw batch 100; wake p50 < 2 ms, p99 < 8 ms)"
for c in $CONCURRENCY; do
  say "  drain c$c, batch 100: pool / raw b100 $(ratio "${rate[pool100x1.$c]}" "${rate[raw100.$c]}"), fibers $(ratio "${rate[poolf.$c]:-}" "${rate[raw100.$c]}")"
  say "  drain c$c: pool / raw b100 $(ratio "${rate[pool.$c]}" "${rate[raw100.$c]}"), pool / raw b10 $(ratio "${rate[pool.$c]}" "${rate[raw10.$c]}")$(
    [ "$EXTRA" = 1 ] && echo ", pool / SQL only $(ratio "${rate[pool.$c]}" "${rate[sql.$c]}"), pool / C++ raw loop $(ratio "${rate[pool.$c]}" "${rate[rawcpp.$c]}")")"
done
for c in $STEPS_CONCURRENCY; do
  say "  steps c$c: pool / raw b100 (c$c0) $(ratio "${rate[steps.$c]}" "${rate[rawsteps.$c]}"), fibers $(ratio "${rate[fsteps.$c]:-}" "${rate[rawsteps.$c]}")"
done
say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
say "(summary also in $OUT)"
