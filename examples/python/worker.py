#!/usr/bin/python3
"""A docket worker in Python: a loop of SQL calls, nothing else.

Copy the part above "Example tasks" into your project, register your own task
functions, and run one or more worker processes per queue. PostgreSQL decides
everything durable (claims, retries, fencing, cancellation); this file only
carries those decisions out.

    worker = Worker("dbname=app", queue="default")

    @worker.task("send_invoice")
    def send_invoice(ctx, params):
        invoice = ctx.step("render", lambda: render(params["customer"]))
        ctx.step("send", lambda: send(invoice))
        return {"sent": True}

    worker.run()

Needs only Debian's python3-psycopg2.
"""

import argparse
import json
import logging
import select
import signal
import sys
import time
import traceback

import psycopg2
import psycopg2.extras

log = logging.getLogger("docket.worker")

NOTIFY_CHANNEL = "docket_due"  # the extension notifies it with the queue name


# --------------------------------------------------------------------------
# Control signals. They derive from BaseException so that a handler's
# `except Exception:` cannot swallow them, and each carries the context that
# raised it: the runner only obeys a signal of the task it is running.
# --------------------------------------------------------------------------

class _Unwind(BaseException):
    def __init__(self, context, why):
        super().__init__(why)
        self.context = context
        self.why = why


class _Suspended(_Unwind):
    """The task now sleeps or waits; its claim is already released."""


class _Stopped(_Unwind):
    """The database took the task away (cancelled, claim lost): do not finalize."""


class EventTimeout(Exception):
    """await_event's timeout passed before the event was emitted.

    The timeout is stored as the step's outcome, so every replay of the task
    raises it again at the same place: catch it to take another path.
    """


def _json(value):
    return psycopg2.extras.Json(value)


# --------------------------------------------------------------------------
# Context: what a task function uses to checkpoint, sleep, wait and emit.
# --------------------------------------------------------------------------

