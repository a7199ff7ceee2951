// WorkerPool: executes one queue's tasks. It validates its TaskCatalog and the
// installed schema version before starting, then runs a Poller (claims up to
// free capacity, woken by NOTIFY docket_due, by a runner finishing, and by its
// poll interval) and one Runner thread per claimed task, each watched by a
// LeaseWatchdog. PostgreSQL decides retries, poison and fencing; the pool only
// carries the decisions out.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "docket/logger.hpp"
#include "docket/task_catalog.hpp"

namespace docket {

struct WorkerPoolOptions {
  std::string conninfo;  // libpq connection string ("" = PG* environment)
  std::string queue = "default";
  int concurrency = 10;  // runners at most
  int batch_size = 10;   // claim at most this many per poll
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds lease{30000};  // claim TTL; the watchdog warns at 1x, stops at 2x
  std::chrono::milliseconds shutdown_grace{10000};
  int max_claim_attempts = 10;
  bool listen = true;              // LISTEN docket_due
  std::shared_ptr<Logger> logger;  // default: stderr, info
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
  std::uint64_t stuck = 0;      // runners stopped by the watchdog (threads still blocked)
  std::uint64_t active = 0;     // runners holding a slot now
  double claim_latency_ms = 0;  // mean duration of a claim call
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

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace docket
