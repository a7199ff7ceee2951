// run_write: a commit's update of one docket.runs row, claim_due's and
// claim_tasks' lease of the rows their candidate scan locked, a step
// checkpoint's claim refresh and a task's completion, written through the
// table and index access methods instead of an UPDATE statement.
//
// An UPDATE through SPI starts an executor for each call: more than half of a
// commit's instructions went to starting it (opening seven indexes, building
// their IndexInfos and projections), reading the CHECK constraint's expression
// back from the catalog and planning it, and compiling six partial-index
// predicates, all to write one row (bench/README.md, "Seventeenth session").
// Here what does not change from call to call (the table's column numbers, its
// indexes' IndexInfos and compiled predicates) is built once per backend and
// dropped when the table's relcache entry is invalidated. A commit, a step
// refresh and a completion find the row by its primary key and check the
// fence on it; a lease takes the version the candidate scan locked, by its
// ctid. Each forms the new version, checks the table's row rules (core
// run_row_rules_hold, which the CHECK's function calls too) and NOT NULLs,
// updates it with table_tuple_update and inserts the index entries a non-HOT
// version needs, each partial index's predicate evaluated on the new version,
// as the executor does.
//
// It applies only where that is the whole of what the statement would do: no
// trigger on the table fires on UPDATE but the foreign keys' own (the run id,
// their key, never changes), no rule, row security, inheritance child,
// expression or exclusion index or deferred unique index; the caller may
// select and update the table; the transaction may write; docket.direct_writes
// is on. Otherwise, and when the row was changed by a transaction that
// committed after this call's snapshot, nothing is written and the caller runs
// its UPDATE statement, whose re-check under the row lock decides.
#pragma once

#include "pg/boundary.hpp"

