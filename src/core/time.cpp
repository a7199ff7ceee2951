#include "core/time.hpp"

namespace docket {

namespace {

constexpr std::int64_t kMicrosPerSecond = 1000000;
constexpr std::int64_t kSecondsPerDay = 86400;
// Days from 1970-01-01 to 2000-01-01.
constexpr std::int64_t kPgEpochDays = 10957;

// Howard Hinnant's days_from_civil.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool leap(std::int64_t y) noexcept {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool digits(std::size_t n, int* out) noexcept {
    if (pos_ + n > s_.size()) return false;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = s_[pos_ + i];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    pos_ += n;
    *out = v;
    return true;
  }
  bool accept(char c) noexcept {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool peek_digit() const noexcept {
    return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9';
  }
  bool done() const noexcept { return pos_ == s_.size(); }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

Micros add_millis(Micros t, std::int64_t ms) noexcept {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  if (ms > kMax / 1000) return kPlusInfinity;
  if (ms < kMin / 1000) return kMinusInfinity;
  const std::int64_t delta = ms * 1000;
  if (delta > 0 && t > kMax - delta) return kPlusInfinity;
  if (delta < 0 && t < kMin - delta) return kMinusInfinity;
  return t + delta;
}

std::optional<Micros> parse_iso8601(std::string_view text) noexcept {
  Cursor c(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!c.digits(4, &year) || !c.accept('-') || !c.digits(2, &month) || !c.accept('-') ||
      !c.digits(2, &day))
    return std::nullopt;
  if (!c.accept('T') && !c.accept(' ')) return std::nullopt;
  if (!c.digits(2, &hour) || !c.accept(':') || !c.digits(2, &minute) || !c.accept(':') ||
      !c.digits(2, &second))
    return std::nullopt;
  std::int64_t fraction = 0;
  if (c.accept('.')) {
    int scale = 0;
    while (c.peek_digit()) {
      int d = 0;
      c.digits(1, &d);
      if (++scale > 6) return std::nullopt;
      fraction = fraction * 10 + d;
    }
    if (scale == 0) return std::nullopt;
    for (; scale < 6; ++scale) fraction *= 10;
  }
  std::int64_t offset_seconds = 0;
  if (!c.accept('Z')) {
    int sign = 0;
    if (c.accept('+')) {
      sign = 1;
    } else if (c.accept('-')) {
      sign = -1;
    } else {
      return std::nullopt;
    }
    int oh = 0, om = 0;
    if (!c.digits(2, &oh)) return std::nullopt;
    const bool has_minutes = c.accept(':') || c.peek_digit();  // +HH:MM, +HHMM or +HH
    if (has_minutes && !c.digits(2, &om)) return std::nullopt;
    if (oh > 15 || om > 59) return std::nullopt;
    offset_seconds =
        static_cast<std::int64_t>(sign) * (std::int64_t{oh} * 3600 + std::int64_t{om} * 60);
  }
  if (!c.done()) return std::nullopt;
  if (year < 1 || month < 1 || month > 12 || day < 1 ||
      static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month)) || hour > 23 ||
      minute > 59 || second > 59)
    return std::nullopt;
  const std::int64_t days =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) -
      kPgEpochDays;
  const std::int64_t seconds = days * kSecondsPerDay + std::int64_t{hour} * 3600 +
                               std::int64_t{minute} * 60 + second - offset_seconds;
  return seconds * kMicrosPerSecond + fraction;
}

}  // namespace docket
