// docketctl queues (alias stats): docket.queue_stats; top: the same, live.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <limits>
#include <thread>

#include "docket/sql.hpp"
#include "docketctl.hpp"

namespace docketctl {

namespace {

// A constant array, not a static std::vector whose construction could throw.
constexpr const char* kCountColumns[] = {"due",
                                         "scheduled",
                                         "running",
                                         "waiting",
                                         "poisoned",
                                         "completed_last_minute",
                                         "failed_last_minute"};

std::vector<docket::Json> read_stats(Context& context) {
  return docket::sql::in_transaction(context.connection(), false, [&](pqxx::transaction_base& tx) {
    return docket::sql::queue_stats(tx, context.scope_or("system"));
  });
}

// The sums of the count columns over every queue, and the oldest due age.
docket::Json totals(const std::vector<docket::Json>& rows) {
  docket::Json out = {{"queue", "(all)"}};
  for (const std::string column : kCountColumns) {
    std::int64_t sum = 0;
    for (const auto& row : rows) sum += row.value(column, std::int64_t{0});
    out[column] = sum;
  }
  docket::Json oldest;
  for (const auto& row : rows) {
    const docket::Json& age = row["oldest_due_age_ms"];
    if (!age.is_null() && (oldest.is_null() || age.get<double>() > oldest.get<double>()))
      oldest = age;
  }
  out["oldest_due_age_ms"] = oldest;
  return out;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string per_second(const docket::Json& per_minute) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", per_minute.get<double>() / 60.0);
  return text;
}

void add_queues(CLI::App& app, Context& context) {
  CLI::App* queues = app.add_subcommand(
      "queues", "per queue: tasks due, scheduled, running, waiting, poisoned; the last minute");
  queues->alias("stats");
  queues->callback([&context] {
    const std::vector<docket::Json> rows = read_stats(context);
    context.emit(docket::Json(rows), [&] {
      print_table(rows, {"queue", "due", "scheduled", "running", "waiting", "poisoned",
                         "oldest_due_age_ms", "completed_last_minute", "failed_last_minute"});
    });
  });
}

void add_top(CLI::App& app, Context& context) {
  struct Args {
    long long interval_ms = 1000;
    int iterations = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* top = app.add_subcommand(
      "top", "a live view of the queues and their throughput, refreshed in the terminal");
  top->add_option("--interval", args->interval_ms, "ms between refreshes (default 1000)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  top->add_option("--iterations", args->iterations,
                  "stop after this many refreshes (default 0: until interrupted)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  top->callback([&context, args] {
    // Redraw in place only on a terminal; piped, frames follow each other.
    const bool redraw = !context.json && ::isatty(STDOUT_FILENO) == 1;
    for (int frame = 1; args->iterations == 0 || frame <= args->iterations; ++frame) {
      if (frame > 1) std::this_thread::sleep_for(std::chrono::milliseconds(args->interval_ms));
      const std::vector<docket::Json> rows = read_stats(context);
      const docket::Json all = totals(rows);
      const std::string at = utc_now();
      if (context.json) {
        std::cout
            << docket::Json{{"frame", frame}, {"at", at}, {"queues", rows}, {"totals", all}}.dump()
            << "\n";
      } else {
        if (redraw) std::cout << "\x1b[H\x1b[2J";
        std::cout << "docket top  " << at << "  scope " << context.scope_or("system") << "  frame "
                  << frame << "  (every " << args->interval_ms << " ms; Ctrl-C quits)\n";
        std::cout << "tasks: " << all["due"] << " due, " << all["running"] << " running, "
                  << all["waiting"] << " waiting, " << all["scheduled"] << " scheduled, "
                  << all["poisoned"] << " poisoned; throughput "
                  << per_second(all["completed_last_minute"]) << " completed/s, "
                  << per_second(all["failed_last_minute"]) << " failed/s (last minute)\n\n";
        std::vector<docket::Json> table = rows;
        table.push_back(all);
        for (auto& row : table) {
          row["completed/s"] = per_second(row["completed_last_minute"]);
          row["failed/s"] = per_second(row["failed_last_minute"]);
        }
        print_table(table, {"queue", "due", "scheduled", "running", "waiting", "poisoned",
                            "oldest_due_age_ms", "completed/s", "failed/s"});
      }
      std::cout.flush();
    }
  });
}

}  // namespace

void add_queues_commands(CLI::App& app, Context& context) {
  add_queues(app, context);
  add_top(app, context);
}

}  // namespace docketctl
