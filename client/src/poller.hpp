// Poller: claims up to the pool's free capacity (concurrency + prefetch claims
// held, at most batch_size per call) into the pool's local queue, where the
// runner threads take them. It wakes on NOTIFY docket_due for its queue, on a
// runner giving its slot back (refill), on its poll interval as a fallback, and
// claims again at once while batches come back full. After a NOTIFY it also
// covers the producer's debounce window (docket.notify_interval_ms, during
// which that producer's further spawns send none): it claims every
// debounce_poll_interval inside the window and once more at its end (the
// trailing edge). While claims come back full (a backlog), an assistant thread
// with its own connection claims too (WorkerPoolOptions::claim_connections
// = 2), so two claims run on the server at once; slots are reserved before a
// claim, so together they never exceed the capacity. The poller also fires the
// due schedules (docket.fire_schedules) at most once per schedule_interval. A
// claim that waited in the local queue for half the lease is released (handed
// back to the database). It owns one connection; when that breaks it reconnects
// with backoff.
// Beside it a waker (WorkerPoolOptions::await_tasks) with its own connection
// claims by docket.await_tasks while the pool has a free slot and no backlog:
// the call waits on the server, every commit that makes work of the queue due
// wakes it without NOTIFY or debounce, and it claims at once in the same call. While the waker
// serves, the poller ignores NOTIFY (the same commits woke the waker) and covers no debounce
// window. The active count belongs to the pool, so a restarted poller starts from the runners still
// alive.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include <pqxx/pqxx>

#include "docket/sql.hpp"
#include "pool_shared.hpp"
#include "prefetch.hpp"

namespace docket::detail {

// What the poller needs from its pool.
class RunnerHost {
 public:
  virtual ~RunnerHost() = default;
  // Joins the runner threads that have exited and replaces those stopped by
  // the watchdog.
  virtual void reap() = 0;
  // Runners holding a slot now.
  virtual int live_runners() = 0;
};

class Poller {
 public:
  // `connection` (may be null) is a validated connection to start with.
  Poller(std::shared_ptr<PoolShared> pool, RunnerHost& host,
         std::unique_ptr<pqxx::connection> connection);
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  void start();
  // Stops claiming and joins the thread; claimed tasks are already with runners.
  void stop();

 private:
  enum class Woken { stopping, pipe, socket, timeout };

  void run();
  // One incarnation: connect, listen, claim and wait until stopped or broken
  // (throws). `claimed` tells whether a claim succeeded before it broke.
  void serve(bool& claimed);
  // Claims `reserved` tasks at most (slots already reserved) on `connection`
  // into the local queue, gives back the slots it did not fill; returns how many.
  // await_ms >= 0: by docket.await_tasks, waiting up to await_ms for work; -1
  // when the wait timed out.
  int claim(pqxx::connection& connection, int reserved, int await_ms = -1);
  // The backlog ended (busy_ was set): the waker may wait again.
  void end_backlog();
  // The assistant claimer's thread: claims while busy_ and capacity allow.
  void assist();
  // The waker's thread: claims by docket.await_tasks, which waits for work.
  void wake_loop();
  // One incarnation of the waker on `connection` (throws when it breaks).
  void wake_serve(pqxx::connection& connection);
  // Claims the pool may hold now: concurrency + the prefetch (PrefetchSizer).
  int capacity() const noexcept;
  // The refill threshold: half a batch (or the capacity), at least 1.
  int refill_at() const;
  // Enough slots are free for a claim: refill_at of them, or any while the
  // local queue is empty.
  bool refill_due() const;
  // Fires the due schedules when schedule_interval has passed since the last
  // time; returns when to fire next (time_point::max() when disabled). A
  // failure other than a lost connection is logged, not thrown.
  Clock::time_point fire_schedules();
  // Releases queued claims older than half the lease; returns when the next one
  // reaches that age (time_point::max() when none is queued).
  Clock::time_point release_stale_claims();
  // Waits for the wake pipe or the socket (-1: none) up to `timeout`.
  Woken wait(int socket, std::chrono::microseconds timeout);

  const std::shared_ptr<PoolShared> pool_;
  RunnerHost& host_;
  std::unique_ptr<pqxx::connection> connection_;  // poller thread only
  std::atomic<bool> stopping_{false};
  bool due_ = false;  // a NOTIFY for our queue arrived (poller thread only)
  // The last claim came back full: there is a backlog, the assistant claims too.
  std::atomic<bool> busy_{false};
  // The waker waits here while busy_ (end_backlog() and stop() wake it), not on
  // the pool's condition, which every finished task's freed slot notifies.
  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;
  Clock::time_point next_fire_ = Clock::time_point::min();  // poller thread only
  PrefetchSizer prefetch_;
  // The waker is connected and serves (its server has await_tasks): the poller
  // then neither claims on a NOTIFY nor covers a debounce window.
  std::atomic<bool> waker_serving_{false};
  // The waker's connection while it is open, for stop() to cancel its wait.
  std::mutex waker_mutex_;
  pqxx::connection* waker_connection_ = nullptr;  // guarded by waker_mutex_
  std::thread thread_;
  std::thread assistant_;
  std::thread waker_;
};

}  // namespace docket::detail
