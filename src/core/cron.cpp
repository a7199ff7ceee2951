#include "core/cron.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace docket {

namespace {

constexpr std::size_t kMaxCronBytes = 256;
constexpr Micros kMicrosPerMinute = 60000000;
constexpr std::int64_t kMinutesPerDay = 1440;
// Days from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch).
constexpr std::int64_t kPgEpochDays = 10957;
// PostgreSQL's last timestamp is in this year.
constexpr std::int64_t kLastYear = 294276;
// A schedule that can fire at all fires within this many years (a weekday
// falls on a given date at least once in 28 years, 40 across a skipped leap day).
constexpr std::int64_t kSearchYears = 100;

constexpr std::array<std::string_view, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> kWeekdayNames = {"sun", "mon", "tue", "wed",
                                                           "thu", "fri", "sat"};

struct Field {
  const char* name;  // in messages
  int low;
  int high;
  const std::string_view* names;  // names[i] is the value low + i; nullptr: numbers only
  int name_count;
  int name_base;  // the value of names[0]
};

constexpr Field kMinuteField{"minute", 0, 59, nullptr, 0, 0};
constexpr Field kHourField{"hour", 0, 23, nullptr, 0, 0};
constexpr Field kDayField{"day of month", 1, 31, nullptr, 0, 0};
constexpr Field kMonthField{"month", 1, 12, kMonthNames.data(), 12, 1};
constexpr Field kWeekdayField{"day of week", 0, 7, kWeekdayNames.data(), 7, 0};

struct BadCron {
  std::string why;
};

char lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// One value of a field: a number or (months, weekdays) a name.
int value_of(std::string_view text, const Field& field) {
  if (text.empty()) throw BadCron{std::string("empty value in the ") + field.name + " field"};
  if (text[0] >= '0' && text[0] <= '9') {
    int v = 0;
    for (const char c : text) {
      if (c < '0' || c > '9')
        throw BadCron{"\"" + std::string(text) + "\" is not a number (" + field.name + ")"};
      v = v * 10 + (c - '0');
      if (v > 1000) break;  // far out of every range; stops overflow
    }
    if (v < field.low || v > field.high)
      throw BadCron{field.name + std::string(" ") + std::string(text) + " is out of range " +
                    std::to_string(field.low) + "-" + std::to_string(field.high)};
    return v;
  }
  if (field.names != nullptr && text.size() == 3) {
    std::string name;
    for (const char c : text) name += lower(c);
    for (int i = 0; i < field.name_count; ++i)
      if (field.names[i] == name) return field.name_base + i;
  }
  throw BadCron{"\"" + std::string(text) + "\" is not a valid " + field.name};
}

int step_of(std::string_view text, const Field& field) {
  int v = 0;
  if (text.empty()) throw BadCron{std::string("empty step in the ") + field.name + " field"};
  for (const char c : text) {
    if (c < '0' || c > '9')
      throw BadCron{"step \"" + std::string(text) + "\" is not a number (" + field.name + ")"};
    v = v * 10 + (c - '0');
    if (v > 1000) break;
  }
  if (v < 1 || v > field.high - field.low + 1)
    throw BadCron{"step " + std::string(text) + " is out of range 1-" +
                  std::to_string(field.high - field.low + 1) + " (" + field.name + ")"};
  return v;
}

// The values a field allows, as bits [low, high]; `star` tells whether the
// field starts with `*` (Vixie cron's "unrestricted" test for the day rule).
std::uint64_t parse_field(std::string_view text, const Field& field, bool* star) {
  *star = !text.empty() && text[0] == '*';
  std::uint64_t bits = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) throw BadCron{std::string("empty item in the ") + field.name + " field"};
    const std::size_t slash = item.find('/');
    const std::string_view base = item.substr(0, slash);
    int step = 1;
    if (slash != std::string_view::npos) step = step_of(item.substr(slash + 1), field);
    int from = field.low;
    int to = field.high;
    if (base != "*") {
      const std::size_t dash = base.find('-');
      from = value_of(base.substr(0, dash), field);
      if (dash != std::string_view::npos) {
        to = value_of(base.substr(dash + 1), field);
        if (to < from)
          throw BadCron{std::string("range ") + std::string(base) + " runs backwards (" +
                        field.name + ")"};
      } else if (slash == std::string_view::npos) {
        to = from;  // a single value; `N/step` runs to the field's end
      }
    }
    for (int v = from; v <= to; v += step) bits |= std::uint64_t{1} << v;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return bits;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Howard Hinnant's civil_from_days (proleptic Gregorian).
void civil_from_days(std::int64_t z, std::int64_t* y, unsigned* m, unsigned* d) noexcept {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<std::int64_t>(yoe) + era * 400 + (*m <= 2 ? 1 : 0);
}

bool leap(std::int64_t y) noexcept {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

// 0 = Sunday; 1970-01-01 was a Thursday.
unsigned weekday(std::int64_t unix_days) noexcept {
  return static_cast<unsigned>(((unix_days % 7) + 7 + 4) % 7);
}

CronSchedule parse_fields(const std::vector<std::string_view>& fields) {
  CronSchedule s;
  bool star = false;
  s.minutes = std::bitset<60>(parse_field(fields[0], kMinuteField, &star));
  s.hours = std::bitset<24>(parse_field(fields[1], kHourField, &star));
  s.days = std::bitset<32>(parse_field(fields[2], kDayField, &star));
  s.days_restricted = !star;
  s.months = std::bitset<13>(parse_field(fields[3], kMonthField, &star));
  std::uint64_t weekdays = parse_field(fields[4], kWeekdayField, &star);
  if ((weekdays & (std::uint64_t{1} << 7)) != 0) weekdays = (weekdays | 1) & 0x7f;  // 7 = Sunday
  s.weekdays = std::bitset<7>(weekdays);
  s.weekdays_restricted = !star;

  // Some allowed day must exist in some allowed month (February has a 29th),
  // unless any weekday will do (then every month has a matching day).
  const bool by_weekday_alone = s.days_restricted && s.weekdays_restricted;
  bool possible = by_weekday_alone;
  for (unsigned m = 1; m <= 12 && !possible; ++m) {
    if (!s.months[m]) continue;
    const unsigned last = m == 2 ? 29 : days_in_month(2001, m);
    for (unsigned d = 1; d <= last && !possible; ++d) possible = s.days[d];
  }
  if (!possible) throw BadCron{"no allowed day exists in the allowed months, it never fires"};
  return s;
}

std::string_view macro(std::string_view name) noexcept {
  std::string lowered;
  for (const char c : name) lowered += lower(c);
  if (lowered == "@yearly" || lowered == "@annually") return "0 0 1 1 *";
  if (lowered == "@monthly") return "0 0 1 * *";
  if (lowered == "@weekly") return "0 0 * * 0";
  if (lowered == "@daily" || lowered == "@midnight") return "0 0 * * *";
  if (lowered == "@hourly") return "0 * * * *";
  return {};
}

}  // namespace

CronSchedule parse_cron(std::string_view text) {
  const std::string quoted =
      "cron expression \"" + std::string(text.substr(0, kMaxCronBytes)) + "\"";
  try {
    if (text.size() > kMaxCronBytes)
      throw BadCron{"longer than " + std::to_string(kMaxCronBytes) + " bytes"};
    std::vector<std::string_view> fields;
    std::size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && is_space(text[i])) ++i;
      const std::size_t start = i;
      while (i < text.size() && !is_space(text[i])) ++i;
      if (i > start) fields.push_back(text.substr(start, i - start));
    }
    if (fields.size() == 1 && fields[0][0] == '@') {
      const std::string_view expansion = macro(fields[0]);
      if (expansion.empty()) throw BadCron{"unknown macro " + std::string(fields[0])};
      return parse_cron(expansion);
    }
    if (fields.size() != 5)
      throw BadCron{"has " + std::to_string(fields.size()) +
                    " fields, expected 5 (minute hour day-of-month month day-of-week)"};
    return parse_fields(fields);
  } catch (const BadCron& bad) {
    fail(Reason::bad_argument, quoted + ": " + bad.why);
  }
}

