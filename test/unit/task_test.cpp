// The task layer's decisions: fence order, transitions, claims, retry and
// defer delays, names, step kinds, event outcomes and the batch input rules.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "core/limits.hpp"
#include "core/task.hpp"
#include "run_fixture.hpp"

namespace docket {
namespace {

using test::expect_error;

Token token(unsigned char fill) {
  Token t;
  t.fill(fill);
  return t;
}

TaskFacts held_by(unsigned char fill) {
  TaskFacts f;
  f.claim_token = token(fill);
  return f;
}

constexpr Micros kNow = 1'000'000'000;

TEST(TaskFence, HeldWhenTokenMatchesAndNotOverdue) {
  EXPECT_EQ(judge_task(held_by(1), token(1), kNow, false), TaskVerdict::held);
  TaskFacts f = held_by(1);
  f.deadline_at = kNow + 1;
  EXPECT_EQ(judge_task(f, token(1), kNow, false), TaskVerdict::held);
}

TEST(TaskFence, UnknownOrNotATaskIsNotFound) {
  EXPECT_EQ(judge_task(std::nullopt, token(1), kNow, false), TaskVerdict::not_found);
  TaskFacts f = held_by(1);
  f.is_task = false;
  EXPECT_EQ(judge_task(f, token(1), kNow, false), TaskVerdict::not_found);
}

TEST(TaskFence, CancelledBeforeStale) {
  TaskFacts f;
  f.status = Status::cancelled;
  EXPECT_EQ(judge_task(f, token(1), kNow, false), TaskVerdict::cancelled);
  f.claim_token = token(2);
  EXPECT_EQ(judge_task(f, token(1), kNow, false), TaskVerdict::cancelled);
}

TEST(TaskFence, OtherOrNoTokenIsStale) {
  EXPECT_EQ(judge_task(held_by(2), token(1), kNow, false), TaskVerdict::stale);
  TaskFacts finished;
  finished.status = Status::completed;
  EXPECT_EQ(judge_task(finished, token(1), kNow, false), TaskVerdict::stale);
}

TEST(TaskFence, StaleBeforeOverdue) {
  TaskFacts f = held_by(2);
  f.deadline_at = kNow - 1;
  EXPECT_EQ(judge_task(f, token(1), kNow, false), TaskVerdict::stale);
}

TEST(TaskFence, OverdueAtTheDeadlineUnlessAllowed) {
  TaskFacts f = held_by(1);
  f.deadline_at = kNow;
  EXPECT_EQ(judge_task(f, token(1), kNow, false), TaskVerdict::overdue);
  EXPECT_EQ(judge_task(f, token(1), kNow, true), TaskVerdict::held);
}

TEST(TaskFence, VerdictErrorsAndBatchOutcomes) {
  EXPECT_NO_THROW(raise_task_verdict(TaskVerdict::held, "r"));
  expect_error([] { raise_task_verdict(TaskVerdict::not_found, "r"); }, Reason::not_found,
               "task r does not exist");
  expect_error([] { raise_task_verdict(TaskVerdict::cancelled, "r"); }, Reason::cancelled,
               "task r was cancelled");
  expect_error([] { raise_task_verdict(TaskVerdict::stale, "r"); }, Reason::stale_fence,
               "task r is not held by this claim token");
  expect_error([] { raise_task_verdict(TaskVerdict::overdue, "r"); }, Reason::cancelled,
               "task r exceeded its max_duration_ms");
  EXPECT_STREQ(batch_outcome(TaskVerdict::not_found), "not_found");
  EXPECT_STREQ(batch_outcome(TaskVerdict::cancelled), "cancelled");
  EXPECT_STREQ(batch_outcome(TaskVerdict::overdue), "cancelled");
  EXPECT_STREQ(batch_outcome(TaskVerdict::stale), "stale");
}

TEST(TaskTransitions, StatusCheckpointAndSchedule) {
  EXPECT_EQ(complete_transition().status, Status::completed);
  EXPECT_STREQ(complete_transition().checkpoint_type, "run_completed");
  EXPECT_EQ(complete_transition().schedule, ScheduleKind::terminal);
  EXPECT_STREQ(failed_transition().checkpoint_type, "run_failed");
  EXPECT_EQ(cancelled_transition().status, Status::cancelled);
  EXPECT_STREQ(cancelled_transition().checkpoint_type, "run_cancelled");
  const TaskTransition retry = retry_transition(kNow + 5);
  EXPECT_EQ(retry.status, Status::running);
  EXPECT_STREQ(retry.checkpoint_type, "retried");
  EXPECT_EQ(retry.schedule, ScheduleKind::at);
  EXPECT_EQ(retry.wake_at, kNow + 5);
  EXPECT_EQ(sleep_transition(kNow).schedule, ScheduleKind::at);
  EXPECT_EQ(event_wait_transition(std::nullopt).status, Status::waiting);
  EXPECT_EQ(event_wait_transition(std::nullopt).schedule, ScheduleKind::external);
  EXPECT_EQ(event_wait_transition(kNow).status, Status::running);
  EXPECT_EQ(event_wait_transition(kNow).wake_at, kNow);
  EXPECT_EQ(child_wait_transition().schedule, ScheduleKind::external);
  // Every transition is a valid run-store pair (no retain_claim: the claim goes back).
  for (const TaskTransition& t :
       {complete_transition(), failed_transition(), cancelled_transition(), retry_transition(kNow),
        sleep_transition(kNow), event_wait_transition(std::nullopt), event_wait_transition(kNow),
        child_wait_transition()})
    EXPECT_NO_THROW(validate_schedule(t.schedule, t.status, t.wake_at.has_value(), false,
                                      Reason::invalid_commit));
}

TEST(TaskClaim, Actions) {
  ClaimedTaskFacts plain;
  plain.is_task = false;
  EXPECT_EQ(decide_claimed_task(plain, kNow), ClaimedTaskAction::hand_back);
  ClaimedTaskFacts f;
  EXPECT_EQ(decide_claimed_task(f, kNow), ClaimedTaskAction::run);
  f.cancel_at = kNow;
  EXPECT_EQ(decide_claimed_task(f, kNow), ClaimedTaskAction::cancel_not_started);
  f.first_started_at = kNow - 10;  // started before: cancel_after_ms no longer applies
  EXPECT_EQ(decide_claimed_task(f, kNow), ClaimedTaskAction::run);
  f.deadline_at = kNow;
  EXPECT_EQ(decide_claimed_task(f, kNow), ClaimedTaskAction::cancel_overdue);
}

TEST(TaskClaim, FirstStartRecordsTheDeadline) {
  ClaimedTaskFacts f;
  EXPECT_FALSE(first_start(f, kNow).record);
  f.cancel_at = kNow + 1;
  EXPECT_TRUE(first_start(f, kNow).record);
  EXPECT_FALSE(first_start(f, kNow).deadline_at);
  f.max_duration_ms = 2;
  EXPECT_EQ(first_start(f, kNow).deadline_at, kNow + 2000);
  f.first_started_at = kNow - 1;
  EXPECT_FALSE(first_start(f, kNow).record);
}

TEST(TaskClaim, WakeReason) {
  EXPECT_EQ(claimed_wake_reason(1, false, "sleep"), "sleep");
  EXPECT_EQ(claimed_wake_reason(2, false, "sleep"), "recovered");
  // Expired after a stored step reset the count: still recovered.
  EXPECT_EQ(claimed_wake_reason(1, true, "new"), "recovered");
}

TEST(TaskHeartbeat, ExtendMs) {
  EXPECT_EQ(heartbeat_claimed_at(kNow, std::nullopt), kNow);
  EXPECT_EQ(heartbeat_claimed_at(kNow, 2500), kNow + 2'500'000);
  EXPECT_NO_THROW(validate_extend_ms(std::nullopt));
  EXPECT_NO_THROW(validate_extend_ms(0));
  EXPECT_NO_THROW(validate_extend_ms(kMaxDurationMs));
  expect_error([] { validate_extend_ms(-1); }, Reason::bad_argument, "extend_ms must be between 0");
  expect_error([] { validate_extend_ms(kMaxDurationMs + 1); }, Reason::bad_argument);
}

TEST(TaskDeadline, BoundsEveryWakeByTheDeadline) {
  const Micros deadline = kNow + 60'000'000;
  // No deadline: unchanged.
  TaskTransition t = bound_by_deadline(child_wait_transition(), std::nullopt);
  EXPECT_EQ(t.status, Status::waiting);
  EXPECT_EQ(t.schedule, ScheduleKind::external);
  EXPECT_FALSE(t.wake_at);
  // A wait without a wake is due at the deadline, running like a timed wait.
  for (const TaskTransition& wait :
       {child_wait_transition(), event_wait_transition(std::nullopt)}) {
    t = bound_by_deadline(wait, deadline);
    EXPECT_EQ(t.status, Status::running);
    EXPECT_EQ(t.schedule, ScheduleKind::at);
    EXPECT_EQ(t.wake_at, deadline);
    EXPECT_STREQ(t.checkpoint_type, "suspended");
  }
  // A later wake (sleep, timeout, retry) becomes the deadline; an earlier one stays.
  EXPECT_EQ(bound_by_deadline(sleep_transition(deadline + 1), deadline).wake_at, deadline);
  EXPECT_EQ(bound_by_deadline(event_wait_transition(deadline + 5), deadline).wake_at, deadline);
  EXPECT_EQ(bound_by_deadline(retry_transition(deadline + 9), deadline).wake_at, deadline);
  EXPECT_EQ(bound_by_deadline(sleep_transition(deadline - 1), deadline).wake_at, deadline - 1);
  // Terminal transitions are untouched.
  t = bound_by_deadline(complete_transition(), deadline);
  EXPECT_EQ(t.status, Status::completed);
  EXPECT_FALSE(t.wake_at);
  EXPECT_EQ(bound_wake(deadline + 1, deadline), deadline);
  EXPECT_EQ(bound_wake(deadline - 1, deadline), deadline - 1);
  EXPECT_EQ(bound_wake(deadline + 1, std::nullopt), deadline + 1);
}

TEST(TaskRetry, Kinds) {
  RetryPolicy p;
  p.kind = RetryKind::none;
  EXPECT_EQ(retry_delay_ms(p, 3, 0.5), 0);
  p.kind = RetryKind::fixed;
  p.base_ms = 250;
  EXPECT_EQ(retry_delay_ms(p, 1, 0), 250);
  EXPECT_EQ(retry_delay_ms(p, 9, 0), 250);
  p.kind = RetryKind::exponential;
  p.base_ms = 1000;
  p.factor = 2;
  p.max_ms = 300000;
  EXPECT_EQ(retry_delay_ms(p, 1, 0), 1000);
  EXPECT_EQ(retry_delay_ms(p, 2, 0), 2000);
  EXPECT_EQ(retry_delay_ms(p, 4, 0), 8000);
  EXPECT_EQ(retry_delay_ms(p, 20, 0), 300000);  // capped
}

TEST(TaskRetry, SaturatesAndJitters) {
  RetryPolicy p;
  p.base_ms = 1000;
  p.factor = 100;
  p.max_ms = std::nullopt;
  EXPECT_EQ(retry_delay_ms(p, 1000, 0), kMaxRetryDelayMs);
  p.max_ms = 10000;
  p.jitter = 0.5;
  p.factor = 2;
  EXPECT_EQ(retry_delay_ms(p, 1, 0), 1000);
  EXPECT_EQ(retry_delay_ms(p, 1, 0.5), 750);
  EXPECT_EQ(retry_delay_ms(p, 1, 0.999999), 500);
}

// No loop runs once per attempt: the largest attempt counts are computed in
// closed form (a direct call of the old SQL helper looped ~2^31 times).
TEST(TaskRetry, HugeAttemptCountsInClosedForm) {
  RetryPolicy p;
  p.kind = RetryKind::exponential;
  p.base_ms = 1000;
  p.factor = 1;
  p.max_ms = std::nullopt;
  EXPECT_EQ(retry_delay_ms(p, INT_MAX, 0), 1000);
  p.factor = 1.5;
  EXPECT_EQ(retry_delay_ms(p, 3, 0), 2250);
  EXPECT_EQ(retry_delay_ms(p, INT_MAX, 0), kMaxRetryDelayMs);
  p.base_ms = 0;
  p.factor = 100;
  EXPECT_EQ(retry_delay_ms(p, INT_MAX, 0), 0);  // 0 * infinity is no delay, not NaN
  p.base_ms = 1000;
  EXPECT_EQ(retry_delay_ms(p, INT_MIN, 0), 1000);
}

TEST(TaskRetry, FailDecision) {
  const FailDecision retry = decide_failure(1, 3, false, true, kNow, 1500);
  EXPECT_EQ(retry.kind, FailDecision::Kind::retry_scheduled);
  EXPECT_EQ(retry.retry_at, kNow + 1'500'000);
  EXPECT_EQ(decide_failure(3, 3, false, true, kNow, 0).kind, FailDecision::Kind::failed);
  EXPECT_EQ(decide_failure(1, 3, false, false, kNow, 0).kind, FailDecision::Kind::failed);
  EXPECT_EQ(decide_failure(1, 3, true, true, kNow, 0).kind, FailDecision::Kind::cancelled);
  EXPECT_STREQ(fail_disposition(FailDecision::Kind::retry_scheduled), "retry_scheduled");
}

TEST(TaskDefer, Backoff) {
  EXPECT_EQ(defer_delay_ms(1000, 60000, 0, 1023), 1000);
  EXPECT_EQ(defer_delay_ms(1000, 60000, 0, 0), 750);
  EXPECT_EQ(defer_delay_ms(1000, 60000, 3, 1023), 8000);
  EXPECT_EQ(defer_delay_ms(1000, 60000, 10, 1023), 60000);
  EXPECT_EQ(defer_delay_ms(1000, 60000, 1000000, 1023), 60000);  // exponent capped
  expect_error([] { validate_defer(0, 1, 1); }, Reason::bad_argument,
               "max_defers, base_ms and cap_ms must be > 0");
  expect_error([] { validate_defer(1, 0, 1); }, Reason::bad_argument);
  expect_error([] { validate_defer(1, 1, -1); }, Reason::bad_argument);
  EXPECT_NO_THROW(validate_defer(1, 1, 1));
}

TEST(TaskNames, Checks) {
  expect_error([] { check_name("step_name", std::nullopt); }, Reason::bad_argument,
               "step_name must not be NULL");
  expect_error([] { check_name("step_name", std::string()); }, Reason::bad_argument,
               "step_name must be non-empty text of at most 255 bytes");
  expect_error([] { check_name("event_name", std::string(kMaxNameBytes + 1, 'x')); },
               Reason::bad_argument, "event_name");
  EXPECT_NO_THROW(check_name("step_name", std::string(kMaxNameBytes, 'x')));
}

TEST(TaskSteps, KindRules) {
  StepShape sleep;
  sleep.is_object = true;
  sleep.has_wake_at = true;
  EXPECT_NO_THROW(check_step_kind("s", sleep, StepKind::sleep));
  expect_error([&] { check_step_kind("s", sleep, StepKind::event_wait); }, Reason::bad_argument,
               "step \"s\" was completed as another kind of step, not as an event wait");
  StepShape event;
  event.is_object = true;
  event.status = "timeout";
  EXPECT_NO_THROW(check_step_kind("e", event, StepKind::event_wait));
  event.status = "other";
  expect_error([&] { check_step_kind("e", event, StepKind::event_wait); }, Reason::bad_argument);
  StepShape child;
  child.is_object = true;
  child.has_state = true;
  EXPECT_NO_THROW(check_step_kind("c", child, StepKind::child_join));
  expect_error([&] { check_step_kind("c", StepShape{}, StepKind::child_join); },
               Reason::bad_argument, "not as a child join");
  expect_error([&] { check_step_kind("c", StepShape{}, StepKind::sleep); }, Reason::bad_argument,
               "not as a sleep");
}

TEST(TaskWaits, TimeoutAndOutcome) {
  EXPECT_NO_THROW(validate_timeout_ms(std::nullopt));
  EXPECT_NO_THROW(validate_timeout_ms(0));
  expect_error([] { validate_timeout_ms(-1); }, Reason::bad_argument, "timeout_ms must be >= 0");
  expect_error([] { validate_timeout_ms(kMaxDurationMs + 1); }, Reason::bad_argument, "ten years");
  EXPECT_EQ(event_outcome(kNow, std::nullopt, kNow), EventOutcome::received);
  EXPECT_EQ(event_outcome(kNow, kNow, kNow + 5), EventOutcome::received);
  EXPECT_EQ(event_outcome(kNow + 1, kNow, kNow + 5), EventOutcome::timeout);
  EXPECT_EQ(event_outcome(std::nullopt, kNow, kNow), EventOutcome::timeout);
  EXPECT_EQ(event_outcome(std::nullopt, kNow + 1, kNow), std::nullopt);
  EXPECT_EQ(event_outcome(std::nullopt, std::nullopt, kNow), std::nullopt);
}

TEST(TaskBatch, Lengths) {
  EXPECT_NO_THROW(validate_batch_lengths({2u, 2u, 2u}, {"run_ids", "claim_tokens", "results"}));
  expect_error(
      [] {
        validate_batch_lengths({std::nullopt, 2u}, {"run_ids", "claim_tokens"});
      },
      Reason::bad_argument, "run_ids must not be NULL");
  expect_error(
      [] {
        validate_batch_lengths({2u, 1u}, {"run_ids", "claim_tokens"});
      },
      Reason::bad_argument, "run_ids and claim_tokens must have the same length");
}

TEST(TaskBatch, Keys) {
  auto key = [](std::optional<std::string> id, bool token, std::optional<std::string> step) {
    BatchKey k;
    k.run_id = std::move(id);
    k.has_token = token;
    k.step_name = std::move(step);
    return k;
  };
  EXPECT_NO_THROW(validate_batch_keys({key("a", true, {}), key("b", true, {})}, false));
  expect_error([&] { validate_batch_keys({key(std::nullopt, true, {})}, false); },
               Reason::bad_argument, "run_ids must not contain NULL");
  expect_error([&] { validate_batch_keys({key("a", false, {})}, false); }, Reason::bad_argument,
               "claim_tokens must not contain NULL");
  expect_error(
      [&] {
        validate_batch_keys({key("a", true, {}), key("a", true, {})}, false);
      },
      Reason::bad_argument, "task a appears twice");
  // Steps: the same run twice is fine, the same (run, step) is not.
  EXPECT_NO_THROW(validate_batch_keys({key("a", true, "s1"), key("a", true, "s2")}, true));
  expect_error(
      [&] {
        validate_batch_keys({key("a", true, "s"), key("a", true, "s")}, true);
      },
      Reason::bad_argument, "appears twice");
  expect_error([&] { validate_batch_keys({key("a", true, std::nullopt)}, true); },
               Reason::bad_argument, "step_names must not contain NULL");
  // Elements are judged in input order: the first duplicate in that order is
  // named, and a NULL after it does not matter, nor a duplicate after a NULL.
  expect_error(
      [&] {
        validate_batch_keys({key("b", true, {}), key("a", true, {}), key("c", true, {}),
                             key("a", true, {}), key("b", true, {})},
                            false);
      },
      Reason::bad_argument, "task a appears twice (element 4)");
  expect_error(
      [&] {
        validate_batch_keys({key("a", true, {}), key("a", true, {}), key(std::nullopt, true, {})},
                            false);
      },
      Reason::bad_argument, "task a appears twice (element 2)");
  expect_error(
      [&] {
        validate_batch_keys({key("a", true, {}), key("b", false, {}), key("a", true, {})}, false);
      },
      Reason::bad_argument, "claim_tokens must not contain NULL (element 2)");
  expect_error(
      [&] {
        validate_batch_keys({key("a", true, "s"), key("b", true, "s"), key("a", true, "s")}, true);
      },
      Reason::bad_argument, "step s of task a appears twice (element 3)");
}

}  // namespace
}  // namespace docket
