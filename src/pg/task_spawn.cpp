// spawn_task and spawn_tasks: a task is a run (graph_id = the task name,
// graph_hash 'task') plus its docket.tasks row and its head. Every element's
// options are checked by the core before anything is written; then one
// statement writes every task row (claiming idempotency keys), and one writes
// every new run and its head; a batch sharing one options object without a
// key writes the three tables with bulk_insert instead (COPY's way). No per-row foreign key check
// and no lock on the shared graph row: the guards that replace them are in
// sql/upgrade/0.3.0/30_spawn.sql.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/scope.hpp"
#include "core/spawn.hpp"
#include "core/limits.hpp"
#include "core/task.hpp"
#include "pg/bulk_insert.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/claim.hpp"
#include "pg/notify.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"

extern "C" {
#include "utils/datetime.h"
#include "utils/json.h"
#include "lib/stringinfo.h"
}

namespace docket::pg {

namespace {

Statement graph_lookup{"SELECT 1 FROM docket.graphs WHERE graph_id = $1 AND graph_hash = 'task'",
                       1,
                       {TEXTOID},
                       nullptr};
Statement graph_save{
    "SELECT docket.save_graph($1, 'task', '{\"kind\": \"task\"}')", 1, {TEXTOID}, nullptr};

// Every statement here reads its arrays with unnest in a select list, not in
// FROM: a function in FROM is run to the end into a tuplestore first (past
// work_mem, 4MB, a temporary file: a batch of 100,000 wrote one per array
// read), while a select list streams its rows; arrays of equal length go in
// step either way.
//
// The INSERT ... SELECT both statements below share, one docket.tasks row per
// element, and its parameters.
#define DOCKET_TASKS_INSERT                                                                     \
  "INSERT INTO docket.tasks AS t (run_id, tenant_key, queue, task_name, params, headers,"       \
  " max_attempts, retry, idempotency_key, cancel_at, max_duration_ms, created_at)"              \
  " SELECT u.id, $2, $3, $4, u.params, coalesce(u.options -> 'headers', '{}'), u.max_attempts," \
  " '{\"kind\": \"exponential\", \"base_ms\": 1000, \"factor\": 2, \"max_ms\": 300000,"         \
  " \"jitter\": 0}'::jsonb || (u.options -> 'retry'), u.key, u.cancel_at,"                      \
  " u.max_duration, $5"                                                                         \
  " FROM (SELECT unnest($1::text[]) AS id, unnest($6::jsonb[]) AS params,"                      \
  " unnest($7::jsonb[]) AS options, unnest($8::int4[]) AS max_attempts,"                        \
  " unnest($9::text[]) AS key, unnest($10::timestamptz[]) AS cancel_at,"                        \
  " unnest($11::int8[]) AS max_duration) AS u"
#define DOCKET_TASKS_INSERT_TYPES                                                          \
  {                                                                                        \
    TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, JSONBARRAYOID, JSONBARRAYOID, \
        INT4ARRAYOID, TEXTARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID                      \
  }

// $1 ids, $2 tenant key, $3 queue, $4 task name, $5 now, $6 params, $7 options
// (headers, retry), $8 max_attempts, $9 idempotency keys, $10 cancel_at,
// $11 max_duration_ms. The retry policy is the defaults completed by the
// element's retry option, or NULL (the defaults) without one: jsonb || NULL
// is NULL. Rows with a key come in key order, so concurrent spawns
// claim keys in one order and never deadlock on them. A taken key inserts
// nothing (DO NOTHING waits for an in-flight claim of it to end).
Statement tasks_insert{DOCKET_TASKS_INSERT
                       " ON CONFLICT (tenant_key, queue, idempotency_key)"
                       " WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING t.run_id",
                       11, DOCKET_TASKS_INSERT_TYPES, nullptr};

// The same for rows without a key: a plain INSERT (ON CONFLICT makes every
// row a speculative insertion, which costs about as much again).
Statement tasks_insert_unkeyed{DOCKET_TASKS_INSERT, 11, DOCKET_TASKS_INSERT_TYPES, nullptr};

#undef DOCKET_TASKS_INSERT
#undef DOCKET_TASKS_INSERT_TYPES

// The tasks that already hold some of the keys: $1 tenant key, $2 queue, $3 keys.
// One probe of tasks_idempotency per key and of runs_pkey per task found
// (pg/planning.hpp): as `idempotency_key = ANY($3)`, a plan made while tasks
// looked empty read every key of the queue as a filter.
Statement existing_lookup{
    "SELECT t.idempotency_key, t.run_id, r.attempt FROM unnest($3) AS k (key)"
    " CROSS JOIN LATERAL (SELECT t.idempotency_key, t.run_id FROM docket.tasks t"
    " WHERE t.tenant_key = $1 AND t.queue = $2 AND t.idempotency_key = k.key LIMIT 1) t"
    " CROSS JOIN LATERAL (SELECT (r.document ->> 'attempt')::int AS attempt FROM docket.runs r"
    " WHERE r.run_id = t.run_id LIMIT 1) r",
    3,
    {TEXTOID, TEXTOID, TEXTARRAYOID},
    nullptr};

// Every new run and its head, as insert_run writes them: $1 ids, $2 tenant
// (NULL: tenantless), $3 queue, $4 task name, $5 now, $6 wake times. Every
// new task's stored document is the same two keys: the rest of what its
// readers see is columns (src/pg/run_document.cpp).
// Each run's history starts with its spawned event, number 1, which the
// row states (event_seq 1 and started_at: src/pg/events.cpp) and no log row
// repeats.
#define DOCKET_RUNS_ROWS(ids, wake)                                                      \
  "INSERT INTO docket.runs (run_id, tenant_id, queue, graph_id, graph_hash,"             \
  " status, checkpoint_seq, checkpoint_type, started_at, updated_at, document, wake_at," \
  " claim_attempts, claim_abandons, event_seq)"                                          \
  " SELECT u.id, $2, $3, $4, 'task', 'running', 0, 'run_initialized', $5, $5,"           \
  " '{\"attempt\": 1, \"wake_reason\": \"new\"}', " wake ", 0, 0, 1 FROM " ids
#define DOCKET_HEADS_ROWS                                                                     \
  "INSERT INTO docket.run_heads (run_id, tenant_id, queue, graph_id, graph_hash, started_at)" \
  " SELECT unnest($1::text[]), $2, $3, $4, 'task', $5"
Statement runs_insert{
    "WITH run AS (" DOCKET_RUNS_ROWS(
        "(SELECT unnest($1::text[]) AS id, unnest($6::timestamptz[]) AS wake) AS u",
        "u.wake") ") " DOCKET_HEADS_ROWS,
    6,
    {TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID},
    nullptr};

// The runs, and apart the heads, when every run has one wake time, $6: what a
// uniform batch runs for a table bulk_insert does not write.
Statement runs_rows_uniform{
    DOCKET_RUNS_ROWS("(SELECT unnest($1::text[]) AS id) AS u", "$6"),
    6,
    {TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
    nullptr};
Statement heads_rows_uniform{
    DOCKET_HEADS_ROWS, 5, {TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID}, nullptr};
#undef DOCKET_RUNS_ROWS
#undef DOCKET_HEADS_ROWS

// The task rows of a batch whose elements share one options object without
// an idempotency key (spawn_task without a key, and the usual spawn_tasks):
// $1 ids, $2 tenant key, $3 queue, $4 task name, $5 now, $6 params (jsonb[],
// the argument itself), $7 options, $8 max_attempts, $9 cancel_at,
// $10 max_duration_ms. No per-element arrays but the ids and the params.
Statement tasks_insert_uniform{
    "INSERT INTO docket.tasks (run_id, tenant_key, queue, task_name, params, headers,"
    " max_attempts, retry, idempotency_key, cancel_at, max_duration_ms, created_at)"
    " SELECT u.id, $2, $3, $4, u.params, coalesce($7 -> 'headers', '{}'), $8,"
    " '{\"kind\": \"exponential\", \"base_ms\": 1000, \"factor\": 2, \"max_ms\": 300000,"
    " \"jitter\": 0}'::jsonb || ($7 -> 'retry'), NULL, $9, $10, $5"
    " FROM (SELECT unnest($1::text[]) AS id, unnest($6::jsonb[]) AS params) AS u",
    10,
    {TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, JSONBARRAYOID, JSONBOID, INT4OID,
     TIMESTAMPTZOID, INT8OID},
    nullptr};

// ---------------------------------------------------------------------------
// jsonb -> the core's JsonValue
// ---------------------------------------------------------------------------

// One member or element of a jsonb container, in palloc'd memory (filled
// inside pg::call, where no C++ object may live).
struct RawValue {
  char* key;
  JsonType type;
  char* text;
  char* string;
  JsonbContainer* container;
  int length;  // of the container
};

void fill_raw(RawValue& out, const JsonbValue& v) {
  switch (v.type) {
    case jbvNull:
      out.type = JsonType::null;
      out.text = pstrdup("null");
      break;
    case jbvString: {
      out.type = JsonType::string;
      out.string = pnstrdup(v.val.string.val, v.val.string.len);
      StringInfoData buf;
      initStringInfo(&buf);
      escape_json(&buf, out.string);
      out.text = buf.data;
      break;
    }
    case jbvNumeric:
      out.type = JsonType::number;
      out.text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
      break;
    case jbvBool:
      out.type = JsonType::boolean;
      out.text = pstrdup(v.val.boolean ? "true" : "false");
      break;
    case jbvBinary:
      out.container = v.val.binary.data;
      out.length = v.val.binary.len;
      out.type = JsonContainerIsObject(out.container) ? JsonType::object : JsonType::array;
      out.text = JsonbToCString(nullptr, out.container, v.val.binary.len);
      break;
    default:
      elog(ERROR, "docket: unexpected jsonb value type %d", static_cast<int>(v.type));
  }
}

// The members (object) or elements (array) of a container, one level deep.
std::vector<RawValue> read_container(JsonbContainer* container) {
  RawValue* raw = nullptr;
  const int n = call([&] {
    const int size = static_cast<int>(JsonContainerSize(container));
    raw = static_cast<RawValue*>(palloc0(sizeof(RawValue) * (size > 0 ? size : 1)));
    JsonbIterator* it = JsonbIteratorInit(container);
    JsonbValue v;
    JsonbIteratorToken token;
    char* key = nullptr;
    int count = 0;
    while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
      if (token == WJB_KEY) {
        key = pnstrdup(v.val.string.val, v.val.string.len);
      } else if ((token == WJB_VALUE || token == WJB_ELEM) && count < size) {
        raw[count].key = key;
        fill_raw(raw[count], v);
        ++count;
      }
    }
    return count;
  });
  return std::vector<RawValue>(raw, raw + n);
}

JsonValue to_value(const RawValue& raw, bool nested) {
  JsonValue out;
  out.type = raw.type;
  out.text = raw.text;
  if (raw.string != nullptr) out.string = raw.string;
  if (nested && raw.type == JsonType::object)
    for (const RawValue& m : read_container(raw.container))
      out.members.emplace_back(m.key, to_value(m, false));
  return out;
}

// The root of a jsonb datum; an object's members carry their own members one
// level further (the retry policy's keys).
JsonValue json_value(Datum jsonb) {
  struct Root {
    JsonbContainer* container;
    bool scalar;
    bool object;
  };
  const Root root = call([&] {
    Jsonb* jb = DatumGetJsonbP(jsonb);
    return Root{&jb->root, JB_ROOT_IS_SCALAR(jb), JB_ROOT_IS_OBJECT(jb)};
  });
  JsonValue out;
  if (root.scalar) {
    const std::vector<RawValue> raw = read_container(root.container);
    out.type = raw.empty() ? JsonType::null : raw[0].type;
    return out;
  }
  out.type = root.object ? JsonType::object : JsonType::array;
  if (root.object)
    for (const RawValue& m : read_container(root.container))
      out.members.emplace_back(m.key, to_value(m, true));
  return out;
}

// The elements of a jsonb array datum as jsonb datums.
std::vector<Datum> json_elements(Datum jsonb) {
  std::vector<Datum> out;
  JsonbContainer* root = call([&] { return &DatumGetJsonbP(jsonb)->root; });
  for (const RawValue& e : read_container(root)) {
    if (e.container != nullptr) {
      out.push_back(call([&] {
        JsonbValue v;
        v.type = jbvBinary;
        v.val.binary.data = e.container;
        v.val.binary.len = e.length;
        return JsonbPGetDatum(JsonbValueToJsonb(&v));
      }));
    } else {
      out.push_back(Datum(0));  // a scalar element: never an options object
    }
  }
  return out;
}

// run_at's text as (options ->> 'run_at')::timestamptz reads it.
ParsedTime parse_run_at(const std::string& text) {
  ParsedTime out;
  try {
    const Micros t = call([&] {
      return DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in, CStringGetDatum(text.c_str()),
                                                     ObjectIdGetDatum(InvalidOid),
                                                     Int32GetDatum(-1)));
    });
    out.kind = TIMESTAMP_NOT_FINITE(t) ? ParsedTime::Kind::infinite : ParsedTime::Kind::finite;
    out.value = t;
  } catch (const PgError& e) {
    const int code = e.data->sqlerrcode;
    if (code != ERRCODE_INVALID_DATETIME_FORMAT && code != ERRCODE_DATETIME_FIELD_OVERFLOW &&
        code != ERRCODE_INVALID_PARAMETER_VALUE)
      throw;
    out.kind = ParsedTime::Kind::invalid;
  }
  return out;
}

