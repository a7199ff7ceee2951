// claim_due: one atomic scan that turns due and expired runs into leases or
// poison. The core decides which candidates and what happens to each; this
// file only fetches candidates, applies the decisions and returns the rows.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pg/claim.hpp"

#include "pg/caller.hpp"

#include "core/limits.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/history.hpp"
#include "pg/run_write.hpp"
#include "pg/task_store.hpp"
#include "pg/vacuum.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

// The candidate scans' columns (each of the four statements returns these).
constexpr int kCandidateColumns = 9;

// The candidate scan: both classes in one statement, each its own subquery
// with its own LIMIT and row locks (ready first, then expired), with and
// without a queue. The WHERE clauses repeat the partial index predicates of
// runs_ready(_queue) and runs_claimed word for word so the planner can use
// them, and each ORDER BY is its index order; sql/plans_claim.sql pins these
// plans. Columns: expired?, run_id, eligible column (wake_at or claimed_at),
// claim_attempts, lease_ms (NULL for the ready class). run_id ties order
// bytewise (COLLATE "C", as the indexes): the core merges the two classes with
// the same byte order, whatever the database's collation. $1 is now, $3 the
// expiry cutoff (claimed_at < cutoff means now - claimed_at > ttl).
//
// The ready queue subquery says `queue = ANY(ARRAY[$4]) ... ORDER BY queue, ...`
// rather than `queue = $4`: a plain equality makes the queue sort key
// redundant, and the generic plan then prefers walking the queue-less index
// (heap-correlated) with a queue filter, which reads every due run of every
// other queue first. An array condition keeps the key, and only the queue
// index delivers that order without a sort. The expired class has one index,
// runs_claimed, keyed on claim_renewed_at (set here, moved by a heartbeat or
// refresh_claim, and by a step only half a lease after the last renewal, so the
// steps of a short task stay HOT updates): claimed_at >= claim_renewed_at, so
// every expired claim lies in the range claim_renewed_at < cutoff; claimed_at
// is checked on the row and the few rows in range are sorted by it. A claim
// kept alive by heartbeats or steps is renewed out of the range. The queue,
// the index's last column, is checked in the index. A claim with a lease
// (lease_ms, set by claim_tasks) is also checked on the row: it is expired only
// once its lease has passed too (core/claim.hpp), whatever the TTL ($3).
Statement candidates_statement{
    "SELECT false, run_id, wake_at, claim_attempts, NULL::bigint, claimed_seq, claimed_attempt,"
    " claim_started_at, ctid FROM (SELECT run_id, wake_at, claim_attempts, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid"
    " FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL"
    " AND wake_at IS NOT NULL AND wake_at <= $1"
    " ORDER BY wake_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS ready"
    " UNION ALL SELECT true, run_id, claimed_at, claim_attempts, lease_ms, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, claimed_at, claim_attempts,"
    " lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs"
    " WHERE status = 'running'"
    " AND poisoned_at IS NULL AND claim_token IS NOT NULL AND claim_renewed_at < $3"
    " AND claimed_at < $3 AND (lease_ms IS NULL"
    " OR claimed_at + lease_ms * interval '1 millisecond' < $1)"
    " ORDER BY claimed_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS expired",
    3,
    {TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID},
    nullptr};

Statement candidates_queue_statement{
    "SELECT false, run_id, wake_at, claim_attempts, NULL::bigint, claimed_seq, claimed_attempt,"
    " claim_started_at, ctid FROM (SELECT run_id, wake_at, claim_attempts, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid"
    " FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL"
    " AND wake_at IS NOT NULL AND queue = ANY(ARRAY[$4]) AND wake_at <= $1"
    " ORDER BY queue, wake_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS ready"
    " UNION ALL SELECT true, run_id, claimed_at, claim_attempts, lease_ms, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, claimed_at, claim_attempts,"
    " lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs"
    " WHERE status = 'running'"
    " AND poisoned_at IS NULL AND claim_token IS NOT NULL AND claim_renewed_at < $3"
    " AND claimed_at < $3 AND queue = $4 AND (lease_ms IS NULL"
    " OR claimed_at + lease_ms * interval '1 millisecond' < $1)"
    " ORDER BY claimed_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS expired",
    4,
    {TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID, TEXTOID},
    nullptr};

