#include "core/fence.hpp"

#include <algorithm>

namespace docket {

ValidProposal validate_commit_proposal(const CommitProposal& p) {
  constexpr Reason r = Reason::invalid_commit;
  if (!p.claim_token) fail(r, "claim_token must not be NULL");
  if (!p.expected_checkpoint_seq) fail(r, "expected_checkpoint_seq must not be NULL");
  if (*p.expected_checkpoint_seq < 0) fail(r, "expected_checkpoint_seq must be >= 0");
  if (!p.has_run) fail(r, "run must not be NULL");
  ValidProposal out;
  out.run = validate_run_fields(p.run, r);
  if (*p.expected_checkpoint_seq == INT64_MAX ||
      out.run.checkpoint_seq != *p.expected_checkpoint_seq + 1)
    fail(r, "run " + out.run.id + " proposes checkpoint_seq " +
                std::to_string(out.run.checkpoint_seq) + ", expected exactly " +
                std::to_string(*p.expected_checkpoint_seq) + " + 1");
  if (!p.has_checkpoint_type) fail(r, "checkpoint_type must not be NULL");
  if (!p.schedule) fail(r, "schedule must not be NULL");
  const std::optional<ScheduleKind> schedule = parse_schedule(*p.schedule);
  if (!schedule)
    fail(r, "schedule \"" + *p.schedule +
                "\" is not one of retain_claim, immediate, at, external, terminal");
  out.schedule = *schedule;
  validate_schedule(out.schedule, out.run.status, p.has_wake_at, /*allow_retain=*/true, r);
  return out;
}

void check_fence(const StoredRun& stored, std::int64_t expected_checkpoint_seq,
                 const Token& claim_token) {
  if (stored.checkpoint_seq != expected_checkpoint_seq)
    fail(Reason::stale_fence, "run " + stored.run_id + " is at checkpoint_seq " +
                                  std::to_string(stored.checkpoint_seq) + ", not " +
                                  std::to_string(expected_checkpoint_seq));
  if (!stored.claim_token || *stored.claim_token != claim_token)
    // The token itself stays out of the message: it is the holder's authority.
    fail(Reason::stale_fence, "run " + stored.run_id + " is not held by this claim token");
}

void check_identity(const StoredRun& stored, const RunDoc& run, Reason reason) {
  if (run.graph_id != stored.graph_id)
    fail(reason, "run " + stored.run_id + " cannot change graph_id from \"" + stored.graph_id +
                     "\" to \"" + run.graph_id + "\"");
  if (run.graph_hash != stored.graph_hash)
    fail(reason, "run " + stored.run_id + " cannot change graph_hash from \"" + stored.graph_hash +
                     "\" to \"" + run.graph_hash + "\"");
  if (run.started_at != stored.started_at)
    fail(reason, "run " + stored.run_id + " cannot change started_at");
}

CommitMatch commit_match(const ValidProposal& proposal, std::int64_t expected_checkpoint_seq,
                         const Token& claim_token) {
  CommitMatch match;
  match.run_id = proposal.run.id;
  match.checkpoint_seq = expected_checkpoint_seq;
  match.claim_token = claim_token;
  match.graph_id = proposal.run.graph_id;
  match.graph_hash = proposal.run.graph_hash;
  match.started_at = proposal.run.started_at;
  return match;
}

void check_commit_target(const std::optional<StoredRun>& stored, const ValidProposal& proposal,
                         std::int64_t expected_checkpoint_seq, const Token& claim_token) {
  if (!stored)
    fail(Reason::not_found,
         "run " + proposal.run.id + " does not exist or is not visible in this scope");
  check_fence(*stored, expected_checkpoint_seq, claim_token);
  check_identity(*stored, proposal.run, Reason::invalid_commit);
}

ScheduleEffect schedule_effect(ScheduleKind schedule, Micros now, std::optional<Micros> wake_at,
                               std::optional<Micros> stored_claimed_at) {
  ScheduleEffect effect;
  switch (schedule) {
    case ScheduleKind::retain_claim:
      effect.keep_claim = true;
      effect.claimed_at = stored_claimed_at ? refreshed_claimed_at(*stored_claimed_at, now) : now;
      break;
    case ScheduleKind::immediate:
      effect.wake_at = now;
      effect.due_now = true;
      break;
    case ScheduleKind::at:
      effect.wake_at = wake_at;
      effect.due_now = wake_at && *wake_at <= now;
      break;
    case ScheduleKind::external:
    case ScheduleKind::terminal:
      break;
  }
  return effect;
}

Micros refreshed_claimed_at(Micros stored, Micros now) noexcept {
  return std::max(stored, now);
}

std::string token_text(const Token& token) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[token[i] >> 4]);
    out.push_back(kHex[token[i] & 0xF]);
  }
  return out;
}

}  // namespace docket
