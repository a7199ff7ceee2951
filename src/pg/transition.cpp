#include "pg/transition.hpp"

#include <stdexcept>
#include <utility>

#include "pg/datum.hpp"
#include "pg/notify.hpp"
#include "pg/run_document.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

// The scope filter sits in the WHERE clause, so an invisible row is never locked.
Statement lock_statement{
    "SELECT run_id, graph_id, graph_hash, started_at, checkpoint_seq, status, claim_token,"
    " claimed_at, poisoned_at IS NOT NULL, queue, " DOCKET_RUN_DOCUMENT
    ", ctid::text"
    " FROM docket.runs"
    " WHERE run_id = $1 AND ($2 OR tenant_id IS NOT DISTINCT FROM $3) FOR UPDATE",
    3,
    {TEXTOID, BOOLOID, TEXTOID},
    nullptr};

// The run's current row version (no row: deleted).
Statement version_statement{
    "SELECT ctid::text FROM docket.runs WHERE run_id = $1", 1, {TEXTOID}, nullptr};

Statement update_statement{
    "UPDATE docket.runs SET document = $2, status = $3, checkpoint_seq = $4,"
    " checkpoint_type = $5::docket.checkpoint_type, updated_at = $6,"
    " claim_token = CASE WHEN $7 THEN claim_token END, claimed_at = $8, wake_at = $9,"
    " claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL"
    " WHERE run_id = $1 RETURNING document",
    9,
    {TEXTOID, JSONBOID, TEXTOID, INT8OID, TEXTOID, TIMESTAMPTZOID, BOOLOID, TIMESTAMPTZOID,
     TIMESTAMPTZOID},
    nullptr};

std::string text_column(int column) {
  bool isnull = false;
  const Datum value = spi_value(0, column, &isnull);
  return isnull ? std::string() : text_value(value);
}

}  // namespace

std::optional<LockedRun> try_lock_run(const Scope& scope, const std::string& run_id) {
  const ScopeParams p = scope_params(scope);
  const Datum values[3] = {text_datum(run_id), p.is_system, p.tenant};
  const char nulls[4] = {' ', ' ', p.tenant_null, '\0'};
  if (spi_execute(lock_statement, values, nulls) == 0) return std::nullopt;

  LockedRun out;
  bool isnull = false;
  out.run.run_id = text_column(1);
  out.run.graph_id = text_column(2);
  out.run.graph_hash = text_column(3);
  out.run.started_at = DatumGetTimestampTz(spi_value(0, 4, &isnull));
  out.run.checkpoint_seq = DatumGetInt64(spi_value(0, 5, &isnull));
  const std::optional<Status> status = parse_status(text_column(6));
  if (!status) throw std::runtime_error("run " + run_id + " has a stored status it cannot read");
  out.run.status = *status;
  const Datum token = spi_value(0, 7, &isnull);
  if (!isnull) out.run.claim_token = token_value(token);
  const Datum claimed_at = spi_value(0, 8, &isnull);
  if (!isnull) out.run.claimed_at = DatumGetTimestampTz(claimed_at);
  out.run.poisoned = DatumGetBool(spi_value(0, 9, &isnull));
  out.queue = text_column(10);
  out.document = spi_value(0, 11, &isnull);
  out.version = text_column(12);
  return out;
}

void require_unchanged(const LockedRun& locked) {
  const Datum run_id = text_datum(locked.run.run_id);
  const bool gone = spi_execute(version_statement, &run_id, nullptr) == 0;
  if (gone || text_column(1) != locked.version)
    fail(Reason::invalid_mutation,
         "the mutation function " + std::string(gone ? "deleted" : "wrote") + " run " +
             locked.run.run_id +
             " while mutate_run held it; a mutation function must only return a decision");
}

LockedRun lock_run(const Scope& scope, const std::string& run_id) {
  std::optional<LockedRun> locked = try_lock_run(scope, run_id);
  if (!locked)
    fail(Reason::not_found, "run " + run_id + " does not exist or is not visible in this scope");
  return std::move(*locked);
}

Datum apply_transition(const LockedRun& locked, Datum document, const ValidProposal& proposal,
                       const std::string& checkpoint_type, Micros now,
                       const ScheduleEffect& effect) {
  const Datum values[9] = {text_datum(locked.run.run_id),
                           document,
                           text_datum(status_name(proposal.run.status)),
                           Int64GetDatum(proposal.run.checkpoint_seq),
                           text_datum(checkpoint_type),
                           TimestampTzGetDatum(now),
                           BoolGetDatum(effect.keep_claim),
                           TimestampTzGetDatum(effect.claimed_at.value_or(0)),
                           TimestampTzGetDatum(effect.wake_at.value_or(0))};
  const char nulls[10] = {
      ' ', ' ', ' ', ' ', ' ', ' ', ' ', effect.claimed_at ? ' ' : 'n', effect.wake_at ? ' ' : 'n',
      '\0'};
  if (spi_execute(update_statement, values, nulls) != 1)
    throw std::logic_error("apply_transition: the locked run " + locked.run.run_id +
                           " was not updated");
  bool isnull = false;
  const Datum stored = spi_transfer(spi_value(0, 1, &isnull), false, -1);
  if (effect.due_now) notify_due(locked.queue);
  return stored;
}

}  // namespace docket::pg
