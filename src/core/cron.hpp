// Five-field cron expressions (minute hour day-of-month month day-of-week),
// read in UTC, and the next time one fires. Plain values in, plain decisions
// out; src/pg/schedule.cpp exposes them to SQL for docket.schedule_task and
// docket.fire_schedules.
#pragma once

#include <bitset>
#include <optional>
#include <string_view>

#include "core/time.hpp"

namespace docket {

// A parsed expression: the minutes, hours, days, months and weekdays it
// allows. Fields follow Vixie cron: `*`, `N`, `N-M`, each with an optional
// `/step` (`N/step` runs from N to the field's end), joined by commas; months
// and weekdays also by their English three-letter names (case-insensitive);
// weekday 7 is Sunday, like 0. When both the day of month and the day of week
// are restricted (neither field starts with `*`), a day matches if either does.
// The macros @yearly (@annually), @monthly, @weekly, @daily (@midnight) and
// @hourly stand for their five fields.
struct CronSchedule {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days;     // 1..31
  std::bitset<13> months;   // 1..12
  std::bitset<7> weekdays;  // 0 (Sunday) .. 6
  bool days_restricted = false;
  bool weekdays_restricted = false;
};

// Parses an expression; bad_argument ("cron expression ...: <why>") when it
// is not one, or when it can never fire (such as `0 0 30 2 *`).
CronSchedule parse_cron(std::string_view text);

// The first minute strictly after `after` that the schedule fires at, or
// nullopt when there is none in the timestamp range.
std::optional<Micros> next_cron_time(const CronSchedule& schedule, Micros after) noexcept;

}  // namespace docket
