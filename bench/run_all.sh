#!/usr/bin/env bash
# bench/run_all.sh: every benchmark of issue 7, each on its own throwaway cluster
# with production durability, then one table of ratios (each against a baseline
# measured in the same run). See bench/README.md.
#   bash bench/run_all.sh               (about 6 minutes on a quiet 2-core machine)
#   BENCH_QUICK=1 bash bench/run_all.sh (small sizes, about 3-5 minutes: checks the
#                                        scripts end to end, figures mean little)
# It installs the extension and builds bench_worker once, then runs
#   bench/claim/run.sh   claim_due + commit vs the raw loop at claim_limit 10, and
#                        claim latency during a steady drain, 10k vs 1M rows
#   bench/worker/run.sh  WorkerPool drain vs the raw two-commit loop at batch 100
#                        and 10 (concurrency 10 and 50), 3-step tasks, wake-to-start
#   bench/spawn/run.sh   set-based spawn vs INSERT ... SELECT into a plain table
#   bench/stats/run.sh   queue_stats latency beside 1M finished runs vs none
# Every knob of those scripts applies (BENCH_TASKS, SPAWN_TASKS, DRAIN_LARGE, ...;
# see their headers); BENCH_FSYNC=off runs everything without durability.
# Knobs of its own: BENCH_PORT (54370; the scripts use BENCH_PORT, +1, +2, +3),
# BENCH_QUICK (0), BENCH_ONLY ("claim worker spawn stats"), BENCH_INSTALL (1),
# BENCH_OUT (/tmp/docket-bench-all.txt; each script's own summary goes beside it).
# Benchmarks, not tests: nothing here fails on a figure.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${BENCH_PORT:-54370}
ONLY=${BENCH_ONLY:-"claim worker spawn stats"}
OUT=${BENCH_OUT:-/tmp/docket-bench-all.txt}
RESULTS=$(mktemp /tmp/docket-bench-results.XXXXXX)
trap 'rm -f "$RESULTS"' EXIT

if [ "${BENCH_QUICK:-0}" = 1 ]; then
  : "${BENCH_TASKS:=5000}" "${STEPS_TASKS:=2000}" "${WAKE_COUNT:=100}"
  : "${SPAWN_TASKS:=5000}" "${BENCH_DUE:=30000}" "${BENCH_SECONDS:=5}"
  : "${DRAIN_LARGE:=100000}" "${DRAIN_WARMUP:=3}" "${DRAIN_SECONDS:=6}" "${STATS_FINISHED:=100000}"
  export BENCH_TASKS STEPS_TASKS WAKE_COUNT SPAWN_TASKS BENCH_DUE BENCH_SECONDS
  export DRAIN_LARGE DRAIN_WARMUP DRAIN_SECONDS STATS_FINISHED
fi
# The claim throughput phase at claim_limit 10 only, and the drain latency phase.
export BENCH_LIMITS=${BENCH_LIMITS:-10} CLAIM_PHASES=${CLAIM_PHASES:-"throughput drain"}

start=$(date +%s)
: >"$OUT"
say() { echo "$*" | tee -a "$OUT"; }
say "docket bench/run_all, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)'), durability ${BENCH_FSYNC:-on}$([ "${BENCH_QUICK:-0}" = 1 ] && echo ', QUICK sizes')"

if [ "${BENCH_INSTALL:-1}" = 1 ]; then
  flock /tmp/docket-build.lock make -s install >/dev/null
fi
export BENCH_INSTALL=0 BENCH_RESULTS=$RESULTS

dir=$(dirname "$OUT")
run() {  # run <name> <port>
  local t
  t=$(date +%s)
  echo "== bench/$1 ==" >&2
  BENCH_PORT=$2 BENCH_OUT="$dir/docket-bench-$1.txt" bash "bench/$1/run.sh" >&2 || {
    say "bench/$1 FAILED (exit $?); its figures are missing below"
  }
  say "bench/$1: $(($(date +%s) - t)) s, summary in $dir/docket-bench-$1.txt"
}
n=0
for b in claim worker spawn stats; do
  [[ " $ONLY " == *" $b "* ]] && run $b $((PORT + n))
  n=$((n + 1))
done

