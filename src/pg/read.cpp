// fetch_run and inspect_run: reading one run under a scope. Both return NULL
// for an unknown run and for a run the scope cannot see.
#include "pg/datum.hpp"
#include "pg/run_document.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

// The scope is part of the WHERE clause, so an out-of-scope row never leaves
// the statement; run_id = $1 is the primary key lookup.
Statement fetch_statement{"SELECT " DOCKET_RUN_DOCUMENT
                          " FROM docket.runs"
                          " WHERE run_id = $1 AND ($2 OR tenant_id IS NOT DISTINCT FROM $3)",
                          3,
                          {TEXTOID, BOOLOID, TEXTOID},
                          nullptr};

// Every key is always present (JSON null when unset); the claim token never is.
Statement inspect_statement{
    "SELECT jsonb_build_object('run', " DOCKET_RUN_DOCUMENT
    ", 'tenant_id', tenant_id,"
    " 'checkpoint_type', checkpoint_type, 'wake_at', wake_at, 'claimed_at', claimed_at,"
    " 'claim_attempts', claim_attempts, 'claim_abandons', claim_abandons,"
    " 'poisoned_at', poisoned_at, 'poison_reason', poison_reason)"
    " FROM docket.runs WHERE run_id = $1 AND ($2 OR tenant_id IS NOT DISTINCT FROM $3)",
    3,
    {TEXTOID, BOOLOID, TEXTOID},
    nullptr};

// Runs `statement` for (scope, run_id) and returns its one jsonb column, or
// SQL NULL when no visible row matched.
Datum read_one(FunctionCallInfo fcinfo, Statement& statement) {
  const Scope scope = scope_arg(fcinfo, 0);
  require(fcinfo, 1, "run_id");
  const ScopeParams params = scope_params(scope);
  const Datum values[3] = {PG_GETARG_DATUM(1), params.is_system, params.tenant};
  const char nulls[3] = {' ', ' ', params.tenant_null};

  spi_connect();
  Datum result = Datum(0);
  bool isnull = true;
  if (spi_execute(statement, values, nulls) == 1) {
    const Datum value = spi_value(0, 1, &isnull);
    if (!isnull) result = spi_transfer(value, false, -1);
  }
  spi_finish();
  if (isnull) PG_RETURN_NULL();
  PG_RETURN_DATUM(result);
}

Datum fetch_run(FunctionCallInfo fcinfo) {
  return read_one(fcinfo, fetch_statement);
}

Datum inspect_run(FunctionCallInfo fcinfo) {
  return read_one(fcinfo, inspect_statement);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_fetch_run, docket::pg::fetch_run)
DOCKET_FUNCTION(docket_inspect_run, docket::pg::inspect_run)
