// Spawning tasks: the checks of spawn_task's options in their documented
// order, and time-ordered run ids. Plain values in, plain decisions out;
// src/pg/task_spawn.cpp reads the options from jsonb and writes the rows.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/time.hpp"

namespace docket {

enum class JsonType { null, string, number, boolean, object, array };

// One JSON value as the checks need it: its type, its text as jsonb prints it
// (`"3"` for a string, `2.5`, `null`), the string itself for a string, and
// the members of an object (one level: the retry policy's keys).
struct JsonValue {
  JsonType type = JsonType::null;
  std::string text;
  std::string string;
  std::vector<std::pair<std::string, JsonValue>> members;
};

// What a run_at text is: a finite timestamp, not a timestamp, or infinite.
struct ParsedTime {
  enum class Kind { finite, invalid, infinite } kind = Kind::invalid;
  Micros value = 0;
};
using TimeParser = std::function<ParsedTime(const std::string&)>;

// spawn_task's options, checked. `wake_at` is when the task is first due.
struct SpawnOptions {
  int max_attempts = 5;
  bool has_headers = false;  // the headers object is options -> 'headers'
  bool has_retry = false;    // the stored policy is the defaults || options -> 'retry'
  std::optional<std::string> idempotency_key;
  Micros wake_at = 0;
  std::optional<Micros> cancel_at;  // wake_at + cancel_after_ms
  std::optional<std::int64_t> max_duration_ms;
};

// The defaults every retry policy starts from.
constexpr const char* kDefaultRetryPolicy =
    R"({"kind": "exponential", "base_ms": 1000, "factor": 2, "max_ms": 300000, "jitter": 0})";

// Checks one options object (its members in jsonb's key order) and settles
// the wake time from `now`. Raises bad_argument, first failure first, in
// spawn_task's documented order: the object, unknown keys, max_attempts,
// headers, idempotency_key, run_at / delay_ms, cancel_after_ms,
// max_duration_ms, retry.
SpawnOptions check_spawn_options(const JsonValue& options, Micros now,
                                 const TimeParser& parse_time);

// A time-ordered run id: a UUID version 7 text (48-bit Unix milliseconds,
// then random bits), so ids spawned together sit together in every index on
// run_id. `random` is 10 random bytes; `sequence` is added to its low bits so
// the ids of one batch are distinct and ascending.
std::string time_ordered_id(std::int64_t unix_ms, const std::array<std::uint8_t, 10>& random,
                            std::uint64_t sequence);

}  // namespace docket
