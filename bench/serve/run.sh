#!/usr/bin/env bash
# bench/serve: the dashboard API's latency (docketctl serve, issue 11) with
# SERVE_FINISHED (1,000,000) finished tasks in the table, against the same
# requests on the same live tasks with no finished history (the baseline,
# measured first in the same run), production durability.
#   bash bench/serve/run.sh            (about 3-5 minutes on 2 cores at the defaults)
# Live work: SERVE_LIVE (2,000) tasks over 4 queues (a quarter delayed an hour,
# 100 claimed), plus the task whose page is measured: 3 checkpointed steps, a
# failed attempt, a retry, completed (about 10 history entries once the task
# layer writes history).
# History: SERVE_FINISHED finished tasks written straight into docket.runs,
# docket.run_heads and docket.tasks (completed, failed, cancelled; a usual
# document and params), updated_at spread over the last 24 hours.
# Each measurement (bench_serve): an in-process server on a loopback port with
# its fixed pool of 3 connections, 10 warm-up requests, then SERVE_REQUESTS
# (1000) requests from SERVE_VIEWERS (1, then 8) concurrent HTTP clients,
# timed at the client from send to the whole body; p50, p95, p99, max.
# Endpoints: /api/overview (queue_stats per request: its 1 s cache is off here),
# /api/tasks/<id> (the task page: task_result, inspect_run, params, steps,
# history) and /api/tasks?limit=50 (the first page of the tasks list).
# Knobs: BENCH_PORT (54366), SERVE_FINISHED, SERVE_LIVE, SERVE_REQUESTS,
# SERVE_VIEWERS ("1 8"), BENCH_FSYNC (on), BENCH_INSTALL (1), BENCH_BUILD
# (client/build), BENCH_OUT (/tmp/docket-bench-serve.txt), BENCH_RESULTS.
# A benchmark, not a test: nothing fails on a figure.
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=${BENCH_PORT:-54366}
FINISHED=${SERVE_FINISHED:-1000000}
LIVE=${SERVE_LIVE:-2000}
REQUESTS=${SERVE_REQUESTS:-1000}
VIEWERS=${SERVE_VIEWERS:-"1 8"}
BUILD=${BENCH_BUILD:-client/build}
OUT=${BENCH_OUT:-/tmp/docket-bench-serve.txt}
RESULTS=${BENCH_RESULTS:-/dev/null}
DB=bench_serve

. bench/lib.sh
bench_cluster_setup "$DB"
cmake -S client -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j2 --target bench_serve >/dev/null

: >"$OUT"
say "docket bench/serve, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
psql -X -q -d postgres -c "CREATE DATABASE $DB"
say "durability: fsync, synchronous_commit, full_page_writes $(q -c 'SHOW fsync')"

q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION docket;
SELECT count(*) FROM generate_series(0, 3) q,
  LATERAL docket.spawn_tasks('noop', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, $LIVE / 4 * 3 / 4)),
                             'q' || q, 'tenantless', '{}') s;
SELECT count(*) FROM generate_series(0, 3) q,
  LATERAL docket.spawn_tasks('noop', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, $LIVE / 4 / 4)),
                             'q' || q, 'tenantless', '{"delay_ms": 3600000}') s;
SELECT count(*) FROM generate_series(0, 3) q, LATERAL docket.claim_tasks('q' || q, 25, 3600000) c;
SQL
# The measured task: its own queue, three steps, a failed attempt, then completed.
run_id=$(q <<'SQL'
SELECT run_id FROM docket.spawn_task('render_report', '{"report": 7, "format": "pdf"}', 'detail',
  'tenantless', '{"max_attempts": 3, "retry": {"kind": "none"}, "headers": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}');
SQL
)
q >/dev/null <<SQL
DO \$\$
DECLARE tok uuid;
BEGIN
  SELECT claim_token INTO tok FROM docket.claim_tasks('detail', 1, 60000);
  PERFORM docket.complete_step('$run_id', tok, 'fetch', '{"rows": 1200}');
  PERFORM docket.fail_task('$run_id', tok, '{"message": "renderer crashed"}');
  SELECT claim_token INTO tok FROM docket.claim_tasks('detail', 1, 60000);
  PERFORM docket.complete_step('$run_id', tok, 'render', '{"pages": 14}');
  PERFORM docket.complete_step('$run_id', tok, 'upload', '{"url": "s3://reports/7.pdf"}');
  PERFORM docket.complete_task('$run_id', tok, '{"ok": true}');
END \$\$;
VACUUM ANALYZE;
SQL

declare -A p99
# run <label> <key>: bench_serve at each viewer count.
run() {
  local v line
  for v in $VIEWERS; do
    "$BUILD/bench_serve" --dsn "dbname=$DB" --run-id "$run_id" --requests "$REQUESTS" --viewers "$v" |
      while read -r line; do
        say "  $1 $line"
        result "serve.$2.$(field "$line" endpoint).v$v.p99_ms" "$(field "$line" p99_ms)"
        echo "$(field "$line" endpoint).v$v $(field "$line" p99_ms)" >>"$OUT.p99.$2"
      done
  done
}
rm -f "$OUT.p99.empty" "$OUT.p99.large"
say ""
say "baseline: no finished history"
run "empty" empty

t=$(date +%s)
q >/dev/null <<SQL
BEGIN;
CREATE TEMP TABLE hist AS
SELECT 'hist-' || lpad(i::text, 8, '0') AS run_id, 'q' || (i % 4) AS queue,
       (ARRAY['completed', 'completed', 'completed', 'failed', 'cancelled'])[i % 5 + 1] AS status,
       now() - ($FINISHED - i) * (interval '24 hours' / $FINISHED) AS u, i
  FROM generate_series(1, $FINISHED) i;
INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash, status, checkpoint_seq,
                         checkpoint_type, started_at, updated_at, document)
SELECT run_id, NULL, queue, 'noop', 'task', status, 2, 'run_completed', u - interval '2 seconds', u,
       jsonb_build_object('id', run_id, 'graph_id', 'noop', 'graph_hash', 'task', 'status', status,
                          'checkpoint_seq', 2, 'attempt', 1, 'result', jsonb_build_object('ok', true, 'i', i),
                          'started_at', u - interval '2 seconds')
  FROM hist;
INSERT INTO docket.run_heads (run_id, tenant_id, queue, graph_id, graph_hash, started_at)
SELECT run_id, NULL, queue, 'noop', 'task', u - interval '2 seconds' FROM hist;
INSERT INTO docket.tasks (run_id, tenant_key, queue, task_name, params, headers, max_attempts,
                          created_at)
SELECT run_id, '', queue, 'noop', jsonb_build_object('i', i), '{}', 5, u - interval '2 seconds' FROM hist;
COMMIT;
VACUUM ANALYZE;
CHECKPOINT;
SQL
say ""
say "history: $FINISHED finished tasks written in $(($(date +%s) - t)) s; docket.runs $(q -c "SELECT pg_size_pretty(pg_total_relation_size('docket.runs'))") with its indexes"
run "$FINISHED finished" large

say ""
say "p99 with $FINISHED finished tasks / p99 with none (same run):"
while read -r key value; do
  base=$(awk -v k="$key" '$1 == k {print $2}' "$OUT.p99.empty")
  say "  $key: $value ms / $base ms = $(ratio "$value" "$base")"
done <"$OUT.p99.large"
rm -f "$OUT.p99.empty" "$OUT.p99.large"
say "(summary also in $OUT)"
