// What commit and mutate_run share: locking a visible run and writing its next
// version with a schedule effect.
#pragma once

#include <optional>
#include <string>

#include "core/fence.hpp"
#include "core/scope.hpp"
#include "pg/boundary.hpp"

namespace docket::pg {

// A run row locked FOR UPDATE. `document` lives in SPI memory until spi_finish.
struct LockedRun {
  StoredRun run;
  std::string queue;
  Datum document;
  std::string version;  // the locked row version's ctid, as text
};

// Raises invalid_mutation unless `locked`'s row is still the version that was
// locked: a mutation function must only decide, never write the run itself
// (directly, or by re-entering docket on it). Needs an open SPI connection.
void require_unchanged(const LockedRun& locked);

// Locks run `run_id` if `scope` can see it; nullopt otherwise. Needs an open
// SPI connection.
std::optional<LockedRun> try_lock_run(const Scope& scope, const std::string& run_id);

// try_lock_run, raising not_found for a run the scope cannot see.
LockedRun lock_run(const Scope& scope, const std::string& run_id);

// Replaces the locked run's document (stored verbatim) and columns, records
// the checkpoint type, stamps updated_at with `now`, resets counters and
// poison facts, applies `effect` and notifies when the run became due now.
// Returns the stored document, copied out of SPI memory.
Datum apply_transition(const LockedRun& locked, Datum document, const ValidProposal& proposal,
                       const std::string& checkpoint_type, Micros now,
                       const ScheduleEffect& effect);

}  // namespace docket::pg
