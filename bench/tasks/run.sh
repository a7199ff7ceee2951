#!/usr/bin/env bash
# bench/tasks: the task layer end to end with no-op tasks (spawn, claim_tasks +
# complete_task), and the cost of complete_step, next to the raw SKIP LOCKED
# loop of bench/claim in the same run, on a throwaway cluster. See bench/README.md.
#   bash bench/tasks/run.sh            (about 3-4 minutes on 2 cores)
# Knobs (environment): BENCH_PORT (54344), BENCH_CLIENTS (10), BENCH_SECONDS (10),
# BENCH_LIMITS ("1 10"), BENCH_TASKS (30000: the task backlog each drain phase starts
# from), BENCH_RAW_JOBS (150000: the same for the raw loop, which drains faster),
# BENCH_INSTALL (1: make install first), BENCH_OUT (/tmp/docket-bench-tasks.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/tasks
claim=bench/claim  # the raw SKIP LOCKED baseline (setup.sql, raw_cycle.pgbench)

PORT=${BENCH_PORT:-54344}
CLIENTS=${BENCH_CLIENTS:-10}
SECONDS_EACH=${BENCH_SECONDS:-10}
LIMITS=${BENCH_LIMITS:-"1 10"}
N=${BENCH_TASKS:-30000}
RAW_N=${BENCH_RAW_JOBS:-150000}
OUT=${BENCH_OUT:-/tmp/docket-bench-tasks.txt}
DB=bench_tasks

export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
PGBIN=$(pg_config --bindir)

if [ "${BENCH_INSTALL:-1}" = 1 ]; then
  flock /tmp/docket-build.lock make -s install >/dev/null
fi
# Production durability (fsync, synchronous_commit, full_page_writes on) unless
# BENCH_FSYNC=off.
DOCKET_FSYNC=${BENCH_FSYNC:-on} DOCKET_PGPORT=$PORT bash scripts/cluster.sh start
trap 'DOCKET_PGPORT=$PORT bash scripts/cluster.sh stop' EXIT
# No autovacuum surprises mid-phase; the driver vacuums between phases.
psql -X -q -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d $DB "$@"; }
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }
say() { echo "$*" | tee -a "$OUT"; }
per_s() { echo "scale=0; $1 / $2" | bc; }    # per_s <count> <seconds>
ratio() { echo "scale=2; $1 / $2" | bc; }

# pgbench <script> <claim_limit> <seconds>: prints "tps latency_ms".
bench() {
  local script=$1 limit=$2 secs=$3 out tps lat
  out=$("$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T "$secs" -D claim_limit="$limit" -f "$script" $DB 2>&1) || {
    echo "$out" >&2
    return 1
  }
  tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  lat=$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
  echo "$tps $lat"
}

