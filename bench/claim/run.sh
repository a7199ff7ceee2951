#!/usr/bin/env bash
# bench/claim: claim throughput against a raw SKIP LOCKED loop, and claim_due
# latency against table size, on a throwaway cluster. See bench/README.md.
#   bash bench/claim/run.sh            (about 5 minutes on an idle 2-core machine)
# Knobs (environment): BENCH_PORT (54335), BENCH_CLIENTS (10), BENCH_SECONDS (20: per
# system and limit, run in two halves ordered docket, raw, raw, docket),
# BENCH_LIMITS ("1 10 100"), BENCH_DUE (400000), LAT_SECONDS (10), LAT_SMALL (10000),
# LAT_LARGE (1000000), LAT_DUE (100), LAT_LIMIT (10), BENCH_INSTALL (1: make install first),
# BENCH_LOAD / LAT_LOAD (how the throughput / latency preloads are written: insert_run = one
# docket.insert_run call per row; direct = the same rows by one INSERT ... SELECT, 3-5x faster;
# defaults insert_run / direct),
# BENCH_OUT (where the summary goes, default /tmp/docket-bench-claim.txt),
# CLAIM_PHASES ("throughput latency drain": which of a+b, c, d to run),
# BENCH_FSYNC (on), BENCH_RESULTS (key=value results are appended there, for
# bench/run_all.sh; default none).
# d (drain): DRAIN_SMALL (10000), DRAIN_LARGE (1000000), DRAIN_RATE (30: producer +
# worker cycles per second, DRAIN_BATCH runs each), DRAIN_BATCH (10), DRAIN_CLIENTS (2),
# DRAIN_WARMUP (10 s), DRAIN_SECONDS (20 s), DRAIN_BACKLOG (1000), PROBE_RATE (20/s).
set -euo pipefail
cd "$(dirname "$0")/../.."
here=bench/claim

PORT=${BENCH_PORT:-54335}
CLIENTS=${BENCH_CLIENTS:-10}
SECONDS_EACH=${BENCH_SECONDS:-20}
LIMITS=${BENCH_LIMITS:-"1 10 100"}
DUE=${BENCH_DUE:-400000}
LAT_SECONDS=${LAT_SECONDS:-10}
LAT_SMALL=${LAT_SMALL:-10000}
LAT_LARGE=${LAT_LARGE:-1000000}
LAT_DUE=${LAT_DUE:-100}
LAT_LIMIT=${LAT_LIMIT:-10}
LAT_LOAD=${LAT_LOAD:-direct}
BENCH_LOAD=${BENCH_LOAD:-insert_run}
OUT=${BENCH_OUT:-/tmp/docket-bench-claim.txt}
RESULTS=${BENCH_RESULTS:-/dev/null}
PHASES=${CLAIM_PHASES:-"throughput latency drain"}
DRAIN_SMALL=${DRAIN_SMALL:-10000}
DRAIN_LARGE=${DRAIN_LARGE:-1000000}
DRAIN_RATE=${DRAIN_RATE:-30}
DRAIN_BATCH=${DRAIN_BATCH:-10}
DRAIN_CLIENTS=${DRAIN_CLIENTS:-2}
DRAIN_WARMUP=${DRAIN_WARMUP:-10}
DRAIN_SECONDS=${DRAIN_SECONDS:-20}
DRAIN_BACKLOG=${DRAIN_BACKLOG:-1000}
PROBE_RATE=${PROBE_RATE:-20}

export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
PGBIN=$(pg_config --bindir)

if [ "${BENCH_INSTALL:-1}" = 1 ]; then
  flock /tmp/docket-build.lock make -s install >/dev/null
fi
# Production durability (fsync, synchronous_commit, full_page_writes on) unless
# BENCH_FSYNC=off.
DOCKET_FSYNC=${BENCH_FSYNC:-on} DOCKET_PGPORT=$PORT bash scripts/cluster.sh start
trap 'DOCKET_PGPORT=$PORT bash scripts/cluster.sh stop' EXIT
# Phases a-c: no autovacuum surprises mid-phase; the driver vacuums between
# phases instead. Phase d runs with autovacuum at its defaults.
autovacuum() { psql -X -q -c "ALTER SYSTEM SET autovacuum = $1" -c "SELECT pg_reload_conf()" >/dev/null; }
autovacuum off
has_phase() { [[ " $PHASES " == *" $1 "* ]]; }

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }
say() { echo "$*" | tee -a "$OUT"; }
result() { echo "$1=$2" >>"$RESULTS"; }
ratio() { if [ "${2:-0}" = 0 ]; then echo "-"; else printf "%.2f" "$(echo "scale=4; $1 / $2" | bc)"; fi; }

