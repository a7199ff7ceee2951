// insert_run: storing an initialized run, owned by a tenantless or tenant scope.
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/notify.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

Statement graph_saved{"SELECT 1 FROM docket.graphs WHERE graph_id = $1 AND graph_hash = $2",
                      2,
                      {TEXTOID, TEXTOID},
                      nullptr};

// Tenant identity comes from $2 (the owner scope), never from the document.
// The run's immutable head (what list_runs reads, and where the immutable
// columns are checked) is written from the same parameters by the same
// statement, so a run never exists without it; a taken id inserts neither.
Statement insert_statement{
    "WITH run AS (INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash,"
    " status, checkpoint_seq, checkpoint_type, started_at, updated_at, document, wake_at,"
    " claim_attempts, claim_abandons)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, 'run_initialized', $8, $9, $10, $11, 0, 0)"
    " ON CONFLICT (run_id) DO NOTHING RETURNING document),"
    " head AS (INSERT INTO docket.run_heads (run_id, tenant_id, queue, graph_id, graph_hash,"
    " started_at) SELECT $1, $2, $3, $4, $5, $8 FROM run)"
    " SELECT document FROM run",
    11,
    {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
     JSONBOID, TIMESTAMPTZOID},
    nullptr};

Datum insert_run(FunctionCallInfo fcinfo) {
  const Scope owner = owner_scope_arg(fcinfo, 0);
  require(fcinfo, 1, "run");
  check_jsonb_size(settings::SizeCap::document, "run", PG_GETARG_DATUM(1));
  require(fcinfo, 2, "checkpoint_type");
  const Micros wake_at = timestamp_arg(fcinfo, 3, "wake_at");
  const std::string queue = text_arg(fcinfo, 4, "queue");
  validate_queue(queue);

  const std::string checkpoint_type = enum_label(PG_GETARG_DATUM(2));
  if (checkpoint_type != "run_initialized")
    fail(Reason::invalid_run,
         "an inserted run's checkpoint_type must be run_initialized, not " + checkpoint_type);
  const RunDoc run = validate_run_fields(run_fields(PG_GETARG_DATUM(1)), Reason::invalid_run);
  validate_new_run_ids(run, Reason::invalid_run);
  const Micros now = store_now();

  const Datum graph[2] = {text_datum(run.graph_id), text_datum(run.graph_hash)};
  const ScopeParams scope = scope_params(owner);
  const Datum values[11] = {text_datum(run.id),
                            scope.tenant,
                            text_datum(queue),
                            graph[0],
                            graph[1],
                            text_datum(status_name(run.status)),
                            Int64GetDatum(run.checkpoint_seq),
                            TimestampTzGetDatum(run.started_at),
                            TimestampTzGetDatum(now),
                            PG_GETARG_DATUM(1),
                            TimestampTzGetDatum(wake_at)};
  const char nulls[12] = {' ', scope.tenant_null, ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ',
                          '\0'};

  spi_connect();
  if (spi_execute(graph_saved, graph, nullptr) == 0)
    fail(Reason::invalid_run, "run " + run.id + " references graph " + run.graph_id + " @ " +
                                  run.graph_hash + ", which is not saved");
  if (spi_execute(insert_statement, values, nulls) == 0)
    fail(Reason::duplicate_run, "run " + run.id + " already exists");
  bool isnull = false;
  const Datum document = spi_transfer(spi_value(0, 1, &isnull), false, -1);
  // A run that is claimable at once wakes a worker; a future wake is a timer.
  if (run.status == Status::running && wake_at <= now) notify_due(queue);
  spi_finish();
  PG_RETURN_DATUM(document);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_insert_run, docket::pg::insert_run)
