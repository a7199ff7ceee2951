// PrefetchSizer: how many claims the pool holds beyond its running ones.
//
// A fixed WorkerPoolOptions::prefetch is used as given. The default, automatic
// prefetch, keeps about two claim round trips' worth of work queued: the
// target is the rate at which runners start tasks times twice the time a claim
// takes, rounded, between 0 and max_prefetch. Short tasks behind a slow claim get a deep
// queue (the serial claim pipeline is not what bounds the pool), slow tasks get
// none (a pool does not hoard work another pool could start). Both inputs are
// smoothed (exponential moving averages); the rate is sampled at each claim
// that comes at least kMinSample after the previous sample.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace docket::detail {

class PrefetchSizer {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kMinSample = std::chrono::milliseconds(10);

  // fixed >= 0: always that prefetch; fixed < 0: automatic, up to max_prefetch.
  PrefetchSizer(int fixed, int max_prefetch) noexcept;

  // The prefetch now.
  int prefetch() const noexcept { return prefetch_.load(std::memory_order_relaxed); }

  // One claim that took `latency`, done at `now`, when the pool had started
  // `started` tasks in all. Thread-safe (the poller and its assistant claim).
  void observe(Clock::duration latency, std::uint64_t started, Clock::time_point now) noexcept;

 private:
  const bool automatic_;
  const int max_prefetch_;
  std::atomic<int> prefetch_;
  std::mutex mutex_;
  bool sampled_ = false;
  Clock::time_point last_at_{};
  std::uint64_t last_started_ = 0;
  double rate_ = 0;        // tasks started per second
  double latency_s_ = -1;  // a claim's duration in seconds (< 0: none yet)
};

}  // namespace docket::detail
