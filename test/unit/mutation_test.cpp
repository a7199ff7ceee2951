// mutate_run: judging the decision a pure mutation function returned.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/mutation.hpp"
#include "run_fixture.hpp"

namespace docket {
namespace {

using test::expect_error;
using test::run_fields;
using test::text;

StoredRun current() {
  StoredRun s;
  s.run_id = "r-1";
  s.graph_id = "g";
  s.graph_hash = "h1";
  s.started_at = *parse_iso8601("2024-05-01T10:00:00Z");
  s.checkpoint_seq = 7;
  return s;
}

// A valid commit decision: r-1 from 7 to 8, waiting on an external signal.
MutationDecision commit_decision() {
  MutationDecision d;
  d.decision = "commit";
  d.has_run = true;
  d.run = run_fields("r-1", 8, "waiting");
  d.has_checkpoint_type = true;
  d.schedule = "external";
  return d;
}

void expect_invalid(const MutationDecision& d, const std::string& fragment) {
  expect_error([&] { validate_mutation_commit(d, current()); }, Reason::invalid_mutation, fragment);
}

TEST(ParseMutationKind, KnownDecisions) {
  MutationDecision d;
  d.decision = "commit";
  EXPECT_EQ(parse_mutation_kind(d), MutationKind::commit);
  d.decision = "no_change";
  EXPECT_EQ(parse_mutation_kind(d), MutationKind::no_change);
  d.decision = "error";
  EXPECT_EQ(parse_mutation_kind(d), MutationKind::error);
}

TEST(ParseMutationKind, NullOrUnknownDecisionIsInvalidMutation) {
  MutationDecision d;
  expect_error([&] { parse_mutation_kind(d); }, Reason::invalid_mutation, "no decision");
  d.decision = "Commit";
  expect_error([&] { parse_mutation_kind(d); }, Reason::invalid_mutation,
               "decision \"Commit\" is not one of commit, no_change, error");
  d.decision = "";
  expect_error([&] { parse_mutation_kind(d); }, Reason::invalid_mutation, "is not one of");
}

TEST(ValidateMutationCommit, AcceptsAValidDecision) {
  const ValidProposal v = validate_mutation_commit(commit_decision(), current());
  EXPECT_EQ(v.run.checkpoint_seq, 8);
  EXPECT_EQ(v.run.status, Status::waiting);
  EXPECT_EQ(v.schedule, ScheduleKind::external);
}

TEST(ValidateMutationCommit, EveryReleaseScheduleIsAllowed) {
  MutationDecision d = commit_decision();
  d.run.status = text("running");
  d.schedule = "immediate";
  EXPECT_NO_THROW(validate_mutation_commit(d, current()));
  d.schedule = "at";
  d.has_wake_at = true;
  EXPECT_NO_THROW(validate_mutation_commit(d, current()));
  d = commit_decision();
  d.run.status = text("cancelled");
  d.schedule = "terminal";
  EXPECT_NO_THROW(validate_mutation_commit(d, current()));
}

TEST(ValidateMutationCommit, RetainClaimIsRejected) {
  MutationDecision d = commit_decision();
  d.run.status = text("running");
  d.schedule = "retain_claim";
  expect_invalid(d, "retain_claim is not a release schedule");
}

TEST(ValidateMutationCommit, NeedsARun) {
  MutationDecision d = commit_decision();
  d.has_run = false;
  expect_invalid(d, "a commit decision needs a run");
}

TEST(ValidateMutationCommit, RunShapeErrorsAreInvalidMutation) {
  MutationDecision d = commit_decision();
  d.run.status = text("created");
  expect_invalid(d, "transient");
}

TEST(ValidateMutationCommit, SameRunIdOnly) {
  MutationDecision d = commit_decision();
  d.run.id = text("r-2");
  expect_invalid(d, "a commit decision for run r-1 proposes run id \"r-2\"");
}

TEST(ValidateMutationCommit, ExactlyTheNextSequence) {
  for (std::int64_t seq : {std::int64_t{7}, std::int64_t{9}, std::int64_t{0}}) {
    MutationDecision d = commit_decision();
    d.run.checkpoint_seq = Field<std::int64_t>::present_value(seq);
    expect_invalid(d,
                   "proposes checkpoint_seq " + std::to_string(seq) + ", expected exactly 7 + 1");
  }
}

TEST(ValidateMutationCommit, SequenceAtInt64MaxCannotAdvance) {
  StoredRun s = current();
  s.checkpoint_seq = std::numeric_limits<std::int64_t>::max();
  MutationDecision d = commit_decision();
  d.run.checkpoint_seq = Field<std::int64_t>::present_value(s.checkpoint_seq);
  expect_error([&] { validate_mutation_commit(d, s); }, Reason::invalid_mutation,
               "expected exactly");
}

TEST(ValidateMutationCommit, NeedsCheckpointTypeAndSchedule) {
  MutationDecision d = commit_decision();
  d.has_checkpoint_type = false;
  expect_invalid(d, "a commit decision needs a checkpoint_type");
  d = commit_decision();
  d.schedule.reset();
  expect_invalid(d, "a commit decision needs a schedule");
  d = commit_decision();
  d.schedule = "soon";
  expect_invalid(d, "schedule \"soon\" is not one of");
}

TEST(ValidateMutationCommit, ScheduleMustFitStatus) {
  MutationDecision d = commit_decision();
  d.schedule = "terminal";  // status is waiting
  expect_invalid(d, "does not fit status \"waiting\"");
  d = commit_decision();
  d.has_wake_at = true;
  expect_invalid(d, "wake_at must be NULL for schedule \"external\"");
}

TEST(ValidateMutationCommit, IdentityNeverChanges) {
  MutationDecision d = commit_decision();
  d.run.graph_hash = text("h2");
  expect_invalid(d, "cannot change graph_hash");
  d = commit_decision();
  d.run.started_at = text("2024-05-01T10:00:01Z");
  expect_invalid(d, "cannot change started_at");
}

}  // namespace
}  // namespace docket
