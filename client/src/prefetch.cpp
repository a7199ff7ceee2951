// PrefetchSizer: the automatic prefetch (see prefetch.hpp).
#include "prefetch.hpp"

#include <algorithm>
#include <cmath>

namespace docket::detail {

namespace {
constexpr double kSmoothing = 0.5;  // weight of the newest sample
constexpr double kRoundTrips = 2;   // work queued for this many claim round trips
}  // namespace

PrefetchSizer::PrefetchSizer(int fixed, int max_prefetch) noexcept
    : automatic_(fixed < 0),
      max_prefetch_(std::max(0, max_prefetch)),
      prefetch_(fixed < 0 ? 0 : fixed) {}

void PrefetchSizer::observe(Clock::duration latency, std::uint64_t started,
                            Clock::time_point now) noexcept {
  if (!automatic_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  const double seconds = std::chrono::duration<double>(latency).count();
  latency_s_ = latency_s_ < 0 ? seconds : kSmoothing * seconds + (1 - kSmoothing) * latency_s_;
  if (!sampled_) {
    sampled_ = true;
    last_at_ = now;
    last_started_ = started;
    return;
  }
  const double elapsed = std::chrono::duration<double>(now - last_at_).count();
  if (now - last_at_ < kMinSample || elapsed <= 0) return;
  const double sample = static_cast<double>(started - last_started_) / elapsed;
  rate_ = kSmoothing * sample + (1 - kSmoothing) * rate_;
  last_at_ = now;
  last_started_ = started;
  const double target = std::round(rate_ * kRoundTrips * latency_s_);
  prefetch_.store(static_cast<int>(std::clamp(target, 0.0, static_cast<double>(max_prefetch_))),
                  std::memory_order_relaxed);
}

}  // namespace docket::detail
