#!/usr/bin/python3
"""A docket producer in Python: spawn tasks, emit events, cancel, read results.

No worker process is needed to produce work; these are plain SQL calls. Run
worker.py on the same queue to execute the example tasks:

    python3 worker.py --queue example &
    python3 producer.py --queue example

Needs only Debian's python3-psycopg2.
"""

import argparse
import json
import sys
import time
import uuid

import psycopg2
import psycopg2.extras

FINISHED = ("completed", "failed", "cancelled")


def spawn(cur, task_name, params, queue="default", owner_scope="tenantless", **options):
    """Spawns a task in cur's transaction; returns (run_id, created).

    options: max_attempts, retry {kind, base_ms, factor, max_ms, jitter},
    idempotency_key, run_at or delay_ms, headers, cancel_after_ms, max_duration_ms.
    """
    cur.execute("SELECT run_id, created FROM docket.spawn_task(%s, %s, %s, %s, %s)",
                (task_name, psycopg2.extras.Json(params), queue, owner_scope,
                 psycopg2.extras.Json(options)))
    return cur.fetchone()


def emit(cur, event_name, payload=None, owner_scope="tenantless"):
    """Emits an event; True when this emit was the first of that name."""
    cur.execute("SELECT docket.emit_event(%s, %s, %s)",
                (event_name, psycopg2.extras.Json(payload), owner_scope))
    return cur.fetchone()[0]


def cancel(cur, run_id, reason=None, scope="tenantless"):
    """Cancels a task; True when this call cancelled it (False: already finished)."""
    cur.execute("SELECT docket.cancel_task(%s, %s, %s)", (scope, run_id, reason))
    return cur.fetchone()[0]


def result(cur, run_id, scope="tenantless"):
    """{state, result, error, attempts, task_name, queue}, or None if not visible."""
    cur.execute("SELECT docket.task_result(%s, %s)", (scope, run_id))
    return cur.fetchone()[0]


def wait_for(cur, run_id, states, timeout=30.0, interval=0.05):
    """Polls task_result until the task is in one of states; returns the result."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = result(cur, run_id)
        if outcome["state"] in states:
            return outcome
        if time.monotonic() > deadline:
            raise TimeoutError("task %s still %s after %ss (wanted %s)"
                               % (run_id, outcome["state"], timeout, "/".join(states)))
        time.sleep(interval)


def wait_until(cur, query, timeout=30.0, interval=0.05):
    """Polls query until it returns true."""
    deadline = time.monotonic() + timeout
    while True:
        cur.execute(query)
        row = cur.fetchone()
        if row is not None and row[0]:
            return
        if time.monotonic() > deadline:
            raise TimeoutError("still not true after %ss: %s" % (timeout, query))
        time.sleep(interval)


def demo(dsn, queue, timeout):
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    cur = conn.cursor()
    order = uuid.uuid4().hex[:8]  # a fresh order per run, so events do not collide
    fast_retry = {"kind": "fixed", "base_ms": 200}

    # Spawning joins the caller's transaction: the order row and its task
    # commit together, or not at all.
    conn.autocommit = False
    with conn:
        cur.execute("CREATE TABLE IF NOT EXISTS example_orders (id text PRIMARY KEY)")
        cur.execute("INSERT INTO example_orders VALUES (%s)", (order,))
        charge, _ = spawn(cur, "charge_order", {"order_id": order, "items": ["book", "pen"]},
                          queue, max_attempts=3, retry=fast_retry,
                          idempotency_key="charge-" + order, headers={"source": "demo"})
    conn.autocommit = True

    runs = {
        "charge_order": charge,
        "charge_order (same key)": spawn(cur, "charge_order", {}, queue,
                                         idempotency_key="charge-" + order)[0],
        "nap": spawn(cur, "nap", {"seconds": 1.5}, queue)[0],
        "await_approval": spawn(cur, "await_approval", {"order_id": order}, queue)[0],
        "await_approval (timeout)": spawn(cur, "await_approval",
                                          {"order_id": order + "-never", "timeout_s": 1},
                                          queue)[0],
        "always_fails": spawn(cur, "always_fails", {}, queue, max_attempts=2,
                              retry=fast_retry)[0],
        "long_job": spawn(cur, "long_job", {"ticks": 600}, queue)[0],
        "unknown_task": spawn(cur, "not_deployed_yet", {}, queue)[0],
    }
    for label, run_id in runs.items():
        print("spawned %-26s %s" % (label, run_id), file=sys.stderr)

    # The approval arrives after the task has suspended on it.
    wait_for(cur, runs["await_approval"], ("waiting",), timeout)
    print("await_approval is waiting; emitting approved:%s" % order, file=sys.stderr)
    first = emit(cur, "approved:" + order, {"by": "alice"})
    again = emit(cur, "approved:" + order, {"by": "mallory"})  # changes nothing

    # Cancel the long job while a worker runs it (once it has done some work:
    # a claimed task may not have started yet): the worker stops at its next call.
    wait_for(cur, runs["long_job"], ("running",), timeout)
    wait_until(cur, "SELECT runs >= 1 FROM example_effects WHERE effect = 'long_job tick'",
               timeout)
    cancelled = cancel(cur, runs["long_job"], "demo: no longer needed")

    summary = {"order_id": order, "first_emit": first, "second_emit": again,
               "cancelled": cancelled, "tasks": {}}
    for label, run_id in runs.items():
        wanted = ("sleeping", "pending") if label == "unknown_task" else FINISHED
        outcome = wait_for(cur, run_id, wanted, timeout)
        outcome["run_id"] = run_id
        summary["tasks"][label] = outcome
        print("%-26s %-9s %s" % (label, outcome["state"],
                                 json.dumps(outcome["result"] or outcome["error"])[:100]),
              file=sys.stderr)
    conn.close()
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description="Spawn the example tasks and report outcomes.")
    parser.add_argument("--dsn", default="", help="libpq connection string (PG* variables apply)")
    parser.add_argument("--queue", default="default")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait per task")
    args = parser.parse_args(argv)
    summary = demo(args.dsn, args.queue, args.timeout)
    json.dump(summary, sys.stdout, indent=2, default=str)
    print()


if __name__ == "__main__":
    main()
