#include "core/spawn.hpp"

#include <string_view>

#include "core/error.hpp"
#include "core/json_number.hpp"
#include "core/limits.hpp"

namespace docket {

namespace {

constexpr std::array<const char*, 8> kSpawnOptionKeys = {
    "max_attempts", "retry",   "idempotency_key", "run_at",
    "delay_ms",     "headers", "cancel_after_ms", "max_duration_ms"};
constexpr std::array<const char*, 5> kRetryKeys = {"kind", "base_ms", "factor", "max_ms", "jitter"};

const JsonValue* member(const JsonValue& object, std::string_view key) {
  for (const auto& [name, value] : object.members)
    if (name == key) return &value;
  return nullptr;
}

template <std::size_t N>
bool one_of(const std::string& key, const std::array<const char*, N>& keys) {
  for (const char* k : keys)
    if (key == k) return true;
  return false;
}

// An integer option within [min, max]; nullopt when absent.
std::optional<std::int64_t> int_option(const JsonValue& object, const char* key, std::int64_t min,
                                       std::int64_t max) {
  const JsonValue* v = member(object, key);
  if (v == nullptr) return std::nullopt;
  const std::string prefix = std::string("option ") + key + " must be an integer";
  if (v->type != JsonType::number) fail(Reason::bad_argument, prefix + ", got " + v->text);
  const std::optional<std::int64_t> n = parse_json_integer(v->text);
  if (!n || *n < min || *n > max)
    fail(Reason::bad_argument, prefix + " between " + std::to_string(min) + " and " +
                                   std::to_string(max) + ", got " + v->text);
  return n;
}

// Whether a JSON number's text lies in [lo, hi] (0 <= lo <= hi), exactly.
bool number_between(std::string_view text, int lo, int hi) {
  bool negative = false;
  if (!text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  std::string_view whole = text.substr(0, text.find('.'));
  const std::string_view fraction =
      whole.size() < text.size() ? text.substr(whole.size() + 1) : std::string_view{};
  while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
  bool fraction_nonzero = false;
  for (char c : fraction) fraction_nonzero = fraction_nonzero || c != '0';
  if (whole.empty() || whole.size() > 6) return false;  // above any bound here
  int integer = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return false;
    integer = integer * 10 + (c - '0');
  }
  if (negative) return integer == 0 && !fraction_nonzero && lo == 0;
  if (integer < lo) return false;
  return integer < hi || (integer == hi && !fraction_nonzero);
}

void check_retry(const JsonValue* retry) {
  if (retry == nullptr) return;
  if (retry->type != JsonType::object) fail(Reason::bad_argument, "option retry must be an object");
  for (const auto& [key, value] : retry->members)
    if (!one_of(key, kRetryKeys)) fail(Reason::bad_argument, "unknown retry key \"" + key + "\"");
  if (const JsonValue* kind = member(*retry, "kind")) {
    if (kind->type != JsonType::string ||
        (kind->string != "none" && kind->string != "fixed" && kind->string != "exponential"))
      fail(Reason::bad_argument, R"(retry kind must be "none", "fixed" or "exponential")");
  }
  int_option(*retry, "base_ms", 0, kMaxRetryDelayMs);
  int_option(*retry, "max_ms", 0, kMaxRetryDelayMs);
  if (const JsonValue* factor = member(*retry, "factor")) {
    if (factor->type != JsonType::number || !number_between(factor->text, 1, 100))
      fail(Reason::bad_argument, "retry factor must be a number between 1 and 100");
  }
  if (const JsonValue* jitter = member(*retry, "jitter")) {
    if (jitter->type != JsonType::number || !number_between(jitter->text, 0, 1))
      fail(Reason::bad_argument, "retry jitter must be a number between 0 and 1");
  }
}

}  // namespace

SpawnOptions check_spawn_options(const JsonValue& options, Micros now,
                                 const TimeParser& parse_time) {
  if (options.type != JsonType::object) fail(Reason::bad_argument, "options must be a JSON object");
  for (const auto& [key, value] : options.members)
    if (!one_of(key, kSpawnOptionKeys))
      fail(Reason::bad_argument, "unknown spawn option \"" + key + "\"");

  SpawnOptions out;
  if (const auto attempts = int_option(options, "max_attempts", 1, kMaxTaskAttempts))
    out.max_attempts = static_cast<int>(*attempts);
  if (const JsonValue* headers = member(options, "headers")) {
    if (headers->type != JsonType::object)
      fail(Reason::bad_argument, "option headers must be a JSON object");
    out.has_headers = true;
  }
  if (const JsonValue* key = member(options, "idempotency_key")) {
    if (key->type != JsonType::string)
      fail(Reason::bad_argument, "option idempotency_key must be a string");
    if (key->string.empty() || key->string.size() > kMaxNameBytes)
      fail(Reason::bad_argument, "idempotency_key must be non-empty text of at most " +
                                     std::to_string(kMaxNameBytes) + " bytes");
    out.idempotency_key = key->string;
  }
  const JsonValue* run_at = member(options, "run_at");
  if (run_at != nullptr && member(options, "delay_ms") != nullptr)
    fail(Reason::bad_argument, "options run_at and delay_ms exclude each other");
  out.wake_at = now;
  if (run_at != nullptr) {
    if (run_at->type != JsonType::string)
      fail(Reason::bad_argument, "option run_at must be a timestamp string");
    const ParsedTime parsed = parse_time(run_at->string);
    if (parsed.kind == ParsedTime::Kind::invalid)
      fail(Reason::bad_argument, "option run_at is not a timestamp: " + run_at->string);
    if (parsed.kind == ParsedTime::Kind::infinite)
      fail(Reason::bad_argument, "option run_at must be finite");
    out.wake_at = parsed.value;
  }
  if (const auto delay = int_option(options, "delay_ms", 0, kMaxDurationMs))
    out.wake_at = add_millis(now, *delay);
  if (const auto cancel_after = int_option(options, "cancel_after_ms", 1, kMaxDurationMs))
    out.cancel_at = add_millis(out.wake_at, *cancel_after);
  out.max_duration_ms = int_option(options, "max_duration_ms", 1, kMaxDurationMs);
  const JsonValue* retry = member(options, "retry");
  check_retry(retry);
  out.has_retry = retry != nullptr;
  return out;
}

std::string time_ordered_id(std::int64_t unix_ms, const std::array<std::uint8_t, 10>& random,
                            std::uint64_t sequence) {
  // 12 random bits (rand_a), then 62 (rand_b) with their top two cleared so
  // that adding the sequence never carries out of them.
  const unsigned rand_a = ((random[0] & 0x0fu) << 8) | random[1];
  std::uint64_t rand_b = 0;
  for (int i = 2; i < 10; ++i) rand_b = (rand_b << 8) | random[i];
  rand_b = (rand_b & ((std::uint64_t{1} << 60) - 1)) + sequence;

  std::array<std::uint8_t, 16> bytes{};
  const auto ms = static_cast<std::uint64_t>(unix_ms);
  for (int i = 0; i < 6; ++i) bytes[i] = static_cast<std::uint8_t>(ms >> (8 * (5 - i)));
  bytes[6] = static_cast<std::uint8_t>(0x70u | (rand_a >> 8));
  bytes[7] = static_cast<std::uint8_t>(rand_a & 0xffu);
  bytes[8] = static_cast<std::uint8_t>(0x80u | ((rand_b >> 56) & 0x3fu));
  for (int i = 9; i < 16; ++i) bytes[i] = static_cast<std::uint8_t>(rand_b >> (8 * (15 - i)));

  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
  return out;
}

}  // namespace docket
