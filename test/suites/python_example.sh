#!/usr/bin/env bash
# examples/python end to end: a Python worker (SQL calls only, psycopg2) and the
# producer against a fresh database. Run by scripts/test.sh with PGHOST/PGPORT/
# PGUSER set for its cluster; exits non-zero on any failed check.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3  # Debian's interpreter: python3-psycopg2 is installed for it
DB=docket_pyexample
BATCH_DB=docket_pyexample_batch
APP=docket-example-worker  # the worker's application_name
WORKDIR=$(mktemp -d)
WORKER_LOG=$WORKDIR/worker.log
worker_pid=

cleanup() {
  if [ -n "$worker_pid" ]; then
    kill "$worker_pid" 2>/dev/null || true
    wait "$worker_pid" 2>/dev/null || true
  fi
  rm -rf "$WORKDIR"
}
trap cleanup EXIT

if ! "$PY" -c 'import psycopg2' 2>/dev/null; then
  echo "python3-psycopg2 is not installed for $PY" >&2
  exit 1
fi

# Which SQL functions the worker calls is counted by the server
# (pg_stat_user_functions, track_functions = all): deterministic, unlike timing.
fresh_db() {
  psql -q -X -d postgres -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
    -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" \
    -c "ALTER DATABASE $1 SET track_functions = 'all'"
  psql -q -X -d "$1" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION docket"
}

