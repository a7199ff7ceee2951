#include "core/task.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace docket {

TaskVerdict judge_task(const std::optional<TaskFacts>& facts, const Token& claim_token, Micros now,
                       bool allow_overdue) noexcept {
  if (!facts || !facts->is_task) return TaskVerdict::not_found;
  if (facts->status == Status::cancelled) return TaskVerdict::cancelled;
  if (!facts->claim_token || *facts->claim_token != claim_token) return TaskVerdict::stale;
  if (!allow_overdue && facts->deadline_at && *facts->deadline_at <= now)
    return TaskVerdict::overdue;
  return TaskVerdict::held;
}

void raise_task_verdict(TaskVerdict verdict, const std::string& run_id) {
  switch (verdict) {
    case TaskVerdict::held:
      return;
    case TaskVerdict::not_found:
      fail(Reason::not_found, "task " + run_id + " does not exist");
    case TaskVerdict::cancelled:
      fail(Reason::cancelled, "task " + run_id + " was cancelled");
    case TaskVerdict::stale:
      // The token stays out of the message: it is the holder's authority.
      fail(Reason::stale_fence, "task " + run_id + " is not held by this claim token");
    case TaskVerdict::overdue:
      fail(Reason::cancelled, "task " + run_id + " exceeded its max_duration_ms");
  }
}

const char* batch_outcome(TaskVerdict verdict) noexcept {
  switch (verdict) {
    case TaskVerdict::held:
      return "held";
    case TaskVerdict::not_found:
      return "not_found";
    case TaskVerdict::cancelled:
    case TaskVerdict::overdue:
      return "cancelled";
    case TaskVerdict::stale:
      return "stale";
  }
  return "stale";
}

TaskTransition complete_transition() noexcept {
  return {Status::completed, "run_completed", ScheduleKind::terminal, std::nullopt};
}

TaskTransition failed_transition() noexcept {
  return {Status::failed, "run_failed", ScheduleKind::terminal, std::nullopt};
}

TaskTransition cancelled_transition() noexcept {
  return {Status::cancelled, "run_cancelled", ScheduleKind::terminal, std::nullopt};
}

TaskTransition retry_transition(Micros retry_at) noexcept {
  return {Status::running, "retried", ScheduleKind::at, retry_at};
}

TaskTransition sleep_transition(Micros wake_at) noexcept {
  return {Status::running, "suspended", ScheduleKind::at, wake_at};
}

TaskTransition event_wait_transition(std::optional<Micros> timeout_at) noexcept {
  if (timeout_at) return {Status::running, "suspended", ScheduleKind::at, timeout_at};
  return {Status::waiting, "suspended", ScheduleKind::external, std::nullopt};
}

TaskTransition child_wait_transition() noexcept {
  return {Status::waiting, "suspended", ScheduleKind::external, std::nullopt};
}

TaskTransition bound_by_deadline(TaskTransition transition,
                                 std::optional<Micros> deadline_at) noexcept {
  if (!deadline_at) return transition;
  switch (transition.schedule) {
    case ScheduleKind::at:
      transition.wake_at = bound_wake(transition.wake_at.value_or(*deadline_at), deadline_at);
      break;
    case ScheduleKind::external:
      transition.status = Status::running;
      transition.schedule = ScheduleKind::at;
      transition.wake_at = *deadline_at;
      break;
    case ScheduleKind::retain_claim:
    case ScheduleKind::immediate:
    case ScheduleKind::terminal:
      break;
  }
  return transition;
}

Micros bound_wake(Micros wake_at, std::optional<Micros> deadline_at) noexcept {
  return deadline_at ? std::min(wake_at, *deadline_at) : wake_at;
}

ClaimedTaskAction decide_claimed_task(const ClaimedTaskFacts& facts, Micros now) noexcept {
  if (!facts.is_task) return ClaimedTaskAction::hand_back;
  // Deadlines are checked for the claimed tasks only: no scan of live tasks.
  if (!facts.first_started_at && facts.cancel_at && *facts.cancel_at <= now)
    return ClaimedTaskAction::cancel_not_started;
  if (facts.deadline_at && *facts.deadline_at <= now) return ClaimedTaskAction::cancel_overdue;
  return ClaimedTaskAction::run;
}

