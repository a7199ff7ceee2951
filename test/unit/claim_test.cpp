// Claim selection and claim decisions: the class rules of claim_due.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/claim.hpp"
#include "core/error.hpp"

namespace docket {
namespace {

Candidate cand(std::string id, Micros eligible_at, int attempts = 0) {
  return Candidate{std::move(id), eligible_at, attempts};
}

ClaimPolicy policy(int limit, std::optional<ClaimClass> preference = std::nullopt) {
  ClaimPolicy p;
  p.now = 1000000;
  p.limit = limit;
  p.preference = preference;
  return p;
}

// Renders picks as "r:<id>" / "e:<id>" so expectations read like the outcome.
std::vector<std::string> render(const std::vector<Pick>& picks, const std::vector<Candidate>& ready,
                                const std::vector<Candidate>& expired) {
  std::vector<std::string> out;
  for (const Pick& p : picks) {
    if (p.cls == ClaimClass::ready) {
      out.push_back("r:" + ready.at(p.index).run_id);
    } else {
      out.push_back("e:" + expired.at(p.index).run_id);
    }
  }
  return out;
}

using Names = std::vector<std::string>;

TEST(ParseClaimClass, KnownWordsOnly) {
  EXPECT_EQ(parse_claim_class("ready"), ClaimClass::ready);
  EXPECT_EQ(parse_claim_class("expired"), ClaimClass::expired);
  EXPECT_FALSE(parse_claim_class("Ready").has_value());
  EXPECT_FALSE(parse_claim_class("").has_value());
  EXPECT_FALSE(parse_claim_class("ready ").has_value());
}

TEST(SelectCandidates, NothingEligibleGivesNothing) {
  EXPECT_TRUE(select_candidates({}, {}, policy(1)).empty());
  EXPECT_TRUE(select_candidates({}, {}, policy(10)).empty());
  EXPECT_TRUE(select_candidates({}, {}, policy(1, ClaimClass::expired)).empty());
}

TEST(SelectCandidates, OnlyReadyFollowsAgeOrder) {
  const std::vector<Candidate> ready = {cand("a", 10), cand("b", 20), cand("c", 30)};
  EXPECT_EQ(render(select_candidates(ready, {}, policy(2)), ready, {}), (Names{"r:a", "r:b"}));
  EXPECT_EQ(render(select_candidates(ready, {}, policy(10)), ready, {}),
            (Names{"r:a", "r:b", "r:c"}));
}

TEST(SelectCandidates, OnlyExpiredFollowsAgeOrder) {
  const std::vector<Candidate> expired = {cand("x", 5), cand("y", 6), cand("z", 7)};
  EXPECT_EQ(render(select_candidates({}, expired, policy(2)), {}, expired), (Names{"e:x", "e:y"}));
  EXPECT_EQ(render(select_candidates({}, expired, policy(1)), {}, expired), (Names{"e:x"}));
}

TEST(SelectCandidates, ReservationGivesExpiredOneSlotWhenReadyIsOlder) {
  // Ready rows are all older, yet the expired class still gets an outcome.
  const std::vector<Candidate> ready = {cand("a", 1), cand("b", 2), cand("c", 3)};
  const std::vector<Candidate> expired = {cand("x", 100), cand("y", 200)};
  EXPECT_EQ(render(select_candidates(ready, expired, policy(2)), ready, expired),
            (Names{"r:a", "e:x"}));
  EXPECT_EQ(render(select_candidates(ready, expired, policy(3)), ready, expired),
            (Names{"r:a", "r:b", "e:x"}));
}

TEST(SelectCandidates, ReservationGivesReadyOneSlotWhenExpiredIsOlder) {
  const std::vector<Candidate> ready = {cand("a", 100), cand("b", 200)};
  const std::vector<Candidate> expired = {cand("x", 1), cand("y", 2), cand("z", 3)};
  EXPECT_EQ(render(select_candidates(ready, expired, policy(2)), ready, expired),
            (Names{"e:x", "r:a"}));
  EXPECT_EQ(render(select_candidates(ready, expired, policy(4)), ready, expired),
            (Names{"e:x", "e:y", "e:z", "r:a"}));
}

TEST(SelectCandidates, ReservationWhenOneClassHasASingleCandidate) {
  const std::vector<Candidate> ready = {cand("a", 1), cand("b", 2), cand("c", 3), cand("d", 4)};
  const std::vector<Candidate> expired = {cand("x", 50)};
  EXPECT_EQ(render(select_candidates(ready, expired, policy(2)), ready, expired),
            (Names{"r:a", "e:x"}));
  // With room for everything, the single expired candidate is still taken once.
  EXPECT_EQ(render(select_candidates(ready, expired, policy(10)), ready, expired),
            (Names{"r:a", "r:b", "r:c", "r:d", "e:x"}));

  const std::vector<Candidate> one_ready = {cand("a", 50)};
  const std::vector<Candidate> many_expired = {cand("x", 1), cand("y", 2), cand("z", 3)};
  EXPECT_EQ(render(select_candidates(one_ready, many_expired, policy(2)), one_ready, many_expired),
            (Names{"e:x", "r:a"}));
}

TEST(SelectCandidates, PreferenceIsIgnoredAboveLimitOne) {
  const std::vector<Candidate> ready = {cand("a", 1), cand("b", 2), cand("c", 3)};
  const std::vector<Candidate> expired = {cand("x", 100), cand("y", 200)};
  EXPECT_EQ(
      render(select_candidates(ready, expired, policy(3, ClaimClass::expired)), ready, expired),
      (Names{"r:a", "r:b", "e:x"}));
  EXPECT_EQ(render(select_candidates(ready, expired, policy(2, ClaimClass::ready)), ready, expired),
            (Names{"r:a", "e:x"}));
}

TEST(SelectCandidates, RemainingDemandInterleavesByAge) {
  const std::vector<Candidate> ready = {cand("a", 1), cand("b", 4), cand("c", 6)};
  const std::vector<Candidate> expired = {cand("x", 2), cand("y", 3), cand("z", 5)};
  EXPECT_EQ(render(select_candidates(ready, expired, policy(5)), ready, expired),
            (Names{"r:a", "e:x", "e:y", "r:b", "e:z"}));
  EXPECT_EQ(render(select_candidates(ready, expired, policy(6)), ready, expired),
            (Names{"r:a", "e:x", "e:y", "r:b", "e:z", "r:c"}));
}

TEST(SelectCandidates, LimitOnePreferenceWins) {
  const std::vector<Candidate> ready = {cand("a", 100)};
  const std::vector<Candidate> expired = {cand("x", 1)};
  EXPECT_EQ(render(select_candidates(ready, expired, policy(1, ClaimClass::ready)), ready, expired),
            (Names{"r:a"}));
  const std::vector<Candidate> old_ready = {cand("a", 1)};
  const std::vector<Candidate> young_expired = {cand("x", 100)};
  EXPECT_EQ(render(select_candidates(old_ready, young_expired, policy(1, ClaimClass::expired)),
                   old_ready, young_expired),
            (Names{"e:x"}));
}

TEST(SelectCandidates, LimitOnePreferenceFallsThroughWhenPreferredIsEmpty) {
  const std::vector<Candidate> ready = {cand("a", 100)};
  const std::vector<Candidate> expired = {cand("x", 1)};
  EXPECT_EQ(render(select_candidates({}, expired, policy(1, ClaimClass::ready)), {}, expired),
            (Names{"e:x"}));
  EXPECT_EQ(render(select_candidates(ready, {}, policy(1, ClaimClass::expired)), ready, {}),
            (Names{"r:a"}));
}

TEST(SelectCandidates, LimitOneWithoutPreferenceTakesTheOlderHead) {
  const std::vector<Candidate> ready = {cand("a", 10)};
  const std::vector<Candidate> expired = {cand("x", 20)};
  EXPECT_EQ(render(select_candidates(ready, expired, policy(1)), ready, expired), (Names{"r:a"}));
  const std::vector<Candidate> young_ready = {cand("a", 30)};
  EXPECT_EQ(render(select_candidates(young_ready, expired, policy(1)), young_ready, expired),
            (Names{"e:x"}));
}

TEST(SelectCandidates, EqualEligibilityTimesTieByRunIdAcrossClasses) {
  const std::vector<Candidate> ready_b = {cand("b", 10)};
  const std::vector<Candidate> expired_a = {cand("a", 10)};
  EXPECT_EQ(render(select_candidates(ready_b, expired_a, policy(1)), ready_b, expired_a),
            (Names{"e:a"}));
  const std::vector<Candidate> ready_a = {cand("a", 10)};
  const std::vector<Candidate> expired_b = {cand("b", 10)};
  EXPECT_EQ(render(select_candidates(ready_a, expired_b, policy(1)), ready_a, expired_b),
            (Names{"r:a"}));

  // Above the reservation, ties also go by run id.
  const std::vector<Candidate> ready = {cand("r1", 0), cand("r3", 10)};
  const std::vector<Candidate> expired = {cand("e1", 0), cand("r2", 10)};
  EXPECT_EQ(render(select_candidates(ready, expired, policy(3)), ready, expired),
            (Names{"e:e1", "r:r1", "e:r2"}));
}

TEST(SelectCandidates, ResultsComeBackInEligibilityOrder) {
  const std::vector<Candidate> ready = {cand("a", 30), cand("b", 40)};
  const std::vector<Candidate> expired = {cand("x", 10), cand("y", 20), cand("z", 35)};
  const std::vector<Pick> picks = select_candidates(ready, expired, policy(4));
  ASSERT_EQ(picks.size(), 4u);
  Micros last = std::numeric_limits<Micros>::min();
  std::string last_id;
  for (const Pick& p : picks) {
    const Candidate& c = p.cls == ClaimClass::ready ? ready[p.index] : expired[p.index];
    EXPECT_TRUE(c.eligible_at > last || (c.eligible_at == last && c.run_id > last_id)) << c.run_id;
    last = c.eligible_at;
    last_id = c.run_id;
  }
  EXPECT_EQ(render(picks, ready, expired), (Names{"e:x", "e:y", "r:a", "e:z"}));
}

TEST(SelectCandidates, NeverMoreThanLimitAndNoDuplicates) {
  std::vector<Candidate> ready;
  std::vector<Candidate> expired;
  for (int i = 0; i < 20; ++i) {
    ready.push_back(cand("r" + std::to_string(100 + i), i * 3));
    expired.push_back(cand("e" + std::to_string(100 + i), i * 5));
  }
  for (int limit = 1; limit <= 45; ++limit) {
    const std::vector<Pick> picks = select_candidates(ready, expired, policy(limit));
    EXPECT_EQ(picks.size(), std::min<std::size_t>(limit, 40)) << "limit " << limit;
    Names names = render(picks, ready, expired);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "limit " << limit;
    if (limit >= 2) {
      const bool has_ready = std::any_of(picks.begin(), picks.end(),
                                         [](const Pick& p) { return p.cls == ClaimClass::ready; });
      const bool has_expired = std::any_of(
          picks.begin(), picks.end(), [](const Pick& p) { return p.cls == ClaimClass::expired; });
      EXPECT_TRUE(has_ready && has_expired) << "limit " << limit;
    }
  }
}

TEST(SelectCandidates, NonPositiveLimitSelectsNothing) {
  const std::vector<Candidate> ready = {cand("a", 1)};
  EXPECT_TRUE(select_candidates(ready, {}, policy(0)).empty());
  EXPECT_TRUE(select_candidates(ready, {}, policy(-3)).empty());
}

TEST(DecideClaim, MaxThreePermitsExactlyThreeLeases) {
  int attempts = 0;
  for (int lease = 1; lease <= 3; ++lease) {
    const ClaimDecision d = decide_claim(attempts, 3);
    EXPECT_EQ(d.kind, ClaimDecision::Kind::lease) << "lease " << lease;
    EXPECT_EQ(d.claim_attempt, lease);
    attempts = d.claim_attempt;
  }
  const ClaimDecision fourth = decide_claim(attempts, 3);
  EXPECT_EQ(fourth.kind, ClaimDecision::Kind::poison);
  EXPECT_EQ(fourth.claim_attempt, 3);
}

TEST(DecideClaim, MaxOneAndCountsAboveTheMaximum) {
  EXPECT_EQ(decide_claim(0, 1).kind, ClaimDecision::Kind::lease);
  EXPECT_EQ(decide_claim(1, 1).kind, ClaimDecision::Kind::poison);
  // A count above a lowered maximum still poisons.
  EXPECT_EQ(decide_claim(7, 3).kind, ClaimDecision::Kind::poison);
}

TEST(ExpiryCutoff, SubtractsTheTtl) {
  ClaimPolicy p = policy(1);
  p.now = 100000000;
  p.orphan_ttl_ms = 30000;
  EXPECT_EQ(expiry_cutoff(p), 100000000 - 30000000);
  p.orphan_ttl_ms = 0;
  EXPECT_EQ(expiry_cutoff(p), 100000000);
}

TEST(ExpiryCutoff, SaturatesInsteadOfOverflowing) {
  ClaimPolicy p = policy(1);
  p.now = 0;
  p.orphan_ttl_ms = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(expiry_cutoff(p), kMinusInfinity);
  p.now = kMinusInfinity + 5;
  p.orphan_ttl_ms = 1;
  EXPECT_EQ(expiry_cutoff(p), kMinusInfinity);
  p.now = -1000;
  p.orphan_ttl_ms = std::numeric_limits<std::int64_t>::max() / 1000;
  EXPECT_EQ(expiry_cutoff(p), kMinusInfinity);
}

TEST(AddMillis, SaturatesBothWays) {
  EXPECT_EQ(add_millis(0, 5), 5000);
  EXPECT_EQ(add_millis(0, -5), -5000);
  EXPECT_EQ(add_millis(kPlusInfinity - 10, 1), kPlusInfinity);
  EXPECT_EQ(add_millis(0, std::numeric_limits<std::int64_t>::max()), kPlusInfinity);
  EXPECT_EQ(add_millis(0, std::numeric_limits<std::int64_t>::min()), kMinusInfinity);
  EXPECT_EQ(add_millis(kMinusInfinity + 10, -1), kMinusInfinity);
}

void expect_bad_argument(const ClaimPolicy& p, const std::string& fragment) {
  try {
    validate_claim_policy(p);
    ADD_FAILURE() << "expected bad_argument containing " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.reason(), Reason::bad_argument);
    EXPECT_EQ(std::string(e.what()).rfind("bad_argument: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ValidateClaimPolicy, AcceptsTheBounds) {
  ClaimPolicy p = policy(1);
  EXPECT_NO_THROW(validate_claim_policy(p));
  p.limit = kMaxBatch;
  EXPECT_NO_THROW(validate_claim_policy(p));
  p.orphan_ttl_ms = 0;
  p.max_claim_attempts = 1;
  EXPECT_NO_THROW(validate_claim_policy(p));
}

TEST(ValidateClaimPolicy, RejectsOutOfRangeValues) {
  ClaimPolicy p = policy(0);
  expect_bad_argument(p, "claim_limit");
  p.limit = -1;
  expect_bad_argument(p, "claim_limit");
  p.limit = kMaxBatch + 1;
  expect_bad_argument(p, "claim_limit");

  p = policy(1);
  p.orphan_ttl_ms = -1;
  expect_bad_argument(p, "orphan_ttl_ms");

  p = policy(1);
  p.max_claim_attempts = 0;
  expect_bad_argument(p, "max_claim_attempts");

  p = policy(1);
  p.now = kPlusInfinity;
  expect_bad_argument(p, "now");
  p.now = kMinusInfinity;
  expect_bad_argument(p, "now");
}

TEST(PoisonReasons, AreTheContractWords) {
  EXPECT_STREQ(kPoisonByAttempts, "max_claim_attempts_exceeded");
  EXPECT_STREQ(kPoisonByAbandons, "max_claim_abandons_exceeded");
}

TEST(ClaimLease, ExpiredEligibleTimeIsTheLongerOfTtlAndLease) {
  const Micros at = 1'000'000'000;
  EXPECT_EQ(expired_eligible_at(at, 5000, std::nullopt), at + 5'000'000);  // seed 000
  EXPECT_EQ(expired_eligible_at(at, 5000, 600000), at + 600'000'000);      // a longer lease
  EXPECT_EQ(expired_eligible_at(at, 5000, 1000), at + 5'000'000);          // a shorter one
  EXPECT_EQ(stored_lease_ms(30000), 30000);
  EXPECT_EQ(stored_lease_ms(std::numeric_limits<std::int64_t>::max()), 86400000LL * 3650);
  EXPECT_EQ(stored_lease_ms(-1), 0);
}

}  // namespace
}  // namespace docket
