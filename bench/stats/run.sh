#!/usr/bin/env bash
# bench/stats: docket.queue_stats latency beside STATS_FINISHED (1,000,000)
# finished runs, against the same call on the same live tasks with no finished
# history (the baseline, measured first in the same run), production
# durability. Target: under 50 ms with 1,000,000 finished runs (issue 9).
# See bench/README.md ("## bench/stats").
#   bash bench/stats/run.sh            (about 2-4 minutes on 2 cores at the defaults)
# Live work: STATS_LIVE (2,000) tasks over 4 queues, spawned with spawn_tasks:
# a quarter delayed an hour (scheduled), 100 claimed (running), the rest due.
# History: STATS_FINISHED runs written straight into docket.runs as completed,
# failed or cancelled (a finished task's columns and a document of the usual
# size), updated_at spread evenly over the last STATS_HISTORY_HOURS (24) hours,
# so the last minute holds about STATS_FINISHED / (60 * hours) of them (694).
# Each measurement: STATS_CALLS (200) calls in one session after 10 warm-up
# calls (a long-lived session: PL/pgSQL's plan cache settled), each timed with
# clock_timestamp() around the call inside the server; p50, p95 and max.
# For contrast, the query docketctl ran before (a GROUP BY over all of
# docket.runs) is timed the same way, 20 calls.
# Knobs (environment): BENCH_PORT (54364), STATS_FINISHED, STATS_LIVE,
# STATS_HISTORY_HOURS, STATS_CALLS, BENCH_FSYNC (on), BENCH_INSTALL (1),
# BENCH_OUT (/tmp/docket-bench-stats.txt), BENCH_RESULTS (key=value results for
# bench/run_all.sh; default none). A benchmark, not a test: nothing fails on a figure.
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=${BENCH_PORT:-54364}
FINISHED=${STATS_FINISHED:-1000000}
LIVE=${STATS_LIVE:-2000}
HOURS=${STATS_HISTORY_HOURS:-24}
CALLS=${STATS_CALLS:-200}
OUT=${BENCH_OUT:-/tmp/docket-bench-stats.txt}
RESULTS=${BENCH_RESULTS:-/dev/null}

. bench/lib.sh
bench_cluster_setup bench_stats

q() { psql -X -At -v ON_ERROR_STOP=1 "$@"; }

: >"$OUT"
say "docket bench/stats, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
psql -X -q -d postgres -c "CREATE DATABASE bench_stats"
say "durability: fsync, synchronous_commit, full_page_writes $(q -c 'SHOW fsync')"

q >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION docket;
CREATE SCHEMA bench;
-- timings(sql, calls): each call's latency in ms, measured in the server.
CREATE FUNCTION bench.timings(sql text, calls int) RETURNS SETOF double precision
  LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz;
BEGIN
  FOR i IN 1 .. 10 LOOP
    EXECUTE sql;
  END LOOP;
  FOR i IN 1 .. calls LOOP
    t0 := clock_timestamp();
    EXECUTE sql;
    RETURN NEXT extract(epoch FROM clock_timestamp() - t0) * 1000;
  END LOOP;
END \$\$;
SELECT count(*) FROM generate_series(0, 3) q,
  LATERAL docket.spawn_tasks('noop', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, $LIVE / 4 * 3 / 4)),
                             'q' || q, 'tenantless', '{}') s;
SELECT count(*) FROM generate_series(0, 3) q,
  LATERAL docket.spawn_tasks('noop', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, $LIVE / 4 / 4)),
                             'q' || q, 'tenantless', '{"delay_ms": 3600000}') s;
SELECT count(*) FROM generate_series(0, 3) q, LATERAL docket.claim_tasks('q' || q, 25, 3600000) c;
VACUUM ANALYZE;
SQL

# measure <label> <key> <sql> <calls>: p50, p95, max of the calls, in ms.
measure() {
  local line p50 p95 max
  line=$(q -F' ' -c "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
      round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 2), round(max(ms)::numeric, 2)
      FROM bench.timings(\$q\$$3\$q\$, $4) ms")
  read -r p50 p95 max <<<"$line"
  say "$(printf '  %-58s %8s %8s %8s' "$1" "$p50" "$p95" "$max")"
  result "stats.$2.p50_ms" "$p50"
  result "stats.$2.p95_ms" "$p95"
}
stats_sql="SELECT * FROM docket.queue_stats()"
old_sql="SELECT queue, count(*) FILTER (WHERE status = 'running' AND poisoned_at IS NULL
  AND claim_token IS NULL AND wake_at <= docket.now()), count(*) FILTER (WHERE status = 'completed')
  FROM docket.runs GROUP BY queue ORDER BY queue"

say ""
say "live tasks: $(q -c "SELECT string_agg(format('%s due=%s scheduled=%s running=%s', queue, due, scheduled, running), '; ') FROM docket.queue_stats()")"
say ""
say "$(printf '  %-58s %8s %8s %8s' "latency (ms, $CALLS calls after 10 warm-up)" p50 p95 max)"
measure "queue_stats, no finished history (baseline)" empty "$stats_sql" "$CALLS"

t=$(date +%s)
q >/dev/null <<SQL
INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash, status, checkpoint_seq,
                         checkpoint_type, started_at, updated_at, document)
SELECT 'hist-' || lpad(i::text, 8, '0'), NULL, 'q' || (i % 4), 'noop', 'task',
       (ARRAY['completed', 'completed', 'completed', 'failed', 'cancelled'])[i % 5 + 1], 2,
       'run_completed', u - interval '2 seconds', u,
       jsonb_build_object('id', 'hist-' || lpad(i::text, 8, '0'), 'graph_id', 'noop',
                          'graph_hash', 'task', 'status', 'completed', 'checkpoint_seq', 2,
                          'attempt', 1, 'result', jsonb_build_object('ok', true, 'i', i),
                          'started_at', u - interval '2 seconds')
  FROM generate_series(1, $FINISHED) i,
       LATERAL (SELECT now() - ($FINISHED - i) * (interval '1 hour' * $HOURS / $FINISHED) AS u) x;
VACUUM ANALYZE docket.runs;
CHECKPOINT;
SQL
say ""
say "history: $FINISHED finished runs written in $(($(date +%s) - t)) s; docket.runs $(q -c "SELECT pg_size_pretty(pg_total_relation_size('docket.runs'))") with its indexes"
say "last minute: $(q -c "SELECT string_agg(format('%s completed=%s failed=%s', queue, completed_last_minute, failed_last_minute), '; ') FROM docket.queue_stats()")"
measure "queue_stats, $FINISHED finished runs" large "$stats_sql" "$CALLS"
measure "for contrast: GROUP BY over docket.runs (docketctl before)" old "$old_sql" 20

say ""
say "target: queue_stats p95 under 50 ms with $FINISHED finished runs"
say "(summary also in $OUT)"