// The text[] of n time-ordered ids (ascending in input order: 10 random bytes
// per call, the element's position added to their low bits), built in place,
// and a datum pointing at each element.
Datum id_array(std::size_t n, std::vector<Datum>& elements) {
  std::array<std::uint8_t, 10> random{};
  const std::int64_t unix_ms = call([] {
    return (GetCurrentTimestamp() / 1000) +
           static_cast<std::int64_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400000LL;
  });
  if (!call([&] { return pg_strong_random(random.data(), random.size()); }))
    throw std::runtime_error("spawn: could not generate a run id");
  constexpr std::size_t kIdLength = 36;
  constexpr std::size_t kElement = VARHDRSZ + kIdLength;  // int-aligned: no padding
  static_assert(kElement % sizeof(int32) == 0, "text elements of an array are int-aligned");
  const std::size_t header = ARR_OVERHEAD_NONULLS(1);
  auto* array = call([&] {
    return static_cast<ArrayType*>(palloc_extended(header + n * kElement, MCXT_ALLOC_HUGE));
  });
  SET_VARSIZE(array, header + n * kElement);
  array->ndim = 1;
  array->dataoffset = 0;
  array->elemtype = TEXTOID;
  ARR_DIMS(array)[0] = static_cast<int>(n);
  ARR_LBOUND(array)[0] = 1;
  char* data = ARR_DATA_PTR(array);
  elements.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string id = time_ordered_id(unix_ms, random, i);
    if (id.size() != kIdLength) throw std::runtime_error("spawn: a run id of an unexpected length");
    char* element = data + i * kElement;
    SET_VARSIZE(element, kElement);
    memcpy(VARDATA(element), id.data(), kIdLength);
    elements[i] = PointerGetDatum(element);
  }
  return PointerGetDatum(array);
}