# load <db> <sql-function-call-with-%s-%s-for-range> <first> <last>: two
# sessions in parallel, each inserting half of the range.
load() {
  local db=$1 call=$2 first=$3 last=$4
  local mid=$(((first + last) / 2))
  q -d "$db" -c "$(printf "$call" "$first" "$mid")" >/dev/null &
  local a=$!
  q -d "$db" -c "$(printf "$call" "$((mid + 1))" "$last")" >/dev/null &
  local b=$!
  wait $a
  wait $b
}

# loader <insert_run|direct>: the bench function that preloads docket runs. The
# direct loader writes docket.runs' columns itself: if the schema has moved on and
# it fails, the preload falls back to insert_run (and says so).
loader() {
  if [ "$1" = direct ]; then
    if q -c "BEGIN" -c "SELECT bench.load_direct('probe', 1, 3, 'nondue')" -c "ROLLBACK" \
      -d "${2:-postgres}" >/dev/null 2>&1; then
      echo load_direct
      return
    fi
    echo "NOTE: bench.load_direct fails on this schema; preloading through insert_run" | tee -a "$OUT" >&2
  fi
  echo load_docket
}

# pgbench <db> <script> <claim_limit> <seconds> <clients>: prints "tps latency_ms".
bench() {
  local db=$1 script=$2 limit=$3 secs=$4 clients=$5 out
  out=$("$PGBIN/pgbench" -n -c "$clients" -j 2 -T "$secs" -D claim_limit="$limit" -f "$script" "$db" 2>&1) || {
    echo "$out" >&2
    return 1
  }
  local tps lat
  tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  lat=$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
  echo "$tps $lat"
}

: >"$OUT"
say "docket bench/claim, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
say "durability: fsync, synchronous_commit, full_page_writes $(psql -X -At -c 'SHOW fsync')"

###############################################################################
# a + b: runs/s for claim + terminal commit, docket vs the raw loop
###############################################################################
if has_phase throughput; then
q -c "CREATE DATABASE bench_tp"
q -d bench_tp -f $here/setup.sql >/dev/null

due_load="SELECT bench.$(loader "$BENCH_LOAD" bench_tp)('d', %s, %s, 'due')"
t=$(now)
load bench_tp "$due_load" 1 "$DUE"
say "preload: $DUE due runs in $(elapsed "$t") s ($BENCH_LOAD, 2 sessions)"
t=$(now)
q -d bench_tp -c "SELECT bench.load_raw(1, $DUE)" >/dev/null
say "preload: $DUE raw jobs in $(elapsed "$t") s"
# Both tables' indexes rebuilt after the preload (untimed): docket's two
# loader sessions insert disjoint wake_at ranges at once, so the first half's
# index pages split in the middle and stay about 60% full, while the raw jobs
# go in by one statement in key order, at the right edge, into full pages; a
# real queue fills at the right edge (wake_at = now) as the raw loader does.
# Rebuilt, both claim from indexes as dense as a queue's.
reindex() { q -d bench_tp -c "REINDEX TABLE docket.runs" -c "REINDEX TABLE bench.raw_jobs"; }
t=$(now)
reindex
say "reindex: docket.runs and bench.raw_jobs in $(elapsed "$t") s"
docket_next=$((DUE + 1))
raw_next=$((DUE + 1))

say ""
# Each system runs SECONDS_EACH seconds per limit, in two halves ordered
# docket, raw, raw, docket: a drift over the run (the machine's other tenants,
# a checkpoint, dead entries piling up) falls on both systems alike.
half=$(echo "scale=0; ($SECONDS_EACH + 1) / 2" | bc)
say "throughput: $CLIENTS clients, ${SECONDS_EACH} s per system in two ${half} s halves (docket, raw, raw, docket), claim + commit terminal per run"
say "$(printf '%-6s %-7s %10s %9s %12s %8s' limit system runs/s tps latency_ms due_left)"
declare -A rate
declare -A done_total
for limit in $LIMITS; do
  done_total[docket]=0
  done_total[raw]=0
  for system in docket raw raw docket; do
    if [ $system = docket ]; then table=docket.runs done_status=completed ready="status = 'running' AND claim_token IS NULL"
    else table=bench.raw_jobs done_status=done ready="status = 'pending'"; fi
    q -d bench_tp -c "VACUUM (ANALYZE) $table"
    before=$(q -d bench_tp -c "SELECT count(*) FROM $table WHERE status = '$done_status'")
    read -r tps lat < <(bench bench_tp "$here/${system}_cycle.pgbench" "$limit" "$half" "$CLIENTS")
    after=$(q -d bench_tp -c "SELECT count(*) FROM $table WHERE status = '$done_status'")
    left=$(q -d bench_tp -c "SELECT count(*) FROM $table WHERE $ready")
    done_runs=$((after - before))
    done_total[$system]=$((done_total[$system] + done_runs))
    say "$(printf '%-6s %-7s %10s %9.1f %12s %8s' "$limit" $system "$(echo "scale=1; $done_runs / $half" | bc)" "$tps" "$lat" "$left")"
    [ "$left" -gt 0 ] || say "WARNING: $system drained its due set at limit $limit; raise BENCH_DUE"
  done
  for system in docket raw; do
    rate[$system.$limit]=$(echo "scale=1; ${done_total[$system]} / (2 * $half)" | bc)
  done
  say "$(printf '%-6s %-7s %10s' "$limit" "docket" "${rate[docket.$limit]}") (both halves)"
  say "$(printf '%-6s %-7s %10s' "$limit" "raw" "${rate[raw.$limit]}") (both halves)"
  # Top the due sets back up so every limit starts from the same backlog.
  [ "$limit" = "${LIMITS##* }" ] && continue  # not after the last limit
  if [ "${done_total[docket]}" -gt 0 ]; then
    load bench_tp "$due_load" $docket_next $((docket_next + done_total[docket] - 1))
    docket_next=$((docket_next + done_total[docket]))
  fi
  if [ "${done_total[raw]}" -gt 0 ]; then
    q -d bench_tp -c "SELECT bench.load_raw($raw_next, $((raw_next + done_total[raw] - 1)))" >/dev/null
    raw_next=$((raw_next + done_total[raw]))
  fi
  reindex
