// Reading a JSON number's text as an exact 64-bit integer.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/json_number.hpp"

namespace docket {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

TEST(ParseJsonInteger, PlainIntegers) {
  EXPECT_EQ(parse_json_integer("0"), 0);
  EXPECT_EQ(parse_json_integer("-0"), 0);
  EXPECT_EQ(parse_json_integer("42"), 42);
  EXPECT_EQ(parse_json_integer("-7"), -7);
  EXPECT_EQ(parse_json_integer("1000000000000"), 1000000000000);
}

TEST(ParseJsonInteger, Int64Bounds) {
  EXPECT_EQ(parse_json_integer("9223372036854775807"), kMax);
  EXPECT_EQ(parse_json_integer("-9223372036854775808"), kMin);
  EXPECT_EQ(parse_json_integer("9223372036854775806"), kMax - 1);
  EXPECT_EQ(parse_json_integer("-9223372036854775807"), kMin + 1);
}

TEST(ParseJsonInteger, OverflowIsRejected) {
  EXPECT_FALSE(parse_json_integer("9223372036854775808").has_value());
  EXPECT_FALSE(parse_json_integer("9223372036854775809").has_value());
  EXPECT_FALSE(parse_json_integer("-9223372036854775809").has_value());
  EXPECT_FALSE(parse_json_integer("-9223372036854775810").has_value());
  EXPECT_FALSE(parse_json_integer("10000000000000000000").has_value());
  EXPECT_FALSE(parse_json_integer("99999999999999999999999999").has_value());
  EXPECT_FALSE(parse_json_integer("9223372036854775808.0").has_value());
}

TEST(ParseJsonInteger, IntegralFractionsAreAccepted) {
  EXPECT_EQ(parse_json_integer("3.0"), 3);
  EXPECT_EQ(parse_json_integer("3.000"), 3);
  EXPECT_EQ(parse_json_integer("-3.0"), -3);
  EXPECT_EQ(parse_json_integer("9223372036854775807.00"), kMax);
  EXPECT_EQ(parse_json_integer("-9223372036854775808.0"), kMin);
}

TEST(ParseJsonInteger, NonIntegersAreRejected) {
  for (const char* s : {"3.5", "3.05", "0.1", "-0.5", "3.0001", "1e3",      "1E3",  "1.0e0",
                        "3.",  ".5",   "-",   "",     "+1",     " 1",       "1 ",   "abc",
                        "1a",  "0x10", "--1", "1-",   "NaN",    "Infinity", "3..0", "3.0.0"}) {
    EXPECT_FALSE(parse_json_integer(s).has_value()) << "\"" << s << "\"";
  }
}

}  // namespace
}  // namespace docket
