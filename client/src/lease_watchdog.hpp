// LeaseWatchdog: one thread watching every runner of a pool. The database
// claim is the real lease; the watchdog only keeps a blocked handler from
// holding a slot forever. Without confirmed progress (a step, a heartbeat...)
// it warns at one lease; at two it stops the runner: its context is
// invalidated (every further call throws, nothing commits), its claim is
// released so another claim can run the task, the blocked thread is counted as
// stuck and reported, and the pool's on_stuck policy applies (exit: no more
// claims, the pool drains and stops; replace: its slot, freed once the claim
// was released, takes a new claim). It never renews a lease.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "pool_shared.hpp"
#include "runner.hpp"

namespace docket::detail {

class LeaseWatchdog {
 public:
  // on_stuck_exit: called (on the watchdog thread) after a stuck runner was
  // handled under on_stuck = exit; it must not wait for the watchdog.
  LeaseWatchdog(std::shared_ptr<PoolShared> pool, std::function<void()> on_stuck_exit);
  ~LeaseWatchdog();
  LeaseWatchdog(const LeaseWatchdog&) = delete;
  LeaseWatchdog& operator=(const LeaseWatchdog&) = delete;

  void start();
  void stop();
  void watch(std::shared_ptr<Runner> runner);

 private:
  void run();
  // Drops the runners that gave their slot back or were stopped (mutex_ held).
  void prune();
  void stop_runner(Runner& runner);
  // Calls the on_lease_warning hook (without the lock held).
  void warn(const Runner& runner, Clock::duration quiet) noexcept;

  const std::shared_ptr<PoolShared> pool_;
  const std::function<void()> on_stuck_exit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<Runner>> runners_;
  static constexpr std::size_t kMinPruneAt = 64;
  std::size_t prune_at_ = kMinPruneAt;  // watch() prunes at this many runners
  // The watchdog's next wake-up while it waits (max: none); min while it runs.
  Clock::time_point sleeping_until_ = Clock::time_point::min();
  std::unique_ptr<pqxx::connection> connection_;  // for releases; watchdog thread only
  std::thread thread_;
};

}  // namespace docket::detail