# Stops the worker, then waits until its sessions have ended: a backend reports
# its function counts before it leaves pg_stat_activity.
stop_worker() {
  kill "$worker_pid"
  wait "$worker_pid" || true
  worker_pid=
  for _ in $(seq 600); do
    n=$(psql -X -At -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$APP'")
    [ "$n" = 0 ] && return 0
    sleep 0.1
  done
  echo "the worker's sessions did not end" >&2
  return 1
}

# calls NAME DB: how often the docket function NAME was called in DB (0 if never).
calls() {
  psql -X -At -d "$2" -c "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions
                           WHERE schemaname = 'docket' AND funcname = '$1'"
}

fresh_db $DB

# A short poll interval: timers (the sleep, the retries, the event timeout) do
# not notify, so the worker finds them by polling.
PGAPPNAME=$APP "$PY" examples/python/worker.py --dsn "dbname=$DB" --queue example \
  --poll-interval 0.2 >"$WORKER_LOG" 2>&1 &
worker_pid=$!

if ! timeout 60 "$PY" examples/python/producer.py --dsn "dbname=$DB" --queue example \
  --timeout 20 >"$WORKDIR/summary.json"; then
  echo "producer failed; worker log:" >&2
  cat "$WORKER_LOG" >&2
  exit 1
fi

stop_worker

"$PY" - "$DB" "$WORKDIR/summary.json" "$WORKER_LOG" \
  "$(calls complete_tasks $DB) $(calls complete_task $DB) $(calls step_states $DB) $(calls complete_step $DB)" \
  <<'PYEOF'
import json
import sys

import psycopg2

db, summary_path, log_path, counts = sys.argv[1:]
complete_tasks_calls, complete_task_calls, step_states_calls, complete_step_calls = map(int, counts.split())
summary = json.load(open(summary_path))
worker_log = open(log_path).read()
tasks = summary["tasks"]
order = summary["order_id"]
conn = psycopg2.connect("dbname=" + db)
cur = conn.cursor()
failures = []


def check(what, ok, detail=""):
    print(("ok     " if ok else "FAILED ") + what + ("" if ok else ": " + str(detail)))
    if not ok:
        failures.append(what)


def effect_runs(name):
    cur.execute("SELECT runs FROM example_effects WHERE effect = %s", (name,))
    row = cur.fetchone()
    return row[0] if row else 0


def step_names(run_id):
    cur.execute("SELECT step_name FROM docket.task_steps WHERE run_id = %s ORDER BY 1", (run_id,))
    return [r[0] for r in cur.fetchall()]


# Steps + retry: the first attempt fails after its steps; the second replays them.
t = tasks["charge_order"]
check("charge_order completed on attempt 2",
      t["state"] == "completed" and t["attempts"] == 2 and t["result"]["attempt"] == 2, t)
check("charge_order result", t["result"]["charged"] == ["book", "pen"], t["result"])
check("charge_order first-attempt error recorded",
      (t["error"] or {}).get("type") == "RuntimeError", t["error"])
for item in ("book", "pen"):
    n = effect_runs("charge %s %s" % (order, item))
    check("step charge %s ran exactly once across attempts" % item, n == 1, n)
check("atomic step ledger ran exactly once", effect_runs("ledger " + order) == 1,
      effect_runs("ledger " + order))
check("occurrence names charge, charge#2",
      step_names(t["run_id"]) == ["charge", "charge#2", "ledger"], step_names(t["run_id"]))
check("idempotency key returned the same task",
      tasks["charge_order (same key)"]["run_id"] == t["run_id"],
      tasks["charge_order (same key)"]["run_id"])
cur.execute("SELECT payload FROM docket.task_events WHERE event_name = %s AND emitted_at IS NOT NULL",
            ("order_charged:" + order,))
row = cur.fetchone()
check("task emitted order_charged", row is not None and row[0] == {"order_id": order}, row)

# Sleep: suspended, claimed again by its timer.
t = tasks["nap"]
check("nap completed after its sleep",
      t["state"] == "completed" and t["result"]["slept_s"] >= 1.4
      and t["result"]["wake_reason"] == "sleep", t)
check("nap steps", step_names(t["run_id"]) == ["nap", "start", "woke"], step_names(t["run_id"]))

# Event: emitted by the producer after the task suspended on it.
t = tasks["await_approval"]
check("await_approval woke by the event",
      t["state"] == "completed" and t["result"]["approved"] is True
      and t["result"]["by"] == "alice" and t["result"]["wake_reason"] == "event", t)
check("first emit true, second emit false",
      summary["first_emit"] is True and summary["second_emit"] is False, summary)
check("request step ran once", effect_runs("request " + order) == 1,
      effect_runs("request " + order))
t = tasks["await_approval (timeout)"]
check("await_approval timed out",
      t["state"] == "completed" and t["result"] == {"order_id": order + "-never",
                                                    "approved": False, "reason": "timeout"}, t)

# Retry budget used up.
t = tasks["always_fails"]
check("always_fails failed after 2 attempts",
      t["state"] == "failed" and t["attempts"] == 2 and t["error"]["type"] == "ValueError"
      and "attempt 2" in t["error"]["message"], t)

# Cancellation while running: the worker unwinds and does not finalize.
t = tasks["long_job"]
check("long_job cancelled", t["state"] == "cancelled" and summary["cancelled"] is True, t)
cur.execute("SELECT document->'cancel_reason' FROM docket.runs WHERE run_id = %s", (t["run_id"],))
check("cancel reason kept", cur.fetchone()[0] == "demo: no longer needed")
check("worker saw the cancellation", "%s: cancelled" % t["run_id"] in worker_log)
check("worker did not finalize the cancelled task",
      "%s: completed" % t["run_id"] not in worker_log
      and "%s: failed" % t["run_id"] not in worker_log)
check("long_job ran before it was cancelled", effect_runs("long_job tick") >= 1)

# Unknown task name: handed back without using an attempt.
t = tasks["unknown_task"]
cur.execute("SELECT claim_abandons FROM docket.runs WHERE run_id = %s", (t["run_id"],))
abandons = cur.fetchone()[0]
check("unknown task deferred without using an attempt",
      t["state"] == "sleeping" and t["attempts"] == 1 and abandons >= 1, (t, abandons))

# The batched calls: completions through complete_tasks, steps replayed from
# claim_tasks' steps column (counted by the server, not timed).
check("completions go through complete_tasks", complete_tasks_calls >= 1, complete_tasks_calls)
check("complete_task is never called", complete_task_calls == 0, complete_task_calls)
check("step_states is never called (claim_tasks returns the steps)", step_states_calls == 0,
      step_states_calls)
check("steps are stored with complete_step", complete_step_calls >= 1, complete_step_calls)

check("no tracebacks in the worker log", "Traceback" not in worker_log)
if failures:
    print("\nworker log:\n" + worker_log)
    sys.exit(1)
print("python example: all checks passed")
PYEOF

# Batches: 20 no-op tasks, all due before the worker starts; with --batch 5 it
# claims 5, runs them, and completes them with the next claim: exactly 4
# complete_tasks calls of 5 tasks each, whatever the timing.
fresh_db $BATCH_DB
psql -q -X -d $BATCH_DB -v ON_ERROR_STOP=1 \
  -c "SELECT count(*) FROM generate_series(1, 20) i, docket.spawn_task('noop', jsonb_build_object('i', i), 'batch') s" \
  >/dev/null
BATCH_LOG=$WORKDIR/batch_worker.log
PGAPPNAME=$APP "$PY" examples/python/worker.py --dsn "dbname=$BATCH_DB" --queue batch --batch 5 \
  --poll-interval 0.2 >"$BATCH_LOG" 2>&1 &
worker_pid=$!
done_count=0
for _ in $(seq 600); do
  done_count=$(psql -X -At -d $BATCH_DB -c "SELECT count(*) FROM docket.runs WHERE status = 'completed'")
  [ "$done_count" = 20 ] && break
  sleep 0.1
done
stop_worker
batch_ok=1
report() {  # report WHAT OK DETAIL
  if [ "$2" = 1 ]; then echo "ok     $1"; else echo "FAILED $1: $3"; batch_ok=0; fi
}
report "batch: the 20 no-op tasks completed" "$([ "$done_count" = 20 ] && echo 1)" "$done_count"
n=$(calls complete_tasks $BATCH_DB)
report "batch: 4 complete_tasks calls of 5 tasks each" "$([ "$n" = 4 ] && echo 1)" "$n calls"
n=$(psql -X -At -d $BATCH_DB -c "SELECT count(DISTINCT updated_at) FROM docket.runs WHERE status = 'completed'")
report "batch: completed in 4 transactions (4 distinct completion times)" "$([ "$n" = 4 ] && echo 1)" "$n"
n=$(calls complete_task $BATCH_DB)
report "batch: complete_task never called" "$([ "$n" = 0 ] && echo 1)" "$n calls"
n=$(grep -c ": completed$" "$BATCH_LOG" || true)
report "batch: the worker logged 20 completions" "$([ "$n" = 20 ] && echo 1)" "$n"
if [ "$batch_ok" != 1 ]; then
  echo "batch worker log:"; cat "$BATCH_LOG"
  exit 1
fi
psql -q -X -d postgres -c "DROP DATABASE $BATCH_DB"
echo "python example: batches passed"