done
q -c "DROP DATABASE bench_tp"
for limit in $LIMITS; do
  result "claim.docket.b$limit" "${rate[docket.$limit]}"
  result "claim.raw.b$limit" "${rate[raw.$limit]}"
done
fi

###############################################################################
# c: claim_due latency with LAT_SMALL vs LAT_LARGE non-due runs
###############################################################################
if has_phase latency; then
q -c "CREATE DATABASE bench_lat"
q -d bench_lat -f $here/setup.sql >/dev/null
q -d bench_lat -c "SELECT bench.load_docket('due', 1, $LAT_DUE, 'due')" >/dev/null
nondue="SELECT bench.$(loader "$LAT_LOAD" bench_lat)('n', %s, %s, 'nondue')"
t=$(now)
load bench_lat "$nondue" 1 "$LAT_SMALL"
say ""
say "latency: 1 client, claim_due(claim_limit => $LAT_LIMIT) + ROLLBACK, $LAT_DUE due runs, ${LAT_SECONDS} s each"
say "preload: $LAT_SMALL non-due runs (waiting / completed / future wake) in $(elapsed "$t") s ($LAT_LOAD)"
q -d bench_lat -c "VACUUM (ANALYZE) docket.runs"
read -r tps_small lat_small < <(bench bench_lat $here/claim_rollback.pgbench "$LAT_LIMIT" "$LAT_SECONDS" 1)
say "$(printf '%9s non-due: %8s ms average (%s tps)' "$LAT_SMALL" "$lat_small" "$tps_small")"

t=$(now)
load bench_lat "$nondue" $((LAT_SMALL + 1)) "$LAT_LARGE"
say "preload: $((LAT_LARGE - LAT_SMALL)) more non-due runs in $(elapsed "$t") s ($LAT_LOAD, 2 sessions)"
q -d bench_lat -c "VACUUM (ANALYZE) docket.runs"
read -r tps_large lat_large < <(bench bench_lat $here/claim_rollback.pgbench "$LAT_LIMIT" "$LAT_SECONDS" 1)
say "$(printf '%9s non-due: %8s ms average (%s tps)' "$LAT_LARGE" "$lat_large" "$tps_large")"
q -c "DROP DATABASE bench_lat"
fi

