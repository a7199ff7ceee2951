// complete_tasks and complete_task: finishing tasks with their results. One
// fenced UPDATE finishes every held task of the batch (its index scan on
// run_id = ANY($1) locks them in run_id order); only the misses are judged by
// the core; then one statement releases the finished tasks' waiters and the
// parents awaiting them.
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/task.hpp"
#include "pg/claim.hpp"
#include "pg/datum.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"

namespace docket::pg {

namespace {

// $1 run_ids, $2 their tokens, $3 their results (input order), $4 now,
// $5 status, $6 checkpoint type (complete_transition). A row is finished only
// when it matches TaskMatch's facts; each gets the result at its run id's
// position.
Statement complete_statement{
    "UPDATE docket.runs r SET document = (r.document - 'waiting')"
    " || jsonb_build_object('status', $5::text, 'result', $3[array_position($1, r.run_id)],"
    " 'checkpoint_seq', r.checkpoint_seq + 1),"
    " status = $5, checkpoint_seq = r.checkpoint_seq + 1,"
    " checkpoint_type = $6::docket.checkpoint_type, updated_at = $4,"
    " claim_token = NULL, claimed_at = NULL, wake_at = NULL,"
    " claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL"
    " WHERE r.run_id = ANY($1) AND r.claim_token = $2[array_position($1, r.run_id)]"
    " AND r.graph_hash = 'task' AND (r.deadline_at IS NULL OR r.deadline_at > $4)"
    " RETURNING r.run_id",
    6,
    {TEXTARRAYOID, UUIDARRAYOID, JSONBARRAYOID, TIMESTAMPTZOID, TEXTOID, TEXTOID},
    nullptr};

// Runs the fenced UPDATE; the run ids it finished.
std::unordered_set<std::string> complete_held(Datum ids, Datum tokens, Datum results, Micros now) {
  const TaskTransition t = complete_transition();
  const Datum values[6] = {ids,
                           tokens,
                           results,
                           TimestampTzGetDatum(now),
                           text_datum(status_name(t.status)),
                           text_datum(t.checkpoint_type)};
  spi_prepare_generic(complete_statement);
  const std::uint64_t rows = spi_execute(complete_statement, values, nullptr);
  std::unordered_set<std::string> done;
  for (std::uint64_t row = 0; row < rows; ++row) {
    bool isnull = false;
    done.insert(text_value(spi_value(row, 1, &isnull)));
  }
  return done;
}

Datum complete_tasks(FunctionCallInfo fcinfo) {
  const DatumArray ids = array_arg(fcinfo, 0, TEXTOID);
  const DatumArray tokens = array_arg(fcinfo, 1, UUIDOID);
  const DatumArray results = array_arg(fcinfo, 2, JSONBOID);
  auto length = [](const DatumArray& a) {
    return a.n < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(a.n));
  };
  validate_batch_lengths({length(ids), length(tokens), length(results)},
                         {"run_ids", "claim_tokens", "results"});
  const int n = ids.n;
  std::vector<BatchKey> keys(n);
  std::vector<std::string> id_text(n);
  for (int i = 0; i < n; ++i) {
    if (!ids.nulls[i]) keys[i].run_id = id_text[i] = text_value(ids.values[i]);
    keys[i].has_token = !tokens.nulls[i];
  }
  validate_batch_keys(keys, false);
  const Micros now = store_now();

  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  std::vector<const char*> outcome(n, "completed");
  if (n > 0) {
    spi_connect();
    const std::unordered_set<std::string> done =
        complete_held(PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), now);
    std::vector<std::string> finished(done.begin(), done.end());
    if (done.size() < static_cast<std::size_t>(n)) {
      // The misses, judged by the core from their committed rows.
      std::vector<std::string> missed;
      std::unordered_map<std::string, int> position;
      for (int i = 0; i < n; ++i) {
        position.emplace(id_text[i], i);
        if (!done.count(id_text[i])) missed.push_back(id_text[i]);
      }
      std::unordered_map<std::string, TaskFacts> facts;
      for (auto& [id, f] : read_tasks(text_array(missed))) facts.emplace(id, f);
      for (const std::string& id : missed) {
        const int i = position.at(id);
        const Token token = token_value(tokens.values[i]);
        auto judge = [&](const std::optional<TaskFacts>& f) {
          return judge_task(f, token, now, false);
        };
        const auto it = facts.find(id);
        TaskVerdict verdict =
            judge(it == facts.end() ? std::nullopt : std::optional<TaskFacts>(it->second));
        if (verdict == TaskVerdict::held || verdict == TaskVerdict::overdue) {
          // Changing after the UPDATE looked (or overdue): judge under the lock.
          verdict = judge(lock_task(ids.values[i]));
          if (verdict == TaskVerdict::overdue) {
            cancel_held(ids.values[i], tokens.values[i], kMaxDuration, now);
          } else if (verdict == TaskVerdict::held) {
            const bool null = results.nulls[i];
            const Datum one_result = results.values[i];
            complete_held(make_array(&ids.values[i], &ids.nulls[i], 1, TEXTOID),
                          make_array(&tokens.values[i], &tokens.nulls[i], 1, UUIDOID),
                          make_array(&one_result, &null, 1, JSONBOID), now);
            finished.push_back(id);
          }
        }
        if (verdict != TaskVerdict::held) outcome[i] = batch_outcome(verdict);
      }
    }
    release_finished(finished);
    spi_finish();
  }
  for (int i = 0; i < n; ++i) {
    Datum values[2] = {ids.values[i], text_datum(outcome[i])};
    bool nulls[2] = {false, false};
    call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls); });
  }
  return Datum(0);
}

Datum complete_task(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  const Micros now = store_now();
  const bool result_null = arg_is_null(fcinfo, 2);
  const Datum result = result_null ? Datum(0) : PG_GETARG_DATUM(2);
  const Datum id = PG_GETARG_DATUM(0);
  const Datum token = PG_GETARG_DATUM(1);
  const bool no_nulls = false;
  spi_connect();
  const Datum ids = make_array(&id, &no_nulls, 1, TEXTOID);
  const Datum tokens = make_array(&token, &no_nulls, 1, UUIDOID);
  const Datum results = make_array(&result, &result_null, 1, JSONBOID);
  if (complete_held(ids, tokens, results, now).empty()) {
    judge_locked(id, token_value(token), now, false);
    complete_held(ids, tokens, results, now);  // held after all: apply under the lock
  }
  release_finished({text_value(id)});
  spi_finish();
  PG_RETURN_VOID();
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_complete_tasks, docket::pg::complete_tasks)
DOCKET_FUNCTION(docket_complete_task, docket::pg::complete_task)
