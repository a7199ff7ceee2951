// The run document: statuses, schedules and the shape rules shared by insert,
// commit and mutate_run.
#include <gtest/gtest.h>

#include <string>

#include "core/limits.hpp"
#include "core/run.hpp"
#include "run_fixture.hpp"

namespace docket {
namespace {

using test::expect_error;
using test::run_fields;
using test::text;

TEST(Status, ParsesDurableStatusesOnly) {
  for (const char* s : {"running", "waiting", "completed", "failed", "cancelled"}) {
    const std::optional<Status> parsed = parse_status(s);
    ASSERT_TRUE(parsed.has_value()) << s;
    EXPECT_STREQ(status_name(*parsed), s);
  }
  EXPECT_FALSE(parse_status("created").has_value());
  EXPECT_FALSE(parse_status("Running").has_value());
  EXPECT_FALSE(parse_status("").has_value());
}

TEST(Status, TerminalStatuses) {
  EXPECT_FALSE(is_terminal(Status::running));
  EXPECT_FALSE(is_terminal(Status::waiting));
  EXPECT_TRUE(is_terminal(Status::completed));
  EXPECT_TRUE(is_terminal(Status::failed));
  EXPECT_TRUE(is_terminal(Status::cancelled));
}

TEST(Schedule, ParsesEveryScheduleAndRoundTrips) {
  for (const char* s : {"retain_claim", "immediate", "at", "external", "terminal"}) {
    const std::optional<ScheduleKind> parsed = parse_schedule(s);
    ASSERT_TRUE(parsed.has_value()) << s;
    EXPECT_STREQ(schedule_name(*parsed), s);
  }
  EXPECT_FALSE(parse_schedule("release").has_value());
  EXPECT_FALSE(parse_schedule("AT").has_value());
  EXPECT_FALSE(parse_schedule("").has_value());
}

TEST(ValidateRunFields, AcceptsAWellFormedRun) {
  RunFields f = run_fields("r-9", 0, "waiting");
  f.updated_at = text("2024-05-01T10:00:01.5Z");
  const RunDoc doc = validate_run_fields(f, Reason::invalid_run);
  EXPECT_EQ(doc.id, "r-9");
  EXPECT_EQ(doc.graph_id, "g");
  EXPECT_EQ(doc.graph_hash, "h1");
  EXPECT_EQ(doc.status, Status::waiting);
  EXPECT_EQ(doc.checkpoint_seq, 0);
  EXPECT_EQ(doc.started_at, *parse_iso8601("2024-05-01T10:00:00Z"));
  ASSERT_TRUE(doc.updated_at.has_value());
  EXPECT_EQ(*doc.updated_at - doc.started_at, 1500000);
}

TEST(ValidateRunFields, UpdatedAtIsOptional) {
  const RunDoc doc = validate_run_fields(run_fields(), Reason::invalid_run);
  EXPECT_FALSE(doc.updated_at.has_value());
}

TEST(ValidateRunFields, RaisesTheGivenReason) {
  RunFields f = run_fields();
  f.is_object = false;
  for (Reason r : {Reason::invalid_run, Reason::invalid_commit, Reason::invalid_mutation}) {
    expect_error([&] { validate_run_fields(f, r); }, r, "run document must be a JSON object");
  }
}

TEST(ValidateRunFields, RequiredTextFields) {
  struct FieldCase {
    const char* name;
    Field<std::string> RunFields::*member;
  };
  const FieldCase fields[] = {{"id", &RunFields::id},
                              {"graph_id", &RunFields::graph_id},
                              {"graph_hash", &RunFields::graph_hash},
                              {"status", &RunFields::status},
                              {"started_at", &RunFields::started_at}};
  for (const FieldCase& fc : fields) {
    SCOPED_TRACE(fc.name);
    RunFields f = run_fields();
    f.*fc.member = Field<std::string>{};
    expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
                 std::string("run document has no \"") + fc.name + "\"");
    f.*fc.member = Field<std::string>::wrong();
    expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
                 std::string("run \"") + fc.name + "\" must be a string");
    f.*fc.member = text("");
    expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
                 std::string("run \"") + fc.name + "\" must not be empty");
  }
}

TEST(ValidateRunFields, Status) {
  RunFields f = run_fields();
  f.status = text("created");
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "transient");
  f.status = text("paused");
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "run status \"paused\" is not a durable status");
}

TEST(ValidateRunFields, CheckpointSeq) {
  RunFields f = run_fields();
  f.checkpoint_seq = Field<std::int64_t>{};
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "run document has no \"checkpoint_seq\"");
  f.checkpoint_seq = Field<std::int64_t>::wrong();
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "\"checkpoint_seq\" must be an integer");
  f.checkpoint_seq = Field<std::int64_t>::present_value(-1);
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "\"checkpoint_seq\" must be >= 0");
}

TEST(ValidateRunFields, Timestamps) {
  RunFields f = run_fields();
  f.started_at = text("2024-05-01T10:00:00");
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "run \"started_at\" is not an ISO-8601 timestamp with offset");
  f = run_fields();
  f.updated_at = text("2024-02-30T10:00:00Z");
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "run \"updated_at\" is not an ISO-8601");
  f.updated_at = Field<std::string>::wrong();
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run,
               "run \"updated_at\" must be a string");
}

TEST(ValidateRunFields, FirstBrokenFieldIsNamed) {
  RunFields f = run_fields();
  f.id = text("");
  f.status = text("bogus");
  expect_error([&] { validate_run_fields(f, Reason::invalid_run); }, Reason::invalid_run, "\"id\"");
}

