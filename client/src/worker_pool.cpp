#include "docket/worker_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "docket/errors.hpp"
#include "docket/sql.hpp"
#include "lease_watchdog.hpp"
#include "metrics_server.hpp"
#include "pool_shared.hpp"
#include "poller.hpp"
#include "runner.hpp"

namespace docket {

namespace {

using detail::Clock;

// Runners stopped at shutdown usually unwind at their next context call.
constexpr std::chrono::milliseconds kSettle{200};
constexpr std::size_t kMinFiberStack = std::size_t{64} * 1024;

void validate(const TaskCatalog& catalog, const WorkerPoolOptions& options) {
  if (catalog.empty()) throw std::invalid_argument("WorkerPool: the task catalog is empty");
  if (options.queue.empty() || options.queue.size() > 128)
    throw std::invalid_argument("WorkerPool: queue must be a non-empty name of at most 128 bytes");
  if (options.concurrency < 1) throw std::invalid_argument("WorkerPool: concurrency must be >= 1");
  if (options.batch_size < 1) throw std::invalid_argument("WorkerPool: batch_size must be >= 1");
  if (options.poll_interval.count() <= 0)
    throw std::invalid_argument("WorkerPool: poll_interval must be > 0");
  if (options.lease.count() <= 0) throw std::invalid_argument("WorkerPool: lease must be > 0");
  if (options.shutdown_grace.count() < 0)
    throw std::invalid_argument("WorkerPool: shutdown_grace must be >= 0");
  if (options.max_claim_attempts < 1)
    throw std::invalid_argument("WorkerPool: max_claim_attempts must be >= 1");
  if (options.notify_debounce.count() < 0 || options.debounce_poll_interval.count() < 0)
    throw std::invalid_argument(
        "WorkerPool: notify_debounce and debounce_poll_interval must be >= 0");
  if (options.prefetch < kAutoPrefetch)
    throw std::invalid_argument("WorkerPool: prefetch must be >= 0 or kAutoPrefetch");
  if (options.max_prefetch < 0)
    throw std::invalid_argument("WorkerPool: max_prefetch must be >= 0");
  if (options.flush_max_batch < 1 && options.flush_max_batch != kAutoFlushBatch)
    throw std::invalid_argument("WorkerPool: flush_max_batch must be >= 1 or kAutoFlushBatch");
  if (options.flush_max_delay.count() < 0)
    throw std::invalid_argument("WorkerPool: flush_max_delay must be >= 0");
  if (options.claim_connections < 1 || options.claim_connections > 2)
    throw std::invalid_argument("WorkerPool: claim_connections must be 1 or 2");
  if (options.flush_connections < 1)
    throw std::invalid_argument("WorkerPool: flush_connections must be >= 1");
  if (options.runner_connections < 1)
    throw std::invalid_argument("WorkerPool: runner_connections must be >= 1");
  if (options.runner_threads < 0)
    throw std::invalid_argument("WorkerPool: runner_threads must be >= 0");
  if (options.fiber_stack_size < kMinFiberStack)
    throw std::invalid_argument("WorkerPool: fiber_stack_size must be >= 64 KiB");
  if (!options.metrics_address.empty()) detail::parse_listen_address(options.metrics_address);
}

// One runner: a thread of its own, or a fiber of a Carrier
// (runner_threads > 0). It co-owns what it touches, so a thread detached at
// shutdown (blocked in user code) can return late safely.
struct WorkerThread {
  std::mutex mutex;
  std::shared_ptr<detail::Runner> current;  // the run it executes now, if any
  std::atomic<bool> exited{false};
  bool replaced = false;  // poller thread only: a replacement was started