class Context:
    """One execution of one claimed task.

    The task function runs from the beginning on every attempt and after every
    sleep or wait. Completed steps come back with the claim (claim_tasks'
    `steps` column: no extra round trip), so they return their stored value
    instead of running again.
    """

    def __init__(self, conn, claim):
        self.conn = conn  # autocommit; also usable by the task for its own queries
        self.run_id = claim["run_id"]
        self.claim_token = claim["claim_token"]
        self.task_name = claim["task_name"]
        self.params = claim["params"]
        self.headers = claim["headers"]
        self.attempt = claim["attempt"]
        self.wake_reason = claim["wake_reason"]
        self._steps = dict(claim.get("steps") or {})  # step name -> stored value
        self._seen = {}  # step name -> occurrences in this execution

    # -- names ---------------------------------------------------------------

    def _occurrence(self, name):
        """Deterministic step names: "charge", then "charge#2", "charge#3"..."""
        n = self._seen.get(name, 0) + 1
        self._seen[name] = n
        return name if n == 1 else "%s#%d" % (name, n)

    # -- SQL -------------------------------------------------------------------

    def _call(self, sql, args, cur=None):
        """One fenced call; turns the database's "not yours any more" into a stop."""
        try:
            if cur is not None:
                cur.execute(sql, args)
                return cur.fetchall()
            with self.conn.cursor() as c:
                c.execute(sql, args)
                return c.fetchall()
        except psycopg2.Error as e:
            if e.pgcode == "DK010":  # message: "cancelled: ..."
                raise _Stopped(self, e.diag.message_primary) from None
            if e.pgcode in ("DK001", "DK003"):  # another worker owns it now, or it is gone
                raise _Stopped(self, "claim lost: " + e.diag.message_primary) from None
            raise

    # -- steps ---------------------------------------------------------------

    def step(self, name, fn):
        """Runs fn() and stores its result; later executions get the stored result.

        The result must be JSON-serializable. An effect inside fn that happens
        before a crash, but whose step was not stored yet, can happen again: use
        idempotency_key(name) with services that deduplicate.
        """
        key = self._occurrence(name)
        if key in self._steps:
            return self._steps[key]
        value = fn()
        [(stored,)] = self._call(
            "SELECT docket.complete_step(%s, %s, %s, %s)",
            (self.run_id, self.claim_token, key, _json(value)))
        self._steps[key] = stored  # the first stored value wins
        return stored

    def atomic_step(self, name, fn):
        """Like step(), but fn(cursor) runs in the transaction that stores the step.

        For effects in this same database: they commit if and only if the step
        does, so they happen exactly once.
        """
        key = self._occurrence(name)
        if key in self._steps:
            return self._steps[key]
        self.conn.autocommit = False
        try:
            with self.conn:  # commit on success, rollback on any exception
                with self.conn.cursor() as cur:
                    value = fn(cur)
                    [(stored,)] = self._call(
                        "SELECT docket.complete_step(%s, %s, %s, %s)",
                        (self.run_id, self.claim_token, key, _json(value)), cur)
        finally:
            self.conn.autocommit = True
        self._steps[key] = stored
        return stored

    def idempotency_key(self, name):
        """A key that is the same on every attempt, for the next occurrence of name."""
        n = self._seen.get(name, 0) + 1
        return "%s:%s" % (self.run_id, name if n == 1 else "%s#%d" % (name, n))

    def heartbeat(self):
        """Extends the claim (the lease) without storing a step."""
        self._call("SELECT docket.heartbeat(%s, %s)", (self.run_id, self.claim_token))

    # -- sleeps --------------------------------------------------------------

    def sleep_until(self, wake_at, name="sleep"):
        """Durable sleep until wake_at (an aware datetime).

        The first wake time is stored, so a replay does not restart the sleep.
        Returns at once when the time has come; otherwise the task is suspended
        (the function unwinds, the worker slot is freed) and runs again then.
        """
        key = self._occurrence(name)
        [(status, _)] = self._call(
            "SELECT * FROM docket.sleep_until(%s, %s, %s, %s)",
            (self.run_id, self.claim_token, key, wake_at))
        if status == "suspended":
            raise _Suspended(self, "sleeping (%s)" % key)

    def sleep_for(self, seconds, name="sleep"):
        """Durable sleep measured on the database clock (docket.now())."""
        key = self._occurrence(name)
        [(status, _)] = self._call(
            "SELECT * FROM docket.sleep_until(%s, %s, %s,"
            " docket.now() + make_interval(secs => %s))",
            (self.run_id, self.claim_token, key, seconds))
        if status == "suspended":
            raise _Suspended(self, "sleeping (%s)" % key)

    # -- events --------------------------------------------------------------

    def await_event(self, event_name, timeout=None, name=None):
        """Returns the event's payload, waiting (suspended) until it is emitted.

        timeout is in seconds; past it EventTimeout is raised (on this and every
        later replay). The event is looked up in the task's owner scope.
        """
        key = self._occurrence(name or "event:" + event_name)
        timeout_ms = None if timeout is None else int(timeout * 1000)
        [(status, payload)] = self._call(
            "SELECT * FROM docket.await_event(%s, %s, %s, %s, %s)",
            (self.run_id, self.claim_token, key, event_name, timeout_ms))
        if status == "received":
            return payload
        if status == "timeout":
            raise EventTimeout("event %r not emitted within %ss" % (event_name, timeout))
        raise _Suspended(self, "waiting for event %r" % event_name)

    def emit_event(self, event_name, payload=None, owner_scope="tenantless"):
        """Emits an event (the first emit of a name wins); True if this one was first.

        Safe to replay: a second emit of the same name changes nothing.
        """
        with self.conn.cursor() as cur:
            cur.execute("SELECT docket.emit_event(%s, %s, %s)",
                        (event_name, _json(payload), owner_scope))
            return cur.fetchone()[0]


# --------------------------------------------------------------------------
# Worker: the poller and the runner in one small loop.
# --------------------------------------------------------------------------