std::optional<Micros> next_cron_time(const CronSchedule& s, Micros after) noexcept {
  if (after == kPlusInfinity || after == kMinusInfinity) return std::nullopt;
  const std::int64_t minute = floor_div(after, kMicrosPerMinute) + 1;
  const std::int64_t pg_days = floor_div(minute, kMinutesPerDay);
  std::int64_t unix_days = pg_days + kPgEpochDays;
  auto of_day = static_cast<unsigned>(minute - pg_days * kMinutesPerDay);
  unsigned h = of_day / 60;
  unsigned mi = of_day % 60;
  std::int64_t y = 0;
  unsigned mo = 0;
  unsigned d = 0;
  civil_from_days(unix_days, &y, &mo, &d);
  const std::int64_t give_up = y + kSearchYears;

  auto next_day = [&] {
    ++unix_days;
    civil_from_days(unix_days, &y, &mo, &d);
    h = 0;
    mi = 0;
  };
  while (y <= give_up && y <= kLastYear) {
    if (!s.months[mo]) {  // the first day of the next month
      unix_days += days_in_month(y, mo) - d;
      next_day();
      continue;
    }
    const bool day_of_month = s.days[d];
    const bool day_of_week = s.weekdays[weekday(unix_days)];
    const bool day_ok = (s.days_restricted && s.weekdays_restricted)
                            ? (day_of_month || day_of_week)
                            : (day_of_month && day_of_week);
    if (!day_ok) {
      next_day();
      continue;
    }
    if (!s.hours[h]) {
      if (++h == 24) {
        next_day();
      } else {
        mi = 0;
      }
      continue;
    }
    if (!s.minutes[mi]) {
      if (++mi == 60) {
        mi = 0;
        if (++h == 24) next_day();
      }
      continue;
    }
    return ((unix_days - kPgEpochDays) * kMinutesPerDay + std::int64_t{h} * 60 + mi) *
           kMicrosPerMinute;
  }
  return std::nullopt;
}

}  // namespace docket
