#include "core/vacuum.hpp"

#include <algorithm>

namespace docket {

bool vacuum_look_due(std::int64_t naptime_ms, std::int64_t now_ms, std::int64_t last_look_ms,
                     std::int64_t backoff_ms) {
  if (naptime_ms <= 0) return false;
  if (last_look_ms < 0) return true;
  // A clock that stepped back counts as time passed: the next look is not
  // put off by the size of the step.
  return now_ms < last_look_ms || now_ms - last_look_ms >= naptime_ms + backoff_ms;
}

std::int64_t vacuum_backoff_ms(std::int64_t previous_ms, std::int64_t naptime_ms, bool vacuumed) {
  if (vacuumed) return 0;
  const std::int64_t previous = std::clamp(previous_ms, std::int64_t{0}, kMaxVacuumBackoffMs);
  return std::min(std::max(2 * previous, naptime_ms), kMaxVacuumBackoffMs);
}

bool vacuum_needed(const VacuumFacts& facts) {
  if (!facts.autovacuum_on || !facts.table_enabled || facts.naptime_ms <= 0) return false;
  const double rows = facts.rows > 0 ? facts.rows : 0;
  return facts.dead_rows > facts.threshold + facts.scale_factor * rows;
}

}  // namespace docket
