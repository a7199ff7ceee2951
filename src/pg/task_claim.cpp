// claim_tasks: the run store's claim (claim_runs) on a task queue, then one
// statement that reads the task rows and the completed steps of every lease.
// Plain runs met in the queue are handed back (abandon_run); tasks past a
// deadline are cancelled here, never by a scan of live tasks.
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/task.hpp"
#include "pg/abandon.hpp"
#include "pg/claim.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/spi.hpp"
#include "pg/task_store.hpp"
#include "pg/wake.hpp"

namespace docket::pg {

namespace {

// The leases' task rows and completed steps, by primary key, in run_id order
// (a lease without a task row is a plain run sharing the queue). The run's own
// facts came back with the lease (ClaimRequest::task_facts).
#define DOCKET_LEASES(steps)                                                            \
  "SELECT t.run_id, t.task_name, t.params, t.headers, t.cancel_at, t.first_started_at," \
  " t.deadline_at, t.max_duration_ms, " steps                                           \
  " FROM docket.tasks t WHERE t.run_id = ANY($1)"                                       \
  " ORDER BY t.run_id"
Statement leases_statement{DOCKET_LEASES("coalesce((SELECT jsonb_object_agg(s.step_name, s.value)"
                                         " FROM docket.task_steps s WHERE s.run_id = t.run_id),"
                                         " '{}'::jsonb)"),
                           1,
                           {TEXTARRAYOID},
                           nullptr};
// The same when every lease is its task's first (ClaimRow::leased_before):
// no task has stored a step yet, so none is looked up (a probe of
// task_steps per lease was 2.4% of a drain's server time).
Statement first_leases_statement{DOCKET_LEASES("'{}'::jsonb"), 1, {TEXTARRAYOID}, nullptr};

// The first start of a task with a deadline option; the deadline also goes on
// the run row, where the fast path's fence reads it.
Statement first_start_statement{
    "WITH t AS (UPDATE docket.tasks SET first_started_at = $2, deadline_at = $3"
    " WHERE run_id = $1)"
    " UPDATE docket.runs SET deadline_at = $3 WHERE run_id = $1 AND $3 IS NOT NULL",
    3,
    {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
    nullptr};

enum LeaseColumn {
  l_run_id = 1,
  l_task_name,
  l_params,
  l_headers,
  l_cancel_at,
  l_first_started_at,
  l_deadline_at,
  l_max_duration_ms,
  l_steps,
};

// Output columns, 0-based.
enum OutColumn {
  o_run_id,
  o_claim_token,
  o_task_name,
  o_params,
  o_headers,
  o_attempt,
  o_checkpoint_seq,
  o_wake_reason,
  o_steps,
  o_columns
};

struct Lease {
  Datum run_id;
  const ClaimRow* claim;
  ClaimedTaskFacts facts;
  Datum cols[o_columns];
  bool nulls[o_columns];
};

// The demand-1 preference between ready and expired work, alternated across
// this backend's consecutive claims of one task, as seed 000's dispatchers
// alternate it across polls: a worker's long-lived connection then reclaims
// expired work at least every other poll, however much ready work is older.
// Operational state only: kept in memory, lost with the session.
bool prefer_expired_next = false;

// The arguments claim_tasks and await_tasks share: queue, claim_limit,
// lease_ms, max_claim_attempts (0-3), at `now`.
ClaimRequest task_claim_request(FunctionCallInfo fcinfo, Micros now) {
  require(fcinfo, 0, "queue");
  ClaimRequest request;
  request.policy.now = now;
  request.policy.limit = int32_arg(fcinfo, 1, "claim_limit");
  request.policy.orphan_ttl_ms = int64_arg(fcinfo, 2, "orphan_ttl_ms");
  request.policy.max_claim_attempts = int32_arg(fcinfo, 3, "max_claim_attempts");
  validate_claim_policy(request.policy);
  request.queue = text_value(PG_GETARG_DATUM(0));
  validate_queue(*request.queue);
  request.task_facts = true;
  // lease_ms is this claim's lease too: no later claimer takes it over sooner.
  request.lease_ms = stored_lease_ms(request.policy.orphan_ttl_ms);
  return request;
}

// Claims as request says and returns the leased tasks as fcinfo's result set.
Datum claim_into(FunctionCallInfo fcinfo, ClaimRequest& request) {
  if (request.policy.limit == 1) {
    request.policy.preference = prefer_expired_next ? ClaimClass::expired : ClaimClass::ready;
    prefer_expired_next = !prefer_expired_next;
  }
  const Micros now = request.policy.now;

  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  const Datum lease_text = text_datum("lease");
  const Datum poisoned_text = text_datum("poisoned");

  spi_connect();
  const std::vector<ClaimRow> claimed = claim_runs(request, lease_text, poisoned_text);
  std::vector<std::string> ids;
  std::unordered_map<std::string, const ClaimRow*> by_id;
  bool any_leased_before = false;
  for (const ClaimRow& row : claimed) {
    if (!row.leased) continue;
    ids.push_back(text_value(row.values[c_run_id]));
    by_id.emplace(ids.back(), &row);
    any_leased_before = any_leased_before || row.leased_before;
  }
  if (!ids.empty()) {
    const Datum id_array = text_array(ids);
    Statement& statement = any_leased_before ? leases_statement : first_leases_statement;
    spi_prepare_generic(statement);
    const std::uint64_t rows = spi_execute(statement, &id_array, nullptr);
    std::vector<Lease> leases(rows);
    for (std::uint64_t row = 0; row < rows; ++row) {
      Lease& l = leases[row];
      Datum v[l_steps];
      bool null[l_steps];
      spi_row(row, v, null, l_steps);
      auto time = [&](LeaseColumn c) {
        return null[c - 1] ? std::nullopt : std::optional<Micros>(DatumGetTimestampTz(v[c - 1]));
      };
      l.run_id = v[l_run_id - 1];
      const auto claim = by_id.find(text_value(l.run_id));
      if (claim == by_id.end()) throw std::logic_error("claim_tasks: a task row without its lease");
      l.claim = claim->second;
      by_id.erase(claim);
      l.facts.is_task = true;
      l.facts.cancel_at = time(l_cancel_at);
      l.facts.first_started_at = time(l_first_started_at);
      l.facts.deadline_at = time(l_deadline_at);
      if (!null[l_max_duration_ms - 1])
        l.facts.max_duration_ms = DatumGetInt64(v[l_max_duration_ms - 1]);
      auto take = [&](OutColumn to, LeaseColumn from) {
        l.cols[to] = v[from - 1];
        l.nulls[to] = null[from - 1];
      };
      take(o_run_id, l_run_id);
      take(o_task_name, l_task_name);
      take(o_params, l_params);
      take(o_headers, l_headers);
      take(o_steps, l_steps);
      l.cols[o_attempt] = l.claim->task_attempt;
      l.nulls[o_attempt] = l.claim->task_attempt_null;
    }
    // Leases without a task row: plain runs sharing the queue.
    for (const auto& [id, claim] : by_id) {
      Lease& l = leases.emplace_back();
      l.run_id = claim->values[c_run_id];
      l.claim = claim;
      l.facts.is_task = false;
    }
    for (Lease& l : leases) {
      const ClaimRow& claim = *l.claim;
      const Datum token = claim.values[c_claim_token];
      switch (decide_claimed_task(l.facts, now)) {
        case ClaimedTaskAction::hand_back: {
          // A plain run sharing the queue: no attempt used, due again at once.
          AbandonPolicy policy;
          policy.expected_checkpoint_seq = DatumGetInt64(claim.values[c_checkpoint_seq]);
          policy.now = now;
          policy.retry_at = now;
          policy.max_claim_abandons = 1;
          policy.non_poisoning = true;
          abandon_run(l.run_id, token_value(token), policy);
          continue;
        }
        case ClaimedTaskAction::cancel_not_started:
          cancel_held(l.run_id, token, kCancelAfter, now);
          continue;
        case ClaimedTaskAction::cancel_overdue:
          cancel_held(l.run_id, token, kMaxDuration, now);
          continue;
        case ClaimedTaskAction::run:
          break;
      }
      const FirstStart start = first_start(l.facts, now);
      if (start.record) {
        const Datum values[3] = {l.run_id, TimestampTzGetDatum(now),
                                 TimestampTzGetDatum(start.deadline_at.value_or(0))};
        const char nulls[4] = {' ', ' ', start.deadline_at ? ' ' : 'n', '\0'};
        spi_execute(first_start_statement, values, nulls);
      }
      const int attempt = DatumGetInt32(claim.values[c_claim_attempt]);
      l.cols[o_claim_token] = token;
      l.nulls[o_claim_token] = false;
      l.cols[o_checkpoint_seq] = claim.values[c_checkpoint_seq];
      l.nulls[o_checkpoint_seq] = false;
      l.nulls[o_wake_reason] = claim.wake_reason_null;
      const std::string reason = claimed_wake_reason(
          attempt, claim.expired, claim.wake_reason_null ? "" : text_value(claim.wake_reason));
      if (!(attempt <= 1 && !claim.expired && claim.wake_reason_null)) {
        l.cols[o_wake_reason] = text_datum(reason);
        l.nulls[o_wake_reason] = false;
      }
      call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, l.cols, l.nulls); });
    }
  }
  spi_finish();
  return Datum(0);
}

Datum claim_tasks(FunctionCallInfo fcinfo) {
  ClaimRequest request = task_claim_request(fcinfo, now_arg(fcinfo, 4));
  return claim_into(fcinfo, request);
}

// docket.await_tasks(queue, claim_limit, lease_ms, max_claim_attempts,
// timeout_ms): await_due, then claim_tasks at the time it claims, whether the
// wait was woken or timed out (a poll: timers that fell due and expired
// claims make no commit that wakes it).
Datum await_tasks(FunctionCallInfo fcinfo) {
  ClaimRequest request = task_claim_request(fcinfo, store_now());
  const int timeout_ms = int32_arg(fcinfo, 4, "timeout_ms");
  validate_timeout(timeout_ms);
  await_due_work(PG_GETARG_DATUM(0), *request.queue, timeout_ms);
  request.policy.now = store_now();
  return claim_into(fcinfo, request);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_claim_tasks, docket::pg::claim_tasks)
DOCKET_FUNCTION(docket_await_tasks, docket::pg::await_tasks)