// ---------------------------------------------------------------------------
// Spawning a batch
// ---------------------------------------------------------------------------

struct Spawned {
  std::string run_id;
  int attempt = 1;
  bool created = true;
};

struct Batch {
  std::string task_name;
  std::string queue;
  Scope owner;
  std::vector<Datum> params;
  Datum params_array = Datum(0);      // spawn_tasks: the params argument itself
  std::vector<Datum> options;         // each element's options jsonb (one: shared)
  std::vector<SpawnOptions> checked;  // each element's options, checked (one: shared)
};

// Checks element i's options, naming the element in a batch's message.
SpawnOptions check_element(const JsonValue& options, Micros now, int element, bool name_it) {
  try {
    return check_spawn_options(options, now, parse_run_at);
  } catch (const Error& e) {
    if (!name_it) throw;
    std::string detail = e.what();
    const std::string word = std::string(reason_word(e.reason())) + ": ";
    if (detail.compare(0, word.size(), word) == 0) detail.erase(0, word.size());
    fail(e.reason(), "element " + std::to_string(element + 1) + ": " + detail);
  }
}

std::vector<Spawned> spawn(const Batch& b, Micros now) {
  const std::size_t n = b.params.size();
  std::vector<Spawned> out(n);
  if (n == 0) return out;

  std::vector<Datum> generated;
  id_array(n, generated);
  for (std::size_t i = 0; i < n; ++i) out[i].run_id = text_value(generated[i]);

  // One new task per key: a key repeated in the batch names its first element's task.
  std::unordered_map<std::string, std::size_t> first_of_key;
  std::vector<std::size_t> order;  // elements that get a task row, keyed ones in key order
  std::vector<std::size_t> keyed;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& key = b.checked[i].idempotency_key;
    if (!key) {
      order.push_back(i);
    } else if (first_of_key.emplace(*key, i).second) {
      keyed.push_back(i);
    }
  }
  std::sort(keyed.begin(), keyed.end(), [&](std::size_t x, std::size_t y) {
    return *b.checked[x].idempotency_key < *b.checked[y].idempotency_key;
  });

  const std::size_t unkeyed = order.size();
  order.insert(order.end(), keyed.begin(), keyed.end());
  const std::size_t m = order.size();
  std::vector<Datum> ids(m), params(m), options(m), attempts(m), keys(m), cancel(m), duration(m);
  std::vector<bool> key_null(m), cancel_null(m), duration_null(m);
  for (std::size_t j = 0; j < m; ++j) {
    const std::size_t i = order[j];
    const SpawnOptions& o = b.checked[i];
    ids[j] = text_datum(out[i].run_id);
    params[j] = b.params[i];
    options[j] = b.options[i];
    attempts[j] = Int32GetDatum(o.max_attempts);
    key_null[j] = !o.idempotency_key;
    keys[j] = o.idempotency_key ? text_datum(*o.idempotency_key) : Datum(0);
    cancel_null[j] = !o.cancel_at;
    cancel[j] = TimestampTzGetDatum(o.cancel_at.value_or(0));
    duration_null[j] = !o.max_duration_ms;
    duration[j] = Int64GetDatum(o.max_duration_ms.value_or(0));
  }
  // Elements [from, to) of a column as an array.
  auto array = [&](const std::vector<Datum>& values, const std::vector<bool>* nulls, Oid type,
                   std::size_t from = 0, std::size_t to = SIZE_MAX) {
    to = std::min(to, values.size());
    std::vector<char> flags(to - from, 0);
    if (nulls != nullptr)
      for (std::size_t j = from; j < to; ++j) flags[j - from] = (*nulls)[j] ? 1 : 0;
    return make_array(values.data() + from, reinterpret_cast<const bool*>(flags.data()),
                      static_cast<int>(to - from), type);
  };

  const std::string tenant_key = b.owner.tenant_id().value_or(std::string());
  const Datum tenant_key_datum = text_datum(tenant_key);
  const Datum queue = text_datum(b.queue);
  const Datum name = text_datum(b.task_name);
  spi_connect();
  // The task rows: those without a key by a plain INSERT, then those with one
  // (in key order), which claim their keys.
  std::unordered_set<std::string> inserted;
  inserted.reserve(m);
  auto insert_tasks = [&](Statement& statement, std::size_t from, std::size_t to) {
    if (from == to) return;
    const Datum values[11] = {array(ids, nullptr, TEXTOID, from, to),
                              tenant_key_datum,
                              queue,
                              name,
                              TimestampTzGetDatum(now),
                              array(params, nullptr, JSONBOID, from, to),
                              array(options, nullptr, JSONBOID, from, to),
                              array(attempts, nullptr, INT4OID, from, to),
                              array(keys, &key_null, TEXTOID, from, to),
                              array(cancel, &cancel_null, TIMESTAMPTZOID, from, to),
                              array(duration, &duration_null, INT8OID, from, to)};
    spi_prepare_generic(statement);
    const std::uint64_t rows = spi_execute(statement, values, nullptr);
    if (&statement == &tasks_insert_unkeyed) {
      for (std::size_t j = from; j < to; ++j) inserted.insert(out[order[j]].run_id);
      return;
    }
    for (std::uint64_t row = 0; row < rows; ++row) {
      bool isnull = false;
      inserted.insert(text_value(spi_value(row, 1, &isnull)));
    }
  };
  insert_tasks(tasks_insert_unkeyed, 0, unkeyed);
  insert_tasks(tasks_insert, unkeyed, m);

  // Keys another task already holds: that task is the answer.
  std::unordered_map<std::string, Spawned> holder;
  if (inserted.size() < m) {
    std::vector<std::string> taken;
    for (std::size_t i : keyed)
      if (!inserted.count(out[i].run_id)) taken.push_back(*b.checked[i].idempotency_key);
    const Datum lookup[3] = {tenant_key_datum, queue, text_array(taken)};
    spi_prepare_generic(existing_lookup);
    const std::uint64_t rows = spi_execute(existing_lookup, lookup, nullptr);
    for (std::uint64_t row = 0; row < rows; ++row) {
      bool isnull = false;
      Spawned s;
      s.run_id = text_value(spi_value(row, 2, &isnull));
      const Datum attempt = spi_value(row, 3, &isnull);
      s.attempt = isnull ? 0 : DatumGetInt32(attempt);
      s.created = false;
      holder.emplace(text_value(spi_value(row, 1, &isnull)), s);
    }
  }

  // The new runs and their heads, in input order.
  std::vector<Datum> new_ids, wakes;
  bool due_now = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (!inserted.count(out[i].run_id)) continue;
    new_ids.push_back(text_datum(out[i].run_id));
    wakes.push_back(TimestampTzGetDatum(b.checked[i].wake_at));
    due_now = due_now || b.checked[i].wake_at <= now;
  }
  if (!new_ids.empty()) {
    // The task name is published as a graph when a task is actually created.
    if (spi_execute(graph_lookup, &name, nullptr) == 0) spi_execute(graph_save, &name, nullptr);
    const ScopeParams scope = scope_params(b.owner);
    const Datum run_values[6] = {
        array(new_ids, nullptr, TEXTOID),     scope.tenant, queue, name, TimestampTzGetDatum(now),
        array(wakes, nullptr, TIMESTAMPTZOID)};
    const char run_nulls[7] = {' ', scope.tenant_null, ' ', ' ', ' ', ' ', '\0'};
    spi_prepare_generic(runs_insert);
    spi_execute(runs_insert, run_values, run_nulls);
  }
  if (due_now) notify_due(b.queue);
  spi_finish();

  for (std::size_t i = 0; i < n; ++i) {
    const auto& key = b.checked[i].idempotency_key;
    if (!key || inserted.count(out[i].run_id)) continue;
    const std::size_t first = first_of_key.at(*key);
    if (first != i && inserted.count(out[first].run_id)) {
      out[i] = Spawned{out[first].run_id, 1, false};
    } else {
      const auto it = holder.find(*key);
      if (it == holder.end())
        fail(Reason::not_found, "the task holding idempotency key " + *key + " is gone");
      out[i] = it->second;
    }
  }
  return out;
}

