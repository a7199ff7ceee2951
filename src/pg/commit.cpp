// commit: the claim-fenced advance of a run, validated in the contract's order
// (proposal shape, lookup, fence, identity) and applied with its schedule.
#include "core/fence.hpp"
#include "pg/datum.hpp"
#include "pg/spi.hpp"
#include "pg/transition.hpp"

namespace docket::pg {

namespace {

Datum commit(FunctionCallInfo fcinfo) {
  const Scope scope = scope_arg(fcinfo, 0);

  CommitProposal proposal;
  proposal.has_run = !arg_is_null(fcinfo, 1);
  if (proposal.has_run) proposal.run = run_fields(PG_GETARG_DATUM(1));
  if (!arg_is_null(fcinfo, 2)) proposal.expected_checkpoint_seq = PG_GETARG_INT64(2);
  proposal.claim_token = optional_uuid_arg(fcinfo, 3);
  proposal.has_checkpoint_type = !arg_is_null(fcinfo, 4);
  proposal.schedule = optional_text_arg(fcinfo, 5);
  proposal.has_wake_at = !arg_is_null(fcinfo, 6);
  const ValidProposal valid = validate_commit_proposal(proposal);
  const std::optional<Micros> wake_at = optional_timestamp_arg(fcinfo, 6);

  spi_connect();
  const LockedRun stored = lock_run(scope, valid.run.id);
  check_fence(stored.run, *proposal.expected_checkpoint_seq, *proposal.claim_token);
  check_identity(stored.run, valid.run, Reason::invalid_commit);

  const Micros now = store_now();
  const ScheduleEffect effect =
      schedule_effect(valid.schedule, now, wake_at, stored.run.claimed_at);
  const Datum document = apply_transition(stored, PG_GETARG_DATUM(1), valid,
                                          enum_label(PG_GETARG_DATUM(4)), now, effect);
  spi_finish();
  PG_RETURN_DATUM(document);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_commit, docket::pg::commit)
