// Poison recovery: what retry_poisoned_run does to a run.
#include <gtest/gtest.h>

#include "core/poison.hpp"
#include "run_fixture.hpp"

namespace docket {
namespace {

using test::expect_error;

TEST(DecideRecovery, PoisonedActiveRunsAreRecovered) {
  EXPECT_EQ(decide_recovery("r-1", Status::running, true), Recovery::recover);
  EXPECT_EQ(decide_recovery("r-1", Status::waiting, true), Recovery::recover);
}

TEST(DecideRecovery, UnpoisonedActiveRunsAreLeftAlone) {
  EXPECT_EQ(decide_recovery("r-1", Status::running, false), Recovery::unchanged);
  EXPECT_EQ(decide_recovery("r-1", Status::waiting, false), Recovery::unchanged);
}

TEST(DecideRecovery, TerminalRunsAreInactiveEvenWhenPoisoned) {
  for (Status s : {Status::completed, Status::failed, Status::cancelled}) {
    for (bool poisoned : {false, true}) {
      SCOPED_TRACE(status_name(s));
      expect_error([&] { decide_recovery("r-9", s, poisoned); }, Reason::inactive_run,
                   std::string("run r-9 is ") + status_name(s) + " and cannot be recovered");
    }
  }
}

}  // namespace
}  // namespace docket
