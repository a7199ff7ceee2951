// The claim scan of claim_due, for the entry points built on it (claim_due
// itself and the task layer's claim_tasks): candidates chosen by the core,
// leased or poisoned in one atomic operation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/claim.hpp"
#include "pg/boundary.hpp"

namespace docket::pg {

struct ClaimRequest {
  ClaimPolicy policy;
  std::optional<std::string> queue;  // nullopt: every queue
  bool task_facts = false;           // also return each lease's task attempt and wake reason
  // The lease each new claim is granted (stored as runs.lease_ms; nullopt: none,
  // the claim expires by the next claimer's TTL, as claim_due's do).
  std::optional<std::int64_t> lease_ms;
};

// Columns of claim_due's result, 0-based.
enum ClaimColumn {
  c_outcome,
  c_run_id,
  c_tenant_id,
  c_graph_id,
  c_graph_hash,
  c_checkpoint_seq,
  c_claim_token,
  c_claimed_at,
  c_claim_attempt,
  c_orphan_ttl_ms,
  c_poisoned_at,
  c_poison_reason,
  c_queue,
  c_columns
};

// One outcome, its by-reference datums copied out of SPI memory (they live in
// the memory context that was current when claim_runs was called).
struct ClaimRow {
  bool leased = false;   // false: poisoned
  bool expired = false;  // picked from the expired class (its earlier claim expired)
  Datum values[c_columns];
  bool nulls[c_columns];
  // With ClaimRequest::task_facts, for a lease: the document's attempt and
  // wake_reason (NULL when absent).
  Datum task_attempt = Datum(0);
  bool task_attempt_null = true;
  Datum wake_reason = Datum(0);
  bool wake_reason_null = true;
  // For a lease: the row had been leased before (claim_started_at was set).
  // Every lease sets it and nothing clears it, and a task stores steps only
  // under a lease, so a first lease has no steps to read (claim_tasks).
  bool leased_before = false;
};

// Leases or poisons up to policy.limit due and expired runs, skipping locked
// rows. Rows come in the core's pick order. Needs an open SPI connection;
// `lease_text` and `poisoned_text` (the outcome column's values) must live
// outside SPI memory.
std::vector<ClaimRow> claim_runs(const ClaimRequest& request, Datum lease_text,
                                 Datum poisoned_text);

// Builds a text[] datum in the current memory context.
Datum text_array(const std::vector<std::string>& texts);

}  // namespace docket::pg