# Backlogs: each drain phase starts from N due tasks / RAW_N pending raw jobs.
task_next=1
raw_next=1
due_tasks() { q -c "SELECT count(*) FROM docket.runs WHERE queue = 'bench' AND status = 'running' AND claim_token IS NULL"; }
due_raw() { q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'pending'"; }
top_up() {  # spawns / loads what the last phase consumed, two sessions in parallel (untimed)
  local missing half
  missing=$((N - $(due_tasks)))
  if [ $missing -gt 0 ]; then
    half=$((missing / 2))
    q -c "SELECT bench.spawn_tasks($task_next, $((task_next + half - 1)))" >/dev/null &
    q -c "SELECT bench.spawn_tasks($((task_next + half)), $((task_next + missing - 1)))" >/dev/null
    wait
    task_next=$((task_next + missing))
  fi
  missing=$((RAW_N - $(due_raw)))
  if [ $missing -gt 0 ]; then
    q -c "SELECT bench.load_raw($raw_next, $((raw_next + missing - 1)))" >/dev/null
    raw_next=$((raw_next + missing))
  fi
  q -c "VACUUM (ANALYZE) docket.runs, docket.tasks, bench.raw_jobs"
}

: >"$OUT"
say "docket bench/tasks, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
say "PROVISIONAL: measured on a shared 2-core machine; repeat on a quiet one before quoting"

psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB"
q -c "CREATE EXTENSION docket"
q -f $claim/setup.sql >/dev/null
q -f $here/setup.sql >/dev/null

###############################################################################
# spawn: N tasks in batches of 1000, one session (each batch one transaction)
###############################################################################
batches=$((N / 1000))
t=$(now)
for b in $(seq 0 $((batches - 1))); do
  echo "SELECT bench.spawn_tasks($((b * 1000 + 1)), $((b * 1000 + 1000)));"
done | q >/dev/null
spawn_s=$(elapsed "$t")
task_next=$((batches * 1000 + 1))
raw_batches=$((RAW_N / 1000))
t=$(now)
for b in $(seq 0 $((raw_batches - 1))); do
  echo "SELECT bench.load_raw($((b * 1000 + 1)), $((b * 1000 + 1000)));"
done | q >/dev/null
raw_load_s=$(elapsed "$t")
raw_next=$((raw_batches * 1000 + 1))
spawn_rate=$(per_s $((batches * 1000)) "$spawn_s")
raw_load_rate=$(per_s $((raw_batches * 1000)) "$raw_load_s")
say ""
say "spawn: $((batches * 1000)) tasks in batches of 1000 (SELECT docket.spawn_task(...) FROM generate_series), 1 session;"
say "  the raw rows are one set-based INSERT per batch, so that ratio is only a scale"
say "$(printf '  %-40s %8s /s  (%s s)' 'docket.spawn_task' "$spawn_rate" "$spawn_s")"
say "$(printf '  %-40s %8s /s  (%s s)' 'raw INSERT into bench.raw_jobs' "$raw_load_rate" "$raw_load_s")"
q -c "VACUUM (ANALYZE) docket.runs, docket.tasks, bench.raw_jobs"

###############################################################################
# drain: claim + complete, CLIENTS pgbench clients, SECONDS_EACH per phase
###############################################################################
say ""
say "drain: $CLIENTS clients (pgbench -j 2), ${SECONDS_EACH} s per phase, backlog $N tasks / $RAW_N raw jobs at each start"
say "$(printf '  %-6s %-34s %9s %9s %11s %8s' limit system tasks/s tps latency_ms due_left)"
declare -A rate
phase() {  # phase <key> <label> <script> <limit>
  local key=$1 label=$2 script=$3 limit=$4 before after left tps lat
  if [[ $key == raw* ]]; then
    before=$(q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'done'")
  else
    before=$(q -c "SELECT count(*) FROM docket.runs WHERE queue = 'bench' AND status = 'completed'")
  fi
  read -r tps lat < <(bench "$script" "$limit" "$SECONDS_EACH")
  if [[ $key == raw* ]]; then
    after=$(q -c "SELECT count(*) FROM bench.raw_jobs WHERE status = 'done'")
    left=$(due_raw)
  else
    after=$(q -c "SELECT count(*) FROM docket.runs WHERE queue = 'bench' AND status = 'completed'")
    left=$(due_tasks)
  fi
  rate[$key]=$(per_s $((after - before)) "$SECONDS_EACH")
  say "$(printf '  %-6s %-34s %9s %9.1f %11s %8s' "$limit" "$label" "${rate[$key]}" "$tps" "$lat" "$left")"
  [ "$left" -gt 0 ] || say "  WARNING: the backlog ran dry during this phase; raise BENCH_TASKS"
}
for limit in $LIMITS; do
  top_up
  phase "docket.$limit" "claim_tasks + complete_task, 1 tx" $here/task_cycle.pgbench "$limit"
  phase "raw.$limit" "raw SKIP LOCKED loop (bench/claim)" $claim/raw_cycle.pgbench "$limit"
done
top_up
phase "split.1" "claim tx, then complete tx" $here/task_split.pgbench 1

###############################################################################
# complete_step: each client completes new step names on the task it holds
###############################################################################
q -c "SELECT bench.spawn_tasks(-$CLIENTS, -1)" >/dev/null
q -c "INSERT INTO bench.held SELECT row_number() OVER (ORDER BY c.run_id) - 1, c.run_id, c.claim_token
      FROM docket.claim_tasks('bench', $CLIENTS, 3600000) c"
q -c "WITH j AS (UPDATE bench.raw_jobs SET status = 'running', token = gen_random_uuid(),
                   claimed_at = clock_timestamp(), due = NULL
                  WHERE id IN (SELECT id FROM bench.raw_jobs WHERE status = 'pending' ORDER BY due LIMIT $CLIENTS)
                  RETURNING id, token)
      INSERT INTO bench.raw_held SELECT row_number() OVER (ORDER BY id) - 1, id, token FROM j"
[ "$(q -c 'SELECT count(*) FROM bench.held')" = "$CLIENTS" ] || { echo "could not hold $CLIENTS tasks" >&2; exit 1; }
q -c "VACUUM (ANALYZE)"
say ""
say "complete_step: $CLIENTS clients, each holding one task, ${SECONDS_EACH} s, a new step name per call"
say "$(printf '  %-40s %9s %11s' system steps/s latency_ms)"
read -r step_tps step_lat < <(bench $here/step.pgbench 1 "$SECONDS_EACH")
say "$(printf '  %-40s %9.0f %11s' 'docket.complete_step' "$step_tps" "$step_lat")"
read -r raw_step_tps raw_step_lat < <(bench $here/raw_step.pgbench 1 "$SECONDS_EACH")
say "$(printf '  %-40s %9.0f %11s' 'raw: fenced UPDATE + INSERT step row' "$raw_step_tps" "$raw_step_lat")"

###############################################################################
say ""
say "ratios (docket / raw loop)"
say "  spawn_task vs raw INSERT:            $(ratio "$spawn_rate" "$raw_load_rate")"
for limit in $LIMITS; do
  say "  drain at claim_limit $(printf '%-3s' "$limit")               $(ratio "${rate[docket.$limit]}" "${rate[raw.$limit]}")"
done
say "  drain, claim and complete split (limit 1) vs raw loop at limit 1: $(ratio "${rate[split.1]}" "${rate[raw.1]}")"
say "  complete_step vs raw step:           $(ratio "$step_tps" "$raw_step_tps")"
say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
say "(summary also in $OUT)"
