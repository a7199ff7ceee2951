// Periodic tasks driven by the worker pools' poll loops, against the fake clock:
// every pool connection runs with docket.fake_now set (libpq `options`), so
// the schedule's ticks are due by the database's clock, not by waiting. The
// suite uses its own database, so no other test's pool fires its schedules.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "docket/context.hpp"
#include "docket/worker_pool.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::scalar;
using test::unique_name;

void admin(const std::string& statement) {
  pqxx::connection connection("dbname=postgres");
  pqxx::nontransaction tx(connection);
  tx.exec(statement);
}

class ScheduleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    database_ = unique_name("docket_sched");
    admin("CREATE DATABASE " + database_);
    pqxx::connection connection("dbname=" + database_);
    pqxx::nontransaction tx(connection);
    tx.exec("CREATE EXTENSION docket");
  }
  static void TearDownTestSuite() {
    admin("DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)");
  }

  // A connection string whose sessions see docket.now() = `fake_now`.
  static std::string at(const std::string& fake_now) {
    return "dbname=" + database_ + " options='-c docket.fake_now=" + fake_now + "'";
  }

  // Schedules `name` every minute at 00:00:30 (first tick 00:01:00).
  void schedule(const std::string& name, const std::string& queue) {
    pqxx::connection connection(at("2030-01-01T00:00:30Z"));
    pqxx::nontransaction tx(connection);
    tx.exec_params("SELECT docket.schedule_task($1, '* * * * *', 'tick', '{\"n\": 7}', $2)", name,
                   queue);
  }

  WorkerPoolOptions options(const std::string& queue, const std::string& fake_now) const {
    WorkerPoolOptions o;
    o.conninfo = at(fake_now);
    o.queue = queue;
    o.concurrency = 2;
    o.batch_size = 2;
    o.poll_interval = 100ms;
    o.schedule_interval = 100ms;
    o.shutdown_grace = 3000ms;
    return o;
  }

  static std::string database_;
};

std::string ScheduleTest::database_;

struct Seen {
  std::mutex mutex;
  std::vector<std::string> ticks;  // docket_tick header of each execution
  std::atomic<int> runs{0};
};

TaskCatalog recording_catalog(const std::shared_ptr<Seen>& seen) {
  return TaskCatalog::Builder()
      .add("tick",
           [seen](Context& ctx, const Json& params) -> Json {
             {
               const std::lock_guard<std::mutex> lock(seen->mutex);
               seen->ticks.push_back(ctx.headers().value("docket_schedule", std::string()) + "@" +
                                     ctx.headers().value("docket_tick", std::string()) +
                                     " n=" + std::to_string(params.value("n", 0)));
             }
             seen->runs.fetch_add(1);
             return Json::object();
           })
      .build();
}

// Two pools of the same queue poll at 00:05:30 (five ticks missed): the
// schedule fires once, one catch-up task for its oldest tick, which one of
// them executes; next_run_at moves to 00:06.
TEST_F(ScheduleTest, TwoPoolsFireAMissedTickOnce) {
  const std::string queue = unique_name("sq");
  const std::string name = unique_name("every_minute");
  schedule(name, queue);
  auto seen = std::make_shared<Seen>();
  WorkerPool first(recording_catalog(seen), options(queue, "2030-01-01T00:05:30Z"));
  WorkerPool second(recording_catalog(seen), options(queue, "2030-01-01T00:05:30Z"));
  first.start();
  second.start();
  ASSERT_TRUE(eventually([&] { return seen->runs.load() >= 1; }));
  // Both pollers have fired (or skipped) at least once more by the time both
  // counted a claim call after the task ran; the schedule is not due again.
  pqxx::connection connection("dbname=" + database_);
  ASSERT_TRUE(eventually([&] {
    return scalar(connection,
                  "SELECT count(*) FROM docket.runs WHERE status = 'completed' AND queue = " +
                      connection.quote(queue)) == "1";
  }));
  first.stop();
  second.stop();

  EXPECT_EQ(first.counters().fired + second.counters().fired, 1u);
  EXPECT_EQ(first.counters().completed + second.counters().completed, 1u);
  {
    const std::lock_guard<std::mutex> lock(seen->mutex);
    EXPECT_EQ(seen->ticks, std::vector<std::string>{name + "@2030-01-01T00:01:00Z n=7"});
  }
  EXPECT_EQ(scalar(connection,
                   "SELECT count(*) FROM docket.tasks WHERE headers ->> "
                   "'docket_schedule' = " +
                       connection.quote(name)),
            "1");
  EXPECT_EQ(scalar(connection,
                   "SELECT to_char(next_run_at AT TIME ZONE 'UTC', 'HH24:MI') FROM "
                   "docket.list_schedules() WHERE schedule_name = " +
                       connection.quote(name)),
            "00:06");
}

// A pool whose clock is before the first tick fires nothing; one past the next
// tick fires it, and the task runs.
TEST_F(ScheduleTest, FiresWhenTheFakeClockReachesTheTick) {
  const std::string queue = unique_name("sq");
  const std::string name = unique_name("later");
  schedule(name, queue);
  auto seen = std::make_shared<Seen>();
  pqxx::connection connection("dbname=" + database_);
  {
    WorkerPool early(recording_catalog(seen), options(queue, "2030-01-01T00:00:59Z"));
    early.start();
    // Wait until its poller has certainly called fire_schedules. (Not for a
    // claim call: while the waker holds every slot in await_tasks, the poller
    // claims nothing.)
    ASSERT_TRUE(eventually([&] { return early.counters().schedule_checks > 0; }));
    early.stop();
    EXPECT_EQ(early.counters().fired, 0u);
  }
  EXPECT_EQ(seen->runs.load(), 0);
  WorkerPool late(recording_catalog(seen), options(queue, "2030-01-01T00:01:00Z"));
  late.start();
  ASSERT_TRUE(eventually([&] { return seen->runs.load() >= 1; }));
  late.stop();
  EXPECT_EQ(late.counters().fired, 1u);
  const std::lock_guard<std::mutex> lock(seen->mutex);
  EXPECT_EQ(seen->ticks, std::vector<std::string>{name + "@2030-01-01T00:01:00Z n=7"});
}

// fire_schedules = false: the pool leaves schedules to another scheduler.
TEST_F(ScheduleTest, PoolWithFiringOffFiresNothing) {
  const std::string queue = unique_name("sq");
  const std::string name = unique_name("off");
  schedule(name, queue);
  auto seen = std::make_shared<Seen>();
  WorkerPoolOptions o = options(queue, "2030-01-01T00:05:30Z");
  o.fire_schedules = false;
  // No waker: the poller claims in every iteration of its loop, so a claim call
  // shows it has passed the point where it would have fired.
  o.await_tasks = false;
  WorkerPool pool(recording_catalog(seen), o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return pool.counters().claim_latency_ms > 0; }));
  pool.stop();
  EXPECT_EQ(pool.counters().fired, 0u);
  EXPECT_EQ(pool.counters().schedule_checks, 0u);
  pqxx::connection connection("dbname=" + database_);
  EXPECT_EQ(scalar(connection,
                   "SELECT count(*) FROM docket.tasks WHERE headers ->> "
                   "'docket_schedule' = " +
                       connection.quote(name)),
            "0");
}

}  // namespace
}  // namespace docket