// The same scans for a caller bound to tenants (caller::bound_tenants): each
// class is limited to their runs in the query itself ($4, or $5 with a queue:
// the tenants, text[]), checked on the row under the same index paths, so
// another tenant's run is never locked, leased or poisoned.
Statement candidates_bound_statement{
    "SELECT false, run_id, wake_at, claim_attempts, NULL::bigint, claimed_seq, claimed_attempt,"
    " claim_started_at, ctid FROM (SELECT run_id, wake_at, claim_attempts, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid"
    " FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL"
    " AND wake_at IS NOT NULL AND wake_at <= $1 AND tenant_id = ANY($4)"
    " ORDER BY wake_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS ready"
    " UNION ALL SELECT true, run_id, claimed_at, claim_attempts, lease_ms, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, claimed_at, claim_attempts,"
    " lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs"
    " WHERE status = 'running'"
    " AND poisoned_at IS NULL AND claim_token IS NOT NULL AND claim_renewed_at < $3"
    " AND claimed_at < $3 AND (lease_ms IS NULL"
    " OR claimed_at + lease_ms * interval '1 millisecond' < $1) AND tenant_id = ANY($4)"
    " ORDER BY claimed_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS expired",
    4,
    {TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID, TEXTARRAYOID},
    nullptr};

Statement candidates_queue_bound_statement{
    "SELECT false, run_id, wake_at, claim_attempts, NULL::bigint, claimed_seq, claimed_attempt,"
    " claim_started_at, ctid FROM (SELECT run_id, wake_at, claim_attempts, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid"
    " FROM docket.runs WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL"
    " AND wake_at IS NOT NULL AND queue = ANY(ARRAY[$4]) AND wake_at <= $1"
    " AND tenant_id = ANY($5)"
    " ORDER BY queue, wake_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS ready"
    " UNION ALL SELECT true, run_id, claimed_at, claim_attempts, lease_ms, claimed_seq,"
    " claimed_attempt, claim_started_at, ctid FROM (SELECT run_id, claimed_at, claim_attempts,"
    " lease_ms, claimed_seq, claimed_attempt, claim_started_at, ctid FROM docket.runs"
    " WHERE status = 'running'"
    " AND poisoned_at IS NULL AND claim_token IS NOT NULL AND claim_renewed_at < $3"
    " AND claimed_at < $3 AND queue = $4 AND (lease_ms IS NULL"
    " OR claimed_at + lease_ms * interval '1 millisecond' < $1) AND tenant_id = ANY($5)"
    " ORDER BY claimed_at, run_id COLLATE \"C\" LIMIT $2 FOR UPDATE SKIP LOCKED) AS expired",
    5,
    {TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID, TEXTOID, TEXTARRAYOID},
    nullptr};

// The lease touches only rows this transaction has just locked, found by the
// ctid the candidate scan returned (a TID scan per row: no second descent of
// the primary key; the row lock keeps the version where it is), joined to
// their tokens: $1 the ctids, $4 the tokens (fresh_tokens: drawn in one call,
// where gen_random_uuid() per row cost about a fifth of the update), $5 the
// run ids, checked on the row. Never `UPDATE ... FROM cte`, whose generic
// plan can turn into a join over the whole table: the join is a nested loop
// over the arrays (sql/plans_claim.sql). Both updates return the same columns
// (see Returned).
#define DOCKET_LEASE_SET                                             \
  "UPDATE docket.runs r SET claim_token = l.token, claimed_at = $2," \
  " claim_started_at = $2, claim_renewed_at = $2, wake_at = NULL,"   \
  " claim_attempts = r.claim_attempts + 1, lease_ms = $3"
