// WorkerPool: executes one queue's tasks. It validates its TaskCatalog and the
// installed schema version before starting, then runs a Poller (claims up to
// free capacity, concurrency + prefetch, into a local queue; woken by NOTIFY
// docket_due, by a runner finishing, and by its poll interval), a fixed set of
// `concurrency` runners taking claims from that queue (threads, or fibers on
// runner_threads threads), each run watched
// by a LeaseWatchdog, and a Flusher that group-commits the step checkpoints and
// completions of all runners. PostgreSQL decides retries, poison and fencing;
// the pool only carries the decisions out.
//
// Connections (fixed, whatever the concurrency): 1 poller (LISTEN, claims,
// releases of prefetched claims), 1 more claimer while there is a backlog
// (claim_connections = 2), flush_connections for the flusher, at most
// runner_connections shared by the runners for their other calls, and 1 the
// watchdog opens when it first has to release a stuck runner's claim: at most
// runner_connections + claim_connections + flush_connections + 1. Each comes
// from options.connection_factory when the caller supplies one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "docket/logger.hpp"
#include "docket/metrics.hpp"
#include "docket/task_catalog.hpp"

namespace docket {

// A caller-owned connection source: returns a new, open connection to the
// database each call (throwing, or returning null, when it cannot). The pool
// owns what it returns: it registers docket's statements on it, sets its
// application_name, closes it at stop() or when it broke, and calls the
// factory again for a replacement. Called from the pool's threads (poller,
// flusher, runners, watchdog), possibly concurrently: it must be thread-safe.
using ConnectionFactory = std::function<std::unique_ptr<pqxx::connection>()>;

// What the WorkerPool hooks receive about a task (docs/operating.md "Hooks").
// The references are valid only during the hook's call: copy what you keep.
struct TaskEvent {
  const std::string& queue;
  const std::string& task_name;
  const std::string& run_id;
  int attempt;
  const Json& params;
  const Json& headers;  // the spawn's headers (say a W3C traceparent)
};

struct TaskEnd {
  enum class Outcome {
    completed,  // the handler returned; its completion went to the group commit
    failed,     // the handler threw; fail_task recorded it (retry_scheduled: retried)
    suspended,  // a durable sleep, an event or child wait
    cancelled,  // the task was cancelled (DK010): unwound, nothing finalized
    lost,       // the claim was lost (DK001) or the outcome is unknown (Ambiguous)
    stopped,    // the watchdog or a shutdown stopped the runner first
  };
  const TaskEvent& task;
  Outcome outcome;
  std::chrono::nanoseconds duration;  // the handler's, invocation to return or throw
  bool retry_scheduled;               // failed: the database scheduled another attempt
  const Json& error;                  // failed: the error document stored; else null
};

struct LeaseWarning {
  const TaskEvent& task;
  std::chrono::milliseconds lease;          // WorkerPoolOptions::lease
  std::chrono::nanoseconds since_progress;  // since its claim or last step/heartbeat
};

// Hooks for tracing and logging; each is optional. They run on the pool's
// threads, so they must be thread-safe and quick; an exception they throw is
// logged and otherwise ignored (it never changes a task's outcome). For each
// started task: on_task_start, then (at most once per lease without progress)
// on_lease_warning, then on_task_end, exactly once.
struct WorkerPoolHooks {
  // On the runner thread, just before the handler is invoked (not for a claim
  // of an unknown task name, which is deferred without starting).
  std::function<void(const TaskEvent&)> on_task_start;
  // On the runner thread, once the outcome is handed to the database: after
  // fail_task, a suspension or a refusal returned; for `completed`, once the
  // completion is queued for the group commit (it commits right after; a
  // commit the database refuses is counted in docket_tasks_lost_total).
  std::function<void(const TaskEnd&)> on_task_end;
  // On the watchdog thread, when a runner made no progress for one lease.
  std::function<void(const LeaseWarning&)> on_lease_warning;
};

const char* to_string(TaskEnd::Outcome outcome) noexcept;
// What a pool does with a stuck runner: a handler that made no confirmed
// progress (step, heartbeat) for two leases. In both cases the runner's context
// is invalidated (nothing it does commits), its claim is released, it is
// counted (PoolCounters::stuck) and logged as an error, and its slot is given
// back only once the database released its claim: over its life a pool never
// runs more than `concurrency` handlers the database still holds claims for.
// A thread blocked in user code cannot be killed; the policies differ in what
// the pool does next (docs/tasks.md "Stuck runners").
enum class OnStuck {
  // The default: the pool stops claiming at once, hands back its prefetched
  // claims, lets the other runners finish within shutdown_grace, and stops;
  // wait() then returns kStuckExitCode. Exit the process with it: a supervisor
  // (systemd, Kubernetes) restarts a clean worker, and the blocked thread goes
  // with the old process. Handlers never exceed concurrency threads.
  exit,
  // Keep going: once the claim is released, a new runner thread takes the
  // slot; the blocked thread stays until it returns (threads and memory are not
  // bounded: for handlers known to return eventually).
  replace,
};

// WorkerPool::wait()'s value after on_stuck = exit stopped the pool (EX_SOFTWARE).
constexpr int kStuckExitCode = 70;

// WorkerPoolOptions::prefetch: sized by the pool (see there).
constexpr int kAutoPrefetch = -1;
// WorkerPoolOptions::flush_max_batch: sized by the pool (see there).
constexpr int kAutoFlushBatch = -1;

struct WorkerPoolOptions {
  std::string conninfo;  // libpq connection string ("" = PG* environment)
  // When set, every connection the pool opens comes from it and conninfo is
  // not used (e.g. connections with the application's own credentials, TLS
  // settings or an external pooler's address).
  ConnectionFactory connection_factory;
  std::string queue = "default";
  int concurrency = 10;  // runners at most
  // Threads that run the handlers. 0 (the default): one thread per runner,
  // `concurrency` of them. N > 0: every runner is a fiber (a stack of its own,
  // switched in user space), and N threads share them, each running one at a
  // time; a runner waiting for its step's group commit or for the next claim
  // gives its thread to another instead of sleeping in the kernel (at
  // concurrency 200 and 3-step tasks, measured in bench/README.md). For
  // handlers that do not block their thread: one that sleeps, waits on a lock
  // or does slow I/O holds up the other runners of its thread while it does
  // (the context's own calls, steps included, are fine), and one that holds a
  // lock across a step can deadlock a runner of its thread waiting for that
  // lock. thread_local variables are shared by the runners of a thread. A
  // runner the watchdog stopped as stuck is replaced on a new thread, as with
  // one thread per runner (docs/tasks.md "Runner threads and fibers").
  int runner_threads = 0;
  // Each fiber's stack (runner_threads > 0), plus a guard page; memory is
  // committed only as a handler touches it.
  std::size_t fiber_stack_size = std::size_t{512} * 1024;
  int batch_size = 100;  // claim at most this many per poll
  // Claims held in the local queue beyond the running ones: kAutoPrefetch (the
  // default) sizes it to the work (below), a number >= 0 fixes it (0: no
  // prefetch). A queued claim is released (handed back to the database) if no
  // runner took it within half the lease, and at shutdown.
  // Automatic: about two claim round trips of work, the rate at which runners
  // start tasks times twice a claim's duration, between 0 and max_prefetch.
  // Short tasks get a deep queue (claiming is not what bounds the pool), slow
  // tasks none (a pool does not hoard work another pool could start).
  int prefetch = kAutoPrefetch;
  int max_prefetch = 100;  // the automatic prefetch's bound
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds lease{30000};  // claim TTL; the watchdog warns at 1x, stops at 2x
  std::chrono::milliseconds shutdown_grace{10000};
  OnStuck on_stuck = OnStuck::exit;  // see OnStuck
  int max_claim_attempts = 10;
  bool listen = true;  // LISTEN docket_due
  // Wake-up: a producer's backend sends at most one NOTIFY per queue per
  // docket.notify_interval_ms (100 ms by default); notify_debounce is the value
  // the producers use. After a NOTIFY the poller claims every
  // debounce_poll_interval until that window has passed, then once more (the
  // trailing edge), so spawns the debounce kept quiet start at once too.
  // debounce_poll_interval = 0: only the trailing-edge claim.
  std::chrono::milliseconds notify_debounce{100};
  std::chrono::microseconds debounce_poll_interval{1000};
  // A waker connection claims by docket.await_tasks while the pool has a free
  // slot and no backlog: the call waits on the server (at most poll_interval,
  // 100 ms, then calls again: a waiting statement holds back vacuum in the
  // whole database, docs/tasks.md), every commit that makes work of the queue
  // due sets its backend's latch (no NOTIFY, no debounce), and it claims in the
  // same call. The poller
  // then ignores NOTIFY and claims inside no debounce window. false, or a
  // server without await_tasks: NOTIFY and the polls above only.
  bool await_tasks = true;
  // Group commit (see docs/tasks.md "Group commit"): one transaction commits up
  // to flush_max_batch step checkpoints and completions, waiting at most
  // flush_max_delay for more to arrive; a runner goes on only once it committed.
  // kAutoFlushBatch (the default): the larger of 100 and concurrency, so one
  // flush can carry a step of every runner; a smaller bound makes runners wait
  // for room in the queue (measured at concurrency 400 and a bound of 100:
  // about 30% fewer 3-step tasks per second, twice the client CPU).
  int flush_max_batch = kAutoFlushBatch;
  std::chrono::microseconds flush_max_delay{2000};
  // UNSAFE, off by default: commit flushes with synchronous_commit = off. A
  // server crash can then lose steps and completions the runners were told were
  // stored (the tasks re-run); only for throwaway workloads.
  bool flush_async_commit = false;
  // Claims, and hand-backs of prefetched claims, commit with synchronous_commit
  // = off: the poller does not wait for their WAL flush. Durability is not
  // lowered: a claim a server crash loses leaves the run due, exactly as if
  // this worker had crashed (the task runs again: at-least-once, as always),
  // and the durable commit of the task's first step or completion flushes its
  // claim first. false: each claim waits for its own flush.
  bool claim_async_commit = true;
  // Connections that claim: 1, the poller claims alone. 2: while claims come
  // back full (a backlog), a second connection claims beside the poller's, so
  // claiming is not one serial pipeline; the two never hold more than
  // concurrency + prefetch claims together.
  int claim_connections = 1;
  // Flush connections (and threads): while one flush commits, the next one
  // can start with what arrived meanwhile (>= 1).
  int flush_connections = 2;
  // Connections the runners share for calls that are not group-committed.
  int runner_connections = 2;
  // Periodic tasks (docs/tasks.md "Periodic tasks"): the poller calls
  // docket.fire_schedules() at most once per schedule_interval (at once when it
  // starts), for every schedule of every queue; each tick spawns one task
  // however many pools fire. false: leave it to pg_cron or another scheduler.
  bool fire_schedules = true;
  std::chrono::milliseconds schedule_interval{1000};
  std::shared_ptr<Logger> logger;  // default: stderr, info
  WorkerPoolHooks hooks;
  // Serve the pool's metrics over HTTP (GET /metrics, Prometheus text format):
  // "host:port" ("127.0.0.1:9464"; ":9464" listens on every interface; port 0
  // picks a free one, see metrics_port()). "" (the default): no listener. A
  // port that cannot be bound makes start() throw. Several pools in one
  // process need one port each, or serve to_prometheus() themselves.
  std::string metrics_address;
};

struct PoolCounters {
  std::uint64_t claimed = 0;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;     // attempts that failed (retried or final)
  std::uint64_t retried = 0;    // of which a retry was scheduled
  std::uint64_t suspended = 0;  // sleeps and waits
  std::uint64_t cancelled = 0;  // unwound by DK010
  std::uint64_t abandoned = 0;  // unknown task names handed back, claims released at shutdown
  std::uint64_t lost = 0;       // claims lost (DK001) or outcomes Ambiguous
  std::uint64_t stuck = 0;      // runners stopped as stuck (watchdog, or blocked at shutdown)
  std::uint64_t released = 0;   // prefetched claims handed back unstarted (half lease, shutdown)
  std::uint64_t fired = 0;      // schedule ticks this pool's poller fired (tasks spawned)
  std::uint64_t active = 0;     // claims held now (running or queued locally)
  double claim_latency_ms = 0;  // mean duration of a claim call
  // The poller's calls of docket.fire_schedules that returned.
  std::uint64_t schedule_checks = 0;
};

class WorkerPool {
 public:
  WorkerPool(TaskCatalog catalog, WorkerPoolOptions options);
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Validates (empty catalog, bad options, unsupported schema -> throws, nothing
  // claimed) and starts the poller.
  void start();
  // Stops claiming, lets active runners finish within the grace period, releases
  // the claims of those that did not, and joins every thread it can.
  void stop();
  bool running() const;
  PoolCounters counters() const;
  // The pool's metrics now (docs/operating.md): cheap, callable from any thread
  // at any time, also before start() and after stop().
  MetricsSnapshot metrics() const;
  // The port the metrics listener is bound to (0: no listener, or not started).
  int metrics_port() const;
  // Blocks until the pool has stopped, by stop() (from another thread) or by
  // the on_stuck = exit policy, and returns exit_code(). For a worker process:
  //   pool.start(); return pool.wait();   // a supervisor restarts it on 70
  int wait();
  // 0, or kStuckExitCode once the on_stuck = exit policy stopped the pool.
  int exit_code() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace docket
