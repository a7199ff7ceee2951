// complete_steps, complete_step and step_states. A step checkpoint is the
// fenced claim refresh of every held task, locked in run_id order (which
// resets the claim-attempt counter of a task storing a new step), then the
// insert of their new steps (the first value wins) under those locks.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/task.hpp"
#include "pg/bulk_insert.hpp"
#include "pg/claim.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/run_write.hpp"
#include "pg/step_lookup.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"

extern "C" {
#include "catalog/pg_collation_d.h"
#include "utils/varlena.h"
}

namespace docket::pg {

namespace {

// A step checkpoint looks which items' steps are stored already (find_steps:
// the rest are fresh), then refreshes the claim of every run the items hold
// (refresh_held, or held_statement: $1 now, $2 the distinct run ids,
// $3 one token of each, $4 each one's fresh items of that token, counted in
// C++), then stores the fresh steps of the held runs (insert_fresh). The
// UPDATE returns the held runs (run_id, token, their event counter after the
// update). Each held run's event counter advances by its fresh items, so the
// insert can number their step_completed events (task_steps.seq: up to the
// counter, in step name order; the step row states the event,
// src/pg/events.cpp reads it from there).
// A step renews its claim (claim_renewed_at, the key of runs_claimed, to the
// new claimed_at) only once half its lease has passed since the last renewal:
// steps of a short task leave every index key as it was (HOT updates), and a
// long task kept alive by its steps alone leaves the range the expired class
// reads (pg/claim.cpp) like one kept alive by heartbeats.
// Progress resets the poison counter, as a commit does: a held run with an
// item whose step is not stored yet (fresh) gets claim_attempts = 0 in the
// same fenced UPDATE, so a task that keeps storing new steps is never poisoned
// by the crashes between them, while one whose steps are only replayed (kept)
// still is after max_claim_attempts claims.
// The UPDATE locks the rows it refreshes as it reads them: a nested loop over
// the distinct runs ($2, $3, $4, joined by position), each by the primary key,
// in the arrays' order: run_id order (sorted in C++, bytewise as the primary
// key), as complete_tasks, so two batches sharing tasks lock them in the same
// order and cannot deadlock, without a separate lock pass (a lock record per
// run). The misses are locked afterwards, again together in run_id order.
// (The look and the per-run counts were CTEs of this statement until the
// fifteenth session: under the nested-loop planning the lock order needs, the
// count's join of the runs to the fresh items was a nested loop too, quadratic
// in the batch: half a millisecond of a 100-item call.)
Statement held_statement{
    "UPDATE docket.runs r SET claimed_at = greatest(r.claimed_at, $1),"
    " claim_renewed_at = CASE WHEN r.claim_renewed_at"
    " < $1 - coalesce(r.lease_ms, 30000) * interval '0.5 millisecond'"
    " THEN greatest(r.claimed_at, $1) ELSE r.claim_renewed_at END,"
    " claim_attempts = CASE WHEN k.n > 0 THEN 0 ELSE r.claim_attempts END,"
    " event_seq = r.event_seq + k.n"
    " FROM unnest($2::text[], $3::uuid[], $4::bigint[]) AS k (run_id, token, n)"
    " WHERE r.run_id = k.run_id AND r.claim_token = k.token"
    " AND r.graph_hash = 'task' AND (r.deadline_at IS NULL OR r.deadline_at > $1)"
    " RETURNING r.run_id, r.claim_token, r.event_seq",
    4,
    {TIMESTAMPTZOID, TEXTARRAYOID, UUIDARRAYOID, INT8ARRAYOID},
    nullptr,
    true};  // nested_loops: the lock order

// The second, for a task_steps that needs a statement (insert_fresh, which
// otherwise writes the same rows with bulk_insert): the fresh steps of the
// held runs ($1 run ids, $2 step names, $3 values, $4 each run's number before
// its first fresh step, $5 now), numbered in step name order from there.
// Another call of the same claim may have stored a step between the look and
// the lock: the insert then does nothing, the first value wins, and that
// number goes unused (the history skips it).
Statement steps_insert_statement{
    "INSERT INTO docket.task_steps AS s (run_id, step_name, value, completed_at, seq)"
    " SELECT u.run_id, u.step_name, u.value, $5,"
    " u.base + row_number() OVER (PARTITION BY u.run_id ORDER BY u.step_name)"
    " FROM unnest($1, $2, $3, $4) AS u (run_id, step_name, value, base)"
    " ORDER BY u.run_id, u.step_name"
    " ON CONFLICT ON CONSTRAINT task_steps_pkey DO NOTHING"
    " RETURNING s.run_id, s.step_name, s.value",
    5,
    {TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID},
    nullptr};

// The stored steps among ($1 run ids, $2 step names), with their values: the
// first look (store_steps: the others are fresh), the fresh items' probe under
// the locks (insert_fresh), and the values of kept steps, read after the
// insert, so a step another transaction committed meanwhile is found too.
// Each is read through the primary key directly (find_steps,
// pg/step_lookup.hpp) where that path applies; this statement otherwise. One
// probe per step (pg/planning.hpp), not an anti-join: a plan made while
// task_steps looked empty would read the whole table per call.
Statement kept_values_statement{
    "SELECT k.run_id, k.step_name, s.value FROM unnest($1, $2) AS k (run_id, step_name)"
    " CROSS JOIN LATERAL (SELECT s.value FROM docket.task_steps s"
    " WHERE s.run_id = k.run_id AND s.step_name = k.step_name LIMIT 1) s",
    2,
    {TEXTARRAYOID, TEXTARRAYOID},
    nullptr};

// step_states: the held row (locked, as every fenced call) and its steps;
// no row = the fence missed, one row with a NULL name = no steps.
Statement states_statement{
    "SELECT s.step_name, s.value FROM docket.runs r"
    " LEFT JOIN docket.task_steps s ON s.run_id = r.run_id"
    " WHERE r.run_id = $1 AND r.claim_token = $2 AND r.graph_hash = 'task'"
    " AND (r.deadline_at IS NULL OR r.deadline_at > $3)"
    " ORDER BY s.step_name FOR UPDATE OF r",
    3,
    {TEXTOID, UUIDOID, TIMESTAMPTZOID},
    nullptr};

struct StepItem {
  Datum run_id;
  Datum token;
  Datum step_name;
  Datum value;
};

struct StepResult {
  bool held = false;
  bool stored = false;
  bool value_null = true;
  Datum value = Datum(0);
};

// The positions of the n (ids[i], names[i]) pairs by their bytes (views, no
// copies): a statement's rows, which name their run and step, are matched
// back to the items they answer through it.
using PairPositions = std::multimap<std::pair<std::string_view, std::string_view>, int>;
PairPositions pair_positions(const Datum* ids, const Datum* names, int n) {
  PairPositions out;
  for (int i = 0; i < n; ++i)
    out.emplace(std::make_pair(text_view(ids[i]), text_view(names[i])), i);
  return out;
}

// Whether each (ids[i], names[i]) of the n pairs is stored now, and its
// value: read through the primary key (pg/step_lookup.hpp), or by
// kept_values_statement where that path does not apply; either under a new
// snapshot. With `kept`, the first path registers its snapshot there (the
// statement's leaves it NULL).
std::vector<StoredStep> find_steps(const Datum* ids, const Datum* names, int n,
                                   Snapshot* kept = nullptr) {
  std::vector<StoredStep> out;
  if (lookup_steps(ids, names, n, out, kept)) return out;
  out.assign(n, StoredStep{});
  bool* no_nulls = nullptr;
  const Datum key[2] = {make_array(ids, no_nulls, n, TEXTOID),
                        make_array(names, no_nulls, n, TEXTOID)};
  spi_prepare_generic(kept_values_statement);
  const std::uint64_t found = spi_execute(kept_values_statement, key, nullptr);
  if (found == 0) return out;
  const PairPositions positions = pair_positions(ids, names, n);
  for (std::uint64_t row = 0; row < found; ++row) {
    bool isnull = false;
    const std::string_view id = text_view(spi_value(row, 1, &isnull));
    const std::string_view name = text_view(spi_value(row, 2, &isnull));
    StoredStep step;
    step.stored = true;
    step.value = spi_value(row, 3, &step.value_null);
    const auto [first, last] = positions.equal_range({id, name});
    for (auto it = first; it != last; ++it) out[it->second] = step;
  }
  return out;
}

// The runs of a batch's items, each once, in run_id (lock) order: the bytes
// of each item's run id (text_view: no copy), each item's run, and each run's
// first item. Bytewise order, as the primary key's "C" collation.
struct BatchRuns {
  std::vector<std::string_view> id;  // per item
  std::vector<int> run_of;           // per item: its run
  std::vector<int> first;            // per run, in run_id order: its first item
};

BatchRuns batch_runs(const std::vector<StepItem>& items) {
  const int n = static_cast<int>(items.size());
  BatchRuns b;
  b.id.resize(n);
  b.run_of.resize(n);
  for (int i = 0; i < n; ++i) b.id[i] = text_view(items[i].run_id);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.id[x] < b.id[y]; });
  for (const int i : order) {
    if (b.first.empty() || b.id[b.first.back()] != b.id[i]) b.first.push_back(i);
    b.run_of[i] = static_cast<int>(b.first.size()) - 1;
  }
  return b;
}

