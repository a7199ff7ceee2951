// The stuck-runner policy (docs/tasks.md "Stuck runners"): handlers that block
// without progress past two leases. Whatever the policy, over its life a pool
// never runs more than `concurrency` handlers that the database still holds
// claims for. No timing assertion: the tests wait for what the pool and the
// database do (the watchdog acts at two short leases), never for a fixed time.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/context.hpp"
#include "docket/worker_pool.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::scalar;
using test::unique_name;

// What the handlers saw: handlers inside now, the most at once, how many ever
// entered.
struct Probe {
  std::atomic<bool> release{false};  // set by the test: blocked handlers return
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::atomic<int> entered{0};
  // ReplaceReusesTheSlot...: the first execution's claim token, and whether a
  // later handler found it still held.
  std::mutex token_mutex;
  std::string first_token;
  std::atomic<int> stuck_claim_seen_live{-1};

  void enter() {
    ++entered;
    const int now = ++inside;
    int seen = max_inside.load();
    while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
    }
  }
  void leave() { --inside; }
};

// Every test runs twice: a thread per runner, and runners as fibers on two
// threads (WorkerPoolOptions::runner_threads).
class StuckRunnerTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    queue_ = unique_name("stuck");
    connection_ = std::make_unique<pqxx::connection>(test::conninfo());
  }

  WorkerPoolOptions options(OnStuck policy) const {
    WorkerPoolOptions o;
    o.conninfo = test::conninfo();
    o.queue = queue_;
    o.concurrency = 2;
    o.runner_threads = GetParam();
    o.batch_size = 2;
    o.prefetch = 0;
    o.poll_interval = 50ms;
    o.lease = 200ms;  // the watchdog stops a silent handler at 400 ms
    o.shutdown_grace = 2000ms;
    o.fire_schedules = false;
    o.on_stuck = policy;
    o.logger = null_logger();
    return o;
  }

  std::string spawn(const std::string& task_name) {
    SpawnOptions o;
    o.queue = queue_;
    return Client(*connection_).spawn(task_name, Json::object(), o).run_id;
  }

  // Claims the database holds now for this test's queue.
  int live_claims() {
    return std::stoi(scalar(*connection_, "SELECT count(*) FROM docket.runs WHERE queue = " +
                                              connection_->quote(queue_) +
                                              " AND claim_token IS NOT NULL"));
  }

  std::string queue_;
  std::unique_ptr<pqxx::connection> connection_;
};

// A handler that blocks, without progress, until the test releases it.
Handler blocking(const std::shared_ptr<Probe>& probe) {
  return [probe](Context&, const Json&) -> Json {
    probe->enter();
    while (!probe->release.load()) std::this_thread::sleep_for(5ms);
    probe->leave();
    return Json("late");
  };
}

// on_stuck = exit (the default): the first stuck runner closes claims; the pool
// drains and stops with kStuckExitCode. Three blocking tasks, concurrency 2:
// two handlers enter and block; the third task is never started, and no
// handler ever replaces the blocked ones.
TEST_P(StuckRunnerTest, ExitStopsClaimingAndStopsThePoolWithinItsConcurrency) {
  EXPECT_EQ(WorkerPoolOptions().on_stuck, OnStuck::exit);
  auto probe = std::make_shared<Probe>();
  std::vector<std::string> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(spawn("block"));
  WorkerPool pool(TaskCatalog::Builder().add("block", blocking(probe)).build(),
                  options(OnStuck::exit));
  pool.start();

  EXPECT_EQ(pool.wait(), kStuckExitCode);  // returns once the pool stopped itself
  EXPECT_EQ(pool.exit_code(), kStuckExitCode);
  EXPECT_FALSE(pool.running());
  const PoolCounters c = pool.counters();
  EXPECT_GE(c.stuck, 1u);
  EXPECT_EQ(c.active, 0u);

  // Every handler that ever entered is still blocked: the pool never ran more
  // than its concurrency, stuck ones included, and replaced none of them.
  EXPECT_LE(probe->entered.load(), 2);
  EXPECT_EQ(probe->inside.load(), probe->entered.load());
  EXPECT_LE(probe->max_inside.load(), 2);
  EXPECT_EQ(c.claimed, static_cast<std::uint64_t>(probe->entered.load()) + c.released);
  // The database holds none of their claims: released, due again for a healthy worker.
  EXPECT_EQ(live_claims(), 0);
  Client client(*connection_);
  for (const std::string& run_id : runs)
    EXPECT_EQ((*client.task_result("system", run_id))["state"], "pending");

  probe->release.store(true);  // the detached threads return (they touch only what they co-own)
  ASSERT_TRUE(eventually([&] { return probe->inside.load() == 0; }));
}