// The arguments every spawn checks first, in spawn_task's order.
void check_head(FunctionCallInfo fcinfo, Batch& b, bool batch) {
  const std::optional<std::string> task_name = optional_text_arg(fcinfo, 0);
  check_name("task_name", task_name);
  b.task_name = *task_name;
  require(fcinfo, 1, "params");
  if (batch) {
    b.params_array = call([&] { return PointerGetDatum(DatumGetArrayTypeP(PG_GETARG_DATUM(1))); });
    const DatumArray params = array_arg(fcinfo, 1, JSONBOID);
    for (int i = 0; i < params.n; ++i) {
      if (params.nulls[i])
        fail(Reason::bad_argument, "params[" + std::to_string(i + 1) + "] must not be NULL");
      check_jsonb_size(settings::SizeCap::params, "params[" + std::to_string(i + 1) + "]",
                       params.values[i]);
      b.params.push_back(params.values[i]);
    }
  } else {
    check_jsonb_size(settings::SizeCap::params, "params", PG_GETARG_DATUM(1));
    b.params.push_back(PG_GETARG_DATUM(1));
  }
  const std::optional<std::string> queue = optional_text_arg(fcinfo, 2);
  validate_queue(queue.value_or(std::string()));
  b.queue = *queue;
  b.owner = owner_scope_arg(fcinfo, 3);
}

