// Reasons, their SQLSTATEs and the message prefix every docket error carries.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace docket {
namespace {

struct ReasonRow {
  Reason reason;
  const char* sqlstate;
  const char* word;
};

constexpr ReasonRow kRows[] = {
    {Reason::stale_fence, "DK001", "stale_fence"},
    {Reason::invalid_commit, "DK002", "invalid_commit"},
    {Reason::not_found, "DK003", "not_found"},
    {Reason::inactive_run, "DK004", "inactive_run"},
    {Reason::invalid_mutation, "DK005", "invalid_mutation"},
    {Reason::graph_conflict, "DK006", "graph_conflict"},
    {Reason::invalid_run, "DK007", "invalid_run"},
    {Reason::bad_argument, "22023", "bad_argument"},
    {Reason::duplicate_run, "23505", "duplicate_run"},
    {Reason::cancelled, "DK010", "cancelled"},
    {Reason::limit_exceeded, "54000", "limit_exceeded"},
    {Reason::serialization_failure, "40001", "serialization_failure"},
};

TEST(Reason, SqlstatesMatchTheContract) {
  for (const ReasonRow& row : kRows) {
    EXPECT_STREQ(sqlstate(row.reason), row.sqlstate) << row.word;
    EXPECT_STREQ(reason_word(row.reason), row.word);
  }
}

TEST(Error, MessageStartsWithTheReasonWord) {
  for (const ReasonRow& row : kRows) {
    const Error e(row.reason, "run r-1 went wrong");
    EXPECT_EQ(e.reason(), row.reason);
    EXPECT_EQ(std::string(e.what()), std::string(row.word) + ": run r-1 went wrong");
  }
}

TEST(Error, FailThrowsTheError) {
  try {
    fail(Reason::stale_fence, "run r-1 is at checkpoint_seq 2, not 1");
    FAIL() << "fail() returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.reason(), Reason::stale_fence);
    EXPECT_STREQ(e.what(), "stale_fence: run r-1 is at checkpoint_seq 2, not 1");
  }
}

TEST(Error, IsAStdException) {
  try {
    fail(Reason::bad_argument, "claim_limit must be between 1 and 10000, got 0");
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "bad_argument: claim_limit must be between 1 and 10000, got 0");
  }
}

}  // namespace
}  // namespace docket