TEST(ValidateSchedule, ValidPairs) {
  const Reason r = Reason::invalid_commit;
  EXPECT_NO_THROW(validate_schedule(ScheduleKind::retain_claim, Status::running, false, true, r));
  EXPECT_NO_THROW(validate_schedule(ScheduleKind::immediate, Status::running, false, true, r));
  EXPECT_NO_THROW(validate_schedule(ScheduleKind::at, Status::running, true, true, r));
  EXPECT_NO_THROW(validate_schedule(ScheduleKind::external, Status::waiting, false, true, r));
  for (Status s : {Status::completed, Status::failed, Status::cancelled})
    EXPECT_NO_THROW(validate_schedule(ScheduleKind::terminal, s, false, false, r));
}

TEST(ValidateSchedule, EveryMismatchedPairIsRejected) {
  const ScheduleKind kinds[] = {ScheduleKind::retain_claim, ScheduleKind::immediate,
                                ScheduleKind::at, ScheduleKind::external, ScheduleKind::terminal};
  const Status statuses[] = {Status::running, Status::waiting, Status::completed, Status::failed,
                             Status::cancelled};
  for (ScheduleKind k : kinds) {
    for (Status s : statuses) {
      bool fits = false;
      switch (k) {
        case ScheduleKind::retain_claim:
        case ScheduleKind::immediate:
        case ScheduleKind::at:
          fits = s == Status::running;
          break;
        case ScheduleKind::external:
          fits = s == Status::waiting;
          break;
        case ScheduleKind::terminal:
          fits = is_terminal(s);
          break;
      }
      if (fits) continue;
      SCOPED_TRACE(std::string(schedule_name(k)) + "/" + status_name(s));
      expect_error(
          [&] { validate_schedule(k, s, k == ScheduleKind::at, true, Reason::invalid_commit); },
          Reason::invalid_commit,
          std::string("schedule \"") + schedule_name(k) + "\" does not fit status \"" +
              status_name(s) + "\"");
    }
  }
}

TEST(ValidateSchedule, WakeAtOnlyWithAt) {
  expect_error(
      [] {
        validate_schedule(ScheduleKind::at, Status::running, false, true, Reason::invalid_commit);
      },
      Reason::invalid_commit, "schedule \"at\" needs a wake_at");
  for (ScheduleKind k : {ScheduleKind::retain_claim, ScheduleKind::immediate,
                         ScheduleKind::external, ScheduleKind::terminal}) {
    expect_error(
        [&] { validate_schedule(k, Status::running, true, true, Reason::invalid_mutation); },
        Reason::invalid_mutation,
        std::string("wake_at must be NULL for schedule \"") + schedule_name(k) + "\"");
  }
}

TEST(ValidateSchedule, RetainClaimOnlyWhereAllowed) {
  expect_error(
      [] {
        validate_schedule(ScheduleKind::retain_claim, Status::running, false, false,
                          Reason::invalid_mutation);
      },
      Reason::invalid_mutation, "retain_claim is not a release schedule");
}

TEST(ValidateNewRunIds, EachIdAtMostMaxIdBytes) {
  RunDoc doc = validate_run_fields(run_fields(), Reason::invalid_run);
  const std::string at_cap(kMaxIdBytes, 'x');
  for (std::string RunDoc::*member : {&RunDoc::id, &RunDoc::graph_id, &RunDoc::graph_hash}) {
    RunDoc d = doc;
    d.*member = at_cap;
    EXPECT_NO_THROW(validate_new_run_ids(d, Reason::invalid_run));
    d.*member = at_cap + "y";
    expect_error([&] { validate_new_run_ids(d, Reason::invalid_run); }, Reason::invalid_run,
                 "bytes, over 255");
  }
  doc.graph_hash = std::string(kMaxIdBytes + 1, 'h');
  expect_error([&] { validate_new_run_ids(doc, Reason::invalid_run); }, Reason::invalid_run,
               "run \"graph_hash\" is 256 bytes, over 255");
}

// docket.runs' CHECK (runs_row_valid) and the direct commit write judge a row
// by these rules; an unknown (NULL) value passes, as in a CHECK.
TEST(RunRowRules, EachRuleFailsAlone) {
  RunRowFacts valid;
  valid.checkpoint_seq = 0;
  valid.claim_attempts = 0;
  valid.claim_abandons = 0;
  valid.has_claim_token = valid.has_claimed_at = true;
  EXPECT_TRUE(run_row_rules_hold(valid));
  EXPECT_TRUE(run_row_rules_hold(RunRowFacts{}));  // every column NULL

  RunRowFacts row = valid;
  row.status_known = false;
  EXPECT_FALSE(run_row_rules_hold(row));
  row = valid;
  row.checkpoint_seq = -1;
  EXPECT_FALSE(run_row_rules_hold(row));
  row = valid;
  row.claim_attempts = -1;
  EXPECT_FALSE(run_row_rules_hold(row));
  row = valid;
  row.claim_abandons = -1;
  EXPECT_FALSE(run_row_rules_hold(row));
  row = valid;
  row.has_claimed_at = false;  // a token without its time
  EXPECT_FALSE(run_row_rules_hold(row));
  row = valid;
  row.has_claim_token = false;  // a time without its token
  EXPECT_FALSE(run_row_rules_hold(row));
  row = valid;
  row.has_poisoned_at = true;  // a poison time without its reason
  EXPECT_FALSE(run_row_rules_hold(row));
  row.has_poison_reason = true;
  EXPECT_TRUE(run_row_rules_hold(row));
  row = valid;
  row.has_poison_reason = true;  // a reason without its time
  EXPECT_FALSE(run_row_rules_hold(row));
}

}  // namespace
}  // namespace docket