void put_rows(FunctionCallInfo fcinfo, const std::vector<Spawned>& rows) {
  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  for (const Spawned& s : rows) {
    Datum values[3] = {text_datum(s.run_id), Int32GetDatum(s.attempt), BoolGetDatum(s.created)};
    bool nulls[3] = {false, s.attempt == 0, false};
    call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); });
  }
}

// What a uniform batch's rows share beyond its arguments, as the statements
// above compute it: $1 the options object. Headers (default {}), the retry
// policy (NULL: the defaults), the checkpoint type and document of a new run.
Statement uniform_values{
    "SELECT coalesce($1 -> 'headers', '{}'::jsonb),"
    " '{\"kind\": \"exponential\", \"base_ms\": 1000, \"factor\": 2, \"max_ms\": 300000,"
    " \"jitter\": 0}'::jsonb || ($1 -> 'retry'), 'run_initialized'::docket.checkpoint_type,"
    " '{\"attempt\": 1, \"wake_reason\": \"new\"}'::jsonb",
    1,
    {JSONBOID},
    nullptr};

// Writes a uniform batch's task rows, runs and heads (ids and params one per
// element, the rest shared) with bulk_insert, COPY's way: for 100,000 tasks,
// 1,227 bytes of WAL per task instead of the INSERT ... SELECT statements'
// 1,368 (a heap record per page instead of three per task) and a fifth less
// CPU (bench/README.md, fourteenth session). The same rows as
// tasks_insert_uniform, runs_rows_uniform and heads_rows_uniform write, which
// run instead for a table that needs a statement (bulk_insert.hpp;
// test/pgtap/spawn_bulk.sql). Needs an open SPI connection.
void write_uniform(const Batch& b, const std::vector<Datum>& ids, const Datum* task_values,
                   const char* task_nulls, const Datum* run_values, const char* run_nulls) {
  const std::size_t n = ids.size();
  const SpawnOptions& o = b.checked.front();
  spi_execute(uniform_values, &b.options.front(), nullptr);
  bool isnull = false;
  bool retry_null = false;
  const Datum headers = spi_value(0, 1, &isnull);
  const Datum retry = spi_value(0, 2, &retry_null);
  const Datum checkpoint_type = spi_value(0, 3, &isnull);
  const Datum document = spi_value(0, 4, &isnull);
  const Datum queue = task_values[2];
  const Datum name = task_values[3];
  const Datum now = task_values[4];
  const std::vector<BulkColumn> tasks = {{"run_id", Datum(0), false, ids.data()},
                                         {"tenant_key", task_values[1]},
                                         {"queue", queue},
                                         {"task_name", name},
                                         {"params", Datum(0), false, b.params.data()},
                                         {"headers", headers},
                                         {"max_attempts", Int32GetDatum(o.max_attempts)},
                                         {"retry", retry, retry_null},
                                         {"cancel_at", task_values[8], task_nulls[8] == 'n'},
                                         {"max_duration_ms", task_values[9], task_nulls[9] == 'n'},
                                         {"created_at", now}};
  if (!bulk_insert("tasks", tasks, n)) {
    spi_prepare_generic(tasks_insert_uniform);
    spi_execute(tasks_insert_uniform, task_values, task_nulls);
  }
  // The task name is published as a graph when a task is actually created.
  if (spi_execute(graph_lookup, &name, nullptr) == 0) spi_execute(graph_save, &name, nullptr);
  const Datum task_hash = text_datum("task");
  const bool tenantless = run_nulls[1] == 'n';
  const std::vector<BulkColumn> runs = {{"run_id", Datum(0), false, ids.data()},
                                        {"tenant_id", run_values[1], tenantless},
                                        {"queue", queue},
                                        {"graph_id", name},
                                        {"graph_hash", task_hash},
                                        {"status", text_datum("running")},
                                        {"checkpoint_seq", Int64GetDatum(0)},
                                        {"checkpoint_type", checkpoint_type},
                                        {"started_at", now},
                                        {"updated_at", now},
                                        {"document", document},
                                        {"wake_at", run_values[5]},
                                        {"claim_attempts", Int32GetDatum(0)},
                                        {"claim_abandons", Int32GetDatum(0)},
                                        {"event_seq", Int64GetDatum(1)}};
  const std::vector<BulkColumn> heads = {{"run_id", Datum(0), false, ids.data()},
                                         {"tenant_id", run_values[1], tenantless},
                                         {"queue", queue},
                                         {"graph_id", name},
                                         {"graph_hash", task_hash},
                                         {"started_at", now}};
  if (!bulk_insert("runs", runs, n)) {
    spi_prepare_generic(runs_rows_uniform);
    spi_execute(runs_rows_uniform, run_values, run_nulls);
  }
  if (!bulk_insert("run_heads", heads, n)) {
    spi_prepare_generic(heads_rows_uniform);
    spi_execute(heads_rows_uniform, run_values, run_nulls);
  }
}