#define DOCKET_LEASE_RETURNING                                                         \
  " FROM unnest($1::tid[], $4::uuid[], $5::text[]) AS l(tid, token, id)"               \
  " WHERE r.ctid = l.tid AND r.run_id = l.id"                                          \
  " RETURNING r.run_id, tenant_id, graph_id, graph_hash, checkpoint_seq, claim_token," \
  " claimed_at, claim_attempts, poisoned_at, poison_reason, queue"
// A lease by claim_due ends what a task's row said of its previous claim
// (claimed_seq: claim_runs logs that event first).
Statement lease_statement{DOCKET_LEASE_SET
                          ", claimed_seq = NULL, claimed_attempt = NULL" DOCKET_LEASE_RETURNING,
                          5,
                          {TIDARRAYOID, TIMESTAMPTZOID, INT8OID, UUIDARRAYOID, TEXTARRAYOID},
                          nullptr};

// The same for claim_tasks: also the task's attempt and wake reason, which
// its document carries, so the task layer need not read the run again; and
// the task's history, in the same statement: each task lease is a claimed
// event, preceded by a woke event when a sleep or wait put wake_pending in
// the document (task_wait.cpp). The lease takes the key out and leaves
// woke_seq, the woke event's number, so the returned row tells whether this
// lease woke the task (woke_seq = event_seq - 1) and a later lease of the
// same version records no second woke.
// The claimed event is not logged: the row states it (claimed_seq, with the
// attempt in claimed_attempt, at claim_started_at; src/pg/events.cpp reads
// it there) until the task's next lease, which logs it first (claim_runs).
// (SET reads the row as it was: claimed_seq is the new event_seq.)
// A lease that wakes no task is written directly where it can be
// (pg/run_write.hpp's write_task_leases); this statement leases the rest.
Statement lease_task_statement{
    "WITH leased AS (" DOCKET_LEASE_SET
    ", claimed_seq = CASE WHEN graph_hash = 'task' THEN event_seq"
    " + CASE WHEN document ? 'wake_pending' THEN 2 ELSE 1 END END,"
    " claimed_attempt = CASE WHEN graph_hash = 'task' THEN (document ->> 'attempt')::int END"
    ", event_seq = event_seq + CASE WHEN graph_hash <> 'task' THEN 0"
    " WHEN document ? 'wake_pending' THEN 2 ELSE 1 END,"
    " document = CASE WHEN graph_hash = 'task' AND document ? 'wake_pending'"
    " THEN (document - 'wake_pending') || jsonb_build_object('woke_seq', event_seq + 1)"
    " ELSE document END" DOCKET_LEASE_RETURNING
    ", (document ->> 'attempt')::int AS attempt, document ->> 'wake_reason' AS wake_reason,"
    " event_seq, graph_hash = 'task' AND (document ->> 'woke_seq')::bigint = event_seq - 1 AS "
    "woke),"
    " history AS (INSERT INTO docket.run_events (run_id, seq, type, payload, recorded_at)"
    " SELECT run_id, event_seq - 1, 'woke', jsonb_build_object('reason', wake_reason), $2"
    " FROM leased WHERE woke)"
    " SELECT * FROM leased",
    5,
    {TIDARRAYOID, TIMESTAMPTZOID, INT8OID, UUIDARRAYOID, TEXTARRAYOID},
    nullptr};
#undef DOCKET_LEASE_SET
#undef DOCKET_LEASE_RETURNING

// A poisoned task's history records it (claim_runs).
Statement poison_statement{
    "UPDATE docket.runs SET claim_token = NULL, claimed_at = NULL, wake_at = NULL,"
    " poisoned_at = $2, poison_reason = 'max_claim_attempts_exceeded',"
    " event_seq = event_seq + (graph_hash = 'task')::int"
    " WHERE run_id = ANY($1)"
    " RETURNING run_id, tenant_id, graph_id, graph_hash, checkpoint_seq, claim_token,"
    " claimed_at, claim_attempts, poisoned_at, poison_reason, queue, NULL::int, NULL::text,"
    " event_seq",
    2,
    {TEXTARRAYOID, TIMESTAMPTZOID},
    nullptr};

