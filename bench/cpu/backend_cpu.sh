#!/usr/bin/env bash
# bench/cpu: the CPU seconds one backend spends on a fixed amount of docket's
# work, for an A/B of two builds on a machine whose throughput is too noisy to
# compare (bench/README.md, "Eleventh session"). Throughput varies with the
# other tenants of the host; the CPU time of the backend doing the work varies
# far less. Run it against two clusters side by side (each with its build
# installed), alternating, and compare the medians.
#   PGPORT=... PGDATABASE=... bash bench/cpu/backend_cpu.sh KIND
# KIND: drain (250 x claim_tasks 100 + complete_tasks: 25,000 no-op tasks),
#       steps (150 x claim 100 + three complete_steps of 100 + complete),
#       claim (600 x claim_due 10 + 10 commit, bench.docket_cycle),
#       spawn (spawn_tasks of 100,000 in one statement).
# The database is a throwaway one: its runs are deleted first. It loads
# bench/claim/setup.sql (bench.docket_cycle, bench.load_direct). The work runs
# with the cluster's durability (production: every commit flushed; waiting for
# the flush is not CPU time); BENCH_SYNC_COMMIT=off is an opt-in variant that
# only makes the run shorter. The CPU time is read from /proc/PID/stat of the
# backend, so run it on the server's machine.
# Prints: kind=KIND cpu_s=SECONDS
set -euo pipefail
cd "$(dirname "$0")/../.."
KIND=${1:?usage: backend_cpu.sh drain|steps|claim|spawn}
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
q -f bench/claim/setup.sql >/dev/null
q >/dev/null <<'SQL'
CREATE OR REPLACE PROCEDURE bench.cpu_drain(n int) LANGUAGE plpgsql AS $$
DECLARE ids text[]; toks uuid[];
BEGIN
  FOR i IN 1..n LOOP
    SELECT array_agg(run_id), array_agg(claim_token) INTO ids, toks FROM docket.claim_tasks('cpu', 100, 30000);
    COMMIT;
    PERFORM count(*) FROM docket.complete_tasks(ids, toks, array_fill('null'::jsonb, ARRAY[cardinality(ids)]));
    COMMIT;
  END LOOP;
END $$;
CREATE OR REPLACE PROCEDURE bench.cpu_steps(n int) LANGUAGE plpgsql AS $$
DECLARE ids text[]; toks uuid[]; s text;
BEGIN
  FOR i IN 1..n LOOP
    SELECT array_agg(run_id), array_agg(claim_token) INTO ids, toks FROM docket.claim_tasks('cpu', 100, 30000);
    COMMIT;
    FOREACH s IN ARRAY ARRAY['s1', 's2', 's3'] LOOP
      PERFORM count(*) FROM docket.complete_steps(ids, toks, array_fill(s, ARRAY[cardinality(ids)]),
                                                  array_fill('1'::jsonb, ARRAY[cardinality(ids)]));
      COMMIT;
    END LOOP;
    PERFORM count(*) FROM docket.complete_tasks(ids, toks, array_fill('null'::jsonb, ARRAY[cardinality(ids)]));
    COMMIT;
  END LOOP;
END $$;
CREATE OR REPLACE PROCEDURE bench.cpu_claim(n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..n LOOP PERFORM bench.docket_cycle(10); COMMIT; END LOOP;
END $$;
SQL
spawn() {
  echo "SELECT count(*) FROM docket.spawn_tasks('noop', ARRAY(SELECT jsonb_build_object('i', g) FROM generate_series(1, $1) g), 'cpu', 'tenantless', '{}')"
}
case $KIND in
  drain) prep=$(spawn 30000); work="CALL bench.cpu_drain(250)" ;;
  steps) prep=$(spawn 20000); work="CALL bench.cpu_steps(150)" ;;
  claim) prep="SELECT bench.load_direct('cpu', 1, 8000, 'due')"; work="CALL bench.cpu_claim(600)" ;;
  spawn) prep="SELECT 1"; work=$(spawn 100000) ;;
  *) echo "unknown kind $KIND (drain, steps, claim or spawn)" >&2; exit 2 ;;
esac
q -c "DELETE FROM docket.runs" -c "VACUUM docket.runs, docket.run_heads, docket.tasks, docket.task_steps" \
  -c "$prep" -c "VACUUM ANALYZE docket.runs, docket.tasks, docket.task_steps" -c "CHECKPOINT" >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# One session: its pid, its CPU ticks before and after the work.
q -At >"$out" <<SQL
SET synchronous_commit = ${BENCH_SYNC_COMMIT:-on};
SELECT pg_backend_pid() AS pid \gset
\setenv DOCKET_CPU_PID :pid
\! awk '{print \$14 + \$15}' /proc/\$DOCKET_CPU_PID/stat
\o /dev/null
$work;
\o
\! awk '{print \$14 + \$15}' /proc/\$DOCKET_CPU_PID/stat
SQL
ticks=$(getconf CLK_TCK)
awk -v kind="$KIND" -v hz="$ticks" 'NR == 1 {a = $1} END {printf "kind=%s cpu_s=%.2f\n", kind, ($1 - a) / hz}' "$out"
