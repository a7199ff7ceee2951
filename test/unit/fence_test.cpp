// Commit fencing: proposal validation order, the token-and-sequence fence,
// immutable identity and the schedule effect of every schedule.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/fence.hpp"
#include "run_fixture.hpp"

namespace docket {
namespace {

using test::expect_error;
using test::run_fields;
using test::text;

Token token(unsigned char fill) {
  Token t;
  t.fill(fill);
  return t;
}

// A valid proposal: run r-1 moving from sequence 4 to 5, completing it.
CommitProposal proposal() {
  CommitProposal p;
  p.has_run = true;
  p.run = run_fields("r-1", 5, "completed");
  p.expected_checkpoint_seq = 4;
  p.claim_token = token(0xab);
  p.has_checkpoint_type = true;
  p.schedule = "terminal";
  return p;
}

StoredRun stored() {
  StoredRun s;
  s.run_id = "r-1";
  s.graph_id = "g";
  s.graph_hash = "h1";
  s.started_at = *parse_iso8601("2024-05-01T10:00:00Z");
  s.checkpoint_seq = 4;
  s.claim_token = token(0xab);
  s.claimed_at = 1000;
  return s;
}

void expect_invalid(const CommitProposal& p, const std::string& fragment) {
  expect_error([&] { validate_commit_proposal(p); }, Reason::invalid_commit, fragment);
}

TEST(ValidateCommitProposal, AcceptsAValidProposal) {
  const ValidProposal v = validate_commit_proposal(proposal());
  EXPECT_EQ(v.run.id, "r-1");
  EXPECT_EQ(v.run.checkpoint_seq, 5);
  EXPECT_EQ(v.run.status, Status::completed);
  EXPECT_EQ(v.schedule, ScheduleKind::terminal);
}

TEST(ValidateCommitProposal, NullArgumentsAreInvalidCommit) {
  CommitProposal p = proposal();
  p.claim_token.reset();
  expect_invalid(p, "claim_token must not be NULL");

  p = proposal();
  p.expected_checkpoint_seq.reset();
  expect_invalid(p, "expected_checkpoint_seq must not be NULL");

  p = proposal();
  p.has_run = false;
  expect_invalid(p, "run must not be NULL");

  p = proposal();
  p.has_checkpoint_type = false;
  expect_invalid(p, "checkpoint_type must not be NULL");

  p = proposal();
  p.schedule.reset();
  expect_invalid(p, "schedule must not be NULL");
}

TEST(ValidateCommitProposal, NegativeExpectedSequence) {
  CommitProposal p = proposal();
  p.expected_checkpoint_seq = -1;
  p.run.checkpoint_seq = Field<std::int64_t>::present_value(0);
  expect_invalid(p, "expected_checkpoint_seq must be >= 0");
}

TEST(ValidateCommitProposal, SequenceMustBeExactlyExpectedPlusOne) {
  for (std::int64_t seq : {std::int64_t{4}, std::int64_t{6}, std::int64_t{0}, std::int64_t{50}}) {
    CommitProposal p = proposal();
    p.run.checkpoint_seq = Field<std::int64_t>::present_value(seq);
    expect_invalid(p,
                   "proposes checkpoint_seq " + std::to_string(seq) + ", expected exactly 4 + 1");
  }
}

TEST(ValidateCommitProposal, ExpectedSequenceAtInt64MaxCannotAdvance) {
  CommitProposal p = proposal();
  p.expected_checkpoint_seq = std::numeric_limits<std::int64_t>::max();
  p.run.checkpoint_seq =
      Field<std::int64_t>::present_value(std::numeric_limits<std::int64_t>::max());
  expect_invalid(p, "expected exactly");
}

TEST(ValidateCommitProposal, RunShapeErrorsAreInvalidCommit) {
  CommitProposal p = proposal();
  p.run.is_object = false;
  expect_invalid(p, "JSON object");

  p = proposal();
  p.run.id = Field<std::string>{};
  expect_invalid(p, "\"id\"");

  p = proposal();
  p.run.status = text("created");
  expect_invalid(p, "transient");

  p = proposal();
  p.run.checkpoint_seq = Field<std::int64_t>::wrong();
  expect_invalid(p, "must be an integer");

  p = proposal();
  p.run.started_at = text("yesterday");
  expect_invalid(p, "ISO-8601");
}

TEST(ValidateCommitProposal, UnknownSchedule) {
  CommitProposal p = proposal();
  p.schedule = "later";
  expect_invalid(p, "schedule \"later\" is not one of");
  p.schedule = "";
  expect_invalid(p, "is not one of");
}

TEST(ValidateCommitProposal, ScheduleStatusPairs) {
  struct Case {
    const char* schedule;
    const char* status;
    bool wake;
    bool ok;
  };
  const Case cases[] = {
      {"retain_claim", "running", false, true},
      {"immediate", "running", false, true},
      {"at", "running", true, true},
      {"external", "waiting", false, true},
      {"terminal", "completed", false, true},
      {"terminal", "failed", false, true},
      {"terminal", "cancelled", false, true},
      {"retain_claim", "waiting", false, false},
      {"immediate", "completed", false, false},
      {"at", "waiting", true, false},
      {"external", "running", false, false},
      {"external", "failed", false, false},
      {"terminal", "running", false, false},
      {"terminal", "waiting", false, false},
      {"at", "running", false, false},
      {"immediate", "running", true, false},
      {"terminal", "completed", true, false},
      {"retain_claim", "running", true, false},
      {"external", "waiting", true, false},
  };
  for (const Case& c : cases) {
    CommitProposal p = proposal();
    p.run.status = text(c.status);
    p.schedule = c.schedule;
    p.has_wake_at = c.wake;
    SCOPED_TRACE(std::string(c.schedule) + "/" + c.status + (c.wake ? "+wake" : ""));
    if (c.ok) {
      EXPECT_NO_THROW(validate_commit_proposal(p));
    } else {
      expect_invalid(p, "");
    }
  }
}

TEST(ValidateCommitProposal, WakeAtMessages) {
  CommitProposal p = proposal();
  p.run.status = text("running");
  p.schedule = "at";
  expect_invalid(p, "schedule \"at\" needs a wake_at");
  p.schedule = "immediate";
  p.has_wake_at = true;
  expect_invalid(p, "wake_at must be NULL for schedule \"immediate\"");
}

TEST(ValidateCommitProposal, TokenIsCheckedBeforeAnythingElse) {
  CommitProposal p = proposal();
  p.claim_token.reset();
  p.has_run = false;
  p.schedule = "bogus";
  expect_invalid(p, "claim_token");
}

TEST(ValidateCommitProposal, SequenceIsCheckedBeforeSchedule) {
  CommitProposal p = proposal();
  p.run.checkpoint_seq = Field<std::int64_t>::present_value(9);
  p.schedule = "bogus";
  expect_invalid(p, "proposes checkpoint_seq 9");
}

TEST(ValidateCommitProposal, ShapeIsCheckedBeforeSequence) {
  CommitProposal p = proposal();
  p.run.checkpoint_seq = Field<std::int64_t>::present_value(9);
  p.run.graph_hash = text("");
  expect_invalid(p, "graph_hash");
}

TEST(ValidateCommitProposal, CheckpointTypeIsCheckedBeforeSchedule) {
  CommitProposal p = proposal();
  p.has_checkpoint_type = false;
  p.schedule = "bogus";
  expect_invalid(p, "checkpoint_type");
}

TEST(CheckFence, MatchingSequenceAndTokenPass) {
  EXPECT_NO_THROW(check_fence(stored(), 4, token(0xab)));
}

TEST(CheckFence, SequenceMismatchIsStale) {
  expect_error([] { check_fence(stored(), 3, token(0xab)); }, Reason::stale_fence,
               "run r-1 is at checkpoint_seq 4, not 3");
}

TEST(CheckFence, SequenceIsCheckedBeforeToken) {
  expect_error([] { check_fence(stored(), 5, token(0x01)); }, Reason::stale_fence,
               "checkpoint_seq");
}

TEST(CheckFence, TokenMismatchIsStale) {
  expect_error([] { check_fence(stored(), 4, token(0x01)); }, Reason::stale_fence,
               "run r-1 is not held by this claim token");
}

TEST(CheckFence, MessageNeverCarriesAToken) {
  // The token is the holder's authority; neither the stored nor the offered one is printed.
  try {
    check_fence(stored(), 4, token(0x01));
    FAIL() << "expected stale_fence";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find(token_text(token(0x01))), std::string::npos) << what;
    EXPECT_EQ(what.find(token_text(token(0xab))), std::string::npos) << what;
    EXPECT_EQ(what.find("0101"), std::string::npos) << what;
  }
}

TEST(CheckFence, UnclaimedRunIsStale) {
  StoredRun s = stored();
  s.claim_token.reset();
  expect_error([&] { check_fence(s, 4, token(0xab)); }, Reason::stale_fence,
               "is not held by this claim token");
}

TEST(CheckIdentity, SameIdentityPasses) {
  const RunDoc doc = validate_run_fields(run_fields("r-1", 5), Reason::invalid_commit);
  EXPECT_NO_THROW(check_identity(stored(), doc, Reason::invalid_commit));
}

TEST(CheckIdentity, EachImmutableFieldIsChecked) {
  RunDoc doc = validate_run_fields(run_fields("r-1", 5), Reason::invalid_commit);
  RunDoc changed = doc;
  changed.graph_id = "other";
  expect_error([&] { check_identity(stored(), changed, Reason::invalid_commit); },
               Reason::invalid_commit, "cannot change graph_id from \"g\" to \"other\"");
  changed = doc;
  changed.graph_hash = "h2";
  expect_error([&] { check_identity(stored(), changed, Reason::invalid_commit); },
               Reason::invalid_commit, "cannot change graph_hash");
  changed = doc;
  changed.started_at += 1;
  expect_error([&] { check_identity(stored(), changed, Reason::invalid_mutation); },
               Reason::invalid_mutation, "cannot change started_at");
}

TEST(CheckIdentity, StartedAtComparesInstantsNotText) {
  RunFields f = run_fields("r-1", 5);
  f.started_at = text("2024-05-01T12:00:00+02:00");
  const RunDoc doc = validate_run_fields(f, Reason::invalid_commit);
  EXPECT_NO_THROW(check_identity(stored(), doc, Reason::invalid_commit));
}

// The stored run a commit's fenced update would match: every CommitMatch fact.
StoredRun stored_matching(const CommitMatch& m) {
  StoredRun s;
  s.run_id = m.run_id;
  s.checkpoint_seq = m.checkpoint_seq;
  s.claim_token = m.claim_token;
  s.claimed_at = 1000;
  s.graph_id = m.graph_id;
  s.graph_hash = m.graph_hash;
  s.started_at = m.started_at;
  return s;
}

TEST(CommitMatch, CarriesTheFenceAndTheProposedIdentity) {
  const ValidProposal v = validate_commit_proposal(proposal());
  const CommitMatch m = commit_match(v, 4, token(0xab));
  EXPECT_EQ(m.run_id, "r-1");
  EXPECT_EQ(m.checkpoint_seq, 4);
  EXPECT_EQ(m.claim_token, token(0xab));
  EXPECT_EQ(m.graph_id, "g");
  EXPECT_EQ(m.graph_hash, "h1");
  EXPECT_EQ(m.started_at, *parse_iso8601("2024-05-01T10:00:00Z"));
}

TEST(CheckCommitTarget, ARowTheUpdateWouldMatchPasses) {
  // The fast path's WHERE clause and steps 3-4 agree: a matching row is never an error,
  // whatever else it holds (status, poison, claimed_at).
  const ValidProposal v = validate_commit_proposal(proposal());
  StoredRun s = stored_matching(commit_match(v, 4, token(0xab)));
  EXPECT_NO_THROW(check_commit_target(s, v, 4, token(0xab)));
  s.status = Status::waiting;
  s.poisoned = true;
  s.claimed_at.reset();
  EXPECT_NO_THROW(check_commit_target(s, v, 4, token(0xab)));
}

TEST(CheckCommitTarget, EachMatchFactThatDiffersIsItsError) {
  const ValidProposal v = validate_commit_proposal(proposal());
  const StoredRun ok = stored_matching(commit_match(v, 4, token(0xab)));
  StoredRun s = ok;
  s.checkpoint_seq = 5;
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::stale_fence,
               "checkpoint_seq 5, not 4");
  s = ok;
  s.claim_token = token(0x01);
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::stale_fence,
               "not held by this claim token");
  s = ok;
  s.claim_token.reset();
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::stale_fence,
               "not held by this claim token");
  s = ok;
  s.graph_id = "other";
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::invalid_commit,
               "cannot change graph_id");
  s = ok;
  s.graph_hash = "h0";
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::invalid_commit,
               "cannot change graph_hash");
  s = ok;
  s.started_at -= 1;
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::invalid_commit,
               "cannot change started_at");
}