###############################################################################
# d: claim latency during a steady drain, DRAIN_SMALL vs DRAIN_LARGE rows,
#    autovacuum at its defaults
###############################################################################
# probe_stats <pgbench log files...>: "mean p50 p99" in ms of the transactions'
# own durations (pgbench's time minus the rate limiter's schedule lag).
probe_stats() {
  cat "$@" | awk '{ print ($3 - $7) / 1000 }' | sort -n |
    awk '{ v[NR] = $1; s += $1 }
         END { if (NR == 0) { print "0 0 0"; exit }
               i50 = int(NR * 0.50) + 1; i99 = int(NR * 0.99) + 1; if (i99 > NR) i99 = NR
               printf "%.3f %.3f %.3f\n", s / NR, v[i50], v[i99] }'
}
# drain_probe <label>: the drain runs DRAIN_WARMUP + DRAIN_SECONDS; the probe
# measures claim_due(LAT_LIMIT) + ROLLBACK during the last DRAIN_SECONDS. Sets
# probe_mean probe_p50 probe_p99.
drain_probe() {
  local logdir drain_pid before after rows
  logdir=$(mktemp -d)
  before=$(q -d bench_drain -c "SELECT count(*) FROM docket.runs WHERE status = 'completed'")
  "$PGBIN/pgbench" -n -c "$DRAIN_CLIENTS" -j "$DRAIN_CLIENTS" -R "$DRAIN_RATE" \
    -T $((DRAIN_WARMUP + DRAIN_SECONDS)) -D claim_limit="$DRAIN_BATCH" \
    -f $here/drain_cycle.pgbench bench_drain >"$logdir/drain.out" 2>&1 &
  drain_pid=$!
  sleep "$DRAIN_WARMUP"
  (cd "$logdir" && "$PGBIN/pgbench" -n -c 1 -R "$PROBE_RATE" -T "$DRAIN_SECONDS" -l \
    -D claim_limit="$LAT_LIMIT" -f "$OLDPWD/$here/claim_rollback.pgbench" bench_drain \
    >"$logdir/probe.out" 2>&1) || { cat "$logdir/probe.out" >&2; return 1; }
  wait $drain_pid || { cat "$logdir/drain.out" >&2; return 1; }
  read -r probe_mean probe_p50 probe_p99 < <(probe_stats "$logdir"/pgbench_log.*)
  after=$(q -d bench_drain -c "SELECT count(*) FROM docket.runs WHERE status = 'completed'")
  rows=$(q -d bench_drain -c "SELECT count(*) FROM docket.runs")
  say "$(printf '  %-10s %9s %9s %9s %10s %8s %9s' "$1" "$probe_mean" "$probe_p50" "$probe_p99" \
    "$(( (after - before) / (DRAIN_WARMUP + DRAIN_SECONDS) ))" \
    "$(q -d bench_drain -c "SELECT count(*) FROM docket.runs WHERE status = 'running' AND claim_token IS NULL AND wake_at < '2999-01-01'")" \
    "$rows")"
  rm -rf "$logdir"
}
if has_phase drain; then
  autovacuum on
  q -c "CREATE DATABASE bench_drain"
  q -d bench_drain -f $here/setup.sql >/dev/null
  q -d bench_drain -c "SELECT bench.load_docket('due', 1, $DRAIN_BACKLOG, 'due')" >/dev/null
  q -d bench_drain -c "SELECT setval('bench.feed_seq', 1)" >/dev/null
  nondue="SELECT bench.$(loader "$LAT_LOAD" bench_drain)('n', %s, %s, 'nondue')"
  load bench_drain "$nondue" 1 "$DRAIN_SMALL"
  q -d bench_drain -c "VACUUM (ANALYZE) docket.runs"
  say ""
  say "claim latency during a steady drain (autovacuum at its defaults): $DRAIN_CLIENTS clients add and"
  say "drain $DRAIN_BATCH runs per cycle at $DRAIN_RATE cycles/s for ${DRAIN_WARMUP} + ${DRAIN_SECONDS} s; the probe runs"
  say "claim_due(claim_limit => $LAT_LIMIT) + ROLLBACK $PROBE_RATE times/s in the last ${DRAIN_SECONDS} s (ms)"
  say "$(printf '  %-10s %9s %9s %9s %10s %8s %9s' non-due mean p50 p99 drained/s due_end rows_end)"
  drain_probe "$DRAIN_SMALL"
  small_mean=$probe_mean small_p99=$probe_p99
  t=$(now)
  load bench_drain "$nondue" $((DRAIN_SMALL + 1)) "$DRAIN_LARGE"
  say "  (preload: $((DRAIN_LARGE - DRAIN_SMALL)) more non-due runs in $(printf '%.1f' "$(elapsed "$t")") s, then VACUUM (ANALYZE))"
  q -d bench_drain -c "VACUUM (ANALYZE) docket.runs"
  drain_probe "$DRAIN_LARGE"
  large_mean=$probe_mean large_p99=$probe_p99
  q -c "DROP DATABASE bench_drain"
  result claim.drain.small_ms "$small_mean"
  result claim.drain.large_ms "$large_mean"
fi

###############################################################################
say ""
say "ratios (targets: docket/raw >= 0.9 at claim_limit 10; latency large/small <= 1.3)"
if has_phase throughput; then
  for limit in $LIMITS; do
    say "$(printf 'docket/raw at claim_limit %-4s %s' "$limit" "$(ratio "${rate[docket.$limit]}" "${rate[raw.$limit]}")")"
  done
fi
has_phase latency && say "claim_due latency after VACUUM, $LAT_LARGE / $LAT_SMALL: $(ratio "$lat_large" "$lat_small")"
has_phase drain && say "claim_due latency during a drain, $DRAIN_LARGE / $DRAIN_SMALL: mean $(ratio "$large_mean" "$small_mean"), p99 $(ratio "$large_p99" "$small_p99")"
say "(summary also in $OUT)"