// on_stuck = replace: the stuck runner's slot takes a new claim, but only once
// the database released the stuck claim. Concurrency 1: a handler that blocks
// on its first execution, then a probe task that counts, on entry, the claims
// the database holds for the queue while the blocked handler is still inside:
// only its own.
TEST_P(StuckRunnerTest, ReplaceReusesTheSlotOnlyOnceTheStuckClaimIsReleased) {
  auto probe = std::make_shared<Probe>();
  auto first = std::make_shared<std::atomic<bool>>(true);
  const std::string conninfo = test::conninfo();
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("block",
               [probe, first, conninfo](Context& context, const Json&) -> Json {
                 if (!first->exchange(false)) return Json("again");
                 {
                   pqxx::connection c(conninfo);
                   const std::lock_guard<std::mutex> lock(probe->token_mutex);
                   probe->first_token =
                       scalar(c, "SELECT claim_token FROM docket.runs WHERE run_id = " +
                                     c.quote(context.run_id()));
                 }
                 probe->enter();
                 while (!probe->release.load()) std::this_thread::sleep_for(5ms);
                 probe->leave();
                 return Json("late");
               })
          .add("count",
               [probe, conninfo](Context&, const Json&) -> Json {
                 // The stuck execution's own claim, still held? (Counting every
                 // claim of the queue would also count the blocked run's second,
                 // finished execution while its completion waits for the flush.)
                 pqxx::connection c(conninfo);
                 std::string token;
                 {
                   const std::lock_guard<std::mutex> lock(probe->token_mutex);
                   token = probe->first_token;
                 }
                 const int live = std::stoi(scalar(
                     c, "SELECT count(*) FROM docket.runs WHERE claim_token = " + c.quote(token)));
                 probe->stuck_claim_seen_live.store(live);
                 return Json(live);
               })
          .build();
  WorkerPoolOptions o = options(OnStuck::replace);
  o.concurrency = 1;
  o.batch_size = 1;
  const std::string blocked = spawn("block");
  WorkerPool pool(std::move(catalog), o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return probe->inside.load() == 1; }));
  const std::string counter = spawn("count");
  Client client(*connection_);
  ASSERT_TRUE(eventually([&] {
    return (*client.task_result("system", counter))["state"] == "completed" &&
           (*client.task_result("system", blocked))["state"] == "completed";
  }));
  EXPECT_EQ(probe->inside.load(), 1);  // the first execution is still blocked
  EXPECT_EQ(probe->stuck_claim_seen_live.load(), 0)
      << "a replacement ran beside a live stuck claim";
  EXPECT_EQ((*client.task_result("system", counter))["result"], 0);
  EXPECT_TRUE(pool.running());
  EXPECT_GE(pool.counters().stuck, 1u);
  pool.stop();
  EXPECT_EQ(pool.exit_code(), 0);
  EXPECT_EQ(pool.wait(), 0);

  probe->release.store(true);
  ASSERT_TRUE(eventually([&] { return probe->inside.load() == 0; }));
}

// Context::heartbeat(extend): the claim holds until now + extend whatever lease
// another claimer passes (a claimer five minutes later with a 1 ms lease takes
// nothing), and the watchdog counts the extension as progress (a handler quiet
// for several leases after it is not stuck).
TEST_P(StuckRunnerTest, HeartbeatExtensionHoldsTheClaimAndIsProgress) {
  const std::string conninfo = test::conninfo();
  const std::string queue = queue_;
  auto stolen = std::make_shared<std::atomic<int>>(-1);
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("long",
               [conninfo, queue, stolen](Context& ctx, const Json&) -> Json {
                 ctx.heartbeat(std::chrono::minutes(10));
                 pqxx::connection c(conninfo);
                 scalar(c, "SET docket.fake_now = " +
                               c.quote(scalar(
                                   c, "SELECT docket._iso(docket.now() + interval '5 minutes')")));
                 stolen->store(std::stoi(scalar(
                     c, "SELECT count(*) FROM docket.claim_tasks(" + c.quote(queue) + ", 1, 1)")));
                 std::this_thread::sleep_for(1000ms);  // five leases without a step
                 ctx.step("after", [] { return Json(1); });
                 return Json("done");
               })
          .build();
  const std::string run_id = spawn("long");
  WorkerPool pool(std::move(catalog), options(OnStuck::exit));
  pool.start();
  Client client(*connection_);
  ASSERT_TRUE(
      eventually([&] { return (*client.task_result("system", run_id))["state"] == "completed"; }));
  EXPECT_EQ(stolen->load(), 0) << "a claimer with a short lease took an extended claim";
  EXPECT_EQ((*client.task_result("system", run_id))["result"], "done");
  EXPECT_TRUE(pool.running());
  EXPECT_EQ(pool.counters().stuck, 0u);
  pool.stop();
  EXPECT_EQ(pool.wait(), 0);
}

// The parameter: WorkerPoolOptions::runner_threads.
INSTANTIATE_TEST_SUITE_P(Runners, StuckRunnerTest, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? std::string("Threads") : std::string("Fibers");
                         });

}  // namespace
}  // namespace docket