TEST(CheckCommitTarget, OrderIsNotFoundThenFenceThenIdentity) {
  const ValidProposal v = validate_commit_proposal(proposal());
  expect_error([&] { check_commit_target(std::nullopt, v, 4, token(0xab)); }, Reason::not_found,
               "run r-1 does not exist or is not visible in this scope");
  StoredRun s = stored_matching(commit_match(v, 4, token(0xab)));
  s.graph_id = "other";
  s.claim_token = token(0x01);
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::stale_fence);
  s.claim_token = token(0xab);
  s.checkpoint_seq = 7;
  expect_error([&] { check_commit_target(s, v, 4, token(0xab)); }, Reason::stale_fence);
}

TEST(ScheduleEffect, RetainClaimKeepsTheClaimAndMovesItForward) {
  const ScheduleEffect e = schedule_effect(ScheduleKind::retain_claim, 5000, std::nullopt, 1000);
  EXPECT_TRUE(e.keep_claim);
  EXPECT_EQ(e.claimed_at, Micros{5000});
  EXPECT_FALSE(e.wake_at.has_value());
  EXPECT_FALSE(e.due_now);
}

TEST(ScheduleEffect, RetainClaimNeverMovesBackward) {
  const ScheduleEffect e = schedule_effect(ScheduleKind::retain_claim, 1000, std::nullopt, 9000);
  EXPECT_TRUE(e.keep_claim);
  EXPECT_EQ(e.claimed_at, Micros{9000});
}

