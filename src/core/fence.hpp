// Commit fencing: the token-and-sequence fence and the validation order of a
// claim-fenced commit, plus the schedule effect every transition applies.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "core/run.hpp"
#include "core/time.hpp"

namespace docket {

using Token = std::array<unsigned char, 16>;

// The stored facts a fence or identity check looks at.
struct StoredRun {
  std::string run_id;
  std::string graph_id;
  std::string graph_hash;
  Micros started_at = 0;
  std::int64_t checkpoint_seq = 0;
  Status status = Status::running;
  std::optional<Token> claim_token;
  std::optional<Micros> claimed_at;
  bool poisoned = false;
};

// A commit proposal as it arrives, before any judgement.
struct CommitProposal {
  bool has_run = false;
  RunFields run;
  std::optional<std::int64_t> expected_checkpoint_seq;
  std::optional<Token> claim_token;
  bool has_checkpoint_type = false;
  std::optional<std::string> schedule;
  bool has_wake_at = false;
};

struct ValidProposal {
  RunDoc run;
  ScheduleKind schedule = ScheduleKind::terminal;
};

// Step 1 of commit: shape, exact next sequence and schedule/status pair, all
// before any lookup. Raises invalid_commit.
ValidProposal validate_commit_proposal(const CommitProposal& proposal);

// Step 3: the stored sequence and token must both match. Raises stale_fence.
void check_fence(const StoredRun& stored, std::int64_t expected_checkpoint_seq,
                 const Token& claim_token);

// Step 4 (and mutate_run): graph_id, graph_hash and started_at never change.
// Raises `reason`.
void check_identity(const StoredRun& stored, const RunDoc& run, Reason reason);

// What a commit's fenced update matches the stored row on (besides the scope):
// exactly the facts steps 3 and 4 judge, so a row it matches passes them, and a
// commit that matched nothing is judged by check_commit_target.
struct CommitMatch {
  std::string run_id;
  std::int64_t checkpoint_seq = 0;  // the stored sequence, i.e. expected_checkpoint_seq
  Token claim_token{};
  std::string graph_id;
  std::string graph_hash;
  Micros started_at = 0;
};
CommitMatch commit_match(const ValidProposal& proposal, std::int64_t expected_checkpoint_seq,
                         const Token& claim_token);

// Steps 2 to 4 against the run as stored now (nullopt: no run with that id is
// visible in the scope): not_found, then stale_fence, then invalid_commit for
// identity. Returns normally only when the commit may apply.
void check_commit_target(const std::optional<StoredRun>& stored, const ValidProposal& proposal,
                         std::int64_t expected_checkpoint_seq, const Token& claim_token);

// The claim and wake columns after a transition with this schedule.
struct ScheduleEffect {
  bool keep_claim = false;           // retain_claim keeps the token
  std::optional<Micros> claimed_at;  // set only when the claim is kept
  std::optional<Micros> wake_at;
  bool due_now = false;  // the run became claimable at `now`
};

// `now` is the store's clock (docket.now()); a kept claim's time never moves
// backward.
ScheduleEffect schedule_effect(ScheduleKind schedule, Micros now, std::optional<Micros> wake_at,
                               std::optional<Micros> stored_claimed_at);

// A refreshed claim time: only ever forward, toward `now`.
Micros refreshed_claimed_at(Micros stored, Micros now) noexcept;

std::string token_text(const Token& token);

}  // namespace docket
