// The state a WorkerPool shares with its poller, watchdog and runner threads.
// Runner threads hold it by shared_ptr: a thread the pool had to detach (stuck
// in user code) can still return late and touch only what it co-owns.
#pragma once

#include <atomic>
#include <climits>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/logger.hpp"
#include "docket/sql.hpp"
#include "docket/task_catalog.hpp"
#include "docket/worker_pool.hpp"
#include "fiber.hpp"
#include "flusher.hpp"
#include "histogram.hpp"

namespace docket::detail {

using Clock = std::chrono::steady_clock;

// The pool's counters and histograms: its metrics (docket/metrics.hpp,
// WorkerPool::metrics(), docs/operating.md). Written from the poller, runner,
// watchdog and flusher threads with relaxed atomic adds only (no lock on any
// path); read by snapshots. Names in brackets are the Prometheus metrics.
struct AtomicCounters {
  std::atomic<std::uint64_t> claimed{0};    // [docket_tasks_claimed_total]
  std::atomic<std::uint64_t> started{0};    // [docket_tasks_started_total] handlers invoked
  std::atomic<std::uint64_t> completed{0};  // [docket_tasks_completed_total]
  std::atomic<std::uint64_t> failed{0};     // [docket_tasks_failed_total]
  std::atomic<std::uint64_t> retried{0};    // [docket_tasks_retried_total]
  std::atomic<std::uint64_t> suspended{0};  // [docket_tasks_suspended_total]
  std::atomic<std::uint64_t> cancelled{0};  // [docket_tasks_cancelled_total]
  std::atomic<std::uint64_t> abandoned{0};  // [docket_tasks_deferred_total]
  std::atomic<std::uint64_t> lost{0};       // [docket_tasks_lost_total]
  // [docket_stuck_runners_total] every runner the pool gave up on while its
  // thread was still blocked (watchdog, shutdown, a stuck-runner policy):
  // count it once per runner (Runner::mark_stuck()).
  std::atomic<std::uint64_t> stuck{0};
  std::atomic<std::uint64_t> released{0};         // [docket_claims_released_total]
  std::atomic<std::uint64_t> fired{0};            // [docket_schedules_fired_total]
  std::atomic<std::uint64_t> schedule_checks{0};  // fire_schedules calls that returned
  std::atomic<std::uint64_t> claim_errors{0};     // [docket_claim_errors_total]
  std::atomic<std::uint64_t> lease_warnings{0};   // [docket_lease_warnings_total]
  std::atomic<std::uint64_t> poller_restarts{0};  // [docket_poller_restarts_total]
  // [docket_claim_duration_seconds] (its count: docket_claims_total)
  Histogram claim_seconds{
      {500'000, 1'000'000, 2'500'000, 5'000'000, 10'000'000, 25'000'000, 50'000'000, 100'000'000,
       250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000},
      1e-9};
  // [docket_handler_duration_seconds]
  Histogram handler_seconds{{100'000, 500'000, 1'000'000, 5'000'000, 10'000'000, 50'000'000,
                             100'000'000, 500'000'000, 1'000'000'000, 5'000'000'000, 10'000'000'000,
                             30'000'000'000, 60'000'000'000, 300'000'000'000},
                            1e-9};
  // [docket_flush_size] items per group commit
  Histogram flush_size{{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}, 1.0};
  // [docket_flush_duration_seconds]
  Histogram flush_seconds{
      {500'000, 1'000'000, 2'500'000, 5'000'000, 10'000'000, 25'000'000, 50'000'000, 100'000'000,
       250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000},
      1e-9};

  // Increments a counter (relaxed: counters order nothing).
  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) noexcept {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
};

// Nanoseconds elapsed since `since` (0 if the clock went backwards).
inline std::uint64_t nanos_since(std::chrono::steady_clock::time_point since) noexcept {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since)
          .count();
  return ns > 0 ? static_cast<std::uint64_t>(ns) : 0;
}

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

// Names the calling thread ("docket-poller", ...; at most 15 bytes), as
// top -H, perf and gdb show it.
void name_thread(const char* name) noexcept;
// The same from the pool's connection source: options.connection_factory when
// set (a null or closed connection is ConnectionLost), else options.conninfo.
std::unique_ptr<pqxx::connection> connect(const WorkerPoolOptions& options);

// The flusher's batch bound: options.flush_max_batch, or for kAutoFlushBatch
// the larger of 100 and the concurrency.
int flush_batch(const WorkerPoolOptions& options);

// The longest one docket.await_tasks call of the waker waits: poll_interval,
// at most kWakerWaitMs. The call's statement holds its snapshot while it
// waits, and with it the database's xmin horizon: no row version that died
// after the call began can be pruned, nor its index entries killed, in any
// table. Measured (bench/README.md, fourteenth session): a one-second waiter
// on an idle queue cost a drain of another queue 20-25% of its tasks per
// second, its claims walking dead ready-index entries they could not skip; a
// 100 ms one, nothing measurable.
constexpr int kWakerWaitMs = 100;
int waker_wait_ms(const WorkerPoolOptions& options);

// How long the waker's next wait lasts when it could reserve `reserved` slots
// of the `wanted` a claim would take (its batch, within the capacity): the
// full wait (`full_ms`) when it has them all. The waker comes back right after
// its claim, while the tasks it claimed still hold their slots: a wait on that
// partial reservation would serve the next burst with only those slots, and
// leave the rest to a second claim (measured: a burst of ten started 3-10 ms
// late, all ten together, bench/README.md, sixteenth session). Such a wait
// lasts `partial_ms` instead, and the waker reserves again as the tasks
// finish; it doubles `partial_ms` while its partial waits time out, so slots
// held by long tasks cost a few short waits, then waits as long as before.
int waker_timeout_ms(int full_ms, int reserved, int wanted, int partial_ms);
constexpr int kWakerFirstPartialWaitMs = 2;

// The connections runners borrow for their calls that are not group-committed
// (heartbeat, sleeps, waits, emits, spawns, failures): at most `size` exist
// whatever the concurrency; a borrower waits while all are lent. A broken
// connection is dropped on return and replaced on demand.
class ConnectionPool {
 public:
  // `options` (its connection source) must outlive the pool.
  ConnectionPool(const WorkerPoolOptions& options, std::size_t size);
  // Throws ConnectionLost when the pool is closed or a new connection fails.
  std::unique_ptr<pqxx::connection> acquire();
  void give_back(std::unique_ptr<pqxx::connection> connection) noexcept;
  void close() noexcept;
  // Connections open now (lent or idle).
  std::size_t open() const;

