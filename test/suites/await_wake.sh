#!/usr/bin/env bash
# docket.await_due and docket.await_tasks wait on their backend's latch; a
# transaction that makes work of the queue due sets it when it commits (no
# NOTIFY). An isolation spec cannot order a commit inside a latch wait (the
# tester proceeds past lock waits only), so this suite drives two connections
# from Python (psycopg2): the waiter calls the function in a thread; the
# producer, inside its transaction, waits until pg_stat_activity shows the
# waiter in its wait (wait event type Extension, shown from before the
# waiter's first look), then commits or rolls back. Waits are one minute
# where a wake-up is expected (a missed one returns false, or no row, after
# the minute) and 4 s where none is. Run by scripts/test.sh with
# PGHOST/PGPORT/PGUSER set for its cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3
DB=docket_await_wake
psql -q -X -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
psql -q -X -d "$DB" -c "CREATE EXTENSION docket"

DB=$DB "$PY" - <<'PYEOF'
import os
import sys
import threading

import psycopg2

DSN = "dbname=" + os.environ["DB"]
failures = []


def check(name, ok, detail=""):
    print(("ok     " if ok else "FAILED ") + name + (": " + detail if detail and not ok else ""))
    if not ok:
        failures.append(name)


def connect():
    c = psycopg2.connect(DSN)
    c.autocommit = True
    return c


def waiting(producer, waiter_pid):
    """Blocks until the waiter's backend shows its wait (no fixed sleep: it
    polls the observable state, for at most 60 s)."""
    with producer.cursor() as cur:
        for _ in range(6000):
            cur.execute("SELECT pg_stat_clear_snapshot()")
            cur.execute("SELECT wait_event_type = 'Extension' FROM pg_stat_activity "
                        "WHERE pid = %s AND query LIKE '%%docket.await_%%'", (waiter_pid,))
            row = cur.fetchone()
            if row and row[0]:
                return True
            cur.execute("SELECT pg_sleep(0.01)")
    return False


def scenario(name, queue, call, produce, end, expect):
    """call: the waiter's SQL (one row back); produce: the producer's SQL in
    its open transaction; end: COMMIT or ROLLBACK; expect(rows) -> bool."""
    waiter, producer = connect(), connect()
    try:
        with waiter.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            pid = cur.fetchone()[0]
        result = {}

        def run():
            with waiter.cursor() as cur:
                cur.execute(call, (queue,))
                result["rows"] = cur.fetchall()

        with producer.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute(produce)
        thread = threading.Thread(target=run)
        thread.start()
        seen = waiting(producer, pid)
        with producer.cursor() as cur:
            cur.execute(end)
        thread.join()
        check(name + " (the waiter was seen waiting)", seen)
        check(name, expect(result.get("rows")), repr(result.get("rows")))
    finally:
        waiter.close()
        producer.close()


# Each scenario waits on a queue of its own (a task left due would end the
# next one's wait at once).
def spawn(queue):
    return "SELECT docket.spawn_task('job', '{\"n\": 1}', '%s')" % queue


scenario("await_due: a commit that makes work of the queue due wakes it (true)",
         "wake-1", "SELECT docket.await_due(%s, 60000)", spawn("wake-1"), "COMMIT",
         lambda rows: rows == [(True,)])
scenario("await_tasks: woken by the commit, it claims the task in the same call",
         "wake-2", "SELECT task_name, params::text FROM docket.await_tasks(%s, 10, 30000, 10, 60000)",
         spawn("wake-2"), "COMMIT", lambda rows: rows == [("job", '{"n": 1}')])
scenario("await_due: a rolled-back spawn does not end the wait (false at the timeout)",
         "wake-3", "SELECT docket.await_due(%s, 4000)", spawn("wake-3"), "ROLLBACK",
         lambda rows: rows == [(False,)])
scenario("await_due: a commit in another queue does not end the wait",
         "wake-4", "SELECT docket.await_due(%s, 4000)", spawn("wake-4-other"), "COMMIT",
         lambda rows: rows == [(False,)])

# A queue whose marker (the low 16 bits of its hash, hashtext's) is wake-5's:
# its commit sets the waiter's latch, the waiter looks again, finds nothing of
# its own queue and waits on.
with connect().cursor() as cur:
    cur.execute("SELECT 'twin-' || g FROM generate_series(1, 1000000) g "
                "WHERE hashtext('twin-' || g) & 65535 = hashtext('wake-5') & 65535 LIMIT 1")
    twin = cur.fetchone()[0]
scenario("await_due: a wake-up without work of its queue (%s shares its marker) waits on" % twin,
         "wake-5", "SELECT docket.await_due(%s, 4000)", spawn(twin), "COMMIT",
         lambda rows: rows == [(False,)])

# Two-phase commit: a spawning transaction can be prepared (docket sends its
# NOTIFY at the commit, so PREPARE TRANSACTION does not refuse it), and COMMIT
# PREPARED makes its work due for the next look. That commit sets no latch
# (docs/run-store.md, "Waking workers"); that is not asserted here: a latch
# is also set for reasons of PostgreSQL's own, after which the look finds the
# work anyway.
with connect().cursor() as cur:
    cur.execute("BEGIN")
    cur.execute(spawn("wake-6"))
    cur.execute("PREPARE TRANSACTION 'docket_await_wake_6'")
    cur.execute("SELECT docket.await_due('wake-6', 0)")
    check("await_due: a prepared spawn is not due before COMMIT PREPARED", cur.fetchone() == (False,))
    cur.execute("COMMIT PREPARED 'docket_await_wake_6'")
    cur.execute("SELECT docket.await_due('wake-6', 0)")
    check("await_due: after COMMIT PREPARED the next look finds its work", cur.fetchone() == (True,))

sys.exit(1 if failures else 0)
PYEOF
psql -q -X -d postgres -c "DROP DATABASE IF EXISTS $DB"
