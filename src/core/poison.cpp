#include "core/poison.hpp"

#include <string>

namespace docket {

Recovery decide_recovery(const std::string& run_id, Status status, bool poisoned) {
  if (is_terminal(status))
    fail(Reason::inactive_run,
         "run " + run_id + " is " + status_name(status) + " and cannot be recovered");
  return poisoned ? Recovery::recover : Recovery::unchanged;
}

}  // namespace docket
