// Bounds on hostile input: a caller's clock against docket's, value sizes
// against their caps.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/input_limits.hpp"

namespace docket {
namespace {

constexpr Micros kMinute = 60LL * 1000 * 1000;

Reason reason_of(void (*f)()) {
  try {
    f();
  } catch (const Error& e) {
    return e.reason();
  }
  ADD_FAILURE() << "no error";
  return Reason::invalid_run;
}

TEST(ClockSkew, WithinTheBoundEitherWay) {
  const Micros ref = 1000 * kMinute;
  EXPECT_NO_THROW(check_clock_skew("now", ref, ref, 0));
  EXPECT_NO_THROW(check_clock_skew("now", ref + 5 * kMinute, ref, 300000));
  EXPECT_NO_THROW(check_clock_skew("now", ref - 5 * kMinute, ref, 300000));
}

TEST(ClockSkew, OneMicrosecondPastIsRefused) {
  EXPECT_EQ(reason_of([] { check_clock_skew("now", 5 * kMinute + 1, 0, 300000); }),
            Reason::bad_argument);
  EXPECT_EQ(reason_of([] { check_clock_skew("now", -5 * kMinute - 1, 0, 300000); }),
            Reason::bad_argument);
}

TEST(ClockSkew, TheInfinitiesAndExtremesWithoutOverflow) {
  EXPECT_EQ(reason_of([] { check_clock_skew("now", kPlusInfinity, kMinusInfinity, 1e15); }),
            Reason::bad_argument);
  EXPECT_EQ(reason_of([] { check_clock_skew("now", kMinusInfinity, kPlusInfinity, 1e15); }),
            Reason::bad_argument);
  EXPECT_EQ(reason_of([] { check_clock_skew("now", kPlusInfinity, 0, 300000); }),
            Reason::bad_argument);
}

TEST(ClockSkew, MessageNamesTheArgumentAndTheSetting) {
  try {
    check_clock_skew("now", 10 * kMinute, 0, 300000);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad_argument: now is ahead of docket's clock by more than docket.max_clock_skew "
              "(300000 ms)");
  }
}

TEST(SizeCap, AtTheCapPassesOneByteOverFails) {
  EXPECT_NO_THROW(check_size("params", 100, "docket.max_params_bytes", 100));
  EXPECT_NO_THROW(check_size("params", 0, "docket.max_params_bytes", 0));
  try {
    check_size("params", 101, "docket.max_params_bytes", 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.reason(), Reason::limit_exceeded);
    EXPECT_EQ(std::string(e.what()),
              "limit_exceeded: params is 101 bytes, over docket.max_params_bytes (100 bytes)");
  }
}

}  // namespace
}  // namespace docket
