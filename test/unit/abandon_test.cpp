// Pre-execution abandon: policy bounds, backoff arithmetic and disposition.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>

#include "core/abandon.hpp"
#include "run_fixture.hpp"

namespace docket {
namespace {

using test::expect_error;

constexpr Micros kNow = 1000000000;

AbandonPolicy policy(int max_abandons = 3) {
  AbandonPolicy p;
  p.expected_checkpoint_seq = 2;
  p.now = kNow;
  p.retry_at = kNow + 5000000;
  p.max_claim_abandons = max_abandons;
  return p;
}

AbandonPolicy with_backoff(int base_ms, int cap_ms, int max_abandons = 100) {
  AbandonPolicy p = policy(max_abandons);
  p.backoff_base_ms = base_ms;
  p.backoff_cap_ms = cap_ms;
  return p;
}

void expect_bad(const AbandonPolicy& p, const std::string& fragment) {
  expect_error([&] { validate_abandon_policy(p); }, Reason::bad_argument, fragment);
}

TEST(ValidateAbandonPolicy, AcceptsValidPolicies) {
  EXPECT_NO_THROW(validate_abandon_policy(policy()));
  AbandonPolicy p = policy(1);
  p.retry_at = p.now;  // retry_at == now is allowed
  EXPECT_NO_THROW(validate_abandon_policy(p));
  EXPECT_NO_THROW(validate_abandon_policy(with_backoff(1, 1)));
  p = policy();
  p.expected_checkpoint_seq = 0;
  EXPECT_NO_THROW(validate_abandon_policy(p));
}

TEST(ValidateAbandonPolicy, RetryAtBeforeNow) {
  AbandonPolicy p = policy();
  p.retry_at = p.now - 1;
  expect_bad(p, "retry_at must not precede now");
}

TEST(ValidateAbandonPolicy, RetryAtIsCheckedEvenWithBackoff) {
  AbandonPolicy p = with_backoff(100, 1000);
  p.retry_at = p.now - 1;
  expect_bad(p, "retry_at must not precede now");
}

TEST(ValidateAbandonPolicy, MaxClaimAbandonsMustBePositive) {
  expect_bad(policy(0), "max_claim_abandons must be > 0, got 0");
  expect_bad(policy(-4), "max_claim_abandons must be > 0, got -4");
}

TEST(ValidateAbandonPolicy, BackoffValuesGoTogether) {
  AbandonPolicy p = policy();
  p.backoff_base_ms = 100;
  expect_bad(p, "both or neither");
  p = policy();
  p.backoff_cap_ms = 100;
  expect_bad(p, "both or neither");
}

TEST(ValidateAbandonPolicy, BackoffValuesMustBePositive) {
  expect_bad(with_backoff(0, 100), "must be > 0");
  expect_bad(with_backoff(100, 0), "must be > 0");
  expect_bad(with_backoff(-1, 100), "must be > 0");
  expect_bad(with_backoff(100, -1), "must be > 0");
}

TEST(ValidateAbandonPolicy, NegativeSequenceAndInfiniteTimes) {
  AbandonPolicy p = policy();
  p.expected_checkpoint_seq = -1;
  expect_bad(p, "expected_checkpoint_seq");
  p = policy();
  p.now = kPlusInfinity;
  expect_bad(p, "now must be a finite timestamp");
  p = policy();
  p.now = kMinusInfinity;
  expect_bad(p, "now must be a finite timestamp");
  p = policy();
  p.retry_at = kPlusInfinity;
  expect_bad(p, "retry_at must be a finite timestamp");
  p = policy();
  p.retry_at = kMinusInfinity;
  expect_bad(p, "retry_at");
}

TEST(AbandonBackoff, DoublesFromTheBaseUpToTheCap) {
  EXPECT_EQ(abandon_backoff_ms(100, 10000, 0), 100);
  EXPECT_EQ(abandon_backoff_ms(100, 10000, 1), 200);
  EXPECT_EQ(abandon_backoff_ms(100, 10000, 2), 400);
  EXPECT_EQ(abandon_backoff_ms(100, 10000, 3), 800);
  EXPECT_EQ(abandon_backoff_ms(100, 10000, 6), 6400);
  EXPECT_EQ(abandon_backoff_ms(100, 10000, 7), 10000);
  EXPECT_EQ(abandon_backoff_ms(100, 1000, 4), 1000);
}

TEST(AbandonBackoff, BaseAboveCapIsCapped) {
  EXPECT_EQ(abandon_backoff_ms(5000, 1000, 0), 1000);
}

TEST(AbandonBackoff, HugeCountsSaturateAtTheCap) {
  EXPECT_EQ(abandon_backoff_ms(1, INT_MAX, 64), INT_MAX);
  EXPECT_EQ(abandon_backoff_ms(1, INT_MAX, INT_MAX), INT_MAX);
  EXPECT_EQ(abandon_backoff_ms(INT_MAX, INT_MAX, INT_MAX), INT_MAX);
  EXPECT_EQ(abandon_backoff_ms(3, 1000, 1000000), 1000);
}

TEST(DecideAbandon, ReschedulesAtRetryAt) {
  const AbandonDecision d = decide_abandon(1, 0, policy());
  EXPECT_EQ(d.kind, AbandonDecision::Kind::rescheduled);
  EXPECT_EQ(d.claim_attempts, 0);
  EXPECT_EQ(d.claim_abandons, 1);
  EXPECT_EQ(d.wake_at, kNow + 5000000);
  EXPECT_FALSE(d.due_now);
}

TEST(DecideAbandon, RetryAtNowIsDueNow) {
  AbandonPolicy p = policy();
  p.retry_at = p.now;
  const AbandonDecision d = decide_abandon(1, 0, p);
  EXPECT_EQ(d.wake_at, kNow);
  EXPECT_TRUE(d.due_now);
}

TEST(DecideAbandon, BackoffUsesTheCountBeforeThisAbandon) {
  // The first abandon waits base_ms, and backoff replaces retry_at.
  const AbandonPolicy p = with_backoff(250, 60000);
  EXPECT_EQ(decide_abandon(1, 0, p).wake_at, kNow + 250 * 1000);
  EXPECT_EQ(decide_abandon(1, 1, p).wake_at, kNow + 500 * 1000);
  EXPECT_EQ(decide_abandon(1, 2, p).wake_at, kNow + 1000 * 1000);
  EXPECT_EQ(decide_abandon(1, 50, p).wake_at, kNow + Micros{60000} * 1000);
  EXPECT_FALSE(decide_abandon(1, 0, p).due_now);
}

TEST(DecideAbandon, AttemptsAreHandedBackAndFlooredAtZero) {
  EXPECT_EQ(decide_abandon(3, 0, policy()).claim_attempts, 2);
  EXPECT_EQ(decide_abandon(1, 0, policy()).claim_attempts, 0);
  EXPECT_EQ(decide_abandon(0, 0, policy()).claim_attempts, 0);
}

TEST(DecideAbandon, PoisonsOnceTheCountHasReachedTheMaximum) {
  const AbandonPolicy p = policy(2);
  EXPECT_EQ(decide_abandon(1, 0, p).kind, AbandonDecision::Kind::rescheduled);
  EXPECT_EQ(decide_abandon(1, 1, p).kind, AbandonDecision::Kind::rescheduled);
  const AbandonDecision poisoned = decide_abandon(1, 2, p);
  EXPECT_EQ(poisoned.kind, AbandonDecision::Kind::poisoned);
  // A poisoning abandon still counts the abandon and hands the attempt back.
  EXPECT_EQ(poisoned.claim_abandons, 3);
  EXPECT_EQ(poisoned.claim_attempts, 0);
  EXPECT_FALSE(poisoned.wake_at.has_value());
  EXPECT_FALSE(poisoned.due_now);
}

TEST(DecideAbandon, MaxOnePermitsOneReschedule) {
  const AbandonPolicy p = policy(1);
  EXPECT_EQ(decide_abandon(1, 0, p).kind, AbandonDecision::Kind::rescheduled);
  EXPECT_EQ(decide_abandon(1, 1, p).kind, AbandonDecision::Kind::poisoned);
}

TEST(DecideAbandon, NonPoisoningNeverPoisons) {
  AbandonPolicy p = policy(1);
  p.non_poisoning = true;
  for (int abandons : {0, 1, 5, 1000}) {
    const AbandonDecision d = decide_abandon(2, abandons, p);
    EXPECT_EQ(d.kind, AbandonDecision::Kind::rescheduled) << abandons;
    EXPECT_EQ(d.claim_abandons, abandons + 1);
    EXPECT_EQ(d.claim_attempts, 1);
    EXPECT_EQ(d.wake_at, p.retry_at);
  }
}

TEST(DecideAbandon, AbandonCountSaturates) {
  AbandonPolicy p = policy(1);
  p.non_poisoning = true;
  EXPECT_EQ(decide_abandon(0, INT_MAX, p).claim_abandons, INT_MAX);
}

TEST(DecideAbandon, BackoffNearTheEndOfTimeSaturates) {
  AbandonPolicy p = with_backoff(INT_MAX, INT_MAX);
  p.now = kPlusInfinity - 1000;
  p.retry_at = p.now;
  const AbandonDecision d = decide_abandon(1, 0, p);
  EXPECT_EQ(d.wake_at, kPlusInfinity);
}

}  // namespace
}  // namespace docket
