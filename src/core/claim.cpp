#include "core/claim.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace docket {

std::optional<ClaimClass> parse_claim_class(std::string_view text) noexcept {
  if (text == "ready") return ClaimClass::ready;
  if (text == "expired") return ClaimClass::expired;
  return std::nullopt;
}

void validate_claim_policy(const ClaimPolicy& policy) {
  if (policy.now == kMinusInfinity || policy.now == kPlusInfinity)
    fail(Reason::bad_argument, "now must be a finite timestamp");
  if (policy.limit < 1 || policy.limit > kMaxBatch)
    fail(Reason::bad_argument, "claim_limit must be between 1 and " + std::to_string(kMaxBatch) +
                                   ", got " + std::to_string(policy.limit));
  if (policy.orphan_ttl_ms < 0)
    fail(Reason::bad_argument,
         "orphan_ttl_ms must be >= 0, got " + std::to_string(policy.orphan_ttl_ms));
  if (policy.max_claim_attempts < 1)
    fail(Reason::bad_argument,
         "max_claim_attempts must be >= 1, got " + std::to_string(policy.max_claim_attempts));
}

Micros expiry_cutoff(const ClaimPolicy& policy) noexcept {
  return add_millis(policy.now, -policy.orphan_ttl_ms);
}

std::int64_t stored_lease_ms(std::int64_t lease_ms) noexcept {
  return std::clamp<std::int64_t>(lease_ms, 0, kMaxDurationMs);
}

Micros expired_eligible_at(Micros claimed_at, std::int64_t ttl_ms,
                           std::optional<std::int64_t> lease_ms) noexcept {
  return add_millis(claimed_at, lease_ms ? std::max(ttl_ms, *lease_ms) : ttl_ms);
}

namespace {

bool before(const Candidate& a, const Candidate& b) noexcept {
  if (a.eligible_at != b.eligible_at) return a.eligible_at < b.eligible_at;
  return a.run_id < b.run_id;
}

const Candidate& at(const std::vector<Candidate>& ready, const std::vector<Candidate>& expired,
                    const Pick& pick) {
  return pick.cls == ClaimClass::ready ? ready[pick.index] : expired[pick.index];
}

}  // namespace

std::vector<Pick> select_candidates(const std::vector<Candidate>& ready,
                                    const std::vector<Candidate>& expired,
                                    const ClaimPolicy& policy) {
  std::vector<Pick> picks;
  const std::size_t limit = static_cast<std::size_t>(std::max(policy.limit, 0));
  if (limit == 0 || (ready.empty() && expired.empty())) return picks;

  std::size_t next_ready = 0;
  std::size_t next_expired = 0;

  if (limit == 1) {
    const bool prefer_expired = policy.preference == ClaimClass::expired;
    const bool prefer_ready = policy.preference == ClaimClass::ready;
    if (prefer_ready && !ready.empty()) return {Pick{ClaimClass::ready, 0}};
    if (prefer_expired && !expired.empty()) return {Pick{ClaimClass::expired, 0}};
    if (ready.empty()) return {Pick{ClaimClass::expired, 0}};
    if (expired.empty()) return {Pick{ClaimClass::ready, 0}};
    return {before(expired[0], ready[0]) ? Pick{ClaimClass::expired, 0}
                                         : Pick{ClaimClass::ready, 0}};
  }

  // limit >= 2: reserve one outcome for each non-empty class, then age order.
  if (!ready.empty() && !expired.empty()) {
    picks.push_back(Pick{ClaimClass::ready, next_ready++});
    picks.push_back(Pick{ClaimClass::expired, next_expired++});
  }
  while (picks.size() < limit && (next_ready < ready.size() || next_expired < expired.size())) {
    const bool take_ready =
        next_expired >= expired.size() ||
        (next_ready < ready.size() && before(ready[next_ready], expired[next_expired]));
    picks.push_back(take_ready ? Pick{ClaimClass::ready, next_ready++}
                               : Pick{ClaimClass::expired, next_expired++});
  }
  std::stable_sort(picks.begin(), picks.end(), [&](const Pick& a, const Pick& b) {
    return before(at(ready, expired, a), at(ready, expired, b));
  });
  return picks;
}

ClaimDecision decide_claim(int claim_attempts, int max_claim_attempts) noexcept {
  if (claim_attempts >= max_claim_attempts)
    return ClaimDecision{ClaimDecision::Kind::poison, claim_attempts};
  return ClaimDecision{ClaimDecision::Kind::lease, claim_attempts + 1};
}

}  // namespace docket