// Columns of the RETURNING lists above, 1-based.
enum Returned {
  r_run_id = 1,
  r_tenant_id,
  r_graph_id,
  r_graph_hash,
  r_checkpoint_seq,
  r_claim_token,
  r_claimed_at,
  r_claim_attempts,
  r_poisoned_at,
  r_poison_reason,
  r_queue,
  r_task_attempt,  // lease_task_statement and poison_statement only
  r_wake_reason,
  r_event_seq,
  r_woke,  // lease_task_statement only
  r_columns = r_woke,
};

ClaimRequest claim_args(FunctionCallInfo fcinfo) {
  ClaimRequest args;
  args.policy.now = now_arg(fcinfo, 0);
  args.policy.limit = int32_arg(fcinfo, 1, "claim_limit");
  args.policy.orphan_ttl_ms = int64_arg(fcinfo, 2, "orphan_ttl_ms");
  args.policy.max_claim_attempts = int32_arg(fcinfo, 3, "max_claim_attempts");
  validate_claim_policy(args.policy);
  if (const auto preference = optional_text_arg(fcinfo, 4)) {
    args.policy.preference = parse_claim_class(*preference);
    if (!args.policy.preference)
      fail(Reason::bad_argument,
           "preference must be NULL, 'ready' or 'expired', got '" + *preference + "'");
  }
  args.queue = optional_text_arg(fcinfo, 5);
  if (args.queue) validate_queue(*args.queue);
  return args;
}

struct Candidates {
  std::vector<Candidate> ready;
  std::vector<Candidate> expired;
};

// Runs the candidate scan and reads its rows; an expired candidate's eligible
// time is its claimed_at plus the TTL or its lease, the longer.
// What a task's row says of its previous claim, whose claimed event the
// row states instead of the log (lease_task_statement).
struct PreviousClaim {
  std::int64_t seq = 0;
  std::int32_t attempt = 0;
  Micros at = 0;  // claim_started_at
};

// Where each candidate's row version is (its ctid), for the lease, and
// whether the row had been leased before (it has a claim_started_at).
struct Located {
  ItemPointerData ctid;
  bool leased_before;
};
using Ctids = std::unordered_map<std::string, Located>;

Candidates scan(const ClaimRequest& args, std::unordered_map<std::string, PreviousClaim>& previous,
                Ctids& ctids) {
  const ClaimPolicy& policy = args.policy;
  Datum values[5] = {TimestampTzGetDatum(policy.now), Int64GetDatum(policy.limit),
                     TimestampTzGetDatum(expiry_cutoff(policy)), Datum(0), Datum(0)};
  const bool queued = args.queue.has_value();
  if (queued) values[3] = text_datum(*args.queue);
  // A caller bound to tenants claims only their runs (docs/security.md).
  const std::optional<std::vector<std::string>> tenants = caller::bound_tenants();
  if (tenants) values[queued ? 4 : 3] = text_array(*tenants);
  Statement& statement =
      tenants ? (queued ? candidates_queue_bound_statement : candidates_bound_statement)
              : (queued ? candidates_queue_statement : candidates_statement);
  spi_prepare_generic(statement);  // plans_*.sql pins its generic plan
  const std::uint64_t rows = spi_execute(statement, values, nullptr);
  Candidates out;
  for (std::uint64_t row = 0; row < rows; ++row) {
    Datum v[kCandidateColumns];
    bool null[kCandidateColumns];
    spi_row(row, v, null, kCandidateColumns);
    const bool expired = DatumGetBool(v[0]);
    Candidate c;
    c.run_id = text_value(v[1]);
    const Micros at = DatumGetTimestampTz(v[2]);
    if (expired) {
      c.eligible_at = expired_eligible_at(
          at, policy.orphan_ttl_ms,
          null[4] ? std::nullopt : std::optional<std::int64_t>(DatumGetInt64(v[4])));
    } else {
      c.eligible_at = at;
    }
    c.claim_attempts = DatumGetInt32(v[3]);
    const bool never_leased = null[7];
    if (!null[5]) {
      PreviousClaim p;
      p.seq = DatumGetInt64(v[5]);
      p.attempt = null[6] ? 0 : DatumGetInt32(v[6]);
      p.at = never_leased ? 0 : DatumGetTimestampTz(v[7]);
      previous.emplace(c.run_id, p);
    }
    const void* ctid = DatumGetPointer(v[8]);
    ctids.emplace(c.run_id, Located{*static_cast<const ItemPointerData*>(ctid), !never_leased});
    (expired ? out.expired : out.ready).push_back(std::move(c));
  }
  return out;
}