TEST(ScheduleEffect, RetainClaimWithoutStoredTimeUsesNow) {
  const ScheduleEffect e =
      schedule_effect(ScheduleKind::retain_claim, 1000, std::nullopt, std::nullopt);
  EXPECT_EQ(e.claimed_at, Micros{1000});
}

TEST(ScheduleEffect, ImmediateIsDueNow) {
  const ScheduleEffect e = schedule_effect(ScheduleKind::immediate, 5000, std::nullopt, 1000);
  EXPECT_FALSE(e.keep_claim);
  EXPECT_FALSE(e.claimed_at.has_value());
  EXPECT_EQ(e.wake_at, Micros{5000});
  EXPECT_TRUE(e.due_now);
}

TEST(ScheduleEffect, AtInTheFutureIsATimer) {
  const ScheduleEffect e = schedule_effect(ScheduleKind::at, 5000, Micros{8000}, 1000);
  EXPECT_FALSE(e.keep_claim);
  EXPECT_FALSE(e.claimed_at.has_value());
  EXPECT_EQ(e.wake_at, Micros{8000});
  EXPECT_FALSE(e.due_now);
}

TEST(ScheduleEffect, AtNowOrInThePastIsDueAtOnce) {
  const ScheduleEffect past = schedule_effect(ScheduleKind::at, 5000, Micros{10}, 1000);
  ASSERT_TRUE(past.wake_at.has_value());
  EXPECT_LE(*past.wake_at, 5000);
  EXPECT_TRUE(past.due_now);
  const ScheduleEffect same = schedule_effect(ScheduleKind::at, 5000, Micros{5000}, 1000);
  EXPECT_TRUE(same.due_now);
}

TEST(ScheduleEffect, ExternalAndTerminalReleaseWithoutWake) {
  for (ScheduleKind k : {ScheduleKind::external, ScheduleKind::terminal}) {
    const ScheduleEffect e = schedule_effect(k, 5000, std::nullopt, 1000);
    EXPECT_FALSE(e.keep_claim);
    EXPECT_FALSE(e.claimed_at.has_value());
    EXPECT_FALSE(e.wake_at.has_value());
    EXPECT_FALSE(e.due_now);
  }
}

TEST(RefreshedClaimedAt, OnlyForward) {
  EXPECT_EQ(refreshed_claimed_at(100, 200), 200);
  EXPECT_EQ(refreshed_claimed_at(300, 200), 300);
  EXPECT_EQ(refreshed_claimed_at(200, 200), 200);
}

TEST(TokenText, IsCanonicalUuid) {
  Token t{};
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<unsigned char>(i * 17);
  EXPECT_EQ(token_text(t), "00112233-4455-6677-8899-aabbccddeeff");
}

}  // namespace
}  // namespace docket
