// Poison recovery: what retry_poisoned_run does to a run.
#pragma once

#include "core/run.hpp"

namespace docket {

enum class Recovery { unchanged, recover };

// Terminal runs raise inactive_run (checked first); a poisoned run is
// recovered; an unpoisoned one is left alone (idempotent success).
Recovery decide_recovery(const std::string& run_id, Status status, bool poisoned);

}  // namespace docket
