// The state a WorkerPool shares with its poller, watchdog and runner threads.
// Runner threads hold it by shared_ptr: a thread the pool had to detach (stuck
// in user code) can still return late and touch only what it co-owns.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/logger.hpp"
#include "docket/sql.hpp"
#include "docket/task_catalog.hpp"
#include "docket/worker_pool.hpp"

namespace docket::detail {

using Clock = std::chrono::steady_clock;

struct AtomicCounters {
  std::atomic<std::uint64_t> claimed{0};
  std::atomic<std::uint64_t> completed{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> retried{0};
  std::atomic<std::uint64_t> suspended{0};
  std::atomic<std::uint64_t> cancelled{0};
  std::atomic<std::uint64_t> abandoned{0};
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> stuck{0};
  std::atomic<std::uint64_t> claim_calls{0};
  std::atomic<std::uint64_t> claim_micros{0};
};

// A self-pipe: other threads wake the poller, which poll()s it next to its socket.
class WakePipe {
 public:
  WakePipe();
  ~WakePipe();
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;
  void signal() noexcept;
  void drain() noexcept;
  int fd() const noexcept { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
};

// Runs one docket function call `fn(tx)` in autocommit: a single statement is
// atomic on its own, and this saves the BEGIN and COMMIT round trips of
// sql::in_transaction. Errors are mapped the same way (mutating: a lost
// connection is Ambiguous).
template <typename Fn>
auto autocommit(pqxx::connection_base& connection, bool mutating, Fn&& fn) {
  try {
    pqxx::nontransaction tx(connection);
    return fn(static_cast<pqxx::transaction_base&>(tx));
  } catch (...) {
    sql::rethrow_mapped(mutating);
  }
}

// A new connection with docket's statements registered; throws ConnectionLost.
std::unique_ptr<pqxx::connection> connect(const std::string& conninfo);

// Runner connections, reused: opening one costs more than a short task.
class ConnectionPool {
 public:
  ConnectionPool(std::string conninfo, std::size_t max_idle);
  std::unique_ptr<pqxx::connection> acquire();
  // Keeps a healthy connection for the next runner; drops it once closed.
  void give_back(std::unique_ptr<pqxx::connection> connection) noexcept;
  void close() noexcept;

 private:
  const std::string conninfo_;
  const std::size_t max_idle_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  bool closed_ = false;
};

class PoolShared {
 public:
  PoolShared(TaskCatalog catalog, WorkerPoolOptions options);

  const TaskCatalog catalog;
  const WorkerPoolOptions options;  // logger is never null
  AtomicCounters counters;
  WakePipe poller_wake;
  ConnectionPool connections;

  void log(LogLevel level, const std::string& message) const noexcept;

  int active() const noexcept { return active_.load(); }
  void take_slot() noexcept { active_.fetch_add(1); }
  // A runner gave its slot back: wake the poller (immediate refill) and stop().
  void free_slot() noexcept;
  // A runner thread is about to return.
  void runner_finished() noexcept;
  // Waits until pred() holds (checked on every slot or runner change) or deadline.
  template <typename Pred>
  bool wait_until(Clock::time_point deadline, Pred pred) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_until(lock, deadline, pred);
  }

  // Hands a claim back (the run becomes due now) on `connection`, not waiting
  // long for row locks; false when that failed (the claim then expires).
  bool release_claim(pqxx::connection_base& connection, const std::string& run_id,
                     const std::string& claim_token) noexcept;

 private:
  std::atomic<int> active_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace docket::detail
