// Operational timestamps: PostgreSQL's TimestampTz representation
// (microseconds since 2000-01-01 00:00:00 UTC), kept as a plain integer.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace docket {

using Micros = std::int64_t;

constexpr Micros kMinusInfinity = std::numeric_limits<Micros>::min();
constexpr Micros kPlusInfinity = std::numeric_limits<Micros>::max();

// t + ms milliseconds, saturating at the infinities instead of overflowing.
Micros add_millis(Micros t, std::int64_t ms) noexcept;

// Strict ISO-8601 / RFC 3339 instant: YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|+HH:MM|-HH:MM).
// A space may replace the 'T' and "+HH" / "+HHMM" offsets are accepted, as
// PostgreSQL prints them. Anything else (no offset, bad calendar date) is nullopt.
std::optional<Micros> parse_iso8601(std::string_view text) noexcept;

}  // namespace docket
