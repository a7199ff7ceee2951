#include "lease_watchdog.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace docket::detail {

LeaseWatchdog::LeaseWatchdog(std::shared_ptr<PoolShared> pool, std::function<void()> on_stuck_exit)
    : pool_(std::move(pool)), on_stuck_exit_(std::move(on_stuck_exit)) {}

LeaseWatchdog::~LeaseWatchdog() {
  stop();
}

void LeaseWatchdog::start() {
  thread_ = std::thread([this] {
    name_thread("docket-watchdog");
    run();
  });
}

void LeaseWatchdog::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaseWatchdog::watch(std::shared_ptr<Runner> runner) {
  bool wake = false;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    // Finished runners are dropped here too, not only when the watchdog
    // wakes (at the earliest a lease from now): amortized, the list stays
    // within about twice the runners alive.
    if (runners_.size() >= prune_at_) {
      prune();
      prune_at_ = std::max<std::size_t>(kMinPruneAt, 2 * runners_.size());
    }
    runners_.push_back(std::move(runner));
    // A new runner's first deadline is a lease from now: later than the
    // watchdog's next wake-up, unless it sleeps with nothing to watch. Waking
    // it for every task would cost a context switch per task.
    wake = sleeping_until_ > Clock::now() + pool_->options.lease;
  }
  if (wake) wake_.notify_all();
}

void LeaseWatchdog::prune() {
  runners_.erase(std::remove_if(runners_.begin(), runners_.end(),
                                [](const std::shared_ptr<Runner>& r) {
                                  return !r->holds_slot() || r->stopped();
                                }),
                 runners_.end());
}

void LeaseWatchdog::run() {
  const Clock::duration lease = pool_->options.lease;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    // Runners that gave their slot back (finished) or were stopped need no watching.
    prune();
    const Clock::time_point now = Clock::now();
    Clock::time_point next = Clock::time_point::max();
    std::vector<std::shared_ptr<Runner>> overdue;
    std::vector<std::pair<std::shared_ptr<Runner>, Clock::duration>> warned;
    for (const std::shared_ptr<Runner>& runner : runners_) {
      const Clock::time_point since = runner->last_progress();
      if (now >= since + 2 * lease) {
        overdue.push_back(runner);
        continue;
      }
      if (now >= since + lease) {
        if (runner->mark_warned()) {
          AtomicCounters::add(pool_->counters.lease_warnings);
          if (pool_->options.hooks.on_lease_warning) warned.emplace_back(runner, now - since);
          const sql::ClaimedTask& task = runner->task();
          pool_->log(LogLevel::warning,
                     "task " + task.task_name + " (run " + task.run_id + ") made no progress for " +
                         std::to_string(pool_->options.lease.count()) +
                         " ms (one lease): it is stopped at two leases; use steps or heartbeat()");
        }
        next = std::min(next, since + 2 * lease);
      } else {
        next = std::min(next, since + lease);
      }
    }
    if (!warned.empty()) {
      lock.unlock();  // user code: do not block watch()
      for (const auto& [runner, quiet] : warned) warn(*runner, quiet);
      lock.lock();
    }
    if (!overdue.empty()) {
      lock.unlock();  // releasing talks to the database: do not block watch()
      for (const std::shared_ptr<Runner>& runner : overdue) stop_runner(*runner);
      lock.lock();
      continue;
    }
    sleeping_until_ = next;
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, next);
    }
    sleeping_until_ = Clock::time_point::min();
  }
  lock.unlock();
  connection_.reset();
}

void LeaseWatchdog::warn(const Runner& runner, Clock::duration quiet) noexcept {
  const sql::ClaimedTask& task = runner.task();
  const TaskEvent event{pool_->options.queue, task.task_name, task.run_id,
                        task.attempt,         task.params,    task.headers};
  const LeaseWarning warning{event, pool_->options.lease,
                             std::chrono::duration_cast<std::chrono::nanoseconds>(quiet)};
  try {
    pool_->options.hooks.on_lease_warning(warning);
  } catch (const std::exception& e) {
    pool_->log(LogLevel::warning, "the on_lease_warning hook threw: " + std::string(e.what()));
  } catch (...) {
    pool_->log(LogLevel::warning, "the on_lease_warning hook threw");
  }
}

// The stuck-runner policy (docs/tasks.md "Stuck runners"). Either way the run
// is stopped (its context invalidated), counted and reported, and its slot is
// given back only once its claim was released, so a pool never runs more than
// `concurrency` handlers the database still holds claims for. on_stuck = exit:
// first no more claims at all, then the pool drains and stops with
// kStuckExitCode (on_stuck_exit). replace: the freed slot takes a new claim on
// a new thread; a run whose claim could not be released keeps its slot until
// its thread returns.
void LeaseWatchdog::stop_runner(Runner& runner) {
  if (!runner.stop()) return;  // it finished just now
  const bool exit = pool_->options.on_stuck == OnStuck::exit;
  if (exit) pool_->close_claims();
  const sql::ClaimedTask& task = runner.task();
  if (runner.mark_stuck()) pool_->counters.stuck.fetch_add(1);
  pool_->log(LogLevel::error,
             "task " + task.task_name + " (run " + task.run_id +
                 ") made no progress for two leases: runner stopped, its context invalidated, its "
                 "claim released; the thread is stuck" +
                 (exit ? std::string("; on_stuck = exit: the pool stops claiming, drains and "
                                     "stops with exit code ") +
                             std::to_string(kStuckExitCode)
                       : std::string()));
  bool released = false;
  try {
    if (!connection_) connection_ = connect(pool_->options);
    released = pool_->release_claim(*connection_, task.run_id, task.claim_token);
    if (!released) connection_.reset();
  } catch (const std::exception& e) {
    pool_->log(LogLevel::warning,
               "no connection to release run " + task.run_id + " (it expires): " + e.what());
  }
  if (released) runner.give_back_slot();
  if (exit && on_stuck_exit_) on_stuck_exit_();
}

}  // namespace docket::detail
