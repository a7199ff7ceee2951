// The task layer's shared statements. Only these and the run store's write a
// task's docket.runs row; the WHERE clause of the fast path holds exactly the
// facts of the core's TaskMatch, and every miss is judged by the core.
#include "pg/task_store.hpp"

#include <stdexcept>

#include "pg/claim.hpp"
#include "pg/datum.hpp"
#include "pg/history.hpp"
#include "pg/notify.hpp"
#include "pg/run_document.hpp"
#include "pg/spi.hpp"
#include "pg/wait_probe.hpp"

namespace docket::pg {

namespace {

Statement lock_statement{
    "SELECT graph_hash = 'task', status, claim_token, deadline_at FROM docket.runs"
    " WHERE run_id = $1 FOR UPDATE",
    1,
    {TEXTOID},
    nullptr};

// Several runs at once: locked in run_id order (LockRows above the sort),
// whatever plan reads them.
Statement lock_many_statement{
    "SELECT run_id, graph_hash = 'task', status, claim_token, deadline_at FROM docket.runs"
    " WHERE run_id = ANY($1) ORDER BY run_id FOR UPDATE",
    1,
    {TEXTARRAYOID},
    nullptr};

Statement read_statement{
    "SELECT run_id, graph_hash = 'task', status, claim_token, deadline_at FROM docket.runs"
    " WHERE run_id = ANY($1)",
    1,
    {TEXTARRAYOID},
    nullptr};

// $3 changes, $4 status, $5 checkpoint type, $6 now, $7 wake_at, $8 allow
// overdue, $9 the number of history events the transition records.
Statement transition_statement{
    "UPDATE docket.runs r SET document = " DOCKET_TASK_DOCUMENT_BASE
    " || $3,"
    " status = $4, checkpoint_seq = r.checkpoint_seq + 1,"
    " checkpoint_type = $5::docket.checkpoint_type, updated_at = $6,"
    " claim_token = NULL, claimed_at = NULL, wake_at = $7,"
    " claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL,"
    " event_seq = r.event_seq + $9"
    " WHERE r.run_id = $1 AND r.claim_token = $2 AND r.graph_hash = 'task'"
    " AND ($8 OR r.deadline_at IS NULL OR r.deadline_at > $6) RETURNING r.queue, r.event_seq",
    9,
    {TEXTOID, UUIDOID, JSONBOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, BOOLOID,
     INT4OID},
    nullptr};

// The finished tasks' own waiter rows, and the waiter rows of the parents
// awaiting them (task_waits_child: by child run id), parents in lock order.
Statement release_statement{
    "WITH own AS (DELETE FROM docket.task_waits w WHERE w.run_id = ANY($1)),"
    " parents AS (DELETE FROM docket.task_waits w WHERE w.kind = 'child' AND w.target = ANY($1)"
    " RETURNING w.run_id, w.step_name)"
    " SELECT run_id, step_name FROM parents ORDER BY run_id, step_name",
    1,
    {TEXTARRAYOID},
    nullptr};

// Waking a parent is rare: the run store's mutate_run with task_resume.
Statement resume_statement{
    "SELECT docket.mutate_run('system', $1, 'docket.task_resume(jsonb,jsonb)'::regprocedure,"
    " jsonb_build_object('kind', 'child', 'step', $2::text, 'reason', 'child'))",
    2,
    {TEXTOID, TEXTOID},
    nullptr};

TaskFacts facts_at(std::uint64_t row, int first) {
  TaskFacts f;
  bool isnull = false;
  f.is_task = DatumGetBool(spi_value(row, first, &isnull));
  const std::optional<Status> status = parse_status(text_value(spi_value(row, first + 1, &isnull)));
  if (!status) throw std::runtime_error("a task has a stored status it cannot read");
  f.status = *status;
  const Datum token = spi_value(row, first + 2, &isnull);
  if (!isnull) f.claim_token = token_value(token);
  f.deadline_at = spi_timestamp(row, first + 3);
  return f;
}

}  // namespace

DatumArray array_arg(FunctionCallInfo fcinfo, int index, Oid element_type) {
  DatumArray out;
  if (arg_is_null(fcinfo, index)) return out;
  const Datum array = PG_GETARG_DATUM(index);
  call([&] {
    ArrayType* a = DatumGetArrayTypeP(array);
    int16 typlen = 0;
    bool typbyval = false;
    char typalign = 'i';
    get_typlenbyvalalign(element_type, &typlen, &typbyval, &typalign);
    deconstruct_array(a, element_type, typlen, typbyval, typalign, &out.values, &out.nulls, &out.n);
  });
  return out;
}

Datum make_array(const Datum* values, const bool* nulls, int n, Oid element_type) {
  return call([&] {
    int16 typlen = 0;
    bool typbyval = false;
    char typalign = 'i';
    get_typlenbyvalalign(element_type, &typlen, &typbyval, &typalign);
    int dims[1] = {n};
    int lbs[1] = {1};
    return PointerGetDatum(construct_md_array(const_cast<Datum*>(values), const_cast<bool*>(nulls),
                                              1, dims, lbs, element_type, typlen, typbyval,
                                              typalign));
  });
}

std::optional<Micros> spi_timestamp(std::uint64_t row, int column) {
  bool isnull = false;
  const Datum value = spi_value(row, column, &isnull);
  if (isnull) return std::nullopt;
  return DatumGetTimestampTz(value);
}

std::optional<TaskFacts> lock_task(Datum run_id) {
  if (spi_execute(lock_statement, &run_id, nullptr) == 0) return std::nullopt;
  return facts_at(0, 1);
}

namespace {

std::vector<std::pair<std::string, TaskFacts>> task_rows(Statement& statement, Datum run_ids) {
  const std::uint64_t rows = spi_execute(statement, &run_ids, nullptr);
  std::vector<std::pair<std::string, TaskFacts>> out;
  out.reserve(rows);
  for (std::uint64_t row = 0; row < rows; ++row) {
    bool isnull = false;
    out.emplace_back(text_value(spi_value(row, 1, &isnull)), facts_at(row, 2));
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, TaskFacts>> read_tasks(Datum run_ids) {
  return task_rows(read_statement, run_ids);
}

std::vector<std::pair<std::string, TaskFacts>> lock_tasks(Datum run_ids) {
  return task_rows(lock_many_statement, run_ids);
}

void judge_locked(Datum run_id, const Token& token, Micros now, bool allow_overdue) {
  raise_task_verdict(judge_task(lock_task(run_id), token, now, allow_overdue), text_value(run_id));
}

bool apply_task_transition(Datum run_id, Datum token, Datum changes,
                           const TaskTransition& transition, Micros now, bool allow_overdue,
                           const std::vector<TaskEvent>& events) {
  const ScheduleEffect effect = schedule_effect(transition.schedule, now, transition.wake_at, {});
  const Datum values[9] = {run_id,
                           token,
                           changes,
                           text_datum(status_name(transition.status)),
                           text_datum(transition.checkpoint_type),
                           TimestampTzGetDatum(now),
                           TimestampTzGetDatum(effect.wake_at.value_or(0)),
                           BoolGetDatum(allow_overdue),
                           Int32GetDatum(static_cast<int>(events.size()))};
  const char nulls[10] = {' ', ' ', ' ', ' ', ' ', ' ', effect.wake_at ? ' ' : 'n', ' ', ' ', '\0'};
  spi_prepare_generic(transition_statement);
  if (spi_execute(transition_statement, values, nulls) == 0) return false;
  bool isnull = false;
  const std::int64_t last_seq = DatumGetInt64(spi_value(0, 2, &isnull));
  if (effect.due_now) notify_due(text_value(spi_value(0, 1, &isnull)));
  append_history(run_id, last_seq, events, now);
  return true;
}

void release_finished(const std::vector<std::string>& run_ids) {
  // Nearly always nothing to release: the probe (pg/wait_probe.hpp) saves
  // the DELETE when no row of either kind is visible.
  if (run_ids.empty() || !waiters_may_exist(run_ids)) return;
  const Datum ids = text_array(run_ids);
  spi_prepare_generic(release_statement);
  const std::uint64_t rows = spi_execute(release_statement, &ids, nullptr);
  if (rows == 0) return;
  std::vector<std::pair<Datum, Datum>> parents;
  for (std::uint64_t row = 0; row < rows; ++row) {
    bool isnull = false;
    parents.emplace_back(spi_value(row, 1, &isnull), spi_value(row, 2, &isnull));
  }
  for (const auto& [parent, step] : parents) {
    const Datum values[2] = {parent, step};
    spi_execute(resume_statement, values, nullptr);
  }
}

void cancel_held(Datum run_id, Datum token, const char* reason, Micros now) {
  const Datum changes = json_object({{"cancel_reason", json_string(reason)}});
  const Datum payload = json_object({{"reason", json_string(reason)}});
  if (!apply_task_transition(run_id, token, changes, cancelled_transition(), now, true,
                             {{"cancelled", payload}}))
    throw std::logic_error("a held task could not be cancelled");
  release_finished({text_value(run_id)});
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string json_text(Datum jsonb) {
  const char* s = call([&] {
    Jsonb* j = DatumGetJsonbP(jsonb);
    return static_cast<const char*>(JsonbToCString(nullptr, &j->root, VARSIZE(j)));
  });
  return std::string(s);
}

Datum json_object(const std::vector<std::pair<const char*, std::string>>& members) {
  std::string text = "{";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0) text += ", ";
    text += json_string(members[i].first);
    text += ": ";
    text += members[i].second;
  }
  text += "}";
  return call([&] { return DirectFunctionCall1(jsonb_in, CStringGetDatum(text.c_str())); });
}

}  // namespace docket::pg
