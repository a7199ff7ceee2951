#!/usr/bin/env bash
# bench/cpu/instructions.sh: the instructions one backend executes per run of
# bench/claim's cycle (claim up to 10, then commit each terminal), for docket
# (bench.docket_cycle) and for the raw SKIP LOCKED loop (bench.raw_cycle) in the
# same run, counted by valgrind's callgrind on a single-user backend
# (bench/README.md, "Sixteenth session").
#
# Throughput on this machine moves with its other tenants, and CPU seconds move
# less but still by several percent; an instruction count is the same from run
# to run for the same build and the same data (two runs differ by under 0.1%), so
# it is the A/B for a change of a few percent on the server. It is not a
# throughput: a cache miss costs no instruction, and fsync waits are not
# counted. The ratio raw / docket is the same shape as bench/claim's throughput
# ratio, to read beside it.
#
#   bash bench/cpu/instructions.sh     (about 4 minutes on 2 cores)
# Knobs (environment): BENCH_PORT (54361: the cluster is started once to set up,
# then used by postgres --single), CYCLES_A (50) and CYCLES_B (150): each
# system runs A and B cycles of 10 from the same fresh state (10,000 due runs or
# jobs, vacuumed, checkpointed), and the figure is (B - A) / (10 (B - A)) per
# run, which leaves out what the first cycles pay once (plans, caches),
# BENCH_INSTALL (1: make install first), BENCH_RESULTS (key=value results are
# appended there, for bench/run_all.sh).
# Prints: docket_ir_per_run=... raw_ir_per_run=... raw/docket=...
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=${BENCH_PORT:-54361}
CYCLES_A=${CYCLES_A:-50}
CYCLES_B=${CYCLES_B:-150}
DB=bench_ir
OUT=/dev/null
. bench/lib.sh

command -v valgrind >/dev/null || { echo "bench/cpu/instructions.sh needs valgrind" >&2; exit 2; }
bench_cluster_setup "$DB"
DATA=/tmp/docket-cluster-$PORT
psql -X -q -d postgres -c "CREATE DATABASE $DB"
q -f bench/claim/setup.sql >/dev/null
q >/dev/null <<'SQL'
CREATE OR REPLACE PROCEDURE bench.ir_cycles(sys text, n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..n LOOP
    IF sys = 'docket' THEN PERFORM bench.docket_cycle(10); ELSE PERFORM bench.raw_cycle(10); END IF;
    COMMIT;
  END LOOP;
END $$;
SQL
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# postgres --single needs the cluster to itself: stopped here, its data kept
# (scripts/cluster.sh stop, on exit, removes it).
as_postgres "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null

work=$(mktemp -d)
chmod 755 "$work"

# ir <docket|raw> <cycles>: the instructions inside CALL bench.ir_cycles, from
# the same fresh state each time.
ir() {
  local input=$work/in.sql out=$work/cg.out
  cat >"$input" <<SQL
DELETE FROM docket.runs
DELETE FROM bench.raw_jobs
VACUUM docket.runs, docket.run_heads, bench.raw_jobs
SELECT bench.load_direct('c', 1, 10000, 'due')
SELECT bench.load_raw(1, 10000)
VACUUM ANALYZE docket.runs, bench.raw_jobs
CHECKPOINT
CALL bench.ir_cycles('$1', $2)
SQL
  chmod 644 "$input"
  rm -f "$out"
  if [ "$(id -u)" = 0 ]; then chown postgres "$work"; fi
  as_postgres valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
    --toggle-collect=ExecuteCallStmt "$PGBIN/postgres" --single -D "$DATA" "$DB" \
    <"$input" >"$work/log" 2>&1 || { cat "$work/log" >&2; return 1; }
  sed -n 's/^totals: *//p' "$out"
}

declare -A per_run
for sys in docket raw; do
  a=$(ir "$sys" "$CYCLES_A")
  b=$(ir "$sys" "$CYCLES_B")
  per_run[$sys]=$(((b - a) / (10 * (CYCLES_B - CYCLES_A))))
  result "cpu.ir.claim.$sys" "${per_run[$sys]}"
done
rm -rf "$work"
echo "docket_ir_per_run=${per_run[docket]} raw_ir_per_run=${per_run[raw]}" \
  "raw/docket=$(ratio "${per_run[raw]}" "${per_run[docket]}")"