// The run of run id `id` (text bytes) among runs.first[from..to), or -1.
int find_run(const BatchRuns& runs, std::string_view id, int from, int to) {
  const auto begin = runs.first.begin() + from;
  const auto end = runs.first.begin() + to;
  const auto it = std::lower_bound(
      begin, end, id, [&](int item, std::string_view key) { return runs.id[item] < key; });
  return it != end && runs.id[*it] == id ? static_cast<int>(it - runs.first.begin()) : -1;
}

// Stores the fresh items of held runs (`insert`: indexes into `items`), each
// run's numbered from base[run] + 1 in step name order (the database's
// collation, as steps_insert_statement's ORDER BY), and marks in `out` what
// went in (stored, with its value). The run rows locked by held_statement
// keep every other writer of these runs' steps out until this transaction
// ends, so a probe under a new snapshot is exact: it finds what another call
// of the same claim committed before the lock was granted (after the first
// look's snapshot), which is kept, and the rest go in with bulk_insert: a heap
// record per page, and none of ON CONFLICT's speculative insertion (a
// pre-check descent and a confirm record per step). A table that needs a
// statement (bulk_insert.hpp) gets steps_insert_statement, as before.
// Without `probe` the first look stands: it and every run's refresh read
// under one snapshot, and no run changed since. Every writer of a run's steps
// updates the run's row in the same transaction (a step checkpoint's refresh,
// sleep_until's transition, a wait's settle: task_wait.cpp), so a step
// committed after the look would have sent that run's refresh to the
// statement, and `probe` would be set.
void insert_fresh(const std::vector<StepItem>& items, const BatchRuns& runs,
                  const std::vector<int>& insert, const std::vector<std::int64_t>& base, Micros now,
                  bool probe, std::vector<StepResult>& out) {
  // Step name order inside each run (runs in run_id order), then each item's
  // number.
  std::vector<int> order(insert);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (runs.run_of[a] != runs.run_of[b]) return runs.run_of[a] < runs.run_of[b];
    return call([&] {
             text* x = DatumGetTextPP(items[a].step_name);
             text* y = DatumGetTextPP(items[b].step_name);
             return varstr_cmp(VARDATA_ANY(x), static_cast<int>(VARSIZE_ANY_EXHDR(x)),
                               VARDATA_ANY(y), static_cast<int>(VARSIZE_ANY_EXHDR(y)),
                               DEFAULT_COLLATION_OID);
           }) < 0;
  });
  const int k = static_cast<int>(order.size());
  std::vector<Datum> in_ids(k), in_names(k), in_values(k), in_seq(k);
  std::int64_t next = 0;
  for (int j = 0; j < k; ++j) {
    const int i = order[j];
    if (j == 0 || runs.run_of[i] != runs.run_of[order[j - 1]]) next = base[runs.run_of[i]];
    in_ids[j] = items[i].run_id;
    in_names[j] = items[i].step_name;
    in_values[j] = items[i].value;
    in_seq[j] = Int64GetDatum(++next);
  }
  const std::vector<StoredStep> taken =
      probe ? find_steps(in_ids.data(), in_names.data(), k) : std::vector<StoredStep>{};
  std::vector<Datum> ids, names, values, seqs;
  std::vector<int> going;  // the items of ids..seqs
  for (int j = 0; j < k; ++j) {
    if (probe && taken[j].stored) continue;
    ids.push_back(in_ids[j]);
    names.push_back(in_names[j]);
    values.push_back(in_values[j]);
    seqs.push_back(in_seq[j]);
    going.push_back(order[j]);
  }
  if (ids.empty()) return;
  auto mark = [&](int i, Datum value) {
    out[i].stored = true;
    out[i].value = value;
    out[i].value_null = false;
  };
  const std::vector<BulkColumn> columns = {{"run_id", Datum(0), false, ids.data()},
                                           {"step_name", Datum(0), false, names.data()},
                                           {"value", Datum(0), false, values.data()},
                                           {"completed_at", TimestampTzGetDatum(now)},
                                           {"seq", Datum(0), false, seqs.data()}};
  if (bulk_insert("task_steps", columns, ids.size())) {
    for (std::size_t j = 0; j < going.size(); ++j) mark(going[j], values[j]);
    return;
  }
  // The statement numbers every fresh item again, and its ON CONFLICT skips
  // the taken ones (their numbers go unused, as above). Its rows are matched
  // back to the items by (run id, step name) bytes.
  std::vector<Datum> bases(k);
  for (int j = 0; j < k; ++j) bases[j] = Int64GetDatum(base[runs.run_of[order[j]]]);
  const PairPositions positions = pair_positions(in_ids.data(), in_names.data(), k);
  bool* no_nulls = nullptr;
  const Datum rows_in[5] = {make_array(in_ids.data(), no_nulls, k, TEXTOID),
                            make_array(in_names.data(), no_nulls, k, TEXTOID),
                            make_array(in_values.data(), no_nulls, k, JSONBOID),
                            make_array(bases.data(), no_nulls, k, INT8OID),
                            TimestampTzGetDatum(now)};
  spi_prepare_generic(steps_insert_statement);
  const std::uint64_t stored = spi_execute(steps_insert_statement, rows_in, nullptr);
  for (std::uint64_t row = 0; row < stored; ++row) {
    bool isnull = false;
    const std::string_view id = text_view(spi_value(row, 1, &isnull));
    const std::string_view name = text_view(spi_value(row, 2, &isnull));
    bool value_null = false;
    const Datum value = spi_value(row, 3, &value_null);
    if (value_null) continue;
    const auto [first, last] = positions.equal_range({id, name});
    for (auto it = first; it != last; ++it) mark(order[it->second], value);
  }
}

