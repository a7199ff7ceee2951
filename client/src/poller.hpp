// Poller: claims up to the pool's free capacity (at most batch_size per call)
// and hands each claimed task to a new runner. It wakes on NOTIFY docket_due
// for its queue, on a runner giving its slot back (immediate refill), on its
// poll interval as a fallback, and claims again at once while batches come back
// full. It owns one connection; when that breaks it reconnects with backoff.
// The active count belongs to the pool, so a restarted poller starts from the
// runners still alive.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include <pqxx/pqxx>

#include "docket/sql.hpp"
#include "pool_shared.hpp"

namespace docket::detail {

// What the poller needs from its pool.
class RunnerHost {
 public:
  virtual ~RunnerHost() = default;
  // Starts a runner for a claimed task; the poller has taken its slot.
  virtual void launch(sql::ClaimedTask task) = 0;
  // Joins the runner threads that have finished.
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
  // Claims at most `limit` tasks and launches their runners; returns how many.
  int claim(int limit);
  // Waits for the wake pipe or the socket (-1: none) up to `timeout`.
  Woken wait(int socket, std::chrono::milliseconds timeout);

  const std::shared_ptr<PoolShared> pool_;
  RunnerHost& host_;
  std::unique_ptr<pqxx::connection> connection_;  // poller thread only
  std::atomic<bool> stopping_{false};
  bool due_ = false;  // a NOTIFY for our queue arrived (poller thread only)
  std::thread thread_;
};

}  // namespace docket::detail
