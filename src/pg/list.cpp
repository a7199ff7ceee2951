// list_runs: one page of run summaries, newest first by (started_at, run_id),
// after an exclusive keyset cursor.
//
// Scope and filters must be index conditions, and `tenant_id IS NOT DISTINCT
// FROM $x` is not indexable, so there is one statement per shape (scope kind x
// which filters x cursor or not). Each is assembled from the constant
// fragments below (never from argument text), prepared on first use and kept.
// sql/plans_read.sql pins the plan of every shape.
#include <optional>
#include <string>
#include <vector>

#include "pg/datum.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

constexpr int kMaxPageLimit = 10000;

// The parameters every shape is prepared with; a shape ignores what it does
// not filter by.
enum Param {
  p_limit,       // $1 int
  p_tenant,      // $2 text
  p_before_at,   // $3 timestamptz
  p_before_id,   // $4 text
  p_graph_id,    // $5 text
  p_graph_hash,  // $6 text
  p_statuses,    // $7 text[]
  p_count
};

struct Shape {
  Scope::Kind scope;
  bool graph_id;
  bool graph_hash;
  bool statuses;
  bool cursor;

  int key() const {
    return (((static_cast<int>(scope) * 2 + graph_id) * 2 + graph_hash) * 2 + statuses) * 2 +
           cursor;
  }
};

constexpr int kShapes = 3 * 2 * 2 * 2 * 2;

// The newest page + 1 rows of one shape: a walk of one docket.run_heads index
// in page order, with scope and graph filters as its index conditions, each
// head joined to its run by primary key for the columns that change. A status
// filter is checked on that joined row: a status index on docket.runs would
// cost every claim and commit an insertion (see docs/run-store.md, Listing).
// The extra row only tells has_more.
std::string rows_sql(const Shape& shape) {
  std::vector<const char*> conditions;
  if (shape.scope == Scope::Kind::tenantless) conditions.push_back("h.tenant_id IS NULL");
  if (shape.scope == Scope::Kind::tenant) conditions.push_back("h.tenant_id = $2");
  if (shape.graph_id) conditions.push_back("h.graph_id = $5");
  if (shape.graph_hash) conditions.push_back("h.graph_hash = $6");
  if (shape.cursor) conditions.push_back("(h.started_at, h.run_id) < ($3, $4)");
  if (shape.statuses) conditions.push_back("r.status = ANY($7)");

  std::string scan =
      "SELECT h.run_id, h.tenant_id, h.graph_id, h.graph_hash, r.status, r.checkpoint_seq,"
      " h.started_at, r.updated_at FROM docket.run_heads h"
      " JOIN docket.runs r ON r.run_id = h.run_id";
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    scan += i == 0 ? " WHERE " : " AND ";
    scan += conditions[i];
  }
  scan += " ORDER BY h.started_at DESC, h.run_id DESC LIMIT $1 + 1";
  return scan;
}

// The page document around the rows of a shape.
std::string page_sql(const Shape& shape) {
  const char* empty_cursor =
      shape.cursor ? "jsonb_build_object('started_at', $3, 'run_id', $4)" : "'null'::jsonb";
  return std::string(
             "SELECT jsonb_build_object('entries', page.entries, 'next_before',"
             " CASE WHEN page.total = 0 THEN ") +
         empty_cursor +
         " ELSE jsonb_build_object('started_at', page.entries -> -1 -> 'started_at',"
         " 'run_id', page.entries -> -1 -> 'run_id') END,"
         " 'has_more', page.total > $1)"
         " FROM (SELECT coalesce(jsonb_agg(jsonb_build_object('run_id', p.run_id,"
         " 'tenant_id', p.tenant_id, 'graph_id', p.graph_id, 'graph_hash', p.graph_hash,"
         " 'status', p.status, 'checkpoint_seq', p.checkpoint_seq, 'started_at', p.started_at,"
         " 'updated_at', p.updated_at) ORDER BY p.n) FILTER (WHERE p.n <= $1), '[]') AS entries,"
         " count(*) AS total"
         " FROM (SELECT row_number() OVER (ORDER BY started_at DESC, run_id DESC) AS n, found.*"
         " FROM (" +
         rows_sql(shape) + ") AS found) AS p) AS page";
}