// held_statement over runs [from, to) of the three arrays: held[r] for each
// (false unless the statement returned the run).
void refresh_by_statement(const BatchRuns& runs, const std::vector<Datum>& run_ids,
                          const std::vector<Datum>& tokens, const std::vector<Datum>& fresh,
                          int from, int to, Micros now, std::vector<StepRefreshed>& held) {
  for (int r = from; r < to; ++r) held[r] = StepRefreshed{};
  bool* no_nulls = nullptr;
  const int m = to - from;
  const Datum params[4] = {TimestampTzGetDatum(now),
                           make_array(run_ids.data() + from, no_nulls, m, TEXTOID),
                           make_array(tokens.data() + from, no_nulls, m, UUIDOID),
                           make_array(fresh.data() + from, no_nulls, m, INT8OID)};
  spi_prepare_generic(held_statement);
  const std::uint64_t rows = spi_execute(held_statement, params, nullptr);
  for (std::uint64_t row = 0; row < rows; ++row) {
    bool isnull = false;
    const int r = find_run(runs, text_view(spi_value(row, 1, &isnull)), from, to);
    if (r < 0) continue;
    held[r].held = true;
    held[r].event_seq = DatumGetInt64(spi_value(row, 3, &isnull));
  }
}

// Refreshes the claim of each run (in the arrays' order, the lock order):
// written directly (pg/run_write.hpp) where that path applies, a run it
// leaves to the statement by held_statement on its own before the next run is
// taken, and every run by held_statement where the path does not apply.
// held[r]: whether run r is held by its token (its first item's), and then
// its event counter after the update. `under`: the first look's snapshot (or
// NULL), under which the direct path finds the rows until a run goes to the
// statement. True when every run was decided under it: no run changed since
// that look.
bool refresh_held(const BatchRuns& runs, const std::vector<Datum>& run_ids,
                  const std::vector<Datum>& tokens, const std::vector<Datum>& fresh, Micros now,
                  Snapshot under, std::vector<StepRefreshed>& held) {
  const int m = static_cast<int>(run_ids.size());
  std::vector<StepRefresh> items(m);
  for (int i = 0; i < m; ++i) items[i] = {run_ids[i], tokens[i], DatumGetInt64(fresh[i])};
  held.assign(m, StepRefreshed{});
  bool unchanged = under != nullptr;
  write_in_order(
      m,
      [&](int from) {
        return write_step_refreshes(items.data(), from, m, now, held.data(),
                                    from == 0 ? under : nullptr);
      },
      [&](int from, int to) {
        unchanged = false;
        refresh_by_statement(runs, run_ids, tokens, fresh, from, to, now, held);
      });
  return unchanged;
}

