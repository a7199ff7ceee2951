// retry_poisoned_run: an operator's recovery of a poisoned, non-terminal run.
#include <stdexcept>
#include <string>

#include "core/poison.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/notify.hpp"
#include "pg/run_document.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

// The scope filter is part of the lookup: an out-of-scope row is never locked.
Statement lookup_statement{
    "SELECT status, poisoned_at IS NOT NULL, queue, " DOCKET_RUN_DOCUMENT
    " FROM docket.runs"
    " WHERE run_id = $1 AND ($2 OR tenant_id IS NOT DISTINCT FROM $3) FOR UPDATE",
    3,
    {TEXTOID, BOOLOID, TEXTOID},
    nullptr};

// Consumes neither a commit nor an event sequence: document, checkpoint_seq
// and updated_at stay as they are.
Statement recover_statement{
    "UPDATE docket.runs SET poisoned_at = NULL, poison_reason = NULL,"
    " claim_token = NULL, claimed_at = NULL, claim_attempts = 0, claim_abandons = 0,"
    " wake_at = $2"
    " WHERE run_id = $1",
    2,
    {TEXTOID, TIMESTAMPTZOID},
    nullptr};

Datum retry_poisoned_run(FunctionCallInfo fcinfo) {
  const Scope scope = scope_arg(fcinfo, 0);
  const std::string run_id = text_arg(fcinfo, 1, "run_id");
  const Micros now = now_arg(fcinfo, 2);
  const ScopeParams sp = scope_params(scope);

  spi_connect();
  const Datum lookup[3] = {PG_GETARG_DATUM(1), sp.is_system, sp.tenant};
  const char lookup_nulls[3] = {' ', ' ', sp.tenant_null};
  if (spi_execute(lookup_statement, lookup, lookup_nulls) != 1)
    fail(Reason::not_found, "run " + run_id + " does not exist or is not visible in this scope");
  bool isnull = false;
  const std::string status_text = text_value(spi_value(0, 1, &isnull));
  const bool poisoned = DatumGetBool(spi_value(0, 2, &isnull));
  const std::string queue = text_value(spi_value(0, 3, &isnull));
  const Datum document = spi_transfer(spi_value(0, 4, &isnull), false, -1);

  const std::optional<Status> status = parse_status(status_text);
  if (!status)  // the table's CHECK rules this out: corrupt state, not a caller error
    throw std::runtime_error("run " + run_id + " has unknown status " + status_text);
  if (decide_recovery(run_id, *status, poisoned) == Recovery::recover) {
    const Datum values[2] = {PG_GETARG_DATUM(1), TimestampTzGetDatum(now)};
    spi_execute(recover_statement, values, nullptr);
    notify_due(queue);  // due at now
  }
  spi_finish();
  return document;
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_retry_poisoned_run, docket::pg::retry_poisoned_run)