// A batch whose elements share one options object without an idempotency
// key: every element is a new task with the id generated for it, so the
// statements take the options as scalars and no per-element array but the
// ids (built in place) and the params (the argument itself).
void spawn_uniform(FunctionCallInfo fcinfo, const Batch& b, Micros now) {
  const std::size_t n = b.params.size();
  std::vector<Datum> ids;
  const Datum id_values = n == 0 ? Datum(0) : id_array(n, ids);
  if (n > 0) {
    const SpawnOptions& o = b.checked.front();
    const Datum params = b.params_array != Datum(0)
                             ? b.params_array
                             : make_array(b.params.data(), nullptr, 1, JSONBOID);
    const Datum queue = text_datum(b.queue);
    const Datum name = text_datum(b.task_name);
    const ScopeParams scope = scope_params(b.owner);
    const Datum task_values[10] = {id_values,
                                   text_datum(b.owner.tenant_id().value_or(std::string())),
                                   queue,
                                   name,
                                   TimestampTzGetDatum(now),
                                   params,
                                   b.options.front(),
                                   Int32GetDatum(o.max_attempts),
                                   TimestampTzGetDatum(o.cancel_at.value_or(0)),
                                   Int64GetDatum(o.max_duration_ms.value_or(0))};
    const char task_nulls[11] = {' ',
                                 ' ',
                                 ' ',
                                 ' ',
                                 ' ',
                                 ' ',
                                 ' ',
                                 ' ',
                                 o.cancel_at ? ' ' : 'n',
                                 o.max_duration_ms ? ' ' : 'n',
                                 '\0'};
    const Datum run_values[6] = {id_values,
                                 scope.tenant,
                                 queue,
                                 name,
                                 TimestampTzGetDatum(now),
                                 TimestampTzGetDatum(o.wake_at)};
    const char run_nulls[7] = {' ', scope.tenant_null, ' ', ' ', ' ', ' ', '\0'};
    spi_connect();
    write_uniform(b, ids, task_values, task_nulls, run_values, run_nulls);
    if (o.wake_at <= now) notify_due(b.queue);
    spi_finish();
  }
  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  for (const Datum id : ids) {
    Datum values[3] = {id, Int32GetDatum(1), BoolGetDatum(true)};
    bool nulls[3] = {false, false, false};
    call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); });
  }
}

