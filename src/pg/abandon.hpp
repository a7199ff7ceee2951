// abandon_claim's operation, for the entry points built on it (abandon_claim
// itself and the task layer's defer_task and claim_tasks).
#pragma once

#include "core/abandon.hpp"
#include "core/fence.hpp"
#include "pg/boundary.hpp"

namespace docket::pg {

// Hands back the claim `token` holds on `run_id` (a text datum) under the
// token-and-sequence fence: "rescheduled", "poisoned" or "stale". `policy` must
// be valid (validate_abandon_policy). Needs an open SPI connection.
const char* abandon_run(Datum run_id, const Token& token, const AbandonPolicy& policy);

}  // namespace docket::pg
