#include "core/json_number.hpp"

#include <limits>

namespace docket {

std::optional<std::int64_t> parse_json_integer(std::string_view text) noexcept {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  if (i >= text.size()) return std::nullopt;
  // Accumulate as a negative number so INT64_MIN fits.
  std::int64_t value = 0;
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  std::size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
    const int d = text[i] - '0';
    if (value < (kMin + d) / 10) return std::nullopt;
    value = value * 10 - d;
  }
  if (digits == 0) return std::nullopt;
  if (i < text.size()) {
    if (text[i] != '.') return std::nullopt;
    ++i;
    std::size_t zeros = 0;
    for (; i < text.size() && text[i] == '0'; ++i) ++zeros;
    if (zeros == 0 || i != text.size()) return std::nullopt;
  }
  if (negative) return value;
  if (value == kMin) return std::nullopt;
  return -value;
}

}  // namespace docket