// Spawns a checked batch, the uniform way when it can.
void spawn_batch(FunctionCallInfo fcinfo, Batch& b, Micros now) {
  for (std::size_t i = 0; i < b.options.size(); ++i)
    if (b.checked[i].has_headers)
      check_size(settings::SizeCap::headers,
                 b.options.size() > 1 ? "options[" + std::to_string(i + 1) + "].headers"
                                      : std::string("headers"),
                 jsonb_member_bytes(b.options[i], "headers"));
  if (b.checked.size() == 1 && !b.checked.front().idempotency_key) {
    spawn_uniform(fcinfo, b, now);
    return;
  }
  const std::size_t n = b.params.size();
  if (b.checked.size() == 1 && n > 1) {  // one options object with a key, for every element
    b.options.assign(n, b.options.front());
    b.checked.assign(n, b.checked.front());
  }
  put_rows(fcinfo, spawn(b, now));
}

Datum spawn_task(FunctionCallInfo fcinfo) {
  Batch b;
  check_head(fcinfo, b, false);
  const Micros now = store_now();
  if (arg_is_null(fcinfo, 4)) fail(Reason::bad_argument, "options must be a JSON object");
  b.options.push_back(PG_GETARG_DATUM(4));
  b.checked.push_back(check_element(json_value(PG_GETARG_DATUM(4)), now, 0, false));
  spawn_batch(fcinfo, b, now);
  return Datum(0);
}

