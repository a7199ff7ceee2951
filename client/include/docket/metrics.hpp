// Worker metrics: what a WorkerPool counts and measures, as a plain snapshot
// (WorkerPool::metrics()) and in the Prometheus text exposition format
// (to_prometheus, and the pool's optional HTTP listener,
// WorkerPoolOptions::metrics_address). The names, types and labels are listed
// in docs/operating.md. Counters only grow over a pool's life; gauges are the
// value now. The figures describe what this process observed; they are not
// durability proof (PostgreSQL is the authority).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace docket {

// A histogram: observations counted in buckets by upper bound (Prometheus "le").
struct HistogramSnapshot {
  std::vector<double> bounds;             // upper bounds, ascending (+Inf is implied)
  std::vector<std::uint64_t> cumulative;  // observations <= bounds[i] (same size)
  std::uint64_t count = 0;                // every observation (the +Inf bucket)
  double sum = 0;                         // of the observed values
};

struct MetricsSnapshot {
  std::string queue;  // the pool's queue: the "queue" label of every sample

  // Counters.
  std::uint64_t claims = 0;           // claim_tasks calls that returned
  std::uint64_t claim_errors = 0;     // claim_tasks calls that failed
  std::uint64_t tasks_claimed = 0;    // claims received (tasks leased to this pool)
  std::uint64_t tasks_started = 0;    // handlers invoked
  std::uint64_t tasks_completed = 0;  // completions committed
  std::uint64_t tasks_failed = 0;     // attempts failed (retried or for good)
  std::uint64_t tasks_retried = 0;    // of which a retry was scheduled
  std::uint64_t tasks_cancelled = 0;  // unwound or refused as cancelled
  std::uint64_t tasks_suspended = 0;  // sleeps and waits
  std::uint64_t tasks_deferred = 0;   // unknown task names handed back, claims released at shutdown
  std::uint64_t tasks_lost = 0;       // claims lost (stale fence) or outcomes unknown (ambiguous)
  std::uint64_t claims_released = 0;  // prefetched claims handed back unstarted
  std::uint64_t lease_warnings = 0;   // runners warned by the watchdog at one lease
  std::uint64_t stuck_runners = 0;    // runners given up on (blocked past two leases or shutdown)
  std::uint64_t poller_restarts = 0;  // poller incarnations that broke and were restarted
  std::uint64_t schedules_fired = 0;  // tasks spawned by the schedules this pool fired

  // Gauges.
  std::uint64_t claims_held = 0;   // claims held now (running or queued locally)
  std::uint64_t runners_busy = 0;  // handlers running now
  std::uint64_t concurrency = 0;   // runner threads configured

  // Histograms.
  HistogramSnapshot claim_seconds;    // duration of a claim_tasks call
  HistogramSnapshot handler_seconds;  // a handler's run, from invocation to return or throw
  HistogramSnapshot flush_size;       // items (steps and completions) per group commit
  HistogramSnapshot flush_seconds;    // duration of a group commit (its transaction)
};

// The snapshots in the Prometheus text exposition format (version 0.0.4): one
// HELP and TYPE line per metric, then one sample per snapshot, labelled with its
// queue. Several pools' snapshots can be served together.
std::string to_prometheus(const std::vector<MetricsSnapshot>& snapshots);
std::string to_prometheus(const MetricsSnapshot& snapshot);

}  // namespace docket