// Looks for stored steps, refreshes the held runs (held_statement), then
// stores the fresh steps (insert_fresh), for `items`; results in the same
// order. Values live in SPI memory until spi_finish. Items and runs are
// tracked by index (BatchRuns), with no copy of a run id or step name.
std::vector<StepResult> store_steps(const std::vector<StepItem>& items, Micros now) {
  const int n = static_cast<int>(items.size());
  const BatchRuns runs = batch_runs(items);
  const int m = static_cast<int>(runs.first.size());
  std::vector<Datum> ids(n), names(n);
  std::vector<Token> token(n);
  for (int i = 0; i < n; ++i) {
    ids[i] = items[i].run_id;
    names[i] = items[i].step_name;
    token[i] = token_value(items[i].token);
  }
  // The look: which steps are stored (the others are fresh), and the
  // snapshot it read under, where it was read directly.
  Snapshot look = nullptr;
  const std::vector<StoredStep> before = find_steps(ids.data(), names.data(), n, &look);
  // An item of its run's token: the token the run is refreshed with (its
  // first item's).
  auto own = [&](int i) { return token[i] == token[runs.first[runs.run_of[i]]]; };
  // The lock order (see held_statement), and each run's fresh items of that
  // token.
  std::vector<std::int64_t> fresh_of(m, 0);
  for (int i = 0; i < n; ++i)
    if (!before[i].stored && own(i)) ++fresh_of[runs.run_of[i]];
  std::vector<Datum> run_ids(m), run_tokens(m), run_fresh(m);
  for (int r = 0; r < m; ++r) {
    run_ids[r] = items[runs.first[r]].run_id;
    run_tokens[r] = items[runs.first[r]].token;
    run_fresh[r] = Int64GetDatum(fresh_of[r]);
  }
  std::vector<StepRefreshed> held;
  const bool unchanged = refresh_held(runs, run_ids, run_tokens, run_fresh, now, look, held);
  if (look != nullptr) call([&] { UnregisterSnapshot(look); });
  // The fresh items of held runs (the run's own token), and each run's number
  // before its first fresh step: its counter less its fresh steps.
  std::vector<int> insert;
  std::vector<std::int64_t> base(m, 0);
  for (int r = 0; r < m; ++r)
    if (held[r].held) base[r] = held[r].event_seq - fresh_of[r];
  for (int i = 0; i < n; ++i)
    if (!before[i].stored && held[runs.run_of[i]].held && own(i)) insert.push_back(i);
  std::vector<StepResult> out(n);
  if (!insert.empty()) insert_fresh(items, runs, insert, base, now, !unchanged, out);
  std::vector<int> kept;
  for (int i = 0; i < n; ++i) {
    StepResult& r = out[i];
    r.held = held[runs.run_of[i]].held && own(i);
    if (r.held && !r.stored) kept.push_back(i);
  }
  if (!kept.empty()) {
    std::vector<Datum> kept_ids, kept_names;
    for (const int i : kept) {
      kept_ids.push_back(items[i].run_id);
      kept_names.push_back(items[i].step_name);
    }
    const std::vector<StoredStep> found =
        find_steps(kept_ids.data(), kept_names.data(), static_cast<int>(kept.size()));
    for (std::size_t j = 0; j < kept.size(); ++j) {
      if (!found[j].stored || found[j].value_null) continue;
      out[kept[j]].value = found[j].value;
      out[kept[j]].value_null = false;
    }
  }
  return out;
}

