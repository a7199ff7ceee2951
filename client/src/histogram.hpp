// A lock-free histogram for the pool's hot paths: fixed integer bucket bounds,
// one relaxed atomic add for the bucket and one for the sum per observation.
// Values are integers in the histogram's unit (nanoseconds, items); the
// snapshot converts them with `scale` (1e-9 for seconds). A snapshot taken
// while observations land may see a bucket before its sum: fine for metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "docket/metrics.hpp"

namespace docket::detail {

class Histogram {
 public:
  static constexpr std::size_t kMaxBounds = 16;

  // `bounds`: ascending upper bounds in the value's unit (at most kMaxBounds).
  Histogram(std::initializer_list<std::uint64_t> bounds, double scale) noexcept : scale_(scale) {
    for (const std::uint64_t bound : bounds) {
      if (size_ == kMaxBounds) break;
      bounds_[size_++] = bound;
    }
  }
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void observe(std::uint64_t value) noexcept {
    std::size_t i = 0;
    while (i < size_ && value > bounds_[i]) ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);  // i == size_: the +Inf bucket
    sum_.fetch_add(value, std::memory_order_relaxed);
  }

  HistogramSnapshot snapshot() const {
    HistogramSnapshot out;
    std::uint64_t running = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      running += buckets_[i].load(std::memory_order_relaxed);
      out.bounds.push_back(static_cast<double>(bounds_[i]) * scale_);
      out.cumulative.push_back(running);
    }
    out.count = running + buckets_[size_].load(std::memory_order_relaxed);
    out.sum = static_cast<double>(sum_.load(std::memory_order_relaxed)) * scale_;
    return out;
  }

 private:
  std::array<std::uint64_t, kMaxBounds> bounds_{};
  std::size_t size_ = 0;
  double scale_;
  std::array<std::atomic<std::uint64_t>, kMaxBounds + 1> buckets_{};
  std::atomic<std::uint64_t> sum_{0};
};

}  // namespace docket::detail