FirstStart first_start(const ClaimedTaskFacts& facts, Micros now) noexcept {
  FirstStart out;
  if (facts.first_started_at || (!facts.cancel_at && !facts.max_duration_ms)) return out;
  out.record = true;
  if (facts.max_duration_ms) out.deadline_at = add_millis(now, *facts.max_duration_ms);
  return out;
}

std::string claimed_wake_reason(int claim_attempt, bool expired, const std::string& stored_reason) {
  return expired || claim_attempt > 1 ? std::string("recovered") : stored_reason;
}

Micros heartbeat_claimed_at(Micros now, std::optional<std::int64_t> extend_ms) noexcept {
  return extend_ms ? add_millis(now, *extend_ms) : now;
}

void validate_extend_ms(std::optional<std::int64_t> extend_ms) {
  if (extend_ms && (*extend_ms < 0 || *extend_ms > kMaxDurationMs))
    fail(Reason::bad_argument,
         "extend_ms must be between 0 and " + std::to_string(kMaxDurationMs) + " (ten years)");
}

std::int64_t retry_delay_ms(const RetryPolicy& policy, int failed_attempt,
                            double random_fraction) noexcept {
  const double ceiling = static_cast<double>(kMaxRetryDelayMs);
  const double cap = policy.max_ms ? std::min(*policy.max_ms, ceiling) : ceiling;
  double delay = 0;
  switch (policy.kind) {
    case RetryKind::none:
      return 0;
    case RetryKind::fixed:
      delay = policy.base_ms;
      break;
    case RetryKind::exponential:
      // base * factor^(n-1) in closed form: no loop whose length is the attempt
      // count; a huge power is infinity, which the cap below saturates.
      delay = policy.base_ms <= 0
                  ? 0.0
                  : policy.base_ms * std::pow(policy.factor, std::max(failed_attempt, 1) - 1);
      break;
  }
  delay = std::min(delay, cap);
  if (policy.jitter > 0) delay *= 1 - policy.jitter * random_fraction;
  return static_cast<std::int64_t>(std::floor(std::max(delay, 0.0)));
}

FailDecision decide_failure(int failed_attempt, int max_attempts, bool overdue, bool retry,
                            Micros now, std::int64_t delay_ms) noexcept {
  FailDecision d;
  if (overdue) {
    d.kind = FailDecision::Kind::cancelled;
  } else if (retry && failed_attempt < max_attempts) {
    d.kind = FailDecision::Kind::retry_scheduled;
    d.retry_at = add_millis(now, delay_ms);
  } else {
    d.kind = FailDecision::Kind::failed;
  }
  return d;
}

const char* fail_disposition(FailDecision::Kind kind) noexcept {
  switch (kind) {
    case FailDecision::Kind::retry_scheduled:
      return "retry_scheduled";
    case FailDecision::Kind::failed:
      return "failed";
    case FailDecision::Kind::cancelled:
      return "cancelled";
  }
  return "failed";
}

std::int64_t defer_delay_ms(int base_ms, int cap_ms, int defers, int hash10) noexcept {
  double delay = std::min(static_cast<double>(base_ms) * std::pow(2.0, std::min(defers, 40)),
                          static_cast<double>(cap_ms));
  delay *= 0.75 + 0.25 * (static_cast<double>(hash10 & 1023) / 1023.0);
  return static_cast<std::int64_t>(std::floor(delay));
}

void validate_defer(int max_defers, int base_ms, int cap_ms) {
  if (base_ms <= 0 || cap_ms <= 0 || max_defers <= 0)
    fail(Reason::bad_argument, "max_defers, base_ms and cap_ms must be > 0");
}

void check_name(const char* what, const std::optional<std::string>& name) {
  if (!name) fail(Reason::bad_argument, std::string(what) + " must not be NULL");
  if (name->empty() || name->size() > kMaxNameBytes)
    fail(Reason::bad_argument, std::string(what) + " must be non-empty text of at most " +
                                   std::to_string(kMaxNameBytes) + " bytes");
}