Datum complete_steps(FunctionCallInfo fcinfo) {
  const DatumArray ids = array_arg(fcinfo, 0, TEXTOID);
  const DatumArray tokens = array_arg(fcinfo, 1, UUIDOID);
  const DatumArray names = array_arg(fcinfo, 2, TEXTOID);
  const DatumArray values = array_arg(fcinfo, 3, JSONBOID);
  auto length = [](const DatumArray& a) {
    return a.n < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(a.n));
  };
  validate_batch_lengths({length(ids), length(tokens), length(names), length(values)},
                         {"run_ids", "claim_tokens", "step_names", "step_values"});
  const int n = ids.n;
  std::vector<BatchKey> keys(n);
  for (int i = 0; i < n; ++i) {
    if (!ids.nulls[i]) keys[i].run_id = text_value(ids.values[i]);
    keys[i].has_token = !tokens.nulls[i];
    if (!names.nulls[i]) keys[i].step_name = text_value(names.values[i]);
  }
  validate_batch_keys(keys, true);
  for (int i = 0; i < n; ++i) {
    check_name("step_name", keys[i].step_name);
    if (values.nulls[i])
      fail(Reason::bad_argument,
           "step_values must not contain NULL (element " + std::to_string(i + 1) + ")");
    check_jsonb_size(settings::SizeCap::result, "step_values[" + std::to_string(i + 1) + "]",
                     values.values[i]);
  }
  const Micros now = store_now();

  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  if (n == 0) return Datum(0);
  std::vector<StepItem> items(n);
  for (int i = 0; i < n; ++i)
    items[i] = {ids.values[i], tokens.values[i], names.values[i], values.values[i]};

  spi_connect();
  std::vector<StepResult> results = store_steps(items, now);
  std::vector<const char*> outcome(n, nullptr);
  std::vector<std::string> missed;
  for (int i = 0; i < n; ++i) {
    if (results[i].held)
      outcome[i] = results[i].stored ? "stored" : "kept";
    else
      missed.push_back(*keys[i].run_id);
  }
  if (!missed.empty()) {
    // The misses, judged by the core from their committed rows.
    std::unordered_map<std::string, TaskFacts> facts;
    for (auto& [id, f] : read_tasks(text_array(missed))) facts.emplace(id, f);
    auto judge = [&](int i) {
      const auto it = facts.find(*keys[i].run_id);
      return judge_task(it == facts.end() ? std::nullopt : std::optional<TaskFacts>(it->second),
                        token_value(tokens.values[i]), now, false);
    };
    // Overdue, another token of the same run in this batch, or changed after
    // the statement looked: judged again under the lock, taken for all of them
    // at once in run_id order (already held when the statement evaluated its
    // lock subquery; the batch's first lock when every element missed first).
    std::vector<std::string> to_lock;
    std::unordered_map<std::string, bool> seen;
    for (int i = 0; i < n; ++i) {
      if (results[i].held) continue;
      const TaskVerdict v = judge(i);
      if ((v == TaskVerdict::held || v == TaskVerdict::overdue) &&
          seen.emplace(*keys[i].run_id, true).second)
        to_lock.push_back(*keys[i].run_id);
    }
    if (!to_lock.empty()) {
      for (const std::string& id : to_lock) facts.erase(id);
      for (auto& [id, f] : lock_tasks(text_array(to_lock))) facts.emplace(id, f);
    }
    std::unordered_map<std::string, bool> cancelled;  // by this call
    for (int i = 0; i < n; ++i) {
      if (results[i].held) continue;
      const std::string& id = *keys[i].run_id;
      TaskVerdict verdict = cancelled.count(id) ? TaskVerdict::cancelled : judge(i);
      if (verdict == TaskVerdict::overdue) {
        cancel_held(ids.values[i], tokens.values[i], kMaxDuration, now);
        cancelled[id] = true;
      } else if (verdict == TaskVerdict::held) {
        results[i] = store_steps({items[i]}, now).at(0);
        if (results[i].held) {
          outcome[i] = results[i].stored ? "stored" : "kept";
          continue;
        }
        verdict = TaskVerdict::stale;
      }
      outcome[i] = batch_outcome(verdict);
      results[i].value_null = true;
    }
  }
  for (int i = 0; i < n; ++i) {
    Datum row[4] = {ids.values[i], names.values[i], text_datum(outcome[i]), results[i].value};
    bool nulls[4] = {false, false, false, results[i].value_null};
    call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls); });
  }
  spi_finish();
  return Datum(0);
}

