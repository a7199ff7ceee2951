#!/usr/bin/env bash
# bench/claim: claim throughput against a raw SKIP LOCKED loop, and claim_due
# latency against table size, on a throwaway cluster. See bench/README.md.
#   bash bench/claim/run.sh            (about 5 minutes on an idle 2-core machine)
# Knobs (environment): BENCH_PORT (54335), BENCH_CLIENTS (10), BENCH_SECONDS (20),
# BENCH_LIMITS ("1 10 100"), BENCH_DUE (400000), LAT_SECONDS (10), LAT_SMALL (10000),
# LAT_LARGE (1000000), LAT_DUE (100), LAT_LIMIT (10), BENCH_INSTALL (1: make install first),
# BENCH_LOAD / LAT_LOAD (how the throughput / latency preloads are written: insert_run = one
# docket.insert_run call per row; direct = the same rows by one INSERT ... SELECT, 3-5x faster;
# defaults insert_run / direct),
# BENCH_OUT (where the summary goes, default /tmp/docket-bench-claim.txt).
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

export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
PGBIN=$(pg_config --bindir)

if [ "${BENCH_INSTALL:-1}" = 1 ]; then
  flock /tmp/docket-build.lock make -s install >/dev/null
fi
# Production durability (fsync, synchronous_commit, full_page_writes on) unless
# BENCH_FSYNC=off.
DOCKET_FSYNC=${BENCH_FSYNC:-on} DOCKET_PGPORT=$PORT bash scripts/cluster.sh start
trap 'DOCKET_PGPORT=$PORT bash scripts/cluster.sh stop' EXIT
# A bench, not a test: no autovacuum surprises mid-phase; the driver vacuums
# between phases instead.
psql -X -q -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }
say() { echo "$*" | tee -a "$OUT"; }

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

# loader <insert_run|direct>: the bench function that preloads docket runs.
loader() { if [ "$1" = direct ]; then echo load_direct; else echo load_docket; fi; }

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

###############################################################################
# a + b: runs/s for claim + terminal commit, docket vs the raw loop
###############################################################################
q -c "CREATE DATABASE bench_tp"
q -d bench_tp -f $here/setup.sql >/dev/null

due_load="SELECT bench.$(loader "$BENCH_LOAD")('d', %s, %s, 'due')"
t=$(now)
load bench_tp "$due_load" 1 "$DUE"
say "preload: $DUE due runs in $(elapsed "$t") s ($BENCH_LOAD, 2 sessions)"
t=$(now)
q -d bench_tp -c "SELECT bench.load_raw(1, $DUE)" >/dev/null
say "preload: $DUE raw jobs in $(elapsed "$t") s"
docket_next=$((DUE + 1))
raw_next=$((DUE + 1))

say ""
say "throughput: $CLIENTS clients, ${SECONDS_EACH} s per phase, claim + commit terminal per run"
say "$(printf '%-6s %-7s %10s %9s %12s %8s' limit system runs/s tps latency_ms due_left)"
declare -A rate
for limit in $LIMITS; do
  for system in docket raw; do
    if [ $system = docket ]; then table=docket.runs done_status=completed ready="status = 'running' AND claim_token IS NULL"
    else table=bench.raw_jobs done_status=done ready="status = 'pending'"; fi
    q -d bench_tp -c "VACUUM (ANALYZE) $table"
    before=$(q -d bench_tp -c "SELECT count(*) FROM $table WHERE status = '$done_status'")
    read -r tps lat < <(bench bench_tp "$here/${system}_cycle.pgbench" "$limit" "$SECONDS_EACH" "$CLIENTS")
    after=$(q -d bench_tp -c "SELECT count(*) FROM $table WHERE status = '$done_status'")
    left=$(q -d bench_tp -c "SELECT count(*) FROM $table WHERE $ready")
    done_runs=$((after - before))
    rate[$system.$limit]=$(echo "scale=1; $done_runs / $SECONDS_EACH" | bc)
    say "$(printf '%-6s %-7s %10s %9.1f %12s %8s' "$limit" $system "${rate[$system.$limit]}" "$tps" "$lat" "$left")"
    [ "$left" -gt 0 ] || say "WARNING: $system drained its due set at limit $limit; raise BENCH_DUE"
    # Top the due set back up so every phase starts from the same backlog.
    [ "$limit" = "${LIMITS##* }" ] && continue  # not after the last phase
    if [ $system = docket ] && [ $done_runs -gt 0 ]; then
      load bench_tp "$due_load" $docket_next $((docket_next + done_runs - 1))
      docket_next=$((docket_next + done_runs))
    elif [ $system = raw ] && [ $done_runs -gt 0 ]; then
      q -d bench_tp -c "SELECT bench.load_raw($raw_next, $((raw_next + done_runs - 1)))" >/dev/null
      raw_next=$((raw_next + done_runs))
    fi
  done
done
q -c "DROP DATABASE bench_tp"

###############################################################################
# c: claim_due latency with LAT_SMALL vs LAT_LARGE non-due runs
###############################################################################
q -c "CREATE DATABASE bench_lat"
q -d bench_lat -f $here/setup.sql >/dev/null
q -d bench_lat -c "SELECT bench.load_docket('due', 1, $LAT_DUE, 'due')" >/dev/null
nondue="SELECT bench.$(loader "$LAT_LOAD")('n', %s, %s, 'nondue')"
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

###############################################################################
say ""
say "ratios (targets: docket/raw >= 0.7 at claim_limit 10; latency large/small <= 1.3)"
for limit in $LIMITS; do
  say "$(printf 'docket/raw at claim_limit %-4s %s' "$limit" \
    "$(echo "scale=2; ${rate[docket.$limit]} / ${rate[raw.$limit]}" | bc)")"
done
say "claim_due latency $LAT_LARGE / $LAT_SMALL: $(echo "scale=2; $lat_large / $lat_small" | bc)"
say "(summary also in $OUT)"