  std::shared_ptr<detail::Runner> runner() {
    const std::lock_guard<std::mutex> lock(mutex);
    return current;
  }
};

// A thread running runner fibers; it co-owns the carrier, and retires once
// they all returned.
struct CarrierThread {
  std::shared_ptr<detail::Carrier> carrier;
  std::shared_ptr<std::atomic<bool>> exited = std::make_shared<std::atomic<bool>>(false);
  std::thread thread;
};

// The runner's body (a thread's or a fiber's): takes claims from the local queue until it is
// closed. A thread whose run was stopped from outside (watchdog, shutdown) retires when it returns:
// the pool has already started another in its place.
void runner_thread(const std::shared_ptr<detail::PoolShared>& pool,
                   const std::shared_ptr<detail::LeaseWatchdog>& watchdog,
                   const std::shared_ptr<WorkerThread>& self) {
  for (;;) {
    std::optional<detail::QueuedClaim> claim = pool->local.pop();
    if (!claim) break;
    auto runner = std::make_shared<detail::Runner>(pool, std::move(claim->task), claim->claimed_at);
    {
      const std::lock_guard<std::mutex> lock(self->mutex);
      self->current = runner;
    }
    watchdog->watch(runner);
    pool->runner_started();
    runner->run();
    pool->runner_stopped();
    {
      const std::lock_guard<std::mutex> lock(self->mutex);
      self->current.reset();
    }
    if (runner->stopped()) break;
  }
  self->exited.store(true);
  pool->runner_finished();
}

}  // namespace

class WorkerPool::Impl final : public detail::RunnerHost {
 public:
  Impl(TaskCatalog catalog, WorkerPoolOptions options)
      : catalog_(std::move(catalog)),
        options_(std::move(options)),
        shared_(std::make_shared<detail::PoolShared>(catalog_, options_)) {}
  ~Impl() override {
    stop();
    std::thread exit_thread;  // stopped the pool already, or finds it stopped
    {
      const std::lock_guard<std::mutex> lock(exit_mutex_);
      exit_thread = std::move(exit_thread_);
    }
    if (exit_thread.joinable()) exit_thread.join();
  }

  void start();
  void stop();
  bool running() const { return state_.load() == State::running; }
  PoolCounters counters() const;
  MetricsSnapshot metrics() const;
  int metrics_port() const { return metrics_port_.load(); }
  int wait();
  int exit_code() const { return exit_code_.load(); }

  // RunnerHost (called by the poller thread)
  void reap() override;
  int live_runners() override { return shared_->active(); }

 private:
  enum class State { created, running, stopped };
  struct Entry {
    std::shared_ptr<WorkerThread> worker;
    std::thread thread;  // none for a fiber
  };

  void start_thread();
  // `count` runner fibers on `threads` new carrier threads (runner_threads > 0).
  void start_fibers(int count, int threads);
  // Starts `count` runners: threads, or fibers on one new carrier thread.
  void start_runners(int count);
  // Joins the carrier threads whose fibers all returned (workers_mutex_ held).
  void join_exited_carriers();
  // on_stuck = exit (from the watchdog thread): stop() on a thread of its own,
  // once, with kStuckExitCode.
  void stuck_exit();
  // The runs executing now (never call into a runner while holding workers_mutex_).
  std::vector<std::shared_ptr<detail::Runner>> snapshot();
  void release_queued_claims();
  void release_remaining_claims();
  void join_or_detach();