 private:
  const WorkerPoolOptions& options_;
  const std::size_t size_;
  mutable std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  std::size_t open_ = 0;  // lent + idle
  bool closed_ = false;
};

// A connection borrowed from a ConnectionPool, given back when destroyed.
class ConnectionLease {
 public:
  explicit ConnectionLease(ConnectionPool& pool) : pool_(&pool), connection_(pool.acquire()) {}
  ~ConnectionLease() { pool_->give_back(std::move(connection_)); }
  ConnectionLease(const ConnectionLease&) = delete;
  ConnectionLease& operator=(const ConnectionLease&) = delete;
  pqxx::connection& operator*() const noexcept { return *connection_; }

 private:
  ConnectionPool* pool_;
  std::unique_ptr<pqxx::connection> connection_;
};

// A claimed task waiting in the pool's local queue for a runner thread.
struct QueuedClaim {
  sql::ClaimedTask task;
  Clock::time_point claimed_at;
};

// The local queue between the poller and the runner threads (prefetch).
class LocalQueue {
 public:
  // Queues a claim batch under one lock and wakes the runners once: one
  // notify per claim would wake (and put back to sleep) a runner per task.
  void push_all(std::vector<QueuedClaim> claims);
  // Blocks until a claim is queued (returns it) or the queue is closed
  // (nullopt); a fiber parks meanwhile.
  std::optional<QueuedClaim> pop();
  // Removes the claims made at or before `cutoff` (held too long: released).
  std::vector<QueuedClaim> take_claimed_before(Clock::time_point cutoff);
  // The oldest claim time queued, if any.
  std::optional<Clock::time_point> oldest() const;
  std::size_t size() const;
  // The same without taking the queue's lock (a snapshot, for wake-up decisions).
  bool looks_empty() const noexcept { return count_.load() == 0; }
  // No more pops; returns what was still queued.
  std::vector<QueuedClaim> close();

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Fiber*> parked_;  // runner fibers waiting in pop()
  std::deque<QueuedClaim> claims_;
  std::atomic<std::size_t> count_{0};  // claims_.size(), written under mutex_
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
  LocalQueue local;
  Flusher flusher;

  void log(LogLevel level, const std::string& message) const noexcept;

  // Claims this pool holds: queued locally or with a runner.
  int active() const noexcept { return active_.load(); }
  // Runners executing a task now.
  int running() const noexcept { return running_.load(); }
  void runner_started() noexcept { running_.fetch_add(1); }
  void runner_stopped() noexcept { running_.fetch_sub(1); }
  // Claimers reserve the slots of a claim before making it and give back the
  // slots it did not fill, so two claimers never hold more than the capacity.
  // reserve_slots returns how many it reserved: min(wanted, capacity - active).
  int reserve_slots(int wanted, int capacity) noexcept;
  void unreserve_slots(int count) noexcept;
  // No claim is made any more (reserve_slots returns 0 from now on): the
  // on_stuck = exit policy closes claims before a stuck run can free a slot.
  void close_claims() noexcept { claims_closed_.store(true); }
  bool claims_closed() const noexcept { return claims_closed_.load(); }
  // Wakes wait_until callers (a condition their predicate reads has changed).
  void nudge() noexcept;
  // A runner gave its slot back: wake stop(), and the poller when the slot
  // makes a claim worth it (see wake_poller_at).
  void free_slot() noexcept;
  // The poller, before it sleeps: a freed slot wakes it only once at most
  // `active` claims are held, or the local queue is empty (a refill is then
  // due, whatever its size). Without this each finished task would wake the
  // poller (a pipe write and a context switch per task) only for it to find
  // too few free slots to claim.
  // kPollerBusy (the poller is not sleeping): a freed slot wakes nobody, the
  // poller looks at the slots again before it sleeps.
  static constexpr int kPollerBusy = INT_MIN;
  void wake_poller_at(int active) noexcept { wake_at_active_.store(active); }
  // How many slots were ever freed (free_slot): the poller tells whether one
  // was freed since it last looked.
  std::uint64_t slots_freed() const noexcept { return freed_.load(); }
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
  // Hands back a prefetched claim no runner started (the attempt is not used)
  // and frees its slot; false when the call failed (the claim then expires).
  bool release_unstarted(pqxx::connection_base& connection, const QueuedClaim& claim) noexcept;

 private:
  std::atomic<bool> claims_closed_{false};
  std::atomic<int> active_{0};
  std::atomic<int> running_{0};
  std::atomic<int> wake_at_active_{kPollerBusy};
  std::atomic<std::uint64_t> freed_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace docket::detail
