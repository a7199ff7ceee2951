#include "core/error.hpp"

#include <utility>

namespace docket {

const char* sqlstate(Reason reason) noexcept {
  switch (reason) {
    case Reason::stale_fence:
      return "DK001";
    case Reason::invalid_commit:
      return "DK002";
    case Reason::not_found:
      return "DK003";
    case Reason::inactive_run:
      return "DK004";
    case Reason::invalid_mutation:
      return "DK005";
    case Reason::graph_conflict:
      return "DK006";
    case Reason::invalid_run:
      return "DK007";
    case Reason::bad_argument:
      return "22023";
    case Reason::duplicate_run:
      return "23505";
    case Reason::cancelled:
      return "DK010";
    case Reason::limit_exceeded:
      return "54000";
    case Reason::serialization_failure:
      return "40001";
  }
  return "XX000";
}

const char* reason_word(Reason reason) noexcept {
  switch (reason) {
    case Reason::stale_fence:
      return "stale_fence";
    case Reason::invalid_commit:
      return "invalid_commit";
    case Reason::not_found:
      return "not_found";
    case Reason::inactive_run:
      return "inactive_run";
    case Reason::invalid_mutation:
      return "invalid_mutation";
    case Reason::graph_conflict:
      return "graph_conflict";
    case Reason::invalid_run:
      return "invalid_run";
    case Reason::bad_argument:
      return "bad_argument";
    case Reason::duplicate_run:
      return "duplicate_run";
    case Reason::cancelled:
      return "cancelled";
    case Reason::limit_exceeded:
      return "limit_exceeded";
    case Reason::serialization_failure:
      return "serialization_failure";
  }
  return "internal";
}

Error::Error(Reason reason, std::string detail)
    : reason_(reason), message_(std::string(reason_word(reason)) + ": " + std::move(detail)) {}

void fail(Reason reason, std::string detail) {
  throw Error(reason, std::move(detail));
}

}  // namespace docket
