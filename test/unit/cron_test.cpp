// Five-field cron: parsing (ranges, steps, lists, names, macros, errors) and
// the next fire time, in UTC.
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "core/cron.hpp"
#include "core/error.hpp"

namespace docket {
namespace {

Micros at(const std::string& text) {
  const std::optional<Micros> t = parse_iso8601(text);
  EXPECT_TRUE(t.has_value()) << text;
  return t.value_or(0);
}

// The next fire time after `after`, as microseconds text ("none" when there is none).
std::string next(const std::string& cron, const std::string& after) {
  const std::optional<Micros> t = next_cron_time(parse_cron(cron), at(after));
  return t ? std::to_string(*t) : "none";
}

void expect_next(const std::string& cron, const std::string& after, const std::string& expected) {
  EXPECT_EQ(next(cron, after), std::to_string(at(expected)))
      << cron << " after " << after << " should fire at " << expected;
}

std::string error_of(const std::string& cron) {
  try {
    parse_cron(cron);
  } catch (const Error& e) {
    EXPECT_EQ(e.reason(), Reason::bad_argument) << cron;
    return e.what();
  }
  return "no error";
}

TEST(CronParse, Star) {
  const CronSchedule s = parse_cron("* * * * *");
  EXPECT_EQ(s.minutes.count(), 60u);
  EXPECT_EQ(s.hours.count(), 24u);
  EXPECT_EQ(s.days.count(), 31u);
  EXPECT_FALSE(s.days[0]);
  EXPECT_EQ(s.months.count(), 12u);
  EXPECT_EQ(s.weekdays.count(), 7u);
  EXPECT_FALSE(s.days_restricted);
  EXPECT_FALSE(s.weekdays_restricted);
}

TEST(CronParse, RangesStepsAndLists) {
  const CronSchedule s = parse_cron("1-5 */6 1,15,31 2-10/4 1-3,5");
  EXPECT_EQ(s.minutes.to_ullong(), 0b111110u);
  EXPECT_EQ(s.hours.to_ullong(), (1u << 0) | (1u << 6) | (1u << 12) | (1u << 18));
  EXPECT_EQ(s.days.to_ullong(), (1u << 1) | (1u << 15) | (1u << 31));
  EXPECT_EQ(s.months.to_ullong(), (1u << 2) | (1u << 6) | (1u << 10));
  EXPECT_EQ(s.weekdays.to_ullong(), 0b101110u);
  EXPECT_TRUE(s.days_restricted);
  EXPECT_TRUE(s.weekdays_restricted);
}

TEST(CronParse, SingleValueWithStepRunsToTheEnd) {
  EXPECT_EQ(parse_cron("50/3 * * * *").minutes.to_ullong(),
            (1ull << 50) | (1ull << 53) | (1ull << 56) | (1ull << 59));
  EXPECT_EQ(parse_cron("0 0 * * 3/2").weekdays.to_ullong(), (1u << 3) | (1u << 5) | 1u);
}

TEST(CronParse, Names) {
  EXPECT_EQ(parse_cron("0 0 * jan,MAR,Dec *").months.to_ullong(),
            (1u << 1) | (1u << 3) | (1u << 12));
  EXPECT_EQ(parse_cron("0 0 * feb-apr *").months.to_ullong(), (1u << 2) | (1u << 3) | (1u << 4));
  EXPECT_EQ(parse_cron("0 0 * * mon-fri").weekdays.to_ullong(), 0b0111110u);
  EXPECT_EQ(parse_cron("0 0 * * SUN,sat").weekdays.to_ullong(), 0b1000001u);
  EXPECT_EQ(parse_cron("0 0 * * Tue/2").weekdays.to_ullong(), (1u << 2) | (1u << 4) | (1u << 6));
}

TEST(CronParse, SevenIsSunday) {
  EXPECT_EQ(parse_cron("0 0 * * 7").weekdays.to_ullong(), 1u);
  EXPECT_EQ(parse_cron("0 0 * * 5-7").weekdays.to_ullong(), 0b1100001u);
  EXPECT_EQ(parse_cron("0 0 * * 0,7").weekdays.to_ullong(), 1u);
}

TEST(CronParse, StarWithStepStaysUnrestricted) {
  // Vixie cron: a field starting with '*' does not take part in the OR rule.
  const CronSchedule s = parse_cron("0 0 */2 * 1");
  EXPECT_FALSE(s.days_restricted);
  EXPECT_TRUE(s.weekdays_restricted);
}

TEST(CronParse, Whitespace) {
  EXPECT_EQ(parse_cron("  0\t12  * *   * ").hours.to_ullong(), 1u << 12);
}

TEST(CronParse, Macros) {
  expect_next("@hourly", "2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z");
  expect_next("@daily", "2030-01-01T00:00:00Z", "2030-01-02T00:00:00Z");
  expect_next("@midnight", "2030-01-01T13:00:00Z", "2030-01-02T00:00:00Z");
  expect_next("@weekly", "2030-01-01T00:00:00Z", "2030-01-06T00:00:00Z");  // a Sunday
  expect_next("@monthly", "2030-01-01T00:00:00Z", "2030-02-01T00:00:00Z");
  expect_next("@yearly", "2030-01-01T00:00:00Z", "2031-01-01T00:00:00Z");
  expect_next("@ANNUALLY", "2030-06-01T00:00:00Z", "2031-01-01T00:00:00Z");
}

TEST(CronParse, BadExpressions) {
  const struct {
    const char* cron;
    const char* message;
  } cases[] = {
      {"", "has 0 fields, expected 5"},
      {"   ", "has 0 fields, expected 5"},
      {"* * * *", "has 4 fields, expected 5"},
      {"* * * * * *", "has 6 fields, expected 5"},
      {"60 * * * *", "minute 60 is out of range 0-59"},
      {"* 24 * * *", "hour 24 is out of range 0-23"},
      {"* * 0 * *", "day of month 0 is out of range 1-31"},
      {"* * 32 * *", "day of month 32 is out of range 1-31"},
      {"* * * 13 *", "month 13 is out of range 1-12"},
      {"* * * 0 *", "month 0 is out of range 1-12"},
      {"* * * * 8", "day of week 8 is out of range 0-7"},
      {"99999999999 * * * *", "minute 99999999999 is out of range 0-59"},
      {"5-1 * * * *", "range 5-1 runs backwards (minute)"},
      {"* * * * sat-sun", "range sat-sun runs backwards (day of week)"},
      {"*/0 * * * *", "step 0 is out of range 1-60 (minute)"},
      {"*/61 * * * *", "step 61 is out of range 1-60 (minute)"},
      {"*/ * * * *", "empty step in the minute field"},
      {"*/x * * * *", "step \"x\" is not a number (minute)"},
      {"1,,2 * * * *", "empty item in the minute field"},
      {"1, * * * *", "empty item in the minute field"},
      {",1 * * * *", "empty item in the minute field"},
      {"-5 * * * *", "empty value in the minute field"},
      {"1- * * * *", "empty value in the minute field"},
      {"1x * * * *", "\"1x\" is not a number (minute)"},
      {"** * * * *", "\"**\" is not a valid minute"},
      {"* * * foo *", "\"foo\" is not a valid month"},
      {"* * * january *", "\"january\" is not a valid month"},
      {"* * * * monday", "\"monday\" is not a valid day of week"},
      {"* * * mon *", "\"mon\" is not a valid month"},
      {"jan * * * *", "\"jan\" is not a valid minute"},
      {"0 0 30 2 *", "it never fires"},
      {"0 0 31 4,6,9,11 *", "it never fires"},
      {"@reboot", "unknown macro @reboot"},
      {"@daily *", "has 2 fields, expected 5"},
  };
  for (const auto& c : cases) {
    const std::string error = error_of(c.cron);
    EXPECT_EQ(error.rfind(std::string("bad_argument: cron expression \"") + c.cron + "\": ", 0), 0u)
        << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.cron << " -> " << error;
  }
  EXPECT_NE(error_of(std::string(300, '*')).find("longer than 256 bytes"), std::string::npos);
}

TEST(CronNext, EveryMinuteIsStrictlyAfter) {
  expect_next("* * * * *", "2030-01-01T00:00:00Z", "2030-01-01T00:01:00Z");
  expect_next("* * * * *", "2030-01-01T00:00:59.999999Z", "2030-01-01T00:01:00Z");
  expect_next("* * * * *", "2030-01-01T00:00:00.000001Z", "2030-01-01T00:01:00Z");
  expect_next("* * * * *", "2030-12-31T23:59:30Z", "2031-01-01T00:00:00Z");
}

TEST(CronNext, Steps) {
  expect_next("*/15 * * * *", "2030-01-01T10:07:00Z", "2030-01-01T10:15:00Z");
  expect_next("*/15 * * * *", "2030-01-01T10:45:00Z", "2030-01-01T11:00:00Z");
  expect_next("0 */6 * * *", "2030-01-01T19:00:00Z", "2030-01-02T00:00:00Z");
  expect_next("10-50/20 * * * *", "2030-01-01T10:31:00Z", "2030-01-01T10:50:00Z");
}

TEST(CronNext, Lists) {
  expect_next("0 9,17 * * *", "2030-01-01T09:00:00Z", "2030-01-01T17:00:00Z");
  expect_next("0 9,17 * * *", "2030-01-01T17:00:00Z", "2030-01-02T09:00:00Z");
}

TEST(CronNext, MonthsAndYears) {
  expect_next("0 0 1 * *", "2030-01-15T00:00:00Z", "2030-02-01T00:00:00Z");
  expect_next("30 4 15 jun *", "2030-07-01T00:00:00Z", "2031-06-15T04:30:00Z");
  expect_next("0 0 31 * *", "2030-04-01T00:00:00Z", "2030-05-31T00:00:00Z");
}

TEST(CronNext, LeapDay) {
  expect_next("0 0 29 2 *", "2030-01-01T00:00:00Z", "2032-02-29T00:00:00Z");
  expect_next("0 0 29 2 *", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z");  // 2100 is not leap
}

TEST(CronNext, Weekdays) {
  // 2030-01-01 is a Tuesday.
  expect_next("0 8 * * mon-fri", "2030-01-04T08:00:00Z", "2030-01-07T08:00:00Z");
  expect_next("0 8 * * 0", "2030-01-01T00:00:00Z", "2030-01-06T08:00:00Z");
  expect_next("0 8 * * 7", "2030-01-01T00:00:00Z", "2030-01-06T08:00:00Z");
}

TEST(CronNext, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // The 13th or any Friday: Friday 2030-01-04 comes first.
  expect_next("0 0 13 * fri", "2030-01-01T00:00:00Z", "2030-01-04T00:00:00Z");
  expect_next("0 0 13 * fri", "2030-01-11T00:00:00Z", "2030-01-13T00:00:00Z");
  // A '*'-led day of month is unrestricted: both must hold (odd days that are Mondays).
  expect_next("0 0 */2 * mon", "2030-01-01T00:00:00Z", "2030-01-07T00:00:00Z");
  expect_next("0 0 */2 * mon", "2030-01-07T00:00:00Z", "2030-01-21T00:00:00Z");
  // Only the day of month restricted: the weekday field does not widen it.
  expect_next("0 0 13 * *", "2030-01-01T00:00:00Z", "2030-01-13T00:00:00Z");
}

TEST(CronNext, BeforeThePostgresEpoch) {
  expect_next("0 0 * * *", "1999-12-31T12:00:00Z", "2000-01-01T00:00:00Z");
  expect_next("*/10 * * * *", "1969-12-31T23:55:00Z", "1970-01-01T00:00:00Z");
}

TEST(CronNext, Infinities) {
  EXPECT_FALSE(next_cron_time(parse_cron("* * * * *"), kPlusInfinity).has_value());
  EXPECT_FALSE(next_cron_time(parse_cron("* * * * *"), kMinusInfinity).has_value());
}

// Against a minute-by-minute scan whose calendar is the C library's gmtime.
TEST(CronNext, AgreesWithAMinuteByMinuteScan) {
  constexpr std::int64_t kPgEpochUnixSeconds = 946684800;
  const char* crons[] = {"*/7 3-5 * * *",          "0 0 13 * fri", "15 10 */10 * *",
                         "0 12 * feb,aug sun",     "59 23 31 * *", "0 0 1-7 * mon",
                         "5,35 */5 * jan-mar 1-5", "0 6 29 2 *"};
  const std::string starts[] = {"2030-01-30T22:10:00Z", "2031-12-31T23:59:00Z"};
  for (const char* cron : crons) {
    const CronSchedule s = parse_cron(cron);
    for (const std::string& start : starts) {
      const Micros from = at(start);
      std::optional<Micros> scanned;
      for (std::int64_t m = 1; m <= std::int64_t{60} * 24 * 400 && !scanned; ++m) {
        const Micros t = from + m * 60000000;
        const std::time_t unix_seconds =
            static_cast<std::time_t>(t / 1000000 + kPgEpochUnixSeconds);
        std::tm tm{};
        gmtime_r(&unix_seconds, &tm);
        const bool dom = s.days[tm.tm_mday];
        const bool dow = s.weekdays[tm.tm_wday];
        const bool day = s.days_restricted && s.weekdays_restricted ? dom || dow : dom && dow;
        if (s.minutes[tm.tm_min] && s.hours[tm.tm_hour] && s.months[tm.tm_mon + 1] && day)
          scanned = t;
      }
      const std::optional<Micros> computed = next_cron_time(s, from);
      if (scanned) {
        EXPECT_EQ(computed, scanned) << cron << " after " << start;
      } else {
        EXPECT_TRUE(!computed || *computed > from + 60ll * 24 * 400 * 60000000)
            << cron << " after " << start;
      }
    }
  }
}

}  // namespace
}  // namespace docket