// The history event of a task's poisoning, whose number the statement
// reserved (`last_seq`).
HistoryEvent poisoned_event(const ClaimRow& row, std::int64_t last_seq) {
  return {row.values[c_run_id], last_seq, "poisoned",
          json_object({{"reason", json_string("max_claim_attempts_exceeded")}})};
}

// `n` claim tokens: random (version 4) UUIDs from one draw of the strong
// random source, UUID_LEN bytes each.
std::vector<std::uint8_t> fresh_tokens(int n) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n) * UUID_LEN);
  if (!call([&] { return pg_strong_random(bytes.data(), bytes.size()); }))
    throw std::runtime_error("claim: could not generate claim tokens");
  for (int i = 0; i < n; ++i) {
    std::uint8_t* token = bytes.data() + static_cast<std::size_t>(i) * UUID_LEN;
    token[6] = static_cast<std::uint8_t>((token[6] & 0x0fu) | 0x40u);  // version 4
    token[8] = static_cast<std::uint8_t>((token[8] & 0x3fu) | 0x80u);  // RFC 4122 variant
  }
  return bytes;
}

Datum token_datum(std::vector<std::uint8_t>& tokens, std::size_t i) {
  return PointerGetDatum(tokens.data() + i * UUID_LEN);
}

// Applies one update to `ids` and files each returned row at its place in
// the output (`position` maps run_id to it), copied out of SPI memory, and
// adds the history events of the tasks it poisoned (a task lease records its
// own: lease_task_statement).
// `outcome` must live outside SPI memory.
void apply(Statement& statement, const std::vector<std::string>& ids, const Ctids& ctids,
           Micros now, Datum outcome, std::int64_t ttl_ms, std::optional<std::int64_t> lease_ms,
           const std::unordered_map<std::string, std::size_t>& position,
           std::vector<ClaimRow>& output, std::vector<HistoryEvent>& history) {
  if (ids.empty()) return;
  const bool lease = &statement != &poison_statement;
  // Files one updated row, its columns in the Returned order (outside SPI
  // memory), at its place in the output.
  auto file = [&](const Datum* v, const bool* null) {
    const std::string run_id = text_value(v[r_run_id - 1]);
    ClaimRow& out = output.at(position.at(run_id));
    auto copy = [&](ClaimColumn to, Returned from) {
      out.nulls[to] = null[from - 1];
      out.values[to] = null[from - 1] ? Datum(0) : v[from - 1];
    };
    out.leased = lease;
    out.values[c_outcome] = outcome;
    out.nulls[c_outcome] = false;
    copy(c_run_id, r_run_id);
    copy(c_tenant_id, r_tenant_id);
    copy(c_graph_id, r_graph_id);
    copy(c_graph_hash, r_graph_hash);
    copy(c_checkpoint_seq, r_checkpoint_seq);
    copy(c_claim_token, r_claim_token);
    copy(c_claimed_at, r_claimed_at);
    copy(c_claim_attempt, r_claim_attempts);
    out.values[c_orphan_ttl_ms] = Int64GetDatum(ttl_ms);
    out.nulls[c_orphan_ttl_ms] = false;
    copy(c_poisoned_at, r_poisoned_at);
    copy(c_poison_reason, r_poison_reason);
    copy(c_queue, r_queue);
    if (&statement == &lease_task_statement) {
      out.task_attempt = v[r_task_attempt - 1];
      out.task_attempt_null = null[r_task_attempt - 1];
      out.wake_reason = v[r_wake_reason - 1];
      out.wake_reason_null = null[r_wake_reason - 1];
    }
    if (!out.leased && text_value(out.values[c_graph_hash]) == kTaskGraphHash)
      history.push_back(poisoned_event(out, DatumGetInt64(v[r_event_seq - 1])));
  };

  std::vector<std::uint8_t> tokens;
  if (lease) tokens = fresh_tokens(static_cast<int>(ids.size()));
  // The runs the statement updates: all of them, or those the direct lease
  // left to it.
  std::vector<std::string> rest;
  const std::vector<std::string>* todo = &ids;
  if (lease) {
    // The lease, written directly where it can be (pg/run_write.hpp).
    const int n = static_cast<int>(ids.size());
    std::vector<RunLease> leases(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      leases[i] = {ctids.at(ids[i]).ctid, text_datum(ids[i]), token_datum(tokens, i)};
    std::vector<LeasedRow> rows(ids.size());
    const LeaseValues values{now, lease_ms.has_value(), lease_ms.value_or(0)};
    static_assert(kLeaseColumns == r_queue, "the direct leases return lease_statement's columns");
    if (&statement == &lease_statement) {
      if (write_leases(leases.data(), n, values, rows.data())) {
        for (const LeasedRow& row : rows) file(row.values, row.nulls);
        return;
      }
    } else {
      std::vector<TaskLeased> facts(ids.size());
      if (write_task_leases(leases.data(), n, values, rows.data(), facts.data())) {
        std::vector<std::uint8_t> rest_tokens;
        for (std::size_t i = 0; i < ids.size(); ++i) {
          if (!facts[i].written) {
            rest.push_back(ids[i]);
            const std::uint8_t* token = tokens.data() + i * UUID_LEN;
            rest_tokens.insert(rest_tokens.end(), token, token + UUID_LEN);
            continue;
          }
          Datum v[r_columns];
          bool null[r_columns];
          std::copy(rows[i].values, rows[i].values + kLeaseColumns, v);
          std::copy(rows[i].nulls, rows[i].nulls + kLeaseColumns, null);
          v[r_task_attempt - 1] = facts[i].attempt;
          null[r_task_attempt - 1] = facts[i].attempt_null;
          v[r_wake_reason - 1] = facts[i].wake_reason;
          null[r_wake_reason - 1] = facts[i].wake_reason_null;
          file(v, null);
        }
        if (rest.empty()) return;
        tokens = std::move(rest_tokens);
        todo = &rest;
      }
    }
  }

  const std::vector<std::string>& update = *todo;
  const int n = static_cast<int>(update.size());
  Datum values[5] = {Datum(0), TimestampTzGetDatum(now), Int64GetDatum(lease_ms.value_or(0)),
                     Datum(0), text_array(update)};
  if (lease) {
    std::vector<ItemPointerData> where(update.size());
    std::vector<Datum> elements(update.size());
    std::vector<Datum> token_elements(update.size());
    for (std::size_t i = 0; i < update.size(); ++i) {
      where[i] = ctids.at(update[i]).ctid;
      elements[i] = PointerGetDatum(&where[i]);
      token_elements[i] = token_datum(tokens, i);
    }
    bool* no_nulls = nullptr;
    values[0] = make_array(elements.data(), no_nulls, n, TIDOID);
    values[3] = make_array(token_elements.data(), no_nulls, n, UUIDOID);
  } else {
    values[0] = values[4];  // poison_statement: $1 the run ids
  }
  const char nulls[6] = {' ', ' ', lease_ms ? ' ' : 'n', ' ', ' ', '\0'};
  // Generic: in the default mode a custom plan (the array's length known)
  // costs less than the generic one for a small batch, so every claim was
  // planned anew; the generic plan is the same (TID scans for a lease, the
  // primary key for a poisoning).
  spi_prepare_generic(statement);
  const std::uint64_t rows = spi_execute(statement, values, nulls);
  if (rows != update.size())
    throw std::logic_error("claim_due: a locked candidate was not updated");
  for (std::uint64_t row = 0; row < rows; ++row) {
    // The row, copied out of SPI memory once: the claim's values outlive it.
    Datum v[r_columns];
    bool null[r_columns];
    spi_row(row, v, null, r_columns, true);
    file(v, null);
  }
}

Datum claim_due(FunctionCallInfo fcinfo) {
  const ClaimRequest args = claim_args(fcinfo);
  call([&] { InitMaterializedSRF(fcinfo, 0); });
  auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  const Datum lease_text = text_datum("lease");  // before SPI: outlives spi_finish
  const Datum poisoned_text = text_datum("poisoned");

  spi_connect();
  std::vector<ClaimRow> output = claim_runs(args, lease_text, poisoned_text);
  spi_finish();

  for (ClaimRow& row : output)
    call([&] { tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row.values, row.nulls); });
  return Datum(0);
}

}  // namespace