void check_step_kind(const std::string& step_name, const StepShape& shape, StepKind kind) {
  bool ok = shape.is_object;
  const char* expected = "";
  switch (kind) {
    case StepKind::sleep:
      ok = ok && shape.has_wake_at;
      expected = "a sleep";
      break;
    case StepKind::event_wait:
      ok = ok && shape.status && (*shape.status == "received" || *shape.status == "timeout");
      expected = "an event wait";
      break;
    case StepKind::child_join:
      ok = ok && shape.has_state;
      expected = "a child join";
      break;
  }
  if (!ok)
    fail(Reason::bad_argument,
         "step \"" + step_name + "\" was completed as another kind of step, not as " + expected);
}

void validate_timeout_ms(std::optional<std::int64_t> timeout_ms) {
  if (!timeout_ms) return;
  if (*timeout_ms < 0) fail(Reason::bad_argument, "timeout_ms must be >= 0");
  if (*timeout_ms > kMaxDurationMs)
    fail(Reason::bad_argument,
         "timeout_ms must be at most " + std::to_string(kMaxDurationMs) + " (ten years)");
}

std::optional<EventOutcome> event_outcome(std::optional<Micros> emitted_at,
                                          std::optional<Micros> timeout_at, Micros now) noexcept {
  if (emitted_at && (!timeout_at || *emitted_at <= *timeout_at)) return EventOutcome::received;
  if (timeout_at && *timeout_at <= now) return EventOutcome::timeout;
  return std::nullopt;
}

void validate_batch_lengths(const std::vector<std::optional<std::size_t>>& lengths,
                            const std::vector<const char*>& names) {
  for (std::size_t i = 0; i < lengths.size(); ++i)
    if (!lengths[i]) fail(Reason::bad_argument, std::string(names[i]) + " must not be NULL");
  for (std::size_t i = 1; i < lengths.size(); ++i)
    if (*lengths[i] != *lengths[0])
      fail(Reason::bad_argument,
           std::string(names[0]) + " and " + names[i] + " must have the same length, got " +
               std::to_string(*lengths[0]) + " and " + std::to_string(*lengths[i]));
}

void validate_batch_keys(const std::vector<BatchKey>& keys, bool with_steps) {
  auto at = [](std::size_t i) { return " (element " + std::to_string(i + 1) + ")"; };
  // The elements before the first one with a NULL (whose error comes after
  // any duplicate among them, as the elements are read in order), as (run id,
  // step name) views into `keys` with their positions: sorted, a duplicate
  // sits after its first twin, and the first duplicate in input order is the
  // least position that follows a twin.
  std::vector<std::pair<std::pair<std::string_view, std::string_view>, std::size_t>> pairs;
  pairs.reserve(keys.size());
  std::size_t first_null = keys.size();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const BatchKey& k = keys[i];
    if (!k.run_id || !k.has_token || (with_steps && !k.step_name)) {
      first_null = i;
      break;
    }
    pairs.push_back(
        {{*k.run_id, with_steps ? std::string_view(*k.step_name) : std::string_view()}, i});
  }
  std::sort(pairs.begin(), pairs.end());
  std::size_t duplicate = keys.size();
  for (std::size_t j = 1; j < pairs.size(); ++j)
    if (pairs[j].first == pairs[j - 1].first) duplicate = std::min(duplicate, pairs[j].second);
  if (duplicate < keys.size()) {
    const BatchKey& k = keys[duplicate];
    std::string message = with_steps ? "step " + *k.step_name + " of task " : std::string("task ");
    message += *k.run_id;
    message += " appears twice";
    message += at(duplicate);
    fail(Reason::bad_argument, message);
  }
  if (first_null == keys.size()) return;
  const BatchKey& k = keys[first_null];
  if (!k.run_id) fail(Reason::bad_argument, "run_ids must not contain NULL" + at(first_null));
  if (!k.has_token)
    fail(Reason::bad_argument, "claim_tokens must not contain NULL" + at(first_null));
  fail(Reason::bad_argument, "step_names must not contain NULL" + at(first_null));
}

}  // namespace docket
