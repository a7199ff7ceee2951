#!/usr/bin/env bash
# bench/cpu/instructions.sh: the instructions one backend executes per run, for
# docket and for a raw SKIP LOCKED loop doing the same work in the same run,
# counted by valgrind's callgrind on a single-user backend (bench/README.md,
# "Sixteenth session"). KIND (the first argument):
#   claim (default): bench/claim's cycle, claim up to 10 then commit each
#     terminal: bench.docket_cycle against bench.raw_cycle;
#   drain: bench/worker's drain, claim_tasks of up to 100, commit, then
#     complete_tasks of them, commit: against the raw two-commit loop at batch
#     100 (raw_two_commit.pgbench's two statements);
#   steps: the drain with three step checkpoints between claim and completion,
#     each a complete_steps of the whole batch in its own transaction (bench/
#     worker's 3-step tasks, flushed by the pool's group commit), per task
#     against the same raw loop per job.
#
# Throughput on this machine moves with its other tenants, and CPU seconds move
# less but still by several percent; an instruction count is the same from run
# to run for the same build and the same data (two runs differ by under 0.1%), so
# it is the A/B for a change of a few percent on the server. It is not a
# throughput: a cache miss costs no instruction, and fsync waits are not
# counted. The ratio raw / docket is the same shape as bench/claim's throughput
# ratio, to read beside it.
#
#   bash bench/cpu/instructions.sh [claim|drain|steps]   (about 2 minutes each on 2 cores)
# Knobs (environment): BENCH_PORT (54361: the cluster is started once to set up,
# then used by postgres --single), CYCLES_A and CYCLES_B (claim: 50 and 150;
# drain and steps: 10 and 40): each system runs A and B cycles from the same fresh state
# (10,000 due runs or jobs, vacuumed, checkpointed), and the figure is the
# difference over the runs of B - A cycles, which leaves out what the first
# cycles pay once (plans, caches),
# BENCH_INSTALL (1: make install first), BENCH_KEEP (a directory: each run's
# callgrind profile is copied there as cg.SYSTEM.CYCLES.out), BENCH_RESULTS (key=value results are
# appended there, for bench/run_all.sh).
# Prints: kind=KIND docket_ir_per_run=... raw_ir_per_run=... raw/docket=...
set -euo pipefail
cd "$(dirname "$0")/../.."

KIND=${1:-claim}
case $KIND in
  claim) batch=10 CYCLES_A=${CYCLES_A:-50} CYCLES_B=${CYCLES_B:-150} ;;
  drain | steps) batch=100 CYCLES_A=${CYCLES_A:-10} CYCLES_B=${CYCLES_B:-40} ;;
  *) echo "unknown kind $KIND (claim, drain or steps)" >&2; exit 2 ;;
esac
PORT=${BENCH_PORT:-54361}
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
-- The drain's two transactions per batch of 100, each system's.
CREATE OR REPLACE PROCEDURE bench.ir_drain(sys text, n int) LANGUAGE plpgsql AS $$
DECLARE ids text[]; toks uuid[];
BEGIN
  FOR i IN 1..n LOOP
    IF sys IN ('docket', 'steps') THEN
      SELECT array_agg(run_id), array_agg(claim_token) INTO ids, toks
        FROM docket.claim_tasks('ir', 100, 30000);
      COMMIT;
      IF sys = 'steps' THEN
        FOR s IN 1..3 LOOP
          PERFORM count(*) FROM docket.complete_steps(ids, toks,
            array_fill(('s' || s)::text, ARRAY[cardinality(ids)]),
            array_fill(to_jsonb(s), ARRAY[cardinality(ids)]));
          COMMIT;
        END LOOP;
      END IF;
      PERFORM count(*) FROM docket.complete_tasks(ids, toks, array_fill('null'::jsonb, ARRAY[cardinality(ids)]));
    ELSE
      WITH claimed AS (
        UPDATE bench.raw_jobs
           SET status = 'running', token = gen_random_uuid(), claimed_at = clock_timestamp(),
               due = NULL, attempts = attempts + 1
         WHERE id = ANY(ARRAY(SELECT id FROM bench.raw_jobs
                               WHERE status = 'pending' AND due <= clock_timestamp()
                               ORDER BY due LIMIT 100 FOR UPDATE SKIP LOCKED))
        RETURNING id, token)
      SELECT array_agg(id), array_agg(token) INTO ids, toks FROM claimed;
      COMMIT;
      UPDATE bench.raw_jobs j
         SET status = 'done', seq = j.seq + 1, token = NULL, claimed_at = NULL,
             updated_at = clock_timestamp(), doc = bench.run_doc(j.id, 'completed', j.seq + 1)
        FROM unnest(ids, toks) AS d(id, token)
       WHERE j.id = d.id AND j.token = d.token;
    END IF;
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
if [ "$(id -u)" = 0 ]; then chown postgres "$work"; fi

# ir <docket|raw> <cycles>: the instructions inside CALL bench.ir_cycles (or
# ir_drain), from the same fresh state each time.
if [ "$KIND" = claim ]; then
  proc=ir_cycles load="SELECT bench.load_direct('c', 1, 10000, 'due')"
else
  proc=ir_drain
  load="SELECT count(*) FROM docket.spawn_tasks('noop', ARRAY(SELECT jsonb_build_object('i', g) FROM generate_series(1, 10000) g), 'ir', 'tenantless', '{}')"
fi
ir() {
  local input=$work/in.sql out=$work/cg.out
  cat >"$input" <<SQL
DELETE FROM docket.runs
DELETE FROM bench.raw_jobs
VACUUM docket.runs, docket.run_heads, docket.tasks, bench.raw_jobs
$load
SELECT bench.load_raw(1, 10000)
VACUUM ANALYZE docket.runs, docket.tasks, bench.raw_jobs
CHECKPOINT
CALL bench.$proc('$1', $2)
SQL
  chmod 644 "$input"
  rm -f "$out"
  as_postgres valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
    --toggle-collect=ExecuteCallStmt "$PGBIN/postgres" --single -D "$DATA" "$DB" \
    <"$input" >"$work/log" 2>&1 || { cat "$work/log" >&2; return 1; }
  if [ -n "${BENCH_KEEP:-}" ]; then cp "$out" "$BENCH_KEEP/cg.$1.$2.out"; fi
  sed -n 's/^totals: *//p' "$out"
}

declare -A per_run
for sys in docket raw; do
  call=$sys
  if [ "$KIND" = steps ] && [ "$sys" = docket ]; then call=steps; fi
  a=$(ir "$call" "$CYCLES_A")
  b=$(ir "$call" "$CYCLES_B")
  per_run[$sys]=$(((b - a) / (batch * (CYCLES_B - CYCLES_A))))
  result "cpu.ir.$KIND.$sys" "${per_run[$sys]}"
done
rm -rf "$work"
echo "kind=$KIND docket_ir_per_run=${per_run[docket]} raw_ir_per_run=${per_run[raw]}" \
  "raw/docket=$(ratio "${per_run[raw]}" "${per_run[docket]}")"
