// The event log of a run: append_events and list_events.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_number.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

// The run under the scope, locked so concurrent appenders take turns, with
// its event counter advanced past the $4 new events (the counter every
// writer of the log advances, task transitions included: history.hpp).
// Returns the last number before them.
Statement advance_run{
    "UPDATE docket.runs SET event_seq = event_seq + $4"
    " WHERE run_id = $1 AND ($2 OR tenant_id IS NOT DISTINCT FROM $3) RETURNING event_seq - $4",
    4,
    {TEXTOID, BOOLOID, TEXTOID, INT8OID},
    nullptr};

// The elements were checked before: seq is an integral number, type a
// non-empty string; payload is stored as given (JSON null included).
Statement insert_events{
    "INSERT INTO docket.run_events (run_id, seq, type, payload, recorded_at)"
    " SELECT $1, (e.value -> 'seq')::numeric::bigint, e.value ->> 'type', e.value -> 'payload', $3"
    " FROM jsonb_array_elements($2) AS e (value)",
    3,
    {TEXTOID, JSONBOID, TIMESTAMPTZOID},
    nullptr};

// The log's rows, merged by number with the events a task's run row states
// instead of the log (sql/upgrade/0.3.0/86_history_implied.sql): its
// spawned event, at its started_at, number 1 of a task run whose counter the
// spawn set to 1 and which no log row numbers 1 (a run the run store inserted
// starts at 0, and its own first append is logged as 1); each stored step's
// step_completed event, at task_steps.seq and completed_at; its completed
// event, at completed_seq and completed_at; and its latest claim's claimed
// event, at claimed_seq and claim_started_at, with claimed_attempt (the next
// lease logs it: src/pg/claim.cpp). No rows when the run is
// not visible: the scope check is a one-time EXISTS on the run's primary key
// (a join would compare runs.run_id in the log's collation, "C", for which
// runs has no index: sql/plans_read.sql). The log's part is cut at the page
// size in its own index order, so a page never sorts more than that plus two.
Statement list_statement{
    "SELECT x.seq, x.type, x.payload, x.recorded_at FROM ("
    "(SELECT e.seq, e.type, e.payload, e.recorded_at FROM docket.run_events e"
    " WHERE e.run_id = $1 AND e.seq > $4 ORDER BY e.seq LIMIT $5)"
    " UNION ALL SELECT 1::bigint, 'spawned', '{}'::jsonb, r.started_at FROM docket.runs r"
    " WHERE r.run_id = $1 AND $4 < 1 AND r.graph_hash = 'task' AND r.event_seq >= 1"
    " AND NOT EXISTS (SELECT 1 FROM docket.run_events s WHERE s.run_id = $1 AND s.seq = 1)"
    " UNION ALL (SELECT s.seq, 'step_completed', jsonb_build_object('step_name', s.step_name),"
    " s.completed_at FROM docket.task_steps s WHERE s.run_id = $1 AND s.seq > $4"
    " ORDER BY s.seq LIMIT $5)"
    " UNION ALL SELECT r.completed_seq, 'completed', '{}'::jsonb, r.completed_at"
    " FROM docket.runs r WHERE r.run_id = $1 AND r.completed_seq > $4"
    " UNION ALL SELECT r.claimed_seq, 'claimed', jsonb_build_object('attempt', r.claimed_attempt),"
    " r.claim_started_at FROM docket.runs r WHERE r.run_id = $1 AND r.claimed_seq > $4) AS x"
    " WHERE EXISTS (SELECT 1 FROM docket.runs r"
    " WHERE r.run_id = $1 AND ($2 OR r.tenant_id IS NOT DISTINCT FROM $3))"
    " ORDER BY x.seq LIMIT $5",
    5,
    {TEXTOID, BOOLOID, TEXTOID, INT8OID, INT4OID},
    nullptr};

constexpr int kMaxPageLimit = 10000;

// One top-level element of the events array, in plain fields.
struct Element {
  bool is_object;
  int keys;
  enum jbvType seq_type;  // jbvNull also when missing
  bool has_seq;
  const char* seq_text;  // numeric_out of a numeric seq
  enum jbvType type_type;
  bool has_type;
  int type_length;
  bool has_payload;
};

Element inspect_element(const JsonbValue& value) {
  return call([&] {
    Element out{false, 0, jbvNull, false, nullptr, jbvNull, false, 0, false};
    if (value.type != jbvBinary || !JsonContainerIsObject(value.val.binary.data)) return out;
    JsonbContainer* object = value.val.binary.data;
    out.is_object = true;
    out.keys = static_cast<int>(JsonContainerSize(object));
    if (JsonbValue* seq = getKeyJsonValueFromContainer(object, "seq", 3, nullptr)) {
      out.has_seq = true;
      out.seq_type = seq->type;
      if (seq->type == jbvNumeric)
        out.seq_text =
            DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(seq->val.numeric)));
    }
    if (JsonbValue* type = getKeyJsonValueFromContainer(object, "type", 4, nullptr)) {
      out.has_type = true;
      out.type_type = type->type;
      if (type->type == jbvString) out.type_length = type->val.string.len;
    }
    out.has_payload = getKeyJsonValueFromContainer(object, "payload", 7, nullptr) != nullptr;
    return out;
  });
}

