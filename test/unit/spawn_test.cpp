// Spawning: spawn_task's option checks in their documented order, and
// time-ordered run ids.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/spawn.hpp"

namespace docket {
namespace {

JsonValue number(const std::string& text) {
  return JsonValue{JsonType::number, text, "", {}};
}
JsonValue string(const std::string& s) {
  return JsonValue{JsonType::string, "\"" + s + "\"", s, {}};
}
JsonValue object(std::vector<std::pair<std::string, JsonValue>> members) {
  return JsonValue{JsonType::object, "{...}", "", std::move(members)};
}

// run_at parser stand-in: "ok" -> 1000, "inf" -> infinite, anything else invalid.
ParsedTime parse(const std::string& text) {
  if (text == "ok") return ParsedTime{ParsedTime::Kind::finite, 1000};
  if (text == "inf") return ParsedTime{ParsedTime::Kind::infinite, 0};
  return ParsedTime{};
}

std::string message(const JsonValue& options) {
  try {
    check_spawn_options(options, 0, parse);
  } catch (const Error& e) {
    EXPECT_EQ(e.reason(), Reason::bad_argument);
    return e.what();
  }
  return "";
}

TEST(SpawnOptions, Defaults) {
  const SpawnOptions o = check_spawn_options(object({}), 77, parse);
  EXPECT_EQ(o.max_attempts, 5);
  EXPECT_EQ(o.wake_at, 77);
  EXPECT_FALSE(o.idempotency_key);
  EXPECT_FALSE(o.cancel_at);
  EXPECT_FALSE(o.max_duration_ms);
  EXPECT_FALSE(o.has_headers);
  EXPECT_FALSE(o.has_retry);
}

TEST(SpawnOptions, Values) {
  const SpawnOptions o =
      check_spawn_options(object({{"max_attempts", number("3.000")},
                                  {"delay_ms", number("2000")},
                                  {"cancel_after_ms", number("500")},
                                  {"max_duration_ms", number("60000")},
                                  {"idempotency_key", string("k")},
                                  {"headers", object({})},
                                  {"retry", object({{"kind", string("fixed")},
                                                    {"factor", number("100.0")},
                                                    {"jitter", number("0.5")}})}}),
                          1000, parse);
  EXPECT_EQ(o.max_attempts, 3);
  EXPECT_EQ(o.wake_at, 1000 + 2000 * 1000);
  EXPECT_EQ(o.cancel_at, 1000 + 2500 * 1000);
  EXPECT_EQ(o.max_duration_ms, 60000);
  EXPECT_EQ(o.idempotency_key, "k");
  EXPECT_TRUE(o.has_headers);
  EXPECT_TRUE(o.has_retry);
  EXPECT_EQ(check_spawn_options(object({{"run_at", string("ok")}}), 5, parse).wake_at, 1000);
}

TEST(SpawnOptions, Messages) {
  EXPECT_EQ(message(JsonValue{JsonType::array, "[]", "", {}}),
            "bad_argument: options must be a JSON object");
  EXPECT_EQ(message(object({{"max_attempts", number("0")}, {"priority", number("1")}})),
            "bad_argument: unknown spawn option \"priority\"");
  EXPECT_EQ(message(object({{"max_attempts", string("3")}})),
            "bad_argument: option max_attempts must be an integer, got \"3\"");
  EXPECT_EQ(message(object({{"max_attempts", number("2.5")}})),
            "bad_argument: option max_attempts must be an integer between 1 and 1000, got 2.5");
  EXPECT_EQ(message(object({{"headers", number("1")}})),
            "bad_argument: option headers must be a JSON object");
  EXPECT_EQ(message(object({{"idempotency_key", number("5")}})),
            "bad_argument: option idempotency_key must be a string");
  EXPECT_EQ(message(object({{"idempotency_key", string(std::string(256, 'k'))}})),
            "bad_argument: idempotency_key must be non-empty text of at most 255 bytes");
  EXPECT_EQ(message(object({{"run_at", string("ok")}, {"delay_ms", number("1")}})),
            "bad_argument: options run_at and delay_ms exclude each other");
  EXPECT_EQ(message(object({{"run_at", number("1")}})),
            "bad_argument: option run_at must be a timestamp string");
  EXPECT_EQ(message(object({{"run_at", string("soon")}})),
            "bad_argument: option run_at is not a timestamp: soon");
  EXPECT_EQ(message(object({{"run_at", string("inf")}})),
            "bad_argument: option run_at must be finite");
  EXPECT_EQ(message(object({{"cancel_after_ms", number("0")}})),
            "bad_argument: option cancel_after_ms must be an integer between 1 and 315360000000, "
            "got 0");
  EXPECT_EQ(message(object({{"retry", string("fast")}})),
            "bad_argument: option retry must be an object");
  EXPECT_EQ(message(object({{"retry", object({{"delay", number("1")}})}})),
            "bad_argument: unknown retry key \"delay\"");
  EXPECT_EQ(message(object({{"retry", object({{"kind", string("linear")}})}})),
            "bad_argument: retry kind must be \"none\", \"fixed\" or \"exponential\"");
  EXPECT_EQ(message(object({{"retry", object({{"base_ms", number("-1")}})}})),
            "bad_argument: option base_ms must be an integer between 0 and 31536000000, got -1");
}

TEST(SpawnOptions, RetryNumberBounds) {
  auto factor_ok = [](const std::string& text) {
    return message(object({{"retry", object({{"factor", number(text)}})}})).empty();
  };
  auto jitter_ok = [](const std::string& text) {
    return message(object({{"retry", object({{"jitter", number(text)}})}})).empty();
  };
  EXPECT_TRUE(factor_ok("1"));
  EXPECT_TRUE(factor_ok("100"));
  EXPECT_TRUE(factor_ok("1.5"));
  EXPECT_TRUE(factor_ok("100.000"));
  EXPECT_FALSE(factor_ok("0.999"));
  EXPECT_FALSE(factor_ok("100.0001"));
  EXPECT_FALSE(factor_ok("-2"));
  EXPECT_FALSE(factor_ok("1000000000"));
  EXPECT_TRUE(jitter_ok("0"));
  EXPECT_TRUE(jitter_ok("-0.0"));
  EXPECT_TRUE(jitter_ok("0.25"));
  EXPECT_TRUE(jitter_ok("1.0"));
  EXPECT_FALSE(jitter_ok("1.01"));
  EXPECT_FALSE(jitter_ok("-0.1"));
}

TEST(SpawnOptions, FirstFailureFirst) {
  // max_attempts is checked before headers, headers before the key, the key
  // before run_at, and retry last.
  EXPECT_EQ(message(object({{"max_attempts", number("0")}, {"headers", number("1")}})),
            "bad_argument: option max_attempts must be an integer between 1 and 1000, got 0");
  EXPECT_EQ(message(object({{"retry", number("1")}, {"cancel_after_ms", number("0")}})),
            "bad_argument: option cancel_after_ms must be an integer between 1 and 315360000000, "
            "got 0");
}

TEST(TimeOrderedId, Format) {
  const std::array<std::uint8_t, 10> random = {0xff, 0xff, 0xff, 0xff, 0xff,
                                               0xff, 0xff, 0xff, 0xff, 0xff};
  const std::string id = time_ordered_id(0x0123456789ab, random, 0);
  ASSERT_EQ(id.size(), 36u);
  EXPECT_EQ(id.substr(0, 13), "01234567-89ab");
  EXPECT_EQ(id[14], '7');                                          // version 7
  EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos);  // RFC variant
  EXPECT_EQ(id[8], '-');
  EXPECT_EQ(id[23], '-');
}

TEST(TimeOrderedId, AscendsWithSequenceAndTime) {
  std::array<std::uint8_t, 10> random{};
  for (std::size_t i = 0; i < random.size(); ++i) random[i] = static_cast<std::uint8_t>(0x9c + i);
  std::string previous = time_ordered_id(1000, random, 0);
  for (std::uint64_t s = 1; s < 5000; ++s) {
    const std::string id = time_ordered_id(1000, random, s);
    EXPECT_LT(previous, id);
    previous = id;
  }
  EXPECT_LT(time_ordered_id(1000, random, 4999), time_ordered_id(1001, random, 0));
}

}  // namespace
}  // namespace docket
