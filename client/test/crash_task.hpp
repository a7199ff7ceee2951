// The task of the crash-recovery test, shared by the test and the crash_worker
// process so both run exactly the same handler.
//
// Three steps; each step function first counts its execution in the side table
// crash_step_runs (its own connection, committed at once), so the test can see
// which steps really ran and how often. With block_in_second the second step
// never returns: the worker process is killed there.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "docket/context.hpp"
#include "docket/task_catalog.hpp"

namespace docket::test {

constexpr const char* kCrashTask = "crash_task";

inline void create_crash_table(pqxx::connection_base& connection) {
  pqxx::nontransaction tx(connection);
  tx.exec(
      "CREATE TABLE IF NOT EXISTS crash_step_runs (run_id text NOT NULL, step text NOT NULL, "
      "executions int NOT NULL, last_wake_reason text, PRIMARY KEY (run_id, step))");
}

inline void count_execution(const std::string& conninfo, const Context& ctx,
                            const std::string& step) {
  pqxx::connection connection(conninfo);
  pqxx::nontransaction tx(connection);
  tx.exec("INSERT INTO crash_step_runs VALUES (" + tx.quote(ctx.run_id()) + ", " + tx.quote(step) +
          ", 1, " + tx.quote(ctx.wake_reason()) +
          ") ON CONFLICT (run_id, step) DO UPDATE SET executions = "
          "crash_step_runs.executions + 1, last_wake_reason = EXCLUDED.last_wake_reason");
}

inline Handler crash_task_handler(std::string conninfo, bool block_in_second) {
  return [conninfo, block_in_second](Context& ctx, const Json&) -> Json {
    const Json one = ctx.step("first", [&] {
      count_execution(conninfo, ctx, "first");
      return Json("one");
    });
    const Json two = ctx.step("second", [&] {
      count_execution(conninfo, ctx, "second");
      while (block_in_second) std::this_thread::sleep_for(std::chrono::seconds(1));
      return Json("two");
    });
    const Json three = ctx.step("third", [&] {
      count_execution(conninfo, ctx, "third");
      return Json("three");
    });
    return Json{{"steps", {one, two, three}}, {"wake_reason", ctx.wake_reason()}};
  };
}

}  // namespace docket::test