Datum text_array(const std::vector<std::string>& texts) {
  return call([&] {
    Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * (texts.size() + 1)));
    for (std::size_t i = 0; i < texts.size(); ++i)
      elems[i] = PointerGetDatum(
          cstring_to_text_with_len(texts[i].data(), static_cast<int>(texts[i].size())));
    return PointerGetDatum(
        construct_array(elems, static_cast<int>(texts.size()), TEXTOID, -1, false, TYPALIGN_INT));
  });
}

std::vector<ClaimRow> claim_runs(const ClaimRequest& args, Datum lease_text, Datum poisoned_text) {
  const ClaimPolicy& policy = args.policy;
  std::unordered_map<std::string, PreviousClaim> previous;
  Ctids ctids;
  const Candidates candidates = scan(args, previous, ctids);
  const std::vector<Candidate>& ready = candidates.ready;
  const std::vector<Candidate>& expired = candidates.expired;
  const std::vector<Pick> picks = select_candidates(ready, expired, policy);

  std::vector<std::string> lease_ids;
  std::vector<std::string> poison_ids;
  std::unordered_map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < picks.size(); ++i) {
    const Candidate& c =
        picks[i].cls == ClaimClass::ready ? ready[picks[i].index] : expired[picks[i].index];
    position.emplace(c.run_id, i);
    const ClaimDecision decision = decide_claim(c.claim_attempts, policy.max_claim_attempts);
    (decision.kind == ClaimDecision::Kind::lease ? lease_ids : poison_ids).push_back(c.run_id);
  }

  std::vector<ClaimRow> output(picks.size());
  std::vector<HistoryEvent> history;
  apply(args.task_facts ? lease_task_statement : lease_statement, lease_ids, ctids, policy.now,
        lease_text, policy.orphan_ttl_ms, args.lease_ms, position, output, history);
  // A new lease ends what the row says of the run's previous claim: its
  // claimed event goes to the log, as it was (number, attempt, time).
  for (const std::string& id : lease_ids) {
    output.at(position.at(id)).leased_before = ctids.at(id).leased_before;
    const auto p = previous.find(id);
    if (p == previous.end()) continue;
    history.push_back({output.at(position.at(id)).values[c_run_id], p->second.seq, "claimed",
                       json_object({{"attempt", std::to_string(p->second.attempt)}}),
                       p->second.at});
  }
  apply(poison_statement, poison_ids, ctids, policy.now, poisoned_text, policy.orphan_ttl_ms,
        std::nullopt, position, output, history);
  append_history(history, policy.now);
  for (std::size_t i = 0; i < picks.size(); ++i)
    output[i].expired = picks[i].cls == ClaimClass::expired;
  // Every claim leaves dead entries at the head of the claim scans; a vacuum
  // removes them (pg/vacuum.hpp).
  vacuum_if_due();
  return output;
}

}  // namespace docket::pg

DOCKET_FUNCTION(docket_claim_due, docket::pg::claim_due)