// Per backend: the statement of each shape and the text it was prepared from.
Statement statements[kShapes];
std::string texts[kShapes];

Statement& statement_for(const Shape& shape) {
  const int key = shape.key();
  Statement& statement = statements[key];
  if (statement.sql == nullptr) {
    texts[key] = page_sql(shape);
    statement =
        Statement{texts[key].c_str(),
                  p_count,
                  {INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID},
                  nullptr};
  }
  return statement;
}

// The array's elements, or an error for a malformed one.
struct Elements {
  Datum* values;
  bool* nulls;
  int count;
  int dimensions;
};

void validate_statuses(Datum array) {
  const Elements elements = call([&] {
    ArrayType* a = DatumGetArrayTypeP(array);
    Elements out{nullptr, nullptr, 0, ARR_NDIM(a)};
    deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &out.values, &out.nulls, &out.count);
    return out;
  });
  if (elements.count == 0) fail(Reason::bad_argument, "statuses must not be empty");
  if (elements.dimensions != 1)
    fail(Reason::bad_argument, "statuses must be a one-dimensional array");
  for (int i = 0; i < elements.count; ++i) {
    const std::string where = "statuses[" + std::to_string(i + 1) + "]";
    if (elements.nulls[i]) fail(Reason::bad_argument, where + " must not be NULL");
    const std::string status = text_value(elements.values[i]);
    if (!parse_status(status)) {
      std::string detail = where;
      detail += " \"";
      detail += status;
      detail += "\" is not a durable status (running, waiting, completed, failed, cancelled)";
      fail(Reason::bad_argument, detail);
    }
  }
}

Datum list_runs(FunctionCallInfo fcinfo) {
  const Scope scope = scope_arg(fcinfo, 0);
  const int page_limit = int32_arg(fcinfo, 1, "page_limit");
  if (page_limit < 1 || page_limit > kMaxPageLimit)
    fail(Reason::bad_argument, "page_limit must be between 1 and " + std::to_string(kMaxPageLimit));
  const bool has_before_at = !arg_is_null(fcinfo, 2);
  const bool has_before_id = !arg_is_null(fcinfo, 3);
  if (has_before_at != has_before_id)
    fail(Reason::bad_argument,
         "before_started_at and before_run_id must be given together or not at all");
  if (has_before_at) optional_timestamp_arg(fcinfo, 2);  // finite
  const std::optional<std::string> graph_id = optional_text_arg(fcinfo, 4);
  const std::optional<std::string> graph_hash = optional_text_arg(fcinfo, 5);
  if (graph_id && graph_id->empty()) fail(Reason::bad_argument, "graph_id must not be empty");
  if (graph_hash && graph_hash->empty()) fail(Reason::bad_argument, "graph_hash must not be empty");
  const bool has_statuses = !arg_is_null(fcinfo, 6);
  if (has_statuses) validate_statuses(PG_GETARG_DATUM(6));

  const Shape shape{scope.kind, graph_id.has_value(), graph_hash.has_value(), has_statuses,
                    has_before_at};
  const ScopeParams params = scope_params(scope);
  Datum values[p_count] = {Int32GetDatum(page_limit), params.tenant};
  char nulls[p_count + 1] = {' ', params.tenant_null, 'n', 'n', 'n', 'n', 'n', '\0'};
  for (int arg = 2; arg <= 6; ++arg) {
    if (arg_is_null(fcinfo, arg)) continue;
    values[arg] = PG_GETARG_DATUM(arg);  // argument i is parameter $(i + 1)
    nulls[arg] = ' ';
  }

  Statement& statement = statement_for(shape);
  spi_connect();
  spi_prepare_generic(statement);  // plans_*.sql pins its generic plan
  spi_execute(statement, values, nulls);
  bool isnull = false;
  const Datum page = spi_transfer(spi_value(0, 1, &isnull), false, -1);
  spi_finish();
  PG_RETURN_DATUM(page);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_list_runs, docket::pg::list_runs)