Datum spawn_tasks(FunctionCallInfo fcinfo) {
  Batch b;
  check_head(fcinfo, b, true);
  const Micros now = store_now();
  if (arg_is_null(fcinfo, 4))
    fail(Reason::bad_argument, "options must be a JSON object or an array of one per element");
  const Datum options = PG_GETARG_DATUM(4);
  const JsonValue shape = json_value(options);
  const std::size_t n = b.params.size();
  if (shape.type == JsonType::array) {
    const std::vector<Datum> each = json_elements(options);
    if (each.size() != n)
      fail(Reason::bad_argument, "options is an array of " + std::to_string(each.size()) +
                                     " elements for " + std::to_string(n) + " params");
    for (std::size_t i = 0; i < n; ++i) {
      JsonValue one;  // a scalar element: not an object
      if (each[i] != Datum(0)) one = json_value(each[i]);
      b.options.push_back(each[i] != Datum(0) ? each[i] : options);
      b.checked.push_back(check_element(one, now, static_cast<int>(i), true));
    }
  } else {
    b.options.push_back(options);
    b.checked.push_back(check_element(shape, now, 0, false));
  }
  spawn_batch(fcinfo, b, now);
  return Datum(0);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_spawn_task, docket::pg::spawn_task)
DOCKET_FUNCTION(docket_spawn_tasks, docket::pg::spawn_tasks)
