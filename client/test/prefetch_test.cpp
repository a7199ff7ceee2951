// PrefetchSizer: the automatic prefetch follows the rate at which runners start
// tasks and the time a claim takes (prefetch.hpp). Times are injected: no clock,
// no sleeps.
#include <gtest/gtest.h>

#include <chrono>

#include "prefetch.hpp"

namespace {

using docket::detail::PrefetchSizer;
using std::chrono::milliseconds;
using Clock = PrefetchSizer::Clock;

// Feeds `sizer` claims every `every`, each taking `latency`, while runners
// start `per_claim` tasks between two claims; returns the time after the last.
Clock::time_point feed(PrefetchSizer& sizer, Clock::time_point at, int claims, milliseconds every,
                       milliseconds latency, std::uint64_t& started, std::uint64_t per_claim) {
  for (int i = 0; i < claims; ++i) {
    at += every;
    started += per_claim;
    sizer.observe(latency, started, at);
  }
  return at;
}

TEST(PrefetchSizer, FixedPrefetchIgnoresTheWork) {
  PrefetchSizer sizer(7, 100);
  std::uint64_t started = 0;
  feed(sizer, Clock::time_point{}, 20, milliseconds(10), milliseconds(5), started, 1000);
  EXPECT_EQ(sizer.prefetch(), 7);
  PrefetchSizer none(0, 100);
  feed(none, Clock::time_point{}, 20, milliseconds(10), milliseconds(5), started, 1000);
  EXPECT_EQ(none.prefetch(), 0);
}

TEST(PrefetchSizer, AutomaticStartsEmpty) {
  PrefetchSizer sizer(-1, 100);
  EXPECT_EQ(sizer.prefetch(), 0);
  sizer.observe(milliseconds(5), 0, Clock::time_point{});  // the first claim only sets the baseline
  EXPECT_EQ(sizer.prefetch(), 0);
}

TEST(PrefetchSizer, ShortTasksBehindASlowClaimGetTwoRoundTripsOfWork) {
  // 5,000 tasks/s (50 per 10 ms), claims of 4 ms: 5,000 * 2 * 0.004 = 40.
  PrefetchSizer sizer(-1, 100);
  std::uint64_t started = 0;
  feed(sizer, Clock::time_point{}, 30, milliseconds(10), milliseconds(4), started, 50);
  EXPECT_EQ(sizer.prefetch(), 40);
}

TEST(PrefetchSizer, BoundedByMaxPrefetch) {
  PrefetchSizer sizer(-1, 25);
  std::uint64_t started = 0;
  feed(sizer, Clock::time_point{}, 30, milliseconds(10), milliseconds(4), started, 50);
  EXPECT_EQ(sizer.prefetch(), 25);
}

TEST(PrefetchSizer, SlowTasksGetNone) {
  // 10 runners on 1-second tasks: 10 tasks/s, claims of 4 ms: 10 * 2 * 0.004 = 0.08, rounded to 0.
  PrefetchSizer sizer(-1, 100);
  std::uint64_t started = 0;
  feed(sizer, Clock::time_point{}, 30, milliseconds(1000), milliseconds(4), started, 10);
  EXPECT_EQ(sizer.prefetch(), 0);
}

TEST(PrefetchSizer, FollowsTheWorkDownAgain) {
  PrefetchSizer sizer(-1, 100);
  std::uint64_t started = 0;
  Clock::time_point at =
      feed(sizer, Clock::time_point{}, 30, milliseconds(10), milliseconds(4), started, 50);
  ASSERT_EQ(sizer.prefetch(), 40);
  feed(sizer, at, 30, milliseconds(10), milliseconds(4), started, 5);  // a tenth of the rate
  EXPECT_EQ(sizer.prefetch(), 4);
}

TEST(PrefetchSizer, ClaimsCloserThanTheMinimumSampleDoNotMoveTheRate) {
  PrefetchSizer sizer(-1, 100);
  std::uint64_t started = 0;
  Clock::time_point at =
      feed(sizer, Clock::time_point{}, 30, milliseconds(10), milliseconds(4), started, 50);
  ASSERT_EQ(sizer.prefetch(), 40);
  // 1 ms apart with 1,000 tasks each would be a huge rate; they are not sampled.
  started += 1000;
  sizer.observe(milliseconds(4), started, at + milliseconds(1));
  EXPECT_EQ(sizer.prefetch(), 40);
}

}  // namespace
