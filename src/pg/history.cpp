// A task's history: appending the events of task transitions to docket.run_events.
#include "pg/history.hpp"

#include <memory>

#include "core/limits.hpp"
#include "pg/datum.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"

namespace docket::pg {

namespace {

Statement insert_statement{
    "INSERT INTO docket.run_events (run_id, seq, type, payload, recorded_at)"
    " SELECT e.run_id, e.seq, e.type, e.payload, coalesce(e.at, $5)"
    " FROM unnest($1::text[], $2::int8[], $3::text[], $4::jsonb[], $6::timestamptz[])"
    " AS e (run_id, seq, type, payload, at)",
    6,
    {TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID, JSONBARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID},
    nullptr};

Statement advance_statement{
    "UPDATE docket.runs SET event_seq = event_seq + 1 WHERE run_id = $1 RETURNING event_seq",
    1,
    {TEXTOID},
    nullptr};

}  // namespace

void record_task_event(Datum run_id, const TaskEvent& event, Micros now) {
  if (spi_execute(advance_statement, &run_id, nullptr) != 1) return;
  bool isnull = false;
  append_history(run_id, DatumGetInt64(spi_value(0, 1, &isnull)), {event}, now);
}

std::string json_timestamp(Micros t) {
  char buf[MAXDATELEN + 1];
  const char* text = call(
      [&] { return JsonEncodeDateTime(buf, TimestampTzGetDatum(t), TIMESTAMPTZOID, nullptr); });
  return json_string(text);
}

void append_history(const std::vector<HistoryEvent>& events, Micros now) {
  if (events.empty()) return;
  const int n = static_cast<int>(events.size());
  std::vector<Datum> ids(n), seqs(n), types(n), payloads(n), at(n);
  std::unique_ptr<bool[]> at_null(new bool[n]);
  for (int i = 0; i < n; ++i) {
    ids[i] = events[i].run_id;
    seqs[i] = Int64GetDatum(events[i].seq);
    types[i] = text_datum(events[i].type);
    payloads[i] = events[i].payload;
    at_null[i] = !events[i].recorded_at.has_value();
    at[i] = TimestampTzGetDatum(events[i].recorded_at.value_or(0));
  }
  const bool* no_nulls = nullptr;
  const Datum values[6] = {make_array(ids.data(), no_nulls, n, TEXTOID),
                           make_array(seqs.data(), no_nulls, n, INT8OID),
                           make_array(types.data(), no_nulls, n, TEXTOID),
                           make_array(payloads.data(), no_nulls, n, JSONBOID),
                           TimestampTzGetDatum(now),
                           make_array(at.data(), at_null.get(), n, TIMESTAMPTZOID)};
  spi_prepare_generic(insert_statement);
  spi_execute(insert_statement, values, nullptr);
}

void append_history(Datum run_id, std::int64_t last_seq, const std::vector<TaskEvent>& events,
                    Micros now) {
  std::vector<HistoryEvent> numbered;
  numbered.reserve(events.size());
  std::int64_t seq = last_seq - static_cast<std::int64_t>(events.size());
  for (const TaskEvent& e : events) numbered.push_back({run_id, ++seq, e.type, e.payload});
  append_history(numbered, now);
}

std::string history_error(const std::string& error_json) {
  if (error_json.size() <= kMaxHistoryErrorBytes) return error_json;
  // Cut at a character boundary: never inside a UTF-8 sequence.
  std::size_t cut = kMaxHistoryErrorBytes;
  while (cut > 0 && (static_cast<unsigned char>(error_json[cut]) & 0xC0) == 0x80) --cut;
  return "{\"truncated\": true, \"bytes\": " + std::to_string(error_json.size()) +
         ", \"prefix\": " + json_string(error_json.substr(0, cut)) + "}";
}

}  // namespace docket::pg
