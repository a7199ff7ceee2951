#include "docket/worker_pool.hpp"

#include <algorithm>
#include <atomic>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "docket/errors.hpp"
#include "docket/sql.hpp"
#include "lease_watchdog.hpp"
#include "pool_shared.hpp"
#include "poller.hpp"
#include "runner.hpp"

namespace docket {

namespace {

using detail::Clock;

// Runners stopped at shutdown usually unwind at their next context call.
constexpr std::chrono::milliseconds kSettle{200};

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
}

}  // namespace

class WorkerPool::Impl final : public detail::RunnerHost {
 public:
  Impl(TaskCatalog catalog, WorkerPoolOptions options)
      : catalog_(std::move(catalog)),
        options_(std::move(options)),
        shared_(std::make_shared<detail::PoolShared>(catalog_, options_)) {}
  ~Impl() override { stop(); }

  void start();
  void stop();
  bool running() const { return state_.load() == State::running; }
  PoolCounters counters() const;

  // RunnerHost (called by the poller thread)
  void launch(sql::ClaimedTask task) override;
  void reap() override;
  int live_runners() override;

 private:
  enum class State { created, running, stopped };
  struct Entry {
    std::shared_ptr<detail::Runner> runner;
    std::thread thread;
  };

  // The runners now (never call into a runner while holding runners_mutex_).
  std::vector<std::shared_ptr<detail::Runner>> snapshot();
  void release_remaining_claims();
  void join_or_detach();

  TaskCatalog catalog_;
  WorkerPoolOptions options_;
  std::mutex lifecycle_mutex_;  // serializes start() and stop()
  std::atomic<State> state_{State::created};
  const std::shared_ptr<detail::PoolShared> shared_;  // counters readable at any time
  std::unique_ptr<detail::LeaseWatchdog> watchdog_;
  std::unique_ptr<detail::Poller> poller_;
  std::mutex runners_mutex_;
  std::list<Entry> runners_;
};

void WorkerPool::Impl::start() {
  const std::lock_guard<std::mutex> lock(lifecycle_mutex_);
  if (state_.load() != State::created)
    throw std::logic_error("WorkerPool: start() may be called once, before stop()");
  validate(catalog_, options_);
  // The schema check comes before any claim: an incompatible worker claims nothing.
  std::unique_ptr<pqxx::connection> connection = detail::connect(options_.conninfo);
  sql::in_transaction(*connection, false,
                      [](pqxx::transaction_base& tx) { sql::require_supported_schema(tx); });
  watchdog_ = std::make_unique<detail::LeaseWatchdog>(shared_);
  poller_ = std::make_unique<detail::Poller>(shared_, *this, std::move(connection));
  watchdog_->start();
  poller_->start();
  state_.store(State::running);
  shared_->log(LogLevel::info, "worker pool of queue " + options_.queue + " started (" +
                                   std::to_string(options_.concurrency) + " runners at most)");
}

void WorkerPool::Impl::stop() {
  const std::lock_guard<std::mutex> lock(lifecycle_mutex_);
  if (state_.load() != State::running) {
    state_.store(State::stopped);
    return;
  }
  // 1. No new claims.
  poller_->stop();
  poller_.reset();
  // 2. Active runners finish within the grace period.
  const Clock::time_point deadline = Clock::now() + options_.shutdown_grace;
  shared_->wait_until(deadline, [&] { return shared_->active() == 0; });
  // 3. The claims of those still running go back to the queue.
  release_remaining_claims();
  watchdog_->stop();
  watchdog_.reset();
  // 4. Threads that returned are joined; blocked ones are detached and reported.
  join_or_detach();
  shared_->connections.close();
  state_.store(State::stopped);
  shared_->log(LogLevel::info, "worker pool of queue " + options_.queue + " stopped");
}

void WorkerPool::Impl::release_remaining_claims() {
  std::vector<std::shared_ptr<detail::Runner>> stopped;
  for (const std::shared_ptr<detail::Runner>& runner : snapshot()) {
    if (runner->stop()) stopped.push_back(runner);
  }
  if (stopped.empty()) return;
  std::unique_ptr<pqxx::connection> connection;
  try {
    connection = detail::connect(options_.conninfo);
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
    if (connection) shared_->release_claim(*connection, task.run_id, task.claim_token);
  }
}

void WorkerPool::Impl::join_or_detach() {
  const std::vector<std::shared_ptr<detail::Runner>> runners = snapshot();
  shared_->wait_until(Clock::now() + kSettle, [&] {
    for (const std::shared_ptr<detail::Runner>& runner : runners)
      if (!runner->finished()) return false;
    return true;
  });
  std::list<Entry> entries;
  {
    const std::lock_guard<std::mutex> lock(runners_mutex_);
    entries.swap(runners_);
  }
  for (Entry& entry : entries) {
    if (entry.runner->finished()) {
      entry.thread.join();
      continue;
    }
    // Blocked in user code: the thread co-owns all it touches, so it may return later.
    if (entry.runner->mark_stuck()) shared_->counters.stuck.fetch_add(1);
    const sql::ClaimedTask& task = entry.runner->task();
    shared_->log(LogLevel::error, "shutdown: the thread of task " + task.task_name + " (run " +
                                      task.run_id + ") is still blocked; detached");
    entry.thread.detach();
  }
}

void WorkerPool::Impl::launch(sql::ClaimedTask task) {
  auto runner = std::make_shared<detail::Runner>(shared_, std::move(task));
  watchdog_->watch(runner);
  try {
    std::thread thread([runner] { runner->run(); });
    const std::lock_guard<std::mutex> lock(runners_mutex_);
    runners_.push_back(Entry{std::move(runner), std::move(thread)});
  } catch (const std::exception& e) {
    const sql::ClaimedTask& claimed = runner->task();
    shared_->log(LogLevel::error, "cannot start a runner for run " + claimed.run_id +
                                      " (its claim expires): " + e.what());
    runner->stop();
    shared_->counters.lost.fetch_add(1);
  }
}

void WorkerPool::Impl::reap() {
  std::list<Entry> done;
  {
    const std::lock_guard<std::mutex> lock(runners_mutex_);
    for (auto it = runners_.begin(); it != runners_.end();) {
      if (it->runner->finished()) {
        done.splice(done.end(), runners_, it++);
      } else {
        ++it;
      }
    }
  }
  for (Entry& entry : done) entry.thread.join();
}

std::vector<std::shared_ptr<detail::Runner>> WorkerPool::Impl::snapshot() {
  const std::lock_guard<std::mutex> lock(runners_mutex_);
  std::vector<std::shared_ptr<detail::Runner>> out;
  for (const Entry& entry : runners_) out.push_back(entry.runner);
  return out;
}

int WorkerPool::Impl::live_runners() {
  const std::lock_guard<std::mutex> lock(runners_mutex_);
  int live = 0;
  for (const Entry& entry : runners_)
    if (entry.runner->holds_slot()) ++live;
  return live;
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
  out.active = static_cast<std::uint64_t>(std::max(0, shared_->active()));
  const std::uint64_t calls = c.claim_calls.load();
  out.claim_latency_ms =
      calls == 0 ? 0.0
                 : static_cast<double>(c.claim_micros.load()) / 1000.0 / static_cast<double>(calls);
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

}  // namespace docket
