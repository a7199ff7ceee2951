#include "core/run.hpp"

#include "core/limits.hpp"

namespace docket {

std::optional<Status> parse_status(std::string_view text) noexcept {
  if (text == "running") return Status::running;
  if (text == "waiting") return Status::waiting;
  if (text == "completed") return Status::completed;
  if (text == "failed") return Status::failed;
  if (text == "cancelled") return Status::cancelled;
  return std::nullopt;
}

const char* status_name(Status status) noexcept {
  switch (status) {
    case Status::running:
      return "running";
    case Status::waiting:
      return "waiting";
    case Status::completed:
      return "completed";
    case Status::failed:
      return "failed";
    case Status::cancelled:
      return "cancelled";
  }
  return "unknown";
}

bool run_row_rules_hold(const RunRowFacts& row) noexcept {
  auto not_negative = [](const std::optional<std::int64_t>& n) { return !n || *n >= 0; };
  return row.status_known && not_negative(row.checkpoint_seq) && not_negative(row.claim_attempts) &&
         not_negative(row.claim_abandons) && row.has_claim_token == row.has_claimed_at &&
         row.has_poisoned_at == row.has_poison_reason;
}

bool is_terminal(Status status) noexcept {
  return status == Status::completed || status == Status::failed || status == Status::cancelled;
}

std::optional<ScheduleKind> parse_schedule(std::string_view text) noexcept {
  if (text == "retain_claim") return ScheduleKind::retain_claim;
  if (text == "immediate") return ScheduleKind::immediate;
  if (text == "at") return ScheduleKind::at;
  if (text == "external") return ScheduleKind::external;
  if (text == "terminal") return ScheduleKind::terminal;
  return std::nullopt;
}

const char* schedule_name(ScheduleKind kind) noexcept {
  switch (kind) {
    case ScheduleKind::retain_claim:
      return "retain_claim";
    case ScheduleKind::immediate:
      return "immediate";
    case ScheduleKind::at:
      return "at";
    case ScheduleKind::external:
      return "external";
    case ScheduleKind::terminal:
      return "terminal";
  }
  return "unknown";
}

namespace {

const std::string& required_text(const Field<std::string>& field, const char* name, Reason reason) {
  if (field.state == Field<std::string>::State::missing)
    fail(reason, std::string("run document has no \"") + name + "\"");
  if (!field.ok()) fail(reason, std::string("run \"") + name + "\" must be a string");
  if (field.value.empty()) fail(reason, std::string("run \"") + name + "\" must not be empty");
  return field.value;
}

Micros required_time(const Field<std::string>& field, const char* name, Reason reason) {
  const std::string& text = required_text(field, name, reason);
  const std::optional<Micros> t = parse_iso8601(text);
  if (!t)
    fail(reason, std::string("run \"") + name + "\" is not an ISO-8601 timestamp with offset: \"" +
                     text + "\"");
  return *t;
}

}  // namespace

RunDoc validate_run_fields(const RunFields& fields, Reason reason) {
  if (!fields.is_object) fail(reason, "run document must be a JSON object");
  RunDoc doc;
  doc.id = required_text(fields.id, "id", reason);
  doc.graph_id = required_text(fields.graph_id, "graph_id", reason);
  doc.graph_hash = required_text(fields.graph_hash, "graph_hash", reason);
  const std::string& status = required_text(fields.status, "status", reason);
  if (status == "created") fail(reason, "run status \"created\" is transient and is never stored");
  const std::optional<Status> parsed = parse_status(status);
  if (!parsed) fail(reason, "run status \"" + status + "\" is not a durable status");
  doc.status = *parsed;
  if (fields.checkpoint_seq.state == Field<std::int64_t>::State::missing)
    fail(reason, "run document has no \"checkpoint_seq\"");
  if (!fields.checkpoint_seq.ok()) fail(reason, "run \"checkpoint_seq\" must be an integer");
  if (fields.checkpoint_seq.value < 0) fail(reason, "run \"checkpoint_seq\" must be >= 0");
  doc.checkpoint_seq = fields.checkpoint_seq.value;
  doc.started_at = required_time(fields.started_at, "started_at", reason);
  if (fields.updated_at.state != Field<std::string>::State::missing)
    doc.updated_at = required_time(fields.updated_at, "updated_at", reason);
  return doc;
}

void validate_id_bytes(const char* label, const std::string& id, Reason reason) {
  if (id.size() > kMaxIdBytes)
    fail(reason, std::string(label) + " is " + std::to_string(id.size()) + " bytes, over " +
                     std::to_string(kMaxIdBytes));
}

void validate_new_run_ids(const RunDoc& doc, Reason reason) {
  validate_id_bytes("run \"id\"", doc.id, reason);
  validate_id_bytes("run \"graph_id\"", doc.graph_id, reason);
  validate_id_bytes("run \"graph_hash\"", doc.graph_hash, reason);
}

void validate_schedule(ScheduleKind schedule, Status status, bool has_wake_at, bool allow_retain,
                       Reason reason) {
  if (schedule == ScheduleKind::retain_claim && !allow_retain)
    fail(reason, "retain_claim is not a release schedule; a mutation always releases the claim");
  if (schedule == ScheduleKind::at && !has_wake_at) fail(reason, "schedule \"at\" needs a wake_at");
  if (schedule != ScheduleKind::at && has_wake_at)
    fail(reason,
         std::string("wake_at must be NULL for schedule \"") + schedule_name(schedule) + "\"");
  bool ok = false;
  switch (schedule) {
    case ScheduleKind::retain_claim:
    case ScheduleKind::immediate:
    case ScheduleKind::at:
      ok = status == Status::running;
      break;
    case ScheduleKind::external:
      ok = status == Status::waiting;
      break;
    case ScheduleKind::terminal:
      ok = is_terminal(status);
      break;
  }
  if (!ok)
    fail(reason, std::string("schedule \"") + schedule_name(schedule) +
                     "\" does not fit status \"" + status_name(status) + "\"");
}

}  // namespace docket