class Worker:
    """Claims tasks of one queue and runs them one at a time.

    Completions are batched: a finished task's result is sent with
    complete_tasks in the same transaction as the next claim, so a task costs
    one transaction instead of two. With batch > 1 the worker claims up to batch
    tasks at once, runs them one after another and completes them together;
    the claimed tasks wait their turn, so use it for short tasks (a claim must
    not wait longer than its lease). For parallelism run several processes;
    each claims only what it can run.
    """

    def __init__(self, dsn, queue="default", lease_ms=30000, poll_interval=1.0,
                 max_defers=20, batch=1):
        self.dsn = dsn
        self.queue = queue
        self.lease_ms = lease_ms  # a task must make progress (a step, a heartbeat) within it
        self.poll_interval = poll_interval  # timers (sleeps, retries) do not notify
        self.max_defers = max_defers
        self.batch = batch  # claim_limit, and so the largest complete_tasks batch
        self._pending = []  # (run_id, claim_token, result JSON text) not yet completed
        self.registry = {}  # task name -> function(ctx, params)
        self._stopping = False
        self.conn = None
        self.listener = None

    def task(self, name):
        """Decorator: registers fn(ctx, params) under a durable task name."""
        def register(fn):
            self.registry[name] = fn
            return fn
        return register

    def stop(self, *_):
        """Stops claiming; the task running now finishes first."""
        self._stopping = True

    def _connect(self):
        self.conn = psycopg2.connect(self.dsn)
        self.conn.autocommit = True  # every call is its own transaction
        self.listener = psycopg2.connect(self.dsn)
        self.listener.autocommit = True
        with self.listener.cursor() as cur:
            cur.execute("LISTEN " + NOTIFY_CHANNEL)

    def _close(self):
        for c in (self.conn, self.listener):
            if c is not None:
                c.close()
        self.conn = self.listener = None

    def run(self):
        while not self._stopping:
            try:
                if self.conn is None:
                    self._connect()
                if not self._run_batch():
                    self._wait()
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
                # An in-flight call may or may not have committed; the claim
                # expires after lease_ms and the database recovers the task
                # (completions not flushed yet run again: at least once).
                log.warning("connection lost (%s); reconnecting", str(e).strip().splitlines()[0])
                self._close()
                time.sleep(self.poll_interval)
        try:
            if self._pending and self.conn is not None:
                self._flush_and_claim(0)  # finished tasks are not left to expire
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
            log.warning("final flush lost (%s)", str(e).strip().splitlines()[0])
        self._close()

    def _run_batch(self):
        """Completes the finished tasks and claims the next ones, then runs them.

        False when nothing was due.
        """
        claims = self._flush_and_claim(self.batch)
        for claim in claims:
            self._execute(claim)
        return bool(claims)

    def _flush_and_claim(self, claim_limit):
        """One transaction: complete_tasks for the pending results, then claim_tasks.

        complete_tasks never raises for a task that was taken away: each element
        gets its own outcome (completed, stale, cancelled, not_found).
        """
        pending, self._pending = self._pending, []
        outcomes, claims = [], []
        self.conn.autocommit = False
        try:
            with self.conn:  # commit on success, rollback on any exception
                with self.conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
                    if pending:
                        cur.execute(
                            "SELECT run_id, outcome FROM docket.complete_tasks("
                            "%s::text[], %s::uuid[], %s::jsonb[])",
                            ([p[0] for p in pending], [p[1] for p in pending],
                             [p[2] for p in pending]))
                        outcomes = cur.fetchall()
                    if claim_limit > 0:
                        cur.execute("SELECT * FROM docket.claim_tasks(%s, %s, %s)",
                                    (self.queue, claim_limit, self.lease_ms))
                        claims = cur.fetchall()
        finally:
            self.conn.autocommit = True
        for row in outcomes:
            if row["outcome"] == "completed":
                log.info("%s: completed", row["run_id"])
            else:  # someone else owns the task's outcome now
                log.info("%s: not completed, %s", row["run_id"], row["outcome"])
        return claims

    def _wait(self):
        """Sleeps until a notification for our queue or the poll interval."""
        ready, _, _ = select.select([self.listener], [], [], self.poll_interval)
        if ready:
            self.listener.poll()
            del self.listener.notifies[:]  # any notification is a reason to claim

    def _execute(self, claim):
        run_id, token, name = claim["run_id"], claim["claim_token"], claim["task_name"]
        fn = self.registry.get(name)
        if fn is None:
            # A rolling deploy: hand it back without using an attempt.
            with self.conn.cursor() as cur:
                cur.execute("SELECT docket.defer_task(%s, %s, %s)",
                            (run_id, token, self.max_defers))
                log.info("%s: unknown task %r deferred (%s)", run_id, name, cur.fetchone()[0])
            return

        ctx = Context(self.conn, claim)
        try:
            log.info("%s: %s attempt %d (%s)", run_id, name, claim["attempt"],
                     claim["wake_reason"])
            result = fn(ctx, claim["params"])
        except _Unwind as signal_:
            if signal_.context is not ctx:  # not ours: a bug in the task, fail it
                self._fail(ctx, signal_)
            else:
                log.info("%s: %s", run_id, signal_.why)
            return
        except Exception as e:
            if self.conn.closed:
                raise  # our connection is gone: run() reconnects, the claim expires
            self._fail(ctx, e)
            return

        try:
            text = json.dumps(result)
        except (TypeError, ValueError) as e:  # not JSON: a bug in the task, fail it
            self._fail(ctx, e)
            return
        # Completed with the next claim (complete_tasks), in one transaction.
        self._pending.append((run_id, str(token), text))

    def _fail(self, ctx, exc):
        error = {
            "type": type(exc).__name__,
            "message": str(exc)[:2000],
            "traceback": "".join(traceback.format_exception(exc))[-4000:],
        }
        try:
            [(disposition, retry_at)] = ctx._call(
                "SELECT * FROM docket.fail_task(%s, %s, %s)",
                (ctx.run_id, ctx.claim_token, _json(error)))
            log.info("%s: failed (%s: %s) -> %s%s", ctx.run_id, error["type"],
                     error["message"], disposition,
                     " at %s" % retry_at.isoformat() if retry_at else "")
        except _Stopped as stop:
            log.info("%s: failure not recorded, %s", ctx.run_id, stop.why)


