// save_graph: publishing a graph version, idempotent per (graph_id, graph_hash).
#include "core/run.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

Statement insert_graph{
    "INSERT INTO docket.graphs (graph_id, graph_hash, definition, saved_at)"
    " VALUES ($1, $2, $3, $4) ON CONFLICT (graph_id, graph_hash) DO NOTHING RETURNING 1",
    4,
    {TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID},
    nullptr};

// A separate statement after the insert: it takes a fresh snapshot, so it sees
// a row a concurrent publisher committed while the insert waited on it.
Statement same_definition{
    "SELECT definition = $3 FROM docket.graphs WHERE graph_id = $1 AND graph_hash = $2",
    3,
    {TEXTOID, TEXTOID, JSONBOID},
    nullptr};

Datum save_graph(FunctionCallInfo fcinfo) {
  const std::string graph_id = text_arg(fcinfo, 0, "graph_id");
  const std::string graph_hash = text_arg(fcinfo, 1, "graph_hash");
  require(fcinfo, 2, "definition");
  check_jsonb_size(settings::SizeCap::document, "definition", PG_GETARG_DATUM(2));
  if (graph_id.empty()) fail(Reason::bad_argument, "graph_id must not be empty");
  if (graph_hash.empty()) fail(Reason::bad_argument, "graph_hash must not be empty");
  validate_id_bytes("graph_id", graph_id, Reason::bad_argument);
  validate_id_bytes("graph_hash", graph_hash, Reason::bad_argument);
  const Datum values[4] = {PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2),
                           TimestampTzGetDatum(store_now())};
  spi_connect();
  if (spi_execute(insert_graph, values, nullptr) == 0) {
    bool same = false;
    if (spi_execute(same_definition, values, nullptr) == 1) {
      bool isnull = false;
      same = DatumGetBool(spi_value(0, 1, &isnull)) && !isnull;
    }
    if (!same)
      fail(Reason::graph_conflict,
           "graph " + graph_id + " @ " + graph_hash + " is already saved with another definition");
  }
  spi_finish();
  PG_RETURN_VOID();
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_save_graph, docket::pg::save_graph)