get() { sed -n "s/^$1=//p" "$RESULTS" | tail -1; }
ratio() {
  if [ -z "$1" ] || [ -z "$2" ] || [ "$(echo "$2 == 0" | bc)" = 1 ]; then echo "-"
  else printf "%.2f" "$(echo "scale=4; $1 / $2" | bc)"; fi
}
row() { say "$(printf '| %-50s | %10s | %10s | %6s | %-9s | %-22s |' "$@")"; }
rrow() {  # rrow <label> <docket key> <baseline key> <target> <before>
  local a b
  a=$(get "$2") b=$(get "$3")
  row "$1" "${a:--}" "${b:--}" "$(ratio "$a" "$b")" "$4" "$5"
}
size() { if [ $(($1 % 1000000)) = 0 ]; then echo "$(($1 / 1000000))M"; elif [ $(($1 % 1000)) = 0 ]; then echo "$(($1 / 1000))k"; else echo "$1"; fi; }
c_first=$(echo "${BENCH_CONCURRENCY:-10 50}" | cut -d' ' -f1)

say ""
say "Ratios against baselines measured in the same run (production durability: ${BENCH_FSYNC:-on})"
say ""
row "benchmark" "docket" "baseline" "ratio" "target" "before"
row "---" "---:" "---:" "---:" "---" "---"
for c in ${BENCH_CONCURRENCY:-10 50}; do
  rrow "worker drain c$c, tasks/s / raw b100 jobs/s" worker.pool.c$c worker.raw_b100.c$c ">= 0.8" ""
  rrow "worker drain c$c, pool batch 100 / raw b100" worker.pool_b100x1.c$c worker.raw_b100.c$c ">= 0.8" ""
  rrow "worker drain c$c, fibers on ${STEPS_RUNNER_THREADS:-2} threads / raw b100" worker.pool_fibers.c$c worker.raw_b100.c$c ">= 0.8" ""
  if [ "$c" = 10 ]; then before="0.08 (890 / 11,358)"; else before=""; fi
  rrow "worker drain c$c, tasks/s / raw b10 jobs/s" worker.pool.c$c worker.raw_b10.c$c "" "$before"
done
for c in ${STEPS_CONCURRENCY:-$c_first 200 400}; do
  rrow "3-step tasks c$c, tasks/s / raw b100 (c$c_first) jobs/s" worker.steps.c$c worker.raw_b100_steps.c$c ">= 0.3" ""
  rrow "3-step tasks c$c, fibers on ${STEPS_RUNNER_THREADS:-2} threads / raw b100" worker.steps_fibers.c$c worker.raw_b100_steps.c$c ">= 0.3" ""
done
rrow "spawn, tasks/s / plain INSERT ... SELECT rows/s$([ -n "$(get spawn.timed_out)" ] && echo ' (timed out: upper bound)')" spawn.docket spawn.plain ">= 0.3" "0.18"
rrow "claim_due+commit b10 / raw loop b10, runs/s" claim.docket.b10 claim.raw.b10 ">= 0.9" "0.74"
rrow "claim latency in a drain, $(size "${DRAIN_LARGE:-1000000}") / $(size "${DRAIN_SMALL:-10000}") rows (ms)" claim.drain.large_ms claim.drain.small_ms "<= 1.3" "0.91 (after VACUUM)"
for w in trickle burst; do
  p50=$(get worker.wake.$w.p50_ms) p99=$(get worker.wake.$w.p99_ms)
  if [ $w = trickle ]; then before="p50 43, p99 108"; else before=""; fi
  row "wake-to-start $w, default settings (ms)" "p50 ${p50:--}" "p99 ${p99:--}" "" "< 2 / < 8" "$before"
  p50=$(get worker.wake.$w.after_p50_ms) p99=$(get worker.wake.$w.after_p99_ms)
  row "  the same from the COMMIT's return (commit p50 $(get worker.wake.$w.commit_p50_ms))" "p50 ${p50:--}" "p99 ${p99:--}" "" "" ""
done
rrow "queue_stats p95, $(size "${STATS_FINISHED:-1000000}") finished / none (ms)" stats.large.p95_ms stats.empty.p95_ms "< 50 ms" ""
say ""
say "total $(($(date +%s) - start)) s; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
say "(this table is also in $OUT)"
