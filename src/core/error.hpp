// The reasons a docket call can fail, and the one exception type that carries
// them from the pure core to the PostgreSQL boundary.
#pragma once

#include <exception>
#include <string>

namespace docket {

enum class Reason {
  stale_fence,            // DK001
  invalid_commit,         // DK002
  not_found,              // DK003
  inactive_run,           // DK004
  invalid_mutation,       // DK005
  graph_conflict,         // DK006
  invalid_run,            // DK007
  bad_argument,           // 22023
  duplicate_run,          // 23505
  cancelled,              // DK010: the task was cancelled (or ran past max_duration_ms)
  limit_exceeded,         // 54000: a value over its size cap (docket.max_*_bytes)
  serialization_failure,  // 40001: a row vanished under a concurrent transaction; retry
};

// Five-character SQLSTATE of a reason.
const char* sqlstate(Reason reason) noexcept;

// The word every message of this reason starts with ("stale_fence", ...).
const char* reason_word(Reason reason) noexcept;

// A refused transition. what() is "<reason word>: <detail>".
class Error : public std::exception {
 public:
  Error(Reason reason, std::string detail);
  Reason reason() const noexcept { return reason_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Reason reason_;
  std::string message_;
};

[[noreturn]] void fail(Reason reason, std::string detail);

}  // namespace docket
