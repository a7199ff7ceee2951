// cron_next: the SQL face of the core's cron parser (src/core/cron.*).
// docket.schedule_task checks expressions with it and docket.fire_schedules
// advances each schedule with it (sql/upgrade/0.3.0/40_schedules.sql).
#include "core/cron.hpp"
#include "pg/datum.hpp"

namespace docket::pg {

namespace {

Datum cron_next(FunctionCallInfo fcinfo) {
  const std::string cron = text_arg(fcinfo, 0, "cron");
  const CronSchedule schedule = parse_cron(cron);
  const Micros after = timestamp_arg(fcinfo, 1, "after");
  const std::optional<Micros> next = next_cron_time(schedule, after);
  if (!next)
    fail(Reason::bad_argument,
         "cron expression \"" + cron + "\" does not fire again within the timestamp range");
  PG_RETURN_TIMESTAMPTZ(*next);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_cron_next, docket::pg::cron_next)