namespace docket::pg {

// What the fenced update matches: the run, the caller's scope and the fence
// and identity facts of commit_statement's WHERE clause. Datums of the
// columns' types (text, uuid); `tenant` is read only when !any_tenant and
// !tenant_null.
struct RunFence {
  Datum run_id;
  bool any_tenant;  // the system scope
  bool tenant_null;
  Datum tenant;
  int64 checkpoint_seq;
  Datum claim_token;
  Datum graph_id;
  Datum graph_hash;
  TimestampTz started_at;
};

// The columns a commit writes (commit_statement's SET list). With keep_claim
// the token stays and claimed_at only moves forward to `claimed_at` (when
// has_claimed_at); otherwise both are cleared. Counters go to 0 and the poison
// facts to NULL.
struct RunCommitValues {
  Datum document;  // jsonb
  Datum status;    // text
  int64 checkpoint_seq;
  Datum checkpoint_type;  // docket.checkpoint_type
  TimestampTz updated_at;
  bool keep_claim;
  bool has_claimed_at;
  TimestampTz claimed_at;
  bool has_wake_at;
  TimestampTz wake_at;
};

enum class RowWrite {
  applied,       // the row matched and holds the new version
  no_match,      // no version visible now matches: nothing written
  use_statement  // this path does not apply: nothing written
};

// Applies a commit to the row `fence` names. On `applied`, *queue is the
// run's queue (text, in the caller's memory context).
RowWrite write_commit(const RunFence& fence, const RunCommitValues& values, Datum* queue);

// A run to lease: the row version the candidate scan locked (this
// transaction holds its lock), checked to be run `run_id`, and its new token.
struct RunLease {
  ItemPointerData ctid;
  Datum run_id;  // text
  Datum token;   // uuid
};

// The lease's columns (claim.cpp's lease_statement): the token, claimed_at,
// claim_started_at and claim_renewed_at `now`, wake_at NULL, one more claim
// attempt, lease_ms (NULL unless has_lease_ms), claimed_seq and
// claimed_attempt NULL.
struct LeaseValues {
  TimestampTz now;
  bool has_lease_ms;
  int64 lease_ms;
};

// A leased row's columns, in the order of lease_statement's RETURNING list:
// run_id, tenant_id, graph_id, graph_hash, checkpoint_seq, claim_token,
// claimed_at, claim_attempts, poisoned_at, poison_reason, queue.
constexpr int kLeaseColumns = 11;
struct LeasedRow {
  Datum values[kLeaseColumns];
  bool nulls[kLeaseColumns];
};

// Leases `count` locked runs, filling out[0..count): returns false, having
// written nothing, when this path does not apply (the caller runs
// lease_statement). A candidate that is not where the scan locked it raises
// an error (it cannot move under the lock). Needs an open SPI connection: the
// returned values are copied into the context SPI_connect was called in.
bool write_leases(const RunLease* leases, int count, const LeaseValues& values, LeasedRow* out);

// claim_tasks' lease (claim.cpp's lease_task_statement) of a run whose
// document is an object without wake_pending: the lease's columns, and for a
// task one event more, stated by the row (claimed_seq, the new event_seq;
// claimed_attempt, the document's attempt). Besides lease_statement's
// columns it returns the document's attempt (int) and wake_reason (text).
struct TaskLeased {
  bool written = false;  // false: the statement leases this run
  Datum attempt = Datum(0);
  bool attempt_null = true;
  Datum wake_reason = Datum(0);
  bool wake_reason_null = true;
};

// Leases the locked runs it can, filling out[i] and facts[i] for each one
// written (facts[i].written); a run whose lease wakes it (wake_pending, whose
// woke event the statement logs), whose document is not an object, or whose
// attempt, woke_seq or wake_reason the statement's casts would read
// otherwise (or raise on), or whose counter is at its end, is left to the
// statement. Returns false, having written nothing, when this path does not
// apply. Like write_leases, needs an open SPI connection.
bool write_task_leases(const RunLease* leases, int count, const LeaseValues& values, LeasedRow* out,
                       TaskLeased* facts);

// A step checkpoint's claim refresh of one held task (task_steps.cpp's
// held_statement): matched by run id, token, a task's graph and its deadline
// after `now`; claimed_at moves forward to `now`, claim_renewed_at too once
// half the lease has passed since it, claim_attempts goes to 0 when `fresh`
// > 0, and event_seq advances by `fresh`.
struct StepRefresh {
  Datum run_id;  // text
  Datum token;   // uuid
  int64 fresh;   // the run's steps this call stores
};
struct StepRefreshed {
  bool held = false;    // the row matched and holds the new version
  int64 event_seq = 0;  // then its counter after the update
};

// Refreshes items[from..count) in that order (the lock order), each found by
// its primary key under one snapshot (`under`, one the caller read under
// before and keeps registered, or a fresh one), until one needs the
// statement: a row changed since the snapshot (the statement's re-check under
// the lock decides), or a value out of range (the statement raises). Returns
// that item's index, count when every item was decided here (out[i].held
// false: no version visible matches), or -1 when this path does not apply
// (nothing written).
int write_step_refreshes(const StepRefresh* items, int from, int count, TimestampTz now,
                         StepRefreshed* out, Snapshot under = nullptr);

// A held task's completion (task_complete.cpp's complete_statement): matched
// as a step refresh is; the document becomes the stored one without the keys
// that are columns, plus {"result": result}; status and checkpoint type are
// the transition's, the checkpoint and event counters advance by one, the
// claim, schedule, counters and poison facts are cleared, and the completed
// event is stated by the row (completed_seq, completed_at).
struct TaskCompletion {
  Datum run_id;  // text
  Datum token;   // uuid
  Datum result;  // jsonb, unless result_null
  bool result_null;
};
struct TaskCompletionValues {
  TimestampTz now;
  Datum status;                 // text
  const char* checkpoint_type;  // a docket.checkpoint_type label
};

// Completes items[from..count) in that order, as write_step_refreshes
// refreshes: completed[i] for each one written here; returns the index of the
// first one the statement must write (a row changed since the snapshot, a
// task completed before, whose completed event the statement logs, or a
// counter at its end), count, or -1 when this path does not apply.
int write_task_completions(const TaskCompletion* items, int from, int count,
                           const TaskCompletionValues& values, bool* completed);

// A batch written in its order (the lock order) by one of the entry points
// above, with its statement where they stop: direct(from) writes from row
// `from` and returns where it stopped (count when it wrote or decided every
// row, or -1 when the path does not apply); each row it stops at goes to
// statement(i, i + 1) before the next is taken, and the rows left when the
// path does not apply to statement(from, count).
template <typename Direct, typename Statement>
void write_in_order(int count, Direct direct, Statement statement) {
  int from = 0;
  while (from < count) {
    const int stop = direct(from);
    if (stop < 0) {
      statement(from, count);
      return;
    }
    if (stop == count) return;
    statement(stop, stop + 1);
    from = stop + 1;
  }
}

}  // namespace docket::pg
