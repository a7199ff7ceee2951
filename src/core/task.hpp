// The task layer's decisions: the task fence and its documented order, the
// facts of a fenced fast path, the transitions a task goes through, retry and
// defer delays, step-kind rules, name checks and the batch calls' input rules.
// Plain values in, plain decisions out; src/pg/task_*.cpp applies them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/fence.hpp"
#include "core/run.hpp"
#include "core/time.hpp"

namespace docket {

// ---------------------------------------------------------------------------
// The task fence
// ---------------------------------------------------------------------------

// What a locked (or freshly read) run row shows the fence.
struct TaskFacts {
  bool is_task = true;  // graph_hash = 'task'
  Status status = Status::running;
  std::optional<Token> claim_token;
  std::optional<Micros> deadline_at;  // first start + max_duration_ms, once claimed
};

// The documented order: unknown or not a task -> not_found; cancelled ->
// cancelled; another token -> stale; past the deadline -> overdue (unless the
// call allows it, as fail_task does); else held.
enum class TaskVerdict { held, not_found, cancelled, stale, overdue };

TaskVerdict judge_task(const std::optional<TaskFacts>& facts, const Token& claim_token, Micros now,
                       bool allow_overdue) noexcept;

// Raises the verdict's error (DK003, DK010, DK001, DK010) for task `run_id`;
// returns normally only for held.
void raise_task_verdict(TaskVerdict verdict, const std::string& run_id);

// A batch call's outcome word for a verdict other than held: overdue tasks are
// cancelled by the call, so they read "cancelled".
const char* batch_outcome(TaskVerdict verdict) noexcept;

// What a fenced fast-path statement matches the stored row on: exactly the
// facts judge_task looks at, so a row it matches is held, and a miss is judged
// by judge_task under the row's lock.
//   run_id = run_id AND claim_token = claim_token AND graph_hash = 'task'
//   AND (allow_overdue OR deadline_at IS NULL OR deadline_at > now)
// A held claim implies a non-terminal status: every terminal transition
// clears the token.
struct TaskMatch {
  std::string run_id;
  Token claim_token{};
  Micros now = 0;
  bool allow_overdue = false;
};

// ---------------------------------------------------------------------------
// Transitions
// ---------------------------------------------------------------------------

// The next version of a task's run: its status, checkpoint type and schedule.
// The document becomes (document - 'waiting') || changes || {checkpoint_seq};
// every task transition hands the claim back.
struct TaskTransition {
  Status status = Status::running;
  const char* checkpoint_type = "run_completed";
  ScheduleKind schedule = ScheduleKind::terminal;
  std::optional<Micros> wake_at;  // schedule at
};

TaskTransition complete_transition() noexcept;
TaskTransition failed_transition() noexcept;
TaskTransition cancelled_transition() noexcept;
TaskTransition retry_transition(Micros retry_at) noexcept;
TaskTransition sleep_transition(Micros wake_at) noexcept;
// An event wait: with a timeout the task stays running and is due at the
// timeout; without one it waits (external schedule).
TaskTransition event_wait_transition(std::optional<Micros> timeout_at) noexcept;
TaskTransition child_wait_transition() noexcept;

// Eager deadlines: a task with a max-duration deadline never sleeps, waits or
// backs off past it. A wake after the deadline becomes the deadline, and a
// wait with no wake (an event wait without a timeout, a child wait) becomes a
// wake at the deadline (status running, as a wait with a timeout: the document
// still says what it waits for). The claim path then meets the task at its
// deadline like any due task and cancels it (decide_claimed_task), with no
// scan of live tasks. Terminal and immediate transitions, and tasks without a
// deadline, are unchanged.
TaskTransition bound_by_deadline(TaskTransition transition,
                                 std::optional<Micros> deadline_at) noexcept;
// The same for a bare wake time (defer_task's backoff).
Micros bound_wake(Micros wake_at, std::optional<Micros> deadline_at) noexcept;

// Cancel reasons recorded in the document.
constexpr const char* kCancelAfter = "cancel_after_ms";
constexpr const char* kMaxDuration = "max_duration_ms";

// ---------------------------------------------------------------------------
// Claims
// ---------------------------------------------------------------------------

// What claim_tasks does with one leased run.
enum class ClaimedTaskAction {
  hand_back,           // a plain run-store run: non-poisoning abandon, due at once
  cancel_not_started,  // cancel_after_ms passed before the first start
  cancel_overdue,      // max_duration_ms passed
  run,                 // returned to the runner
};

struct ClaimedTaskFacts {
  bool is_task = true;  // has a docket.tasks row
  std::optional<Micros> cancel_at;
  std::optional<Micros> first_started_at;
  std::optional<Micros> deadline_at;
  std::optional<std::int64_t> max_duration_ms;
};

ClaimedTaskAction decide_claimed_task(const ClaimedTaskFacts& facts, Micros now) noexcept;

// Whether this claim is the first start of a task whose start must be
// recorded (it has a deadline option), and its deadline (max_duration_ms).
struct FirstStart {
  bool record = false;
  std::optional<Micros> deadline_at;
};
FirstStart first_start(const ClaimedTaskFacts& facts, Micros now) noexcept;

// The wake_reason a runner sees: recovered when an earlier claim expired (the
// run was claimed from the expired class, or an earlier claim of this attempt
// count was not ended by a transition; a stored step resets the count).
std::string claimed_wake_reason(int claim_attempt, bool expired, const std::string& stored_reason);

// heartbeat: the point the claim must live to, now + extend_ms (now without
// it). The statement writes claimed_at = greatest(claimed_at, now, point -
// lease), only ever forward: a claim expires once now - claimed_at exceeds
// both the claimer's TTL and the holder's lease (claim.hpp), so it cannot
// expire before the point whatever TTL a claimer passes, and a claim with a
// lease is not kept longer than needed.
Micros heartbeat_claimed_at(Micros now, std::optional<std::int64_t> extend_ms) noexcept;

// Raises bad_argument unless extend_ms is NULL or within [0, kMaxDurationMs].
void validate_extend_ms(std::optional<std::int64_t> extend_ms);

// ---------------------------------------------------------------------------
// Retries and defers
// ---------------------------------------------------------------------------

enum class RetryKind { none, fixed, exponential };

// A spawn-time retry policy (validated and filled in at spawn).
struct RetryPolicy {
  RetryKind kind = RetryKind::exponential;
  double base_ms = 1000;
  double factor = 2;
  std::optional<double> max_ms;
  double jitter = 0;
};

// The delay after failed attempt `failed_attempt` (1-based): none 0, fixed
// base_ms, exponential base_ms * factor^(attempt-1) (saturating), capped at
// max_ms and kMaxRetryDelayMs... then shortened by jitter * random_fraction
// (random_fraction in [0, 1)). Whole milliseconds, rounded down.
std::int64_t retry_delay_ms(const RetryPolicy& policy, int failed_attempt,
                            double random_fraction) noexcept;

struct FailDecision {
  enum class Kind { retry_scheduled, failed, cancelled };
  Kind kind = Kind::failed;
  std::optional<Micros> retry_at;
};

// fail_task: past the deadline -> cancelled; attempts left and retry allowed
// -> retry_scheduled at now + delay; else failed.
FailDecision decide_failure(int failed_attempt, int max_attempts, bool overdue, bool retry,
                            Micros now, std::int64_t delay_ms) noexcept;

const char* fail_disposition(FailDecision::Kind kind) noexcept;

// defer_task: base_ms * 2^defers (defers capped at 40), capped at cap_ms, times
// a deterministic jitter of 75-100% from `hash10` (a hash of the run id and the
// defer count, 0..1023). Whole milliseconds, rounded down.
std::int64_t defer_delay_ms(int base_ms, int cap_ms, int defers, int hash10) noexcept;

// Raises bad_argument unless max_defers, base_ms and cap_ms are > 0.
void validate_defer(int max_defers, int base_ms, int cap_ms);

// ---------------------------------------------------------------------------
// Names, steps, waits
// ---------------------------------------------------------------------------

// Raises bad_argument unless `name` is non-empty text of at most kMaxNameBytes
// (NULL: "<what> must not be NULL").
void check_name(const char* what, const std::optional<std::string>& name);

// What a stored step value looks like, for the kind rules.
struct StepShape {
  bool is_object = false;
  bool has_wake_at = false;           // sleep
  std::optional<std::string> status;  // event wait: "received" / "timeout"
  bool has_state = false;             // child join
};

enum class StepKind { sleep, event_wait, child_join };

// Raises bad_argument "step \"<name>\" was completed as another kind of step,
// not as <kind>" unless the stored value is a step of that kind.
void check_step_kind(const std::string& step_name, const StepShape& shape, StepKind kind);

// Raises bad_argument unless timeout_ms is NULL or within [0, kMaxDurationMs].
void validate_timeout_ms(std::optional<std::int64_t> timeout_ms);

// An event wait's outcome once decided (nullopt: still waiting).
enum class EventOutcome { received, timeout };
std::optional<EventOutcome> event_outcome(std::optional<Micros> emitted_at,
                                          std::optional<Micros> timeout_at, Micros now) noexcept;

// ---------------------------------------------------------------------------
// Batch calls
// ---------------------------------------------------------------------------

// One element of a batch's keys, as it arrived.
struct BatchKey {
  std::optional<std::string> run_id;
  bool has_token = false;
  std::optional<std::string> step_name;  // complete_steps only
};

// The array rules: NULL arrays or unequal lengths, NULL run_id or token
// elements, a duplicate run_id (complete_tasks) or (run_id, step_name)
// (complete_steps; NULL step names are rejected too) raise bad_argument.
// `lengths` holds each array's length, nullopt for a NULL array; `names`
// names the arrays in the same order.
void validate_batch_lengths(const std::vector<std::optional<std::size_t>>& lengths,
                            const std::vector<const char*>& names);
void validate_batch_keys(const std::vector<BatchKey>& keys, bool with_steps);

}  // namespace docket
