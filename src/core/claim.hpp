// Claim selection: which ready and expired candidates one claim_due call turns
// into leases or poison, in which order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.hpp"

namespace docket {

enum class ClaimClass { ready, expired };

std::optional<ClaimClass> parse_claim_class(std::string_view text) noexcept;

// Upper bound on claim_limit and page limits: larger demands are bad arguments.
constexpr int kMaxBatch = 10000;

struct ClaimPolicy {
  Micros now = 0;
  int limit = 1;
  std::int64_t orphan_ttl_ms = 30000;
  int max_claim_attempts = 3;
  std::optional<ClaimClass> preference;
};

// Raises bad_argument for a limit outside [1, kMaxBatch], a negative TTL, a
// max_claim_attempts below 1 or an infinite now.
void validate_claim_policy(const ClaimPolicy& policy);

// Runs whose claim is older than this are expired: claimed_at < cutoff, i.e.
// now - claimed_at > orphan_ttl_ms. Saturates instead of overflowing.
Micros expiry_cutoff(const ClaimPolicy& policy) noexcept;

// Per-claim leases (docs/tasks.md "Leases"). A claim made with a lease
// (claim_tasks' lease_ms, stored on the run as lease_ms) never expires before
// claimed_at + lease, whatever TTL a later claimer passes: it is expired only
// when now - claimed_at exceeds both that claimer's TTL and the lease. A claim
// without one (claim_due's) expires by the claimer's TTL alone, as in seed 000.
// The stored lease is capped at kMaxDurationMs (ten years), so the arithmetic
// in the candidate scan never overflows.
std::int64_t stored_lease_ms(std::int64_t lease_ms) noexcept;

// An expired candidate's eligible time: claimed_at + max(ttl, lease).
Micros expired_eligible_at(Micros claimed_at, std::int64_t ttl_ms,
                           std::optional<std::int64_t> lease_ms) noexcept;

struct Candidate {
  std::string run_id;
  Micros eligible_at = 0;  // wake_at (ready) or expired_eligible_at (expired)
  int claim_attempts = 0;
};

struct Pick {
  ClaimClass cls;
  std::size_t index;  // into the class's candidate list
};

// Chooses at most policy.limit candidates. Each list holds the first
// candidates of its class in (eligible_at, run_id) order. With limit >= 2 and
// both classes present, each class gets at least one outcome and the rest go
// by (eligible_at, run_id); with limit 1 the preferred class (if any and
// non-empty) wins, else the older head. Picks come back in (eligible_at,
// run_id) order.
std::vector<Pick> select_candidates(const std::vector<Candidate>& ready,
                                    const std::vector<Candidate>& expired,
                                    const ClaimPolicy& policy);

// What happens to one selected candidate.
struct ClaimDecision {
  enum class Kind { lease, poison };
  Kind kind;
  int claim_attempt;  // the attempt number the lease carries (count after increment)
};

// A lease while the count is below the maximum; poison once it has reached it.
ClaimDecision decide_claim(int claim_attempts, int max_claim_attempts) noexcept;

constexpr const char* kPoisonByAttempts = "max_claim_attempts_exceeded";
constexpr const char* kPoisonByAbandons = "max_claim_abandons_exceeded";

}  // namespace docket
