// commit: the claim-fenced advance of a run, validated in the contract's order
// (proposal shape, lookup, fence, identity) and applied with its schedule.
//
// A commit that applies is one write of the row whose match is the scope and
// the fence and identity facts (core CommitMatch): through the access methods
// (pg/run_write.hpp) where that is all an UPDATE would do, else one UPDATE
// statement with them as its WHERE clause. Only a commit that matched no row
// pays for a second look, which the core judges (check_commit_target).
#include <optional>

#include "core/fence.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/notify.hpp"
#include "pg/run_write.hpp"
#include "pg/spi.hpp"
#include "pg/transition.hpp"

namespace docket::pg {

namespace {

// The schedule effect comes in as parameters: $7 keeps the claim, whose time
// then only moves forward to $8 (refreshed_claimed_at, applied to the row's
// own value); any other schedule clears it. The columns set are those of
// apply_transition.
Statement commit_statement{
    "UPDATE docket.runs SET document = $2, status = $3, checkpoint_seq = $4,"
    " checkpoint_type = $5::docket.checkpoint_type, updated_at = $6,"
    " claim_token = CASE WHEN $7 THEN claim_token END,"
    " claimed_at = CASE WHEN $7 THEN greatest(claimed_at, $8) END, wake_at = $9,"
    " claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL"
    " WHERE run_id = $1 AND ($10 OR tenant_id IS NOT DISTINCT FROM $11)"
    " AND checkpoint_seq = $12 AND claim_token = $13 AND graph_id = $14 AND graph_hash = $15"
    " AND started_at = $16 RETURNING queue",
    16,
    {TEXTOID, JSONBOID, TEXTOID, INT8OID, TEXTOID, TIMESTAMPTZOID, BOOLOID, TIMESTAMPTZOID,
     TIMESTAMPTZOID, BOOLOID, TEXTOID, INT8OID, UUIDOID, TEXTOID, TEXTOID, TIMESTAMPTZOID},
    nullptr};

// Runs the fenced update; the document it stored (the caller's own, not read
// back: a copy of up to docket.max_document_bytes saved), or nullopt when no
// visible row matched. `token` is the uuid datum that match.claim_token was
// read from.
std::optional<Datum> fenced_update(const Scope& scope, const CommitMatch& match, Datum token,
                                   Datum document, const ValidProposal& proposal,
                                   const std::string& checkpoint_type, Micros now,
                                   const ScheduleEffect& effect) {
  const ScopeParams p = scope_params(scope);
  const Datum values[16] = {text_datum(match.run_id),
                            document,
                            text_datum(status_name(proposal.run.status)),
                            Int64GetDatum(proposal.run.checkpoint_seq),
                            text_datum(checkpoint_type),
                            TimestampTzGetDatum(now),
                            BoolGetDatum(effect.keep_claim),
                            TimestampTzGetDatum(effect.claimed_at.value_or(0)),
                            TimestampTzGetDatum(effect.wake_at.value_or(0)),
                            p.is_system,
                            p.tenant,
                            Int64GetDatum(match.checkpoint_seq),
                            token,
                            text_datum(match.graph_id),
                            text_datum(match.graph_hash),
                            TimestampTzGetDatum(match.started_at)};
  const char nulls[17] = {' ',
                          ' ',
                          ' ',
                          ' ',
                          ' ',
                          ' ',
                          ' ',
                          effect.claimed_at ? ' ' : 'n',
                          effect.wake_at ? ' ' : 'n',
                          ' ',
                          p.tenant_null,
                          ' ',
                          ' ',
                          ' ',
                          ' ',
                          ' ',
                          '\0'};
  if (spi_execute(commit_statement, values, nulls) == 0) return std::nullopt;
  bool isnull = false;
  if (effect.due_now) notify_due(text_value(spi_value(0, 1, &isnull)));
  return document;
}

// The same write as fenced_update's, through pg/run_write.hpp; notifies as
// fenced_update does when it applied.
RowWrite write_directly(const Scope& scope, const CommitMatch& match, Datum token, Datum document,
                        const ValidProposal& proposal, Datum checkpoint_type, Micros now,
                        const ScheduleEffect& effect) {
  const ScopeParams p = scope_params(scope);
  RunFence fence{};
  fence.run_id = text_datum(match.run_id);
  fence.any_tenant = DatumGetBool(p.is_system);
  fence.tenant_null = p.tenant_null == 'n';
  fence.tenant = p.tenant;
  fence.checkpoint_seq = match.checkpoint_seq;
  fence.claim_token = token;
  fence.graph_id = text_datum(match.graph_id);
  fence.graph_hash = text_datum(match.graph_hash);
  fence.started_at = match.started_at;
  RunCommitValues values{};
  values.document = document;
  values.status = text_datum(status_name(proposal.run.status));
  values.checkpoint_seq = proposal.run.checkpoint_seq;
  values.checkpoint_type = checkpoint_type;
  values.updated_at = now;
  values.keep_claim = effect.keep_claim;
  values.has_claimed_at = effect.claimed_at.has_value();
  values.claimed_at = effect.claimed_at.value_or(0);
  values.has_wake_at = effect.wake_at.has_value();
  values.wake_at = effect.wake_at.value_or(0);
  Datum queue = 0;
  const RowWrite written = write_commit(fence, values, &queue);
  if (written == RowWrite::applied && effect.due_now) notify_due(text_value(queue));
  return written;
}

Datum commit(FunctionCallInfo fcinfo) {
  const Scope scope = scope_arg(fcinfo, 0);

  CommitProposal proposal;
  proposal.has_run = !arg_is_null(fcinfo, 1);
  if (proposal.has_run) {
    check_jsonb_size(settings::SizeCap::document, "run", PG_GETARG_DATUM(1));
    proposal.run = run_fields(PG_GETARG_DATUM(1));
  }
  if (!arg_is_null(fcinfo, 2)) proposal.expected_checkpoint_seq = PG_GETARG_INT64(2);
  proposal.claim_token = optional_uuid_arg(fcinfo, 3);
  proposal.has_checkpoint_type = !arg_is_null(fcinfo, 4);
  proposal.schedule = optional_text_arg(fcinfo, 5);
  proposal.has_wake_at = !arg_is_null(fcinfo, 6);
  const ValidProposal valid = validate_commit_proposal(proposal);
  const std::optional<Micros> wake_at = optional_timestamp_arg(fcinfo, 6);
  const std::int64_t expected = *proposal.expected_checkpoint_seq;
  const Token& token = *proposal.claim_token;
  const std::string checkpoint_type = enum_label(PG_GETARG_DATUM(4));
  const Micros now = store_now();

  // Detoasted: it is the result too.
  const Datum run = PointerGetDatum(PG_GETARG_JSONB_P(1));

  const CommitMatch match = commit_match(valid, expected, token);
  const ScheduleEffect effect = schedule_effect(valid.schedule, now, wake_at, {});
  const Datum token_datum = PG_GETARG_DATUM(3);
  const RowWrite written =
      write_directly(scope, match, token_datum, run, valid, PG_GETARG_DATUM(4), now, effect);
  if (written == RowWrite::applied) PG_RETURN_DATUM(run);

  spi_connect();
  std::optional<Datum> document;
  if (written == RowWrite::use_statement)
    document = fenced_update(scope, match, token_datum, run, valid, checkpoint_type, now, effect);
  if (!document) {
    // Nothing matched: lock what the scope sees and raise its error. A run that
    // passes after all changed after the update looked; apply under the lock.
    const std::optional<LockedRun> locked = try_lock_run(scope, valid.run.id);
    check_commit_target(locked ? std::optional<StoredRun>(locked->run) : std::nullopt, valid,
                        expected, token);
    document =
        apply_transition(*locked, run, valid, checkpoint_type, now,
                         schedule_effect(valid.schedule, now, wake_at, locked->run.claimed_at));
  }
  spi_finish();
  PG_RETURN_DATUM(*document);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_commit, docket::pg::commit)
