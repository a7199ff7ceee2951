// ISO-8601 parsing into PostgreSQL's TimestampTz microseconds.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/time.hpp"

namespace docket {
namespace {

constexpr Micros kSecond = 1000000;

Micros parse(const std::string& text) {
  const std::optional<Micros> t = parse_iso8601(text);
  EXPECT_TRUE(t.has_value()) << text;
  return t.value_or(0);
}

TEST(ParseIso8601, PostgresEpochIsZero) {
  EXPECT_EQ(parse("2000-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse("2000-01-01 00:00:00+00"), 0);
  EXPECT_EQ(parse("2000-01-01T00:00:00+00:00"), 0);
  EXPECT_EQ(parse("2000-01-01T00:00:00-00:00"), 0);
  EXPECT_EQ(parse("2000-01-01T00:00:00.000000Z"), 0);
}

TEST(ParseIso8601, KnownEpochValues) {
  // Cross-checked with `date -u -d <instant> +%s` minus 946684800.
  EXPECT_EQ(parse("1999-12-31T23:59:59Z"), -1 * kSecond);
  EXPECT_EQ(parse("1970-01-01T00:00:00Z"), -946684800 * kSecond);
  EXPECT_EQ(parse("2024-05-01T10:00:00Z"), 767872800 * kSecond);
  EXPECT_EQ(parse("2000-02-29T12:34:56Z"), 5142896 * kSecond);
  EXPECT_EQ(parse("2100-03-01T00:00:00Z"), 3160857600 * kSecond);
  EXPECT_EQ(parse("1600-02-29T00:00:00Z"), -12617683200 * kSecond);
  EXPECT_EQ(parse("0001-01-01T00:00:00Z"), -63082281600 * kSecond);
  EXPECT_EQ(parse("9999-12-31T23:59:59Z"), 252455615999 * kSecond);
}

TEST(ParseIso8601, Fractions) {
  EXPECT_EQ(parse("2000-01-01T00:00:00.5Z"), 500000);
  EXPECT_EQ(parse("2000-01-01T00:00:00.123Z"), 123000);
  EXPECT_EQ(parse("2000-01-01T00:00:00.000001Z"), 1);
  EXPECT_EQ(parse("2000-01-01T00:00:01.999999Z"), 1999999);
  EXPECT_EQ(parse("1999-12-31T23:59:59.75Z"), -250000);
}

TEST(ParseIso8601, Offsets) {
  const Micros utc = parse("2024-05-01T10:00:00Z");
  EXPECT_EQ(parse("2024-05-01T12:00:00+02:00"), utc);
  EXPECT_EQ(parse("2024-05-01T12:00:00+02"), utc);
  EXPECT_EQ(parse("2024-05-01T12:00:00+0200"), utc);
  EXPECT_EQ(parse("2024-05-01T05:00:00-05:00"), utc);
  EXPECT_EQ(parse("2024-05-01T15:30:00+05:30"), utc);
  EXPECT_EQ(parse("2024-05-01T00:15:00-09:45"), utc);
  EXPECT_EQ(parse("2024-05-01T10:00:00.25+00:00"), utc + 250000);
}

TEST(ParseIso8601, OffsetsCrossDayBoundaries) {
  EXPECT_EQ(parse("2000-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(parse("1999-12-31T23:00:00-01:00"), 0);
}

TEST(ParseIso8601, SpaceSeparatorAsPostgresPrints) {
  EXPECT_EQ(parse("2024-05-01 10:00:00+00"), parse("2024-05-01T10:00:00Z"));
  EXPECT_EQ(parse("2024-05-01 10:00:00.123456+00"), parse("2024-05-01T10:00:00.123456Z"));
}

TEST(ParseIso8601, LeapDays) {
  EXPECT_TRUE(parse_iso8601("2024-02-29T00:00:00Z").has_value());
  EXPECT_TRUE(parse_iso8601("2000-02-29T00:00:00Z").has_value());
  EXPECT_FALSE(parse_iso8601("2023-02-29T00:00:00Z").has_value());
  EXPECT_FALSE(parse_iso8601("1900-02-29T00:00:00Z").has_value());
  EXPECT_FALSE(parse_iso8601("2100-02-29T00:00:00Z").has_value());
}

TEST(ParseIso8601, InvalidCalendarDatesAndTimes) {
  for (const char* s : {
           "2024-02-30T00:00:00Z",
           "2024-04-31T00:00:00Z",
           "2024-13-01T00:00:00Z",
           "2024-00-10T00:00:00Z",
           "2024-01-00T00:00:00Z",
           "2024-01-32T00:00:00Z",
           "0000-01-01T00:00:00Z",
           "2024-01-01T24:00:00Z",
           "2024-01-01T23:60:00Z",
           "2024-01-01T23:59:60Z",
       }) {
    EXPECT_FALSE(parse_iso8601(s).has_value()) << s;
  }
}

TEST(ParseIso8601, OffsetIsRequired) {
  EXPECT_FALSE(parse_iso8601("2024-05-01T10:00:00").has_value());
  EXPECT_FALSE(parse_iso8601("2024-05-01T10:00:00.5").has_value());
  EXPECT_FALSE(parse_iso8601("2024-05-01 10:00:00").has_value());
}

TEST(ParseIso8601, MalformedText) {
  for (const char* s : {
           "",
           "garbage",
           "2024-05-01",
           "2024-05-01T10:00Z",
           "2024-5-01T10:00:00Z",
           "24-05-01T10:00:00Z",
           "2024/05/01T10:00:00Z",
           "2024-05-01X10:00:00Z",
           "2024-05-01T10:00:00.Z",
           "2024-05-01T10:00:00.1234567Z",
           "2024-05-01T10:00:00ZZ",
           "2024-05-01T10:00:00Z ",
           " 2024-05-01T10:00:00Z",
           "2024-05-01T10:00:00+2",
           "2024-05-01T10:00:00+02:",
           "2024-05-01T10:00:00+02:0",
           "2024-05-01T10:00:00+16:00",
           "2024-05-01T10:00:00+02:60",
           "2024-05-01T10:00:00 +02:00",
           "2024-05-01T10:00:00UTC",
           "2024-05-01T1a:00:00Z",
           "infinity",
       }) {
    EXPECT_FALSE(parse_iso8601(s).has_value()) << "\"" << s << "\"";
  }
}

TEST(ParseIso8601, RoundTripsThroughDistinctInstants) {
  // Consecutive seconds across a month, year and leap-day boundary stay one apart.
  EXPECT_EQ(parse("2024-03-01T00:00:00Z") - parse("2024-02-29T23:59:59Z"), kSecond);
  EXPECT_EQ(parse("2025-01-01T00:00:00Z") - parse("2024-12-31T23:59:59Z"), kSecond);
  EXPECT_EQ(parse("2024-01-01T00:00:00Z") - parse("2023-01-01T00:00:00Z"), 365 * 86400 * kSecond);
  EXPECT_EQ(parse("2025-01-01T00:00:00Z") - parse("2024-01-01T00:00:00Z"), 366 * 86400 * kSecond);
}

}  // namespace
}  // namespace docket