Datum complete_step(FunctionCallInfo fcinfo) {
  check_name("step_name", optional_text_arg(fcinfo, 2));
  require(fcinfo, 3, "value");
  check_jsonb_size(settings::SizeCap::result, "value", PG_GETARG_DATUM(3));
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  const Micros now = store_now();
  const StepItem item{PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2),
                      PG_GETARG_DATUM(3)};
  spi_connect();
  StepResult result = store_steps({item}, now).at(0);
  if (!result.held) {
    judge_locked(item.run_id, token_value(item.token), now, false);
    result = store_steps({item}, now).at(0);  // held after all: store under the lock
  }
  const Datum out = result.value_null ? Datum(0) : spi_transfer(result.value, false, -1);
  spi_finish();
  if (result.value_null) PG_RETURN_NULL();
  PG_RETURN_DATUM(out);
}

Datum step_states(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  const Micros now = store_now();
  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  const Datum values[3] = {PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), TimestampTzGetDatum(now)};
  spi_connect();
  std::uint64_t rows = spi_execute(states_statement, values, nullptr);
  if (rows == 0) {
    judge_locked(values[0], token_value(values[1]), now, false);
    rows = spi_execute(states_statement, values, nullptr);
  }
  for (std::uint64_t row = 0; row < rows; ++row) {
    Datum out[2];
    bool nulls[2];
    out[0] = spi_value(row, 1, &nulls[0]);
    if (nulls[0]) break;  // no steps
    out[1] = spi_value(row, 2, &nulls[1]);
    call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls); });
  }
  spi_finish();
  return Datum(0);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_complete_steps, docket::pg::complete_steps)
DOCKET_FUNCTION(docket_complete_step, docket::pg::complete_step)
DOCKET_FUNCTION(docket_step_states, docket::pg::step_states)
