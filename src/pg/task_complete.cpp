// complete_tasks and complete_task: finishing tasks with their results. One
// fenced UPDATE locks every run the batch holds (in run_id order) and finishes
// those that match the fence; only the misses are judged by the core; then one
// statement releases the finished tasks' waiters and the parents awaiting them.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/task.hpp"
#include "pg/claim.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/run_document.hpp"
#include "pg/run_write.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"

namespace docket::pg {

namespace {

// $1 run_ids, $2 their tokens, $3 their results (in run_id order: the
// caller sorts them), $4 now, $5 status, $6 checkpoint type
// (complete_transition). A row is finished only when it matches TaskMatch's
// facts; each gets the result at its run id's place, joined by the arrays'
// positions (unnest) rather than looked up by array_position per row, which
// made a batch quadratic in its size.
#define DOCKET_COMPLETE_UPDATE                                                         \
  "WITH done AS (UPDATE docket.runs r SET document = " DOCKET_TASK_DOCUMENT_BASE       \
  " || jsonb_build_object('result', i.result),"                                        \
  " status = $5, checkpoint_seq = r.checkpoint_seq + 1,"                               \
  " checkpoint_type = $6::docket.checkpoint_type, updated_at = $4,"                    \
  " claim_token = NULL, claimed_at = NULL, wake_at = NULL,"                            \
  " claim_attempts = 0, claim_abandons = 0, poisoned_at = NULL, poison_reason = NULL," \
  " event_seq = r.event_seq + 1,"                                                      \
  " completed_seq = coalesce(r.completed_seq, r.event_seq + 1),"                       \
  " completed_at = CASE WHEN r.completed_seq IS NULL THEN $4 ELSE r.completed_at END"
#define DOCKET_COMPLETE_FENCE                                                            \
  " AND r.claim_token = i.token"                                                         \
  " AND r.graph_hash = 'task' AND (r.deadline_at IS NULL OR r.deadline_at > $4)"         \
  " RETURNING r.run_id, r.event_seq, r.completed_seq),"                                  \
  " history AS (INSERT INTO docket.run_events (run_id, seq, type, payload, recorded_at)" \
  " SELECT run_id, event_seq, 'completed', '{}'::jsonb, $4 FROM done"                    \
  " WHERE completed_seq <> event_seq)"                                                   \
  " SELECT run_id FROM done"

// The UPDATE locks the rows it finishes as it reads them: a nested loop over
// the arrays, in their order, each row by the primary key (nested_loops:
// planned with hash and merge joins off; test/pgtap/task_explain.sql pins the
// plan). The arrays come sorted by run id, bytewise as the primary key
// (COLLATE "C"), so two batches sharing tasks lock them in the same order, as
// complete_steps does, and cannot deadlock. The misses are locked afterwards,
// again together in run_id order.
Statement complete_statement{
    DOCKET_COMPLETE_UPDATE
    " FROM unnest($1::text[], $2::uuid[], $3::jsonb[]) AS i(id, token, result)"
    " WHERE r.run_id = i.id" DOCKET_COMPLETE_FENCE,
    6,
    {TEXTARRAYOID, UUIDARRAYOID, JSONBARRAYOID, TIMESTAMPTZOID, TEXTOID, TEXTOID},
    nullptr,
    true};
#undef DOCKET_COMPLETE_UPDATE
#undef DOCKET_COMPLETE_FENCE

// Runs the fenced UPDATE, which also records each finished task's completed
// event: in the row (completed_seq, completed_at; src/pg/events.cpp reads it
// from there) or, when a revived run completes again, in the log. The run ids
// it finished.
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

// Completes the held tasks of the batch in `order` (run_id order, the lock
// order): written directly (pg/run_write.hpp) where that path applies, a task
// it leaves to the statement by complete_statement on its own before the next
// one is taken, and the rest by complete_statement where the path does not
// apply. The run ids it finished.
std::unordered_set<std::string> complete_in_order(const DatumArray& ids, const DatumArray& tokens,
                                                  const DatumArray& results,
                                                  const std::vector<int>& order,
                                                  const std::vector<std::string>& id_text,
                                                  Micros now) {
  const int n = static_cast<int>(order.size());
  std::vector<TaskCompletion> items(n);
  for (int k = 0; k < n; ++k) {
    const int i = order[k];
    items[k] = {ids.values[i], tokens.values[i], results.values[i], results.nulls[i]};
  }
  const TaskTransition t = complete_transition();
  const TaskCompletionValues values{now, text_datum(status_name(t.status)), t.checkpoint_type};
  std::unique_ptr<bool[]> completed = std::make_unique<bool[]>(n);
  std::unordered_set<std::string> done;
  write_in_order(
      n,
      [&](int from) {
        const int stop = write_task_completions(items.data(), from, n, values, completed.get());
        for (int k = from; k < stop; ++k)
          if (completed[k]) done.insert(id_text[order[k]]);
        return stop;
      },
      [&](int from, int to) {
        // Items order[from..to), as the statement's arrays.
        auto sorted = [&](const DatumArray& a, Oid type) {
          std::vector<Datum> v(to - from);
          std::unique_ptr<bool[]> nulls = std::make_unique<bool[]>(to - from);
          for (int k = from; k < to; ++k) {
            v[k - from] = a.values[order[k]];
            nulls[k - from] = a.nulls[order[k]];
          }
          return make_array(v.data(), nulls.get(), to - from, type);
        };
        done.merge(complete_held(sorted(ids, TEXTOID), sorted(tokens, UUIDOID),
                                 sorted(results, JSONBOID), now));
      });
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
  for (int i = 0; i < n; ++i)
    if (!results.nulls[i])
      check_jsonb_size(settings::SizeCap::result, "results[" + std::to_string(i + 1) + "]",
                       results.values[i]);
  const Micros now = store_now();

  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  std::vector<const char*> outcome(n, "completed");
  if (n > 0) {
    spi_connect();
    // The batch in run_id order (bytewise, as the primary key): its lock order.
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return id_text[a] < id_text[b]; });
    const std::unordered_set<std::string> done =
        complete_in_order(ids, tokens, results, order, id_text, now);
    std::vector<std::string> finished(done.begin(), done.end());
    if (done.size() < static_cast<std::size_t>(n)) {
      // The misses, judged by the core from their committed rows.
      std::vector<std::string> missed;
      std::vector<int> missed_at;
      for (int i = 0; i < n; ++i) {
        if (done.count(id_text[i])) continue;
        missed.push_back(id_text[i]);
        missed_at.push_back(i);
      }
      std::unordered_map<std::string, TaskFacts> facts;
      for (auto& [id, f] : read_tasks(text_array(missed))) facts.emplace(id, f);
      auto judge = [&](const std::string& id, int i) {
        const auto it = facts.find(id);
        return judge_task(it == facts.end() ? std::nullopt : std::optional<TaskFacts>(it->second),
                          token_value(tokens.values[i]), now, false);
      };
      // Overdue (or changed after the UPDATE looked): judged again under the
      // lock, taken for all of them at once in run_id order. When the UPDATE
      // evaluated its lock subquery these rows are already held; when every
      // element missed its fence first, this is the batch's first lock.
      std::vector<std::string> to_lock;
      for (std::size_t k = 0; k < missed.size(); ++k) {
        const TaskVerdict v = judge(missed[k], missed_at[k]);
        if (v == TaskVerdict::held || v == TaskVerdict::overdue) to_lock.push_back(missed[k]);
      }
      if (!to_lock.empty()) {
        for (const std::string& id : to_lock) facts.erase(id);
        for (auto& [id, f] : lock_tasks(text_array(to_lock))) facts.emplace(id, f);
      }
      for (std::size_t k = 0; k < missed.size(); ++k) {
        const std::string& id = missed[k];
        const int i = missed_at[k];
        const TaskVerdict verdict = judge(id, i);
        if (verdict == TaskVerdict::overdue) {
          cancel_held(ids.values[i], tokens.values[i], kMaxDuration, now);
          outcome[i] = batch_outcome(verdict);
        } else if (verdict == TaskVerdict::held) {
          const bool null = results.nulls[i];
          const Datum one_result = results.values[i];
          complete_held(make_array(&ids.values[i], &ids.nulls[i], 1, TEXTOID),
                        make_array(&tokens.values[i], &tokens.nulls[i], 1, UUIDOID),
                        make_array(&one_result, &null, 1, JSONBOID), now);
          finished.push_back(id);
        } else {
          outcome[i] = batch_outcome(verdict);
        }
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
  const bool result_null = arg_is_null(fcinfo, 2);
  if (!result_null) check_jsonb_size(settings::SizeCap::result, "result", PG_GETARG_DATUM(2));
  const Micros now = store_now();
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