# --------------------------------------------------------------------------
# Example tasks (used by producer.py and test/suites/python_example.sh).
# Each step bumps a row of example_effects, so a test can count how often
# each step really ran.
# --------------------------------------------------------------------------

EXAMPLE_SCHEMA = """
CREATE TABLE IF NOT EXISTS example_effects (effect text PRIMARY KEY, runs int NOT NULL)
"""


def effect(ctx, name):
    """A visible side effect: counts how often it ran."""
    with ctx.conn.cursor() as cur:
        cur.execute("INSERT INTO example_effects VALUES (%s, 1) ON CONFLICT (effect)"
                    " DO UPDATE SET runs = example_effects.runs + 1", (name,))


def register_examples(worker):
    @worker.task("charge_order")
    def charge_order(ctx, params):
        order = params["order_id"]
        charged = []
        for item in params["items"]:  # steps "charge", "charge#2", ...
            def charge():
                effect(ctx, "charge %s %s" % (order, item))
                return {"item": item, "ok": True}
            charged.append(ctx.step("charge", charge)["item"])

        def ledger(cur):  # commits together with its checkpoint
            cur.execute("INSERT INTO example_effects VALUES (%s, 1)", ("ledger %s" % order,))
            return len(charged)
        ctx.atomic_step("ledger", ledger)

        if ctx.attempt == 1:
            raise RuntimeError("card network timed out (simulated, first attempt only)")
        ctx.emit_event("order_charged:%s" % order, {"order_id": order})
        return {"order_id": order, "charged": charged, "attempt": ctx.attempt}

    @worker.task("nap")
    def nap(ctx, params):
        started = ctx.step("start", time.time)
        ctx.sleep_for(params["seconds"], name="nap")
        woke = ctx.step("woke", time.time)
        return {"slept_s": round(woke - started, 3), "wake_reason": ctx.wake_reason}

    @worker.task("await_approval")
    def await_approval(ctx, params):
        order = params["order_id"]
        ctx.step("request", lambda: effect(ctx, "request %s" % order))
        try:
            approval = ctx.await_event("approved:%s" % order, timeout=params.get("timeout_s"))
        except EventTimeout:
            return {"order_id": order, "approved": False, "reason": "timeout"}
        return {"order_id": order, "approved": True, "by": approval["by"],
                "wake_reason": ctx.wake_reason}

    @worker.task("always_fails")
    def always_fails(ctx, params):
        raise ValueError("attempt %d of a task that never succeeds" % ctx.attempt)

    @worker.task("noop")
    def noop(ctx, params):
        return {"i": params.get("i")}

    @worker.task("long_job")
    def long_job(ctx, params):
        for _ in range(params.get("ticks", 600)):
            ctx.heartbeat()  # unwinds the function once the task is cancelled
            effect(ctx, "long_job tick")
            time.sleep(0.05)
        return {"finished": True}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run a docket worker with the example tasks.")
    parser.add_argument("--dsn", default="", help="libpq connection string (PG* variables apply)")
    parser.add_argument("--queue", default="default")
    parser.add_argument("--poll-interval", type=float, default=1.0)
    parser.add_argument("--lease-ms", type=int, default=30000)
    parser.add_argument("--batch", type=int, default=1,
                        help="tasks claimed (and completed) per transaction")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s worker %(message)s")

    worker = Worker(args.dsn, queue=args.queue, lease_ms=args.lease_ms,
                    poll_interval=args.poll_interval, batch=args.batch)
    register_examples(worker)
    with psycopg2.connect(args.dsn) as conn, conn.cursor() as cur:
        cur.execute(EXAMPLE_SCHEMA)
    conn.close()

    signal.signal(signal.SIGTERM, worker.stop)
    signal.signal(signal.SIGINT, worker.stop)
    log.info("serving queue %r (tasks: %s)", args.queue, ", ".join(sorted(worker.registry)))
    worker.run()
    log.info("stopped")


if __name__ == "__main__":
    main()
