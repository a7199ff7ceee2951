// Pre-execution abandon: the disposition, counters and backoff of handing a
// claim back before the holder's first commit.
#pragma once

#include <cstdint>
#include <optional>

#include "core/time.hpp"

namespace docket {

struct AbandonPolicy {
  std::int64_t expected_checkpoint_seq = 0;
  Micros now = 0;
  Micros retry_at = 0;
  int max_claim_abandons = 1;
  bool non_poisoning = false;
  std::optional<int> backoff_base_ms;
  std::optional<int> backoff_cap_ms;
};

// Raises bad_argument: retry_at < now (checked even with backoff), backoff
// values not both NULL or both > 0, max_claim_abandons < 1, negative sequence.
void validate_abandon_policy(const AbandonPolicy& policy);

struct AbandonDecision {
  enum class Kind { rescheduled, poisoned };
  Kind kind = Kind::rescheduled;
  int claim_attempts = 0;         // after handing the acquisition back
  int claim_abandons = 0;         // after counting this abandon
  std::optional<Micros> wake_at;  // set when rescheduled
  bool due_now = false;
};

// min(base_ms * 2^abandons_before, cap_ms), saturating.
std::int64_t abandon_backoff_ms(int base_ms, int cap_ms, int abandons_before) noexcept;

// Applies one matched abandon to the stored counters.
AbandonDecision decide_abandon(int claim_attempts, int claim_abandons,
                               const AbandonPolicy& policy) noexcept;

}  // namespace docket
