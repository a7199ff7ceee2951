#include "core/input_limits.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace docket {

namespace {

// |a - b| in microseconds, exact for every pair of int64 values.
std::uint64_t distance(Micros a, Micros b) noexcept {
  return a >= b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)
                : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
}

std::string millis_text(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f ms", ms);
  return buf;
}

}  // namespace

void check_clock_skew(const char* name, Micros value, Micros reference, double max_skew_ms) {
  // Compared in microseconds as doubles: 2^64 us and any setting fit without overflow.
  const double skew_us = static_cast<double>(distance(value, reference));
  if (skew_us <= std::floor(max_skew_ms * 1000.0)) return;
  fail(Reason::bad_argument,
       std::string(name) + " is " + (value > reference ? "ahead of" : "behind") +
           " docket's clock by more than docket.max_clock_skew (" + millis_text(max_skew_ms) + ")");
}

void check_size(const std::string& what, std::size_t bytes, const char* setting, std::int64_t cap) {
  if (cap >= 0 && bytes <= static_cast<std::uint64_t>(cap)) return;
  fail(Reason::limit_exceeded, what + " is " + std::to_string(bytes) + " bytes, over " + setting +
                                   " (" + std::to_string(cap) + " bytes)");
}

}  // namespace docket