  TaskCatalog catalog_;
  WorkerPoolOptions options_;
  std::mutex lifecycle_mutex_;  // serializes start() and stop()
  std::atomic<State> state_{State::created};
  const std::shared_ptr<detail::PoolShared> shared_;  // counters readable at any time
  std::shared_ptr<detail::LeaseWatchdog> watchdog_;
  std::unique_ptr<detail::Poller> poller_;
  std::mutex workers_mutex_;
  std::list<Entry> workers_;
  std::list<CarrierThread> carriers_;                      // workers_mutex_
  std::unique_ptr<detail::MetricsServer> metrics_server_;  // lifecycle_mutex_
  std::atomic<int> metrics_port_{0};
  std::mutex exit_mutex_;
  std::thread exit_thread_;  // runs stop() after a stuck runner (on_stuck = exit)
  std::atomic<int> exit_code_{0};
  std::mutex stopped_mutex_;
  std::condition_variable stopped_;  // wait(): the pool stopped
};

void WorkerPool::Impl::start() {
  const std::lock_guard<std::mutex> lock(lifecycle_mutex_);
  if (state_.load() != State::created)
    throw std::logic_error("WorkerPool: start() may be called once, before stop()");
  validate(catalog_, options_);
  // The schema check comes before any claim: an incompatible worker claims nothing.
  std::unique_ptr<pqxx::connection> connection = detail::connect(options_);
  sql::in_transaction(*connection, false,
                      [](pqxx::transaction_base& tx) { sql::require_supported_schema(tx); });
  // Bound before any claim too: a port in use makes start() throw with nothing claimed.
  if (!options_.metrics_address.empty()) {
    metrics_server_ =
        std::make_unique<detail::MetricsServer>([this] { return to_prometheus(metrics()); });
    metrics_port_.store(metrics_server_->start(options_.metrics_address));
  }
  watchdog_ = std::make_shared<detail::LeaseWatchdog>(shared_, [this] { stuck_exit(); });
  watchdog_->start();
  shared_->flusher.start(detail::connect(options_));
  if (options_.runner_threads > 0)
    start_fibers(options_.concurrency, std::min(options_.runner_threads, options_.concurrency));
  else
    for (int i = 0; i < options_.concurrency; ++i) start_thread();
  poller_ = std::make_unique<detail::Poller>(shared_, *this, std::move(connection));
  poller_->start();
  state_.store(State::running);
  shared_->log(LogLevel::info, "worker pool of queue " + options_.queue + " started (" +
                                   std::to_string(options_.concurrency) + " runners, prefetch " +
                                   (options_.prefetch == kAutoPrefetch
                                        ? "auto up to " + std::to_string(options_.max_prefetch)
                                        : std::to_string(options_.prefetch)) +
                                   ")");
}

void WorkerPool::Impl::start_thread() {
  auto worker = std::make_shared<WorkerThread>();
  std::thread thread([pool = shared_, watchdog = watchdog_, worker] {
    detail::name_thread("docket-runner");
    runner_thread(pool, watchdog, worker);
  });
  const std::lock_guard<std::mutex> lock(workers_mutex_);
  workers_.push_back(Entry{std::move(worker), std::move(thread)});
}

void WorkerPool::Impl::start_fibers(int count, int threads) {
  std::vector<CarrierThread> started;
  std::vector<std::shared_ptr<WorkerThread>> workers;
  for (int t = 0; t < threads; ++t) {
    CarrierThread carrier;
    carrier.carrier = std::make_shared<detail::Carrier>(options_.fiber_stack_size);
    // Fibers t, t + threads, ...: the runners spread evenly.
    for (int i = t; i < count; i += threads) {
      auto worker = std::make_shared<WorkerThread>();
      carrier.carrier->add([pool = shared_, watchdog = watchdog_, worker] {
        runner_thread(pool, watchdog, worker);
      });
      workers.push_back(std::move(worker));
    }
    started.push_back(std::move(carrier));
  }
  const std::lock_guard<std::mutex> lock(workers_mutex_);
  for (std::shared_ptr<WorkerThread>& worker : workers)
    workers_.push_back(Entry{std::move(worker), std::thread()});
  for (CarrierThread& carrier : started) {
    carrier.thread =
        std::thread([pool = shared_, fibers = carrier.carrier, exited = carrier.exited] {
          detail::name_thread("docket-fibers");
          fibers->run();
          exited->store(true);
          pool->runner_finished();  // wakes join_or_detach
        });
    carriers_.push_back(std::move(carrier));
  }
}

void WorkerPool::Impl::start_runners(int count) {
  if (count <= 0) return;
  if (options_.runner_threads > 0) {
    // A new thread: the runner it replaces may still block its own.
    start_fibers(count, 1);
    return;
  }
  for (int i = 0; i < count; ++i) start_thread();
}

void WorkerPool::Impl::join_exited_carriers() {
  for (auto it = carriers_.begin(); it != carriers_.end();) {
    if (!it->exited->load()) {
      ++it;
      continue;
    }
    it->thread.join();  // returning: run() is over
    it = carriers_.erase(it);
  }
}

void WorkerPool::Impl::stop() {
  const std::lock_guard<std::mutex> lock(lifecycle_mutex_);
  if (state_.load() != State::running) {
    if (metrics_server_) metrics_server_->stop();  // a start() that failed after binding
    metrics_port_.store(0);
    {
      const std::lock_guard<std::mutex> stopped_lock(stopped_mutex_);
      state_.store(State::stopped);
    }
    stopped_.notify_all();
    return;
  }
  // 1. No new claims; prefetched claims no runner took go back at once.
  poller_->stop();
  poller_.reset();
  release_queued_claims();
  // 2. Active runners finish within the grace period.
  const Clock::time_point deadline = Clock::now() + options_.shutdown_grace;
  shared_->wait_until(deadline, [&] { return shared_->active() == 0; });
  // 3. The claims of those still running go back to the queue.
  release_remaining_claims();
  watchdog_->stop();
  // 4. Threads that returned are joined; blocked ones are detached and reported.
  join_or_detach();
  // 5. Everything handed to the flusher is committed (or reported) before it stops.
  shared_->flusher.stop();
  shared_->connections.close();
  if (metrics_server_) metrics_server_->stop();  // the final figures stay in metrics()
  metrics_port_.store(0);
  {
    const std::lock_guard<std::mutex> stopped_lock(stopped_mutex_);
    state_.store(State::stopped);
  }
  stopped_.notify_all();
  shared_->log(LogLevel::info,
               "worker pool of queue " + options_.queue + " stopped" +
                   (exit_code_.load() != 0 ? " after a stuck runner (exit code " +
                                                 std::to_string(exit_code_.load()) + ")"
                                           : std::string()));
}

void WorkerPool::Impl::stuck_exit() {
  const std::lock_guard<std::mutex> lock(exit_mutex_);
  if (exit_thread_.joinable() || state_.load() != State::running) return;
  exit_code_.store(kStuckExitCode);
  exit_thread_ = std::thread([this] { stop(); });
}

int WorkerPool::Impl::wait() {
  std::unique_lock<std::mutex> lock(stopped_mutex_);
  stopped_.wait(lock, [&] { return state_.load() != State::running; });
  return exit_code_.load();
}

void WorkerPool::Impl::release_queued_claims() {
  const std::vector<detail::QueuedClaim> queued = shared_->local.close();
  if (queued.empty()) return;
  std::unique_ptr<detail::ConnectionLease> lease;
  try {
    lease = std::make_unique<detail::ConnectionLease>(shared_->connections);
  } catch (const std::exception& e) {
    shared_->log(LogLevel::warning,
                 std::string("shutdown: no connection to hand back prefetched claims (they "
                             "expire): ") +
                     e.what());
  }
  for (const detail::QueuedClaim& claim : queued) {
    if (lease) {
      shared_->release_unstarted(**lease, claim);
    } else {
      shared_->counters.released.fetch_add(1);
      shared_->free_slot();
    }
  }
}

void WorkerPool::Impl::release_remaining_claims() {
  std::vector<std::shared_ptr<detail::Runner>> stopped;
  for (const std::shared_ptr<detail::Runner>& runner : snapshot()) {
    // Also a run the watchdog stopped but could not release: try again.
    if (runner->stop() || (runner->stopped() && runner->holds_slot())) stopped.push_back(runner);
  }
  if (stopped.empty()) return;
  std::unique_ptr<detail::ConnectionLease> lease;
  try {
    lease = std::make_unique<detail::ConnectionLease>(shared_->connections);
  } catch (const std::exception& e) {
    shared_->log(
        LogLevel::warning,
        std::string("shutdown: no connection to release claims (they expire): ") + e.what());
  }
  for (const std::shared_ptr<detail::Runner>& runner : stopped) {
    const sql::ClaimedTask& task = runner->task();
    shared_->counters.abandoned.fetch_add(1);
    shared_->log(LogLevel::warning, "shutdown: task " + task.task_name + " (run " + task.run_id +
                                        ") did not finish within the grace period; its claim "
                                        "is released");
    if (lease) shared_->release_claim(**lease, task.run_id, task.claim_token);
    runner->give_back_slot();  // no claim is made any more
  }
}

void WorkerPool::Impl::join_or_detach() {
  std::vector<std::shared_ptr<WorkerThread>> workers;
  {
    const std::lock_guard<std::mutex> lock(workers_mutex_);
    for (const Entry& entry : workers_) workers.push_back(entry.worker);
  }
  shared_->wait_until(Clock::now() + kSettle, [&] {
    for (const std::shared_ptr<WorkerThread>& worker : workers)
      if (!worker->exited.load()) return false;
    return true;
  });
  std::list<Entry> entries;
  std::list<CarrierThread> carriers;
  {
    const std::lock_guard<std::mutex> lock(workers_mutex_);
    entries.swap(workers_);
    carriers.swap(carriers_);
  }
  // A carrier thread returns once its last fiber did.
  shared_->wait_until(Clock::now() + kSettle, [&] {
    for (const CarrierThread& carrier : carriers)
      if (!carrier.exited->load()) return false;
    return true;
  });
  for (CarrierThread& carrier : carriers) {
    if (carrier.exited->load())
      carrier.thread.join();
    else
      carrier.thread.detach();  // a fiber blocks it (reported below); it co-owns the carrier
  }
  for (Entry& entry : entries) {
    if (entry.worker->exited.load()) {
      if (entry.thread.joinable()) entry.thread.join();
      continue;
    }
    // Blocked in user code: the thread co-owns all it touches, so it may return later.
    const std::shared_ptr<detail::Runner> runner = entry.worker->runner();
    if (runner) {
      if (runner->mark_stuck()) shared_->counters.stuck.fetch_add(1);
      const sql::ClaimedTask& task = runner->task();
      shared_->log(LogLevel::error, "shutdown: the thread of task " + task.task_name + " (run " +
                                        task.run_id + ") is still blocked; detached");
    }
    if (entry.thread.joinable()) entry.thread.detach();
  }
}

void WorkerPool::Impl::reap() {
  // on_stuck = exit closed claims: the pool is stopping, no thread is replaced.
  if (shared_->claims_closed()) return;
  std::list<Entry> exited;
  int replacements = 0;
  {
    const std::lock_guard<std::mutex> lock(workers_mutex_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      WorkerThread& worker = *it->worker;
      if (worker.exited.load()) {
        if (!worker.replaced) ++replacements;  // exited without a replacement yet
        exited.splice(exited.end(), workers_, it++);
        continue;
      }
      if (!worker.replaced) {
        const std::shared_ptr<detail::Runner> runner = worker.runner();
        // Stopped by the watchdog and its claim released (the slot given back):
        // it retires on return; a new thread takes the slot now.
        if (runner && runner->stopped() && !runner->holds_slot()) {
          worker.replaced = true;
          ++replacements;
        }
      }
      ++it;
    }
  }
  for (Entry& entry : exited)
    if (entry.thread.joinable()) entry.thread.join();
  {
    const std::lock_guard<std::mutex> lock(workers_mutex_);
    join_exited_carriers();
  }
  try {
    start_runners(replacements);
  } catch (const std::exception& e) {
    shared_->log(LogLevel::error, std::string("cannot start a runner thread: ") + e.what());
  }
}

std::vector<std::shared_ptr<detail::Runner>> WorkerPool::Impl::snapshot() {
  std::vector<std::shared_ptr<WorkerThread>> workers;
  {
    const std::lock_guard<std::mutex> lock(workers_mutex_);
    for (const Entry& entry : workers_) workers.push_back(entry.worker);
  }
  std::vector<std::shared_ptr<detail::Runner>> out;
  for (const std::shared_ptr<WorkerThread>& worker : workers)
    if (std::shared_ptr<detail::Runner> runner = worker->runner()) out.push_back(runner);
  return out;
}

PoolCounters WorkerPool::Impl::counters() const {
  PoolCounters out;
  const detail::AtomicCounters& c = shared_->counters;
  out.claimed = c.claimed.load();
  out.completed = c.completed.load();
  out.failed = c.failed.load();
  out.retried = c.retried.load();
  out.suspended = c.suspended.load();
  out.cancelled = c.cancelled.load();
  out.abandoned = c.abandoned.load();
  out.lost = c.lost.load();
  out.stuck = c.stuck.load();
  out.released = c.released.load();
  out.fired = c.fired.load();
  out.schedule_checks = c.schedule_checks.load();
  out.active = static_cast<std::uint64_t>(std::max(0, shared_->active()));
  const HistogramSnapshot claims = c.claim_seconds.snapshot();
  out.claim_latency_ms =
      claims.count == 0 ? 0.0 : claims.sum * 1000.0 / static_cast<double>(claims.count);
  return out;
}

MetricsSnapshot WorkerPool::Impl::metrics() const {
  const detail::AtomicCounters& c = shared_->counters;
  const auto get = [](const std::atomic<std::uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  MetricsSnapshot out;
  out.queue = options_.queue;
  out.claim_seconds = c.claim_seconds.snapshot();
  out.claims = out.claim_seconds.count;
  out.claim_errors = get(c.claim_errors);
  out.tasks_claimed = get(c.claimed);
  out.tasks_started = get(c.started);
  out.tasks_completed = get(c.completed);
  out.tasks_failed = get(c.failed);
  out.tasks_retried = get(c.retried);
  out.tasks_cancelled = get(c.cancelled);
  out.tasks_suspended = get(c.suspended);
  out.tasks_deferred = get(c.abandoned);
  out.tasks_lost = get(c.lost);
  out.claims_released = get(c.released);
  out.lease_warnings = get(c.lease_warnings);
  out.stuck_runners = get(c.stuck);
  out.poller_restarts = get(c.poller_restarts);
  out.schedules_fired = get(c.fired);
  out.claims_held = static_cast<std::uint64_t>(std::max(0, shared_->active()));
  out.runners_busy = static_cast<std::uint64_t>(std::max(0, shared_->running()));
  out.concurrency = static_cast<std::uint64_t>(std::max(0, options_.concurrency));
  out.handler_seconds = c.handler_seconds.snapshot();
  out.flush_size = c.flush_size.snapshot();
  out.flush_seconds = c.flush_seconds.snapshot();
  return out;
}

WorkerPool::WorkerPool(TaskCatalog catalog, WorkerPoolOptions options)
    : impl_(std::make_unique<Impl>(std::move(catalog), std::move(options))) {}

WorkerPool::~WorkerPool() = default;

void WorkerPool::start() {
  impl_->start();
}
void WorkerPool::stop() {
  impl_->stop();
}
bool WorkerPool::running() const {
  return impl_->running();
}
PoolCounters WorkerPool::counters() const {
  return impl_->counters();
}
MetricsSnapshot WorkerPool::metrics() const {
  return impl_->metrics();
}
int WorkerPool::metrics_port() const {
  return impl_->metrics_port();
}

const char* to_string(TaskEnd::Outcome outcome) noexcept {
  switch (outcome) {
    case TaskEnd::Outcome::completed:
      return "completed";
    case TaskEnd::Outcome::failed:
      return "failed";
    case TaskEnd::Outcome::suspended:
      return "suspended";
    case TaskEnd::Outcome::cancelled:
      return "cancelled";
    case TaskEnd::Outcome::lost:
      return "lost";
    case TaskEnd::Outcome::stopped:
      return "stopped";
  }
  return "unknown";
}
int WorkerPool::wait() {
  return impl_->wait();
}
int WorkerPool::exit_code() const {
  return impl_->exit_code();
}

}  // namespace docket
