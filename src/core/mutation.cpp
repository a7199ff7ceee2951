#include "core/mutation.hpp"

namespace docket {

MutationKind parse_mutation_kind(const MutationDecision& decision) {
  if (!decision.decision) fail(Reason::invalid_mutation, "the mutation returned no decision");
  if (*decision.decision == "commit") return MutationKind::commit;
  if (*decision.decision == "no_change") return MutationKind::no_change;
  if (*decision.decision == "error") return MutationKind::error;
  fail(Reason::invalid_mutation,
       "decision \"" + *decision.decision + "\" is not one of commit, no_change, error");
}

ValidProposal validate_mutation_commit(const MutationDecision& d, const StoredRun& current) {
  constexpr Reason r = Reason::invalid_mutation;
  if (!d.has_run) fail(r, "a commit decision needs a run");
  ValidProposal out;
  out.run = validate_run_fields(d.run, r);
  if (out.run.id != current.run_id)
    fail(r,
         "a commit decision for run " + current.run_id + " proposes run id \"" + out.run.id + "\"");
  if (current.checkpoint_seq == INT64_MAX || out.run.checkpoint_seq != current.checkpoint_seq + 1)
    fail(r, "run " + current.run_id + " proposes checkpoint_seq " +
                std::to_string(out.run.checkpoint_seq) + ", expected exactly " +
                std::to_string(current.checkpoint_seq) + " + 1");
  if (!d.has_checkpoint_type) fail(r, "a commit decision needs a checkpoint_type");
  if (!d.schedule) fail(r, "a commit decision needs a schedule");
  const std::optional<ScheduleKind> schedule = parse_schedule(*d.schedule);
  if (!schedule)
    fail(r, "schedule \"" + *d.schedule + "\" is not one of immediate, at, external, terminal");
  out.schedule = *schedule;
  validate_schedule(out.schedule, out.run.status, d.has_wake_at, /*allow_retain=*/false, r);
  check_identity(current, out.run, r);
  return out;
}

}  // namespace docket