// Checks the shape of the events array and returns its seqs in order.
std::vector<std::int64_t> event_seqs(Datum events) {
  Jsonb* jsonb = call([&] { return DatumGetJsonbP(events); });
  if (!JB_ROOT_IS_ARRAY(jsonb) || JB_ROOT_IS_SCALAR(jsonb))
    fail(Reason::bad_argument, "events must be a JSON array");
  JsonbIterator* iterator = call([&] { return JsonbIteratorInit(&jsonb->root); });
  std::vector<std::int64_t> seqs;
  for (;;) {
    JsonbValue value;
    const JsonbIteratorToken token =
        call([&] { return JsonbIteratorNext(&iterator, &value, true); });
    if (token == WJB_DONE) break;
    if (token != WJB_ELEM) continue;
    const std::string where = "events[" + std::to_string(seqs.size()) + "]";
    const Element e = inspect_element(value);
    if (!e.is_object) fail(Reason::bad_argument, where + " must be a JSON object");
    if (!e.has_seq || !e.has_type || !e.has_payload)
      fail(Reason::bad_argument, where + " must have the keys seq, type and payload");
    if (e.keys != 3)
      fail(Reason::bad_argument, where + " must have only the keys seq, type and payload");
    const std::optional<std::int64_t> seq =
        e.seq_type == jbvNumeric ? parse_json_integer(e.seq_text) : std::nullopt;
    if (!seq || *seq < 1) fail(Reason::bad_argument, where + ".seq must be an integer >= 1");
    if (e.type_type != jbvString || e.type_length == 0)
      fail(Reason::bad_argument, where + ".type must be a non-empty string");
    seqs.push_back(*seq);
  }
  return seqs;
}

ScopeParams run_params(FunctionCallInfo fcinfo, Datum values[3], char nulls[3]) {
  const Scope scope = scope_arg(fcinfo, 0);
  require(fcinfo, 1, "run_id");
  const ScopeParams params = scope_params(scope);
  values[0] = PG_GETARG_DATUM(1);
  values[1] = params.is_system;
  values[2] = params.tenant;
  nulls[0] = ' ';
  nulls[1] = ' ';
  nulls[2] = params.tenant_null;
  return params;
}

Datum append_events(FunctionCallInfo fcinfo) {
  Datum lookup[4];
  char lookup_nulls[5] = {' ', ' ', ' ', ' ', '\0'};
  run_params(fcinfo, lookup, lookup_nulls);
  require(fcinfo, 2, "events");
  check_jsonb_size(settings::SizeCap::payload, "events", PG_GETARG_DATUM(2));
  const std::vector<std::int64_t> seqs = event_seqs(PG_GETARG_DATUM(2));
  if (seqs.empty()) PG_RETURN_VOID();
  const std::string run_id = text_value(PG_GETARG_DATUM(1));
  const Micros now = store_now();

  spi_connect();
  lookup[3] = Int64GetDatum(static_cast<std::int64_t>(seqs.size()));
  lookup_nulls[3] = ' ';
  if (spi_execute(advance_run, lookup, lookup_nulls) == 0)
    fail(Reason::not_found, "run " + run_id + " is not visible in this scope");
  bool isnull = false;
  const std::int64_t last = DatumGetInt64(spi_value(0, 1, &isnull));
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const std::int64_t expected = last + 1 + static_cast<std::int64_t>(i);
    if (seqs[i] != expected)
      fail(Reason::bad_argument, "events[" + std::to_string(i) + "].seq is " +
                                     std::to_string(seqs[i]) + ", expected " +
                                     std::to_string(expected) + " (run " + run_id +
                                     " has events up to " + std::to_string(last) + ")");
  }
  const Datum values[3] = {PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), TimestampTzGetDatum(now)};
  spi_execute(insert_events, values, nullptr);
  spi_finish();
  PG_RETURN_VOID();
}

Datum list_events(FunctionCallInfo fcinfo) {
  Datum values[5];
  char nulls[5];
  run_params(fcinfo, values, nulls);
  const std::int64_t after_seq = int64_arg(fcinfo, 2, "after_seq");
  const int page_limit = int32_arg(fcinfo, 3, "page_limit");
  if (after_seq < 0) fail(Reason::bad_argument, "after_seq must be >= 0");
  if (page_limit < 1 || page_limit > kMaxPageLimit)
    fail(Reason::bad_argument, "page_limit must be between 1 and " + std::to_string(kMaxPageLimit));
  values[3] = Int64GetDatum(after_seq);
  values[4] = Int32GetDatum(page_limit);
  nulls[3] = ' ';
  nulls[4] = ' ';

  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  spi_connect();
  const std::uint64_t rows = spi_execute(list_statement, values, nulls);
  // tuplestore_putvalues copies each row into the tuplestore's own memory.
  for (std::uint64_t row = 0; row < rows; ++row) {
    Datum out[4];
    bool out_nulls[4];
    for (int column = 0; column < 4; ++column)
      out[column] = spi_value(row, column + 1, &out_nulls[column]);
    call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, out_nulls); });
  }
  spi_finish();
  return Datum(0);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_append_events, docket::pg::append_events)
DOCKET_FUNCTION(docket_list_events, docket::pg::list_events)
