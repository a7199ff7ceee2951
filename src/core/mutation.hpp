// mutate_run: judging the decision a pure mutation function returned.
#pragma once

#include <optional>
#include <string>

#include "core/fence.hpp"
#include "core/run.hpp"

namespace docket {

// The docket.mutation_decision composite as read from the function's result.
struct MutationDecision {
  std::optional<std::string> decision;  // 'commit' | 'no_change' | 'error'
  bool has_run = false;
  RunFields run;
  bool has_checkpoint_type = false;
  std::optional<std::string> schedule;
  bool has_wake_at = false;
};

enum class MutationKind { commit, no_change, error };

// Raises invalid_mutation for a NULL or unknown decision.
MutationKind parse_mutation_kind(const MutationDecision& decision);

// A commit decision: same run id, exactly the current sequence plus one, a
// release schedule that fits the status, unchanged identity. Raises
// invalid_mutation.
ValidProposal validate_mutation_commit(const MutationDecision& decision, const StoredRun& current);

}  // namespace docket
