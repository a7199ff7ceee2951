#include "core/abandon.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace docket {

void validate_abandon_policy(const AbandonPolicy& policy) {
  if (policy.expected_checkpoint_seq < 0)
    fail(Reason::bad_argument, "expected_checkpoint_seq must be >= 0");
  if (policy.now == kMinusInfinity || policy.now == kPlusInfinity)
    fail(Reason::bad_argument, "now must be a finite timestamp");
  if (policy.retry_at == kPlusInfinity)
    fail(Reason::bad_argument, "retry_at must be a finite timestamp");
  if (policy.retry_at < policy.now) fail(Reason::bad_argument, "retry_at must not precede now");
  if (policy.max_claim_abandons < 1)
    fail(Reason::bad_argument,
         "max_claim_abandons must be > 0, got " + std::to_string(policy.max_claim_abandons));
  if (policy.backoff_base_ms.has_value() != policy.backoff_cap_ms.has_value())
    fail(Reason::bad_argument, "backoff_base_ms and backoff_cap_ms go together: both or neither");
  if (policy.backoff_base_ms && (*policy.backoff_base_ms <= 0 || *policy.backoff_cap_ms <= 0))
    fail(Reason::bad_argument, "backoff_base_ms and backoff_cap_ms must be > 0");
}

std::int64_t abandon_backoff_ms(int base_ms, int cap_ms, int abandons_before) noexcept {
  // base * 2^n in closed form (no loop whose length is the abandon count): from
  // n = 32 on, any base > 0 is past every int cap.
  if (base_ms <= 0) return std::min(base_ms, cap_ms);  // refused by validation; no shift of it
  const int doublings = std::min(std::max(abandons_before, 0), 32);
  const std::int64_t delay = static_cast<std::int64_t>(base_ms) << doublings;
  return std::min<std::int64_t>(delay, cap_ms);
}

AbandonDecision decide_abandon(int claim_attempts, int claim_abandons,
                               const AbandonPolicy& policy) noexcept {
  AbandonDecision d;
  d.claim_attempts = std::max(claim_attempts - 1, 0);
  d.claim_abandons = claim_abandons == INT32_MAX ? claim_abandons : claim_abandons + 1;
  if (!policy.non_poisoning && claim_abandons >= policy.max_claim_abandons) {
    d.kind = AbandonDecision::Kind::poisoned;
    return d;
  }
  d.kind = AbandonDecision::Kind::rescheduled;
  d.wake_at =
      policy.backoff_base_ms
          ? add_millis(policy.now, abandon_backoff_ms(*policy.backoff_base_ms,
                                                      *policy.backoff_cap_ms, claim_abandons))
          : policy.retry_at;
  d.due_now = *d.wake_at <= policy.now;
  return d;
}

}  // namespace docket
