// The run document, its statuses and schedules, and the shape rules shared by
// insert, commit and mutate_run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/time.hpp"

namespace docket {

enum class Status { running, waiting, completed, failed, cancelled };

std::optional<Status> parse_status(std::string_view text) noexcept;
const char* status_name(Status status) noexcept;
bool is_terminal(Status status) noexcept;

enum class ScheduleKind { retain_claim, immediate, at, external, terminal };

std::optional<ScheduleKind> parse_schedule(std::string_view text) noexcept;
const char* schedule_name(ScheduleKind kind) noexcept;

// A field read out of a JSON document, before it is judged.
template <typename T>
struct Field {
  enum class State { missing, wrong_type, present };
  State state = State::missing;
  T value{};

  static Field present_value(T v) { return Field{State::present, std::move(v)}; }
  static Field wrong() { return Field{State::wrong_type, T{}}; }
  bool ok() const noexcept { return state == State::present; }
};

// What the PostgreSQL layer extracts from a run document. Timestamps stay text
// here; the core parses them so the rules live in one place.
struct RunFields {
  bool is_object = false;
  Field<std::string> id;
  Field<std::string> graph_id;
  Field<std::string> graph_hash;
  Field<std::string> status;
  Field<std::int64_t> checkpoint_seq;  // wrong_type also for non-integral or out-of-range
  Field<std::string> started_at;
  Field<std::string> updated_at;  // optional; JSON null counts as missing
};

// A run document that passed the shape rules.
struct RunDoc {
  std::string id;
  std::string graph_id;
  std::string graph_hash;
  Status status = Status::running;
  std::int64_t checkpoint_seq = 0;
  Micros started_at = 0;
  std::optional<Micros> updated_at;
};

// Checks the shape of a run document; on failure raises `reason` (invalid_run
// for insert, invalid_commit for commit, invalid_mutation for mutate_run) with
// a detail naming the first broken field.
RunDoc validate_run_fields(const RunFields& fields, Reason reason);
// An id (run id, graph_id, graph_hash) of at most kMaxIdBytes; raises `reason`
// with "<label> is N bytes, over 255" otherwise.
void validate_id_bytes(const char* label, const std::string& id, Reason reason);
// A new run's id, graph_id and graph_hash: at most kMaxIdBytes each (insert
// only: a commit or mutation keeps the ids its run already has).
void validate_new_run_ids(const RunDoc& doc, Reason reason);

// The rules of a stored run row, docket.runs' one CHECK constraint
// (runs_row_valid): a known status, counters not negative, a claim token with
// its claimed_at, a poison time with its reason. As in a CHECK, an unknown
// (NULL) value passes: a column that is nullopt here is not judged.
struct RunRowFacts {
  bool status_known = true;
  std::optional<std::int64_t> checkpoint_seq;
  std::optional<std::int64_t> claim_attempts;
  std::optional<std::int64_t> claim_abandons;
  bool has_claim_token = false;
  bool has_claimed_at = false;
  bool has_poisoned_at = false;
  bool has_poison_reason = false;
};
bool run_row_rules_hold(const RunRowFacts& row) noexcept;

// Checks that (schedule, status, wake_at given?) form a valid pair; raises
// `reason` otherwise. `allow_retain` is false for mutate_run.
void validate_schedule(ScheduleKind schedule, Status status, bool has_wake_at, bool allow_retain,
                       Reason reason);

}  // namespace docket
