// End-to-end tests of the worker side (WorkerPool, Poller, Runner, Context,
// LeaseWatchdog) against a real cluster: PGHOST/PGPORT/PGUSER from the
// environment. The suite creates its own database with CREATE EXTENSION docket;
// every test uses its own queue, so tests do not see each other's tasks.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/context.hpp"
#include "docket/errors.hpp"
#include "docket/worker_pool.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::eventually;
using test::unique_name;

// Keeps every message, so tests can check what the pool reported
// (DOCKET_TEST_VERBOSE=1 also prints them).
class CapturingLogger final : public Logger {
 public:
  void log(LogLevel level, std::string_view message) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (verbose_)
      std::fprintf(stderr, "[pool %d] %.*s\n", static_cast<int>(level),
                   static_cast<int>(message.size()), message.data());
    lines_.push_back({level, std::string(message)});
  }
  bool contains(LogLevel level, const std::string& needle) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& line : lines_)
      if (line.first == level && line.second.find(needle) != std::string::npos) return true;
    return false;
  }

 private:
  const bool verbose_ = std::getenv("DOCKET_TEST_VERBOSE") != nullptr;
  mutable std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> lines_;
};

void admin(const std::string& statement) {
  pqxx::connection connection("dbname=postgres");
  pqxx::nontransaction tx(connection);
  tx.exec(statement);
}

std::string create_database(const std::string& name, bool with_extension) {
  admin("CREATE DATABASE " + name);
  if (with_extension) {
    pqxx::connection connection("dbname=" + name);
    pqxx::nontransaction tx(connection);
    tx.exec("CREATE EXTENSION docket");
  }
  return "dbname=" + name;
}

// Every test runs twice: a thread per runner, and runners as fibers on two
// threads (WorkerPoolOptions::runner_threads).
class WorkerPoolTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    database_ = unique_name("docket_wp");
    conninfo_ = create_database(database_, true);
  }
  static void TearDownTestSuite() {
    admin("DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)");
  }

  void SetUp() override {
    queue_ = unique_name("q");
    connection_ = std::make_unique<pqxx::connection>(conninfo_);
    client_ = std::make_unique<Client>(*connection_);
    logger_ = std::make_shared<CapturingLogger>();
  }

  WorkerPoolOptions options() const {
    WorkerPoolOptions o;
    o.conninfo = conninfo_;
    o.queue = queue_;
    o.concurrency = 4;
    o.runner_threads = GetParam();
    o.batch_size = 4;
    o.poll_interval = 100ms;
    o.lease = 5000ms;
    o.shutdown_grace = 3000ms;
    o.logger = logger_;
    return o;
  }

  std::string spawn(const std::string& task_name, const Json& params = Json::object()) {
    SpawnOptions o;
    o.queue = queue_;
    return client_->spawn(task_name, params, o).run_id;
  }

  Json result(const std::string& run_id) {
    const std::optional<Json> r = client_->task_result("system", run_id);
    return r ? *r : Json();
  }
  std::string state(const std::string& run_id) {
    return result(run_id).value("state", std::string("?"));
  }

  Json query_value(const std::string& sql, const std::string& arg) {
    pqxx::work tx(*connection_);
    const pqxx::result r = tx.exec_params(sql, arg);
    tx.commit();
    if (r.empty() || r[0][0].is_null()) return Json();
    return Json::parse(r[0][0].c_str());
  }
  // step name -> stored value
  Json steps_of(const std::string& run_id) {
    return query_value(
        "SELECT coalesce(jsonb_object_agg(step_name, value), '{}')::text FROM docket.task_steps "
        "WHERE run_id = $1",
        run_id);
  }

  static std::string database_;
  static std::string conninfo_;
  std::string queue_;
  std::unique_ptr<pqxx::connection> connection_;
  std::unique_ptr<Client> client_;
  std::shared_ptr<CapturingLogger> logger_;
};

std::string WorkerPoolTest::database_;
std::string WorkerPoolTest::conninfo_;

// --- the whole path --------------------------------------------------------

struct EndToEndProbe {
  std::atomic<int> executions{0};
  std::atomic<int> first_charge{0};
  std::atomic<int> second_charge{0};
  std::atomic<int> notify{0};
};

TEST_P(WorkerPoolTest, EndToEndWithStepsSleepEventAndChild) {
  auto probe = std::make_shared<EndToEndProbe>();
  const std::string event = "go:" + queue_;
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("parent",
               [probe, event](Context& ctx, const Json& params) -> Json {
                 probe->executions++;
                 const Json a = ctx.step("charge", [&] {
                   probe->first_charge++;
                   return Json(params.at("x").get<int>() + 1);
                 });
                 const Json b = ctx.step("charge", [&] {
                   probe->second_charge++;
                   return Json(10);
                 });
                 Context::StepHandle handle = ctx.begin_step("notify");
                 Json key = handle.value;
                 if (!handle.completed) {
                   probe->notify++;
                   key = ctx.complete_step(handle, handle.idempotency_key);
                 }
                 ctx.sleep_for(500ms);
                 const std::optional<Json> payload = ctx.await_event(event);
                 const std::string child = ctx.spawn_child("child", Json{{"n", 21}});
                 const TaskOutcome outcome = ctx.await_task(child);
                 return Json{{"a", a},
                             {"b", b},
                             {"key", key},
                             {"event", payload.value_or(Json("timeout"))},
                             {"child", outcome.result},
                             {"child_state", outcome.state},
                             {"child_id", child}};
               })
          .add("child",
               [](Context& ctx, const Json& params) -> Json {
                 return ctx.step("double", [&] { return Json(params.at("n").get<int>() * 2); });
               })
          .build();
  WorkerPool pool(std::move(catalog), options());
  pool.start();
  EXPECT_TRUE(pool.running());

  const std::string run_id = spawn("parent", Json{{"x", 1}});
  // It sleeps (suspended), then waits for the event.
  ASSERT_TRUE(eventually([&] { return state(run_id) == "waiting"; })) << result(run_id).dump();
  EXPECT_TRUE(client_->emit_event(event, Json{{"ok", true}}));
  ASSERT_TRUE(eventually([&] { return state(run_id) == "completed"; })) << result(run_id).dump();

  const Json r = result(run_id);
  EXPECT_EQ(r["attempts"], 1);
  EXPECT_EQ(r["result"]["a"], 2);
  EXPECT_EQ(r["result"]["b"], 10);
  EXPECT_EQ(r["result"]["key"], run_id + ":notify");
  EXPECT_EQ(r["result"]["event"], (Json{{"ok", true}}));
  EXPECT_EQ(r["result"]["child"], 42);
  EXPECT_EQ(r["result"]["child_state"], "completed");

  // Replayed on every wake-up, yet every step ran once. (The child may finish
  // before the parent awaits it: then the join does not suspend.)
  EXPECT_GE(probe->executions.load(), 3);
  EXPECT_EQ(probe->first_charge.load(), 1);
  EXPECT_EQ(probe->second_charge.load(), 1);
  EXPECT_EQ(probe->notify.load(), 1);
  const std::string child_id = r["result"]["child_id"];
  const Json steps = steps_of(run_id);
  const std::vector<std::string> names = {
      "charge", "charge#2", "notify", "sleep", "event:" + event, "spawn:child", "task:" + child_id};
  for (const std::string& name : names)
    EXPECT_TRUE(steps.contains(name)) << name << " in " << steps.dump();
  EXPECT_EQ(steps["spawn:child"]["run_id"], child_id);

  pool.stop();
  EXPECT_FALSE(pool.running());
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.completed, 2u);
  EXPECT_GE(c.suspended, 2u);  // sleep, event (and child, unless it finished first)
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(c.stuck, 0u);
  EXPECT_EQ(c.active, 0u);
  EXPECT_GT(c.claim_latency_ms, 0.0);
}

TEST_P(WorkerPoolTest, TimeoutsPastSleepsAndEventsStayInTheTaskScope) {
  const std::string ping = "ping:" + queue_;
  const std::string never = "never:" + queue_;
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("tenant_parent",
               [ping, never](Context& ctx, const Json&) -> Json {
                 ctx.sleep_until("2000-01-01T00:00:00Z", "past");  // elapsed: returns at once
                 const std::optional<Json> missing = ctx.await_event(never, 200ms);
                 const std::string child = ctx.spawn_child("tenant_child", Json::object());
                 const bool first = ctx.emit_event(ping, Json("pong"));
                 const TaskOutcome outcome = ctx.await_task(child);
                 return Json{{"timed_out", !missing.has_value()},
                             {"first_emit", first},
                             {"child", child},
                             {"child_saw", outcome.result}};
               })
          .add("tenant_child",
               [ping](Context& ctx, const Json&) -> Json {
                 return ctx.await_event(ping).value_or(Json("timeout"));
               })
          .build();
  WorkerPool pool(std::move(catalog), options());
  pool.start();
  SpawnOptions o;
  o.queue = queue_;
  o.owner_scope = "tenant:acme";
  const std::string run_id = client_->spawn("tenant_parent", Json::object(), o).run_id;
  ASSERT_TRUE(eventually([&] { return state(run_id) == "completed"; })) << result(run_id).dump();
  pool.stop();

  const Json r = result(run_id)["result"];
  EXPECT_EQ(r["timed_out"], true);
  EXPECT_EQ(r["first_emit"], true);
  EXPECT_EQ(r["child_saw"], "pong");
  const std::optional<Json> child = client_->inspect_run("system", r["child"]);
  ASSERT_TRUE(child.has_value());
  EXPECT_EQ((*child)["tenant_id"], "acme");                // the child lives in its parent's scope
  EXPECT_TRUE(steps_of(run_id).contains("emit:" + ping));  // replays do not emit again
  // The event was emitted in the tenant's scope only.
  EXPECT_FALSE(client_->emit_event(ping, nullptr, "tenant:acme"));
  EXPECT_TRUE(client_->emit_event(ping, nullptr, "tenantless"));
  EXPECT_EQ(pool.counters().completed, 2u);
}

// --- failures --------------------------------------------------------------

TEST_P(WorkerPoolTest, HandlerExceptionFailsTheAttemptAndTheDatabaseRetries) {
  auto executions = std::make_shared<std::atomic<int>>(0);
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("flaky",
                                 [executions](Context&, const Json&) -> Json {
                                   ++*executions;
                                   throw std::runtime_error("boom");
                                 })
                            .build();
  WorkerPool pool(std::move(catalog), options());
  pool.start();
  SpawnOptions o;
  o.queue = queue_;
  o.max_attempts = 2;
  o.retry = Json{{"kind", "none"}};
  const std::string run_id = client_->spawn("flaky", Json::object(), o).run_id;
  ASSERT_TRUE(eventually([&] { return state(run_id) == "failed"; })) << result(run_id).dump();
  pool.stop();
  const Json r = result(run_id);
  EXPECT_EQ(r["attempts"], 2);
  EXPECT_EQ(r["error"]["message"], "boom");
  EXPECT_EQ(r["error"]["type"], "std::runtime_error");
  EXPECT_EQ(executions->load(), 2);
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.failed, 2u);
  EXPECT_EQ(c.retried, 1u);
  EXPECT_EQ(c.completed, 0u);
}

// A handler's own error type that says "never retry".
class InvalidInput : public PermanentError {
 public:
  using PermanentError::PermanentError;
};

TEST_P(WorkerPoolTest, PermanentErrorFailsTheTaskForGoodWhateverAttemptsRemain) {
  auto executions = std::make_shared<std::atomic<int>>(0);
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("fatal",
                                 [executions](Context&, const Json&) -> Json {
                                   ++*executions;
                                   throw PermanentError("bad account number");
                                 })
                            .add("derived",
                                 [executions](Context&, const Json&) -> Json {
                                   ++*executions;
                                   throw InvalidInput("no such customer");
                                 })
                            .build();
  WorkerPool pool(std::move(catalog), options());
  pool.start();
  SpawnOptions o;
  o.queue = queue_;
  o.max_attempts = 5;
  o.retry = Json{{"kind", "none"}};
  const std::string fatal = client_->spawn("fatal", Json::object(), o).run_id;
  const std::string derived = client_->spawn("derived", Json::object(), o).run_id;
  ASSERT_TRUE(eventually([&] { return state(fatal) == "failed" && state(derived) == "failed"; }))
      << result(fatal).dump() << result(derived).dump();
  pool.stop();
  const Json a = result(fatal);
  EXPECT_EQ(a["attempts"], 1) << a.dump();
  EXPECT_EQ(a["error"]["message"], "bad account number");
  EXPECT_EQ(a["error"]["type"], "docket::PermanentError");
  const Json b = result(derived);
  EXPECT_EQ(b["attempts"], 1) << b.dump();
  EXPECT_EQ(b["error"]["message"], "no such customer");
  EXPECT_NE(b["error"]["type"].get<std::string>().find("InvalidInput"), std::string::npos);
  EXPECT_EQ(executions->load(), 2);
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.failed, 2u);
  EXPECT_EQ(c.retried, 0u);
  EXPECT_EQ(c.completed, 0u);
  EXPECT_TRUE(logger_->contains(LogLevel::info, "failed (failed, permanent)"));
}

// --- cancellation ----------------------------------------------------------

struct CancelProbe {
  std::atomic<int> started{0};
  std::atomic<int> unwound{0};
  std::atomic<int> swallowed{0};
  std::atomic<bool> wrong_kind{false};
};

TEST_P(WorkerPoolTest, CancellationUnwindsTheHandlerWithoutFinalizing) {
  auto probe = std::make_shared<CancelProbe>();
  const auto spin = [probe](Context& ctx, bool swallow) -> Json {
    probe->started++;
    try {
      for (;;) {
        ctx.heartbeat();
        std::this_thread::sleep_for(20ms);
      }
    } catch (const ControlSignal& signal) {
      if (signal.kind() != ControlSignal::Kind::cancelled) probe->wrong_kind = true;
      if (!swallow) {
        probe->unwound++;
        throw;
      }
      probe->swallowed++;
    }
    return Json("finished anyway");  // a buggy handler: the runner must still not complete
  };
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("spin", [spin](Context& ctx, const Json&) { return spin(ctx, false); })
          .add("swallow", [spin](Context& ctx, const Json&) { return spin(ctx, true); })
          .build();
  WorkerPool pool(std::move(catalog), options());
  pool.start();
  const std::string a = spawn("spin");
  const std::string b = spawn("swallow");
  ASSERT_TRUE(eventually([&] { return probe->started.load() == 2; }));
  EXPECT_TRUE(client_->cancel("system", a, std::string("test")));
  EXPECT_TRUE(client_->cancel("system", b, std::string("test")));
  ASSERT_TRUE(eventually([&] { return pool.counters().cancelled == 2; }));
  EXPECT_EQ(probe->unwound.load(), 1);
  EXPECT_EQ(probe->swallowed.load(), 1);
  EXPECT_FALSE(probe->wrong_kind.load());
  for (const std::string& run_id : {a, b}) {
    const Json r = result(run_id);
    EXPECT_EQ(r["state"], "cancelled");
    EXPECT_TRUE(r["result"].is_null()) << r.dump();
    EXPECT_TRUE(r["error"].is_null()) << r.dump();
  }
  pool.stop();
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.completed, 0u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.lost, 0u);
}

// --- rolling deploy --------------------------------------------------------

TEST_P(WorkerPoolTest, UnknownTaskNameIsDeferredWithoutUsingAnAttempt) {
  const std::string run_id = spawn("rolling", Json{{"v", 7}});
  {
    TaskCatalog old_catalog =
        TaskCatalog::Builder().add("other", [](Context&, const Json&) { return Json(); }).build();
    WorkerPool old_pool(std::move(old_catalog), options());
    old_pool.start();
    ASSERT_TRUE(eventually([&] { return old_pool.counters().abandoned >= 1; }));
    old_pool.stop();
    EXPECT_EQ(old_pool.counters().completed, 0u);
  }
  Json r = result(run_id);
  EXPECT_EQ(r["attempts"], 1);
  EXPECT_TRUE(r["state"] == "pending" || r["state"] == "sleeping") << r.dump();
  const std::optional<Json> info = client_->inspect_run("system", run_id);
  ASSERT_TRUE(info.has_value());
  EXPECT_GE((*info)["claim_abandons"].get<int>(), 1);

  TaskCatalog new_catalog =
      TaskCatalog::Builder()
          .add("rolling", [](Context&, const Json& params) { return params.at("v"); })
          .build();
  WorkerPool new_pool(std::move(new_catalog), options());
  new_pool.start();
  ASSERT_TRUE(eventually([&] { return state(run_id) == "completed"; })) << result(run_id).dump();
  new_pool.stop();
  r = result(run_id);
  EXPECT_EQ(r["attempts"], 1);
  EXPECT_EQ(r["result"], 7);
}

// --- the lease watchdog ----------------------------------------------------

struct BlockProbe {
  std::atomic<int> executions{0};
  std::atomic<bool> stuck_returned{false};
  std::atomic<int> stuck_signal{-1};
  std::atomic<bool> stuck_committed{false};
};

TEST_P(WorkerPoolTest, WatchdogStopsABlockedRunnerAtTwoLeases) {
  auto probe = std::make_shared<BlockProbe>();
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("block",
               [probe](Context& ctx, const Json&) -> Json {
                 const int execution = ++probe->executions;
                 ctx.step("before", [] { return Json("ok"); });
                 if (execution == 1) {
                   std::this_thread::sleep_for(4500ms);  // fifteen leases without progress
                   try {
                     ctx.step("after", [] { return Json("stuck"); });
                     probe->stuck_committed = true;
                   } catch (const ControlSignal& signal) {
                     probe->stuck_signal = static_cast<int>(signal.kind());
                     probe->stuck_returned = true;
                     throw;
                   }
                   probe->stuck_returned = true;
                   return Json("stuck");
                 }
                 return ctx.step("after", [] { return Json("fresh"); });
               })
          .build();
  WorkerPoolOptions o = options();
  o.lease = 300ms;
  o.poll_interval = 50ms;
  o.concurrency = 1;              // the task can only run again once the watchdog freed the slot
  o.on_stuck = OnStuck::replace;  // the pool goes on (the default, exit, stops it)
  WorkerPool pool(std::move(catalog), o);
  pool.start();
  const std::string run_id = spawn("block");

  ASSERT_TRUE(eventually([&] { return state(run_id) == "completed"; }, 10s))
      << result(run_id).dump();
  EXPECT_FALSE(probe->stuck_returned.load());  // still blocked when the task completed
  EXPECT_EQ(result(run_id)["result"], "fresh");
  EXPECT_EQ(pool.counters().stuck, 1u);
  EXPECT_TRUE(logger_->contains(LogLevel::warning, "one lease"));
  EXPECT_TRUE(logger_->contains(LogLevel::error, "two leases"));

  ASSERT_TRUE(eventually([&] { return probe->stuck_returned.load(); }));
  EXPECT_EQ(probe->stuck_signal.load(), static_cast<int>(ControlSignal::Kind::invalidated));
  EXPECT_FALSE(probe->stuck_committed.load());
  EXPECT_EQ(steps_of(run_id)["after"], "fresh");  // nothing of the stuck thread reached it
  pool.stop();
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.completed, 1u);
  EXPECT_EQ(c.stuck, 1u);  // counted once, even though it was joined at stop
  EXPECT_EQ(c.active, 0u);
}

// --- shutdown --------------------------------------------------------------

TEST_P(WorkerPoolTest, GracefulShutdownDrainsActiveRunnersAndLosesNothing) {
  auto running = std::make_shared<std::atomic<int>>(0);
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("work",
                                 [running](Context& ctx, const Json& params) -> Json {
                                   ++*running;
                                   ctx.step("a", [] { return Json(1); });
                                   std::this_thread::sleep_for(300ms);
                                   ctx.step("b", [] { return Json(2); });
                                   return params.at("i");
                                 })
                            .build();
  std::vector<std::string> runs;
  for (int i = 0; i < 6; ++i) runs.push_back(spawn("work", Json{{"i", i}}));

  WorkerPool first(catalog, options());  // 4 runners at most
  first.start();
  ASSERT_TRUE(eventually([&] { return running->load() >= 4; }));
  const auto started = Clock::now();
  first.stop();
  const auto took = Clock::now() - started;
  EXPECT_LT(took, 2500ms);  // well within the 3 s grace
  PoolCounters c = first.counters();
  EXPECT_EQ(c.completed, 4u);
  EXPECT_EQ(c.abandoned, 0u);
  EXPECT_EQ(c.stuck, 0u);
  EXPECT_EQ(c.active, 0u);

  WorkerPool second(catalog, options());
  second.start();
  ASSERT_TRUE(eventually([&] {
    for (const std::string& run_id : runs)
      if (state(run_id) != "completed") return false;
    return true;
  }));
  second.stop();
  EXPECT_EQ(second.counters().completed, 2u);
  for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(result(runs[i])["result"], i);
}

struct SlowProbe {
  std::atomic<int> executions{0};
  std::atomic<bool> first_returned{false};
  std::atomic<int> first_signal{-1};
};

TEST_P(WorkerPoolTest, ShutdownReleasesClaimsOfRunnersPastTheGracePeriod) {
  auto probe = std::make_shared<SlowProbe>();
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("slow",
                                 [probe](Context& ctx, const Json&) -> Json {
                                   if (++probe->executions == 1) {
                                     std::this_thread::sleep_for(4000ms);
                                     try {
                                       ctx.heartbeat();
                                     } catch (const ControlSignal& signal) {
                                       probe->first_signal = static_cast<int>(signal.kind());
                                       probe->first_returned = true;
                                       throw;
                                     }
                                     probe->first_returned = true;
                                   }
                                   return Json("done");
                                 })
                            .build();
  WorkerPoolOptions o = options();
  o.shutdown_grace = 300ms;
  const std::string run_id = spawn("slow");
  {
    WorkerPool pool(catalog, o);
    pool.start();
    ASSERT_TRUE(eventually([&] { return probe->executions.load() == 1; }));
    const auto started = Clock::now();
    pool.stop();
    EXPECT_LT(Clock::now() - started, 2500ms);  // grace + settle, not the blocked handler (4 s)
    const PoolCounters c = pool.counters();
    EXPECT_EQ(c.abandoned, 1u);  // its claim went back
    EXPECT_EQ(c.stuck, 1u);      // its thread was still blocked: detached
    EXPECT_EQ(c.active, 0u);
    EXPECT_TRUE(logger_->contains(LogLevel::error, "detached"));
  }
  // The pool is gone; the detached thread returns safely and commits nothing.
  EXPECT_EQ(state(run_id), "pending");
  ASSERT_TRUE(eventually([&] { return probe->first_returned.load(); }));
  EXPECT_EQ(probe->first_signal.load(), static_cast<int>(ControlSignal::Kind::invalidated));

  WorkerPool second(catalog, o);
  second.start();
  ASSERT_TRUE(eventually([&] { return state(run_id) == "completed"; }));
  second.stop();
  EXPECT_EQ(result(run_id)["attempts"], 1);
  EXPECT_EQ(result(run_id)["result"], "done");
}

// --- start-up checks -------------------------------------------------------

TEST_P(WorkerPoolTest, SchemaMismatchRefusesToStart) {
  TaskCatalog catalog =
      TaskCatalog::Builder().add("t", [](Context&, const Json&) { return Json(); }).build();

  const std::string bare = unique_name("docket_wp_bare");
  WorkerPoolOptions o = options();
  o.conninfo = create_database(bare, false);
  {
    WorkerPool pool(catalog, o);
    EXPECT_THROW(pool.start(), SchemaMismatch);
    EXPECT_FALSE(pool.running());
  }
  admin("DROP DATABASE " + bare + " WITH (FORCE)");

  const std::string faked = unique_name("docket_wp_faked");
  o.conninfo = create_database(faked, true);
  std::string run_id;
  {
    pqxx::connection connection(o.conninfo);
    Client client(connection);
    SpawnOptions spawn_options;
    spawn_options.queue = queue_;
    run_id = client.spawn("t", Json::object(), spawn_options).run_id;
    pqxx::nontransaction tx(connection);
    tx.exec("UPDATE pg_extension SET extversion = '9.9.9' WHERE extname = 'docket'");
  }
  {
    WorkerPool pool(catalog, o);
    EXPECT_THROW(pool.start(), SchemaMismatch);
    EXPECT_FALSE(pool.running());
    EXPECT_EQ(pool.counters().claimed, 0u);
  }
  {
    pqxx::connection connection(o.conninfo);
    Client client(connection);
    EXPECT_EQ(client.task_result("system", run_id).value()["state"], "pending");
  }
  admin("DROP DATABASE " + faked + " WITH (FORCE)");
}

TEST_P(WorkerPoolTest, StartValidatesCatalogAndOptions) {
  TaskCatalog empty = TaskCatalog::Builder().build();
  EXPECT_THROW(WorkerPool(empty, options()).start(), std::invalid_argument);

  TaskCatalog catalog =
      TaskCatalog::Builder().add("t", [](Context&, const Json&) { return Json(); }).build();
  const std::vector<std::function<void(WorkerPoolOptions&)>> broken = {
      [](WorkerPoolOptions& o) { o.concurrency = 0; },
      [](WorkerPoolOptions& o) { o.batch_size = 0; },
      [](WorkerPoolOptions& o) { o.lease = 0ms; },
      [](WorkerPoolOptions& o) { o.poll_interval = 0ms; },
      [](WorkerPoolOptions& o) { o.shutdown_grace = -1ms; },
      [](WorkerPoolOptions& o) { o.max_claim_attempts = 0; },
      [](WorkerPoolOptions& o) { o.queue = ""; },
      [](WorkerPoolOptions& o) { o.flush_max_batch = 0; },
      [](WorkerPoolOptions& o) { o.flush_max_batch = -2; },
      [](WorkerPoolOptions& o) { o.runner_threads = -1; },
      [](WorkerPoolOptions& o) { o.fiber_stack_size = std::size_t{64} * 1024 - 1; },
  };
  for (const auto& breaks : broken) {
    WorkerPoolOptions o = options();
    breaks(o);
    WorkerPool pool(catalog, o);
    EXPECT_THROW(pool.start(), std::invalid_argument);
    EXPECT_FALSE(pool.running());
  }
}

// --- the poller ------------------------------------------------------------

// The threads the handlers run on: one per runner (concurrency 4), or the two
// threads their fibers share (runner_threads = 2), where a handler resumes
// after its step on the thread it started on. The pool's threads carry names
// (/proc/self/task/*/comm), which also counts them.
TEST_P(WorkerPoolTest, HandlersRunOnTheirRunnerThreadsOrOnTheFibersThreads) {
  struct Probe {
    std::mutex mutex;
    std::set<std::thread::id> threads;
    int moved = 0;  // handlers that resumed after a step on another thread
  };
  auto probe = std::make_shared<Probe>();
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("t",
                                 [probe](Context& ctx, const Json& p) {
                                   const std::thread::id before = std::this_thread::get_id();
                                   ctx.step("a", [&] { return p; });
                                   const std::thread::id after = std::this_thread::get_id();
                                   const std::lock_guard<std::mutex> lock(probe->mutex);
                                   probe->threads.insert(before);
                                   if (after != before) ++probe->moved;
                                   return p;
                                 })
                            .build();
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(spawn("t", Json{{"n", i}}));
  // This pool's threads: those named now less those named before it started
  // (threads other tests detached may still be around).
  auto thread_names = [] {
    std::map<std::string, int> names;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      ++names[name];
    }
    return names;
  };
  std::map<std::string, int> names = thread_names();
  for (auto& entry : names) entry.second = -entry.second;
  WorkerPool pool(catalog, options());
  pool.start();
  for (const std::string& id : ids)
    ASSERT_TRUE(eventually([&] { return state(id) == "completed"; }, 20s)) << id;
  for (const auto& entry : thread_names()) names[entry.first] += entry.second;
  pool.stop();
  const std::lock_guard<std::mutex> lock(probe->mutex);
  EXPECT_EQ(probe->moved, 0);
  EXPECT_EQ(names["docket-poller"], 1);
  EXPECT_EQ(names["docket-flush"], 2);  // flush_connections
  if (GetParam() == 0) {
    EXPECT_EQ(names["docket-runner"], 4);
    EXPECT_EQ(names["docket-fibers"], 0);
    EXPECT_LE(probe->threads.size(), 4u);
  } else {
    EXPECT_EQ(names["docket-runner"], 0);
    EXPECT_EQ(names["docket-fibers"], 2);
    EXPECT_LE(probe->threads.size(), 2u);
  }
}

// The poller sleeps until a refill is due; each freed slot that makes one due
// wakes it (PoolShared::wake_poller_at). With one slot, no prefetch, no LISTEN
// and a poll interval of an hour, the backlog drains only through those
// wake-ups: a lost one would leave the next task unclaimed for the hour.
TEST_P(WorkerPoolTest, AFreedSlotWakesThePollerWithoutPollOrNotify) {
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(spawn("t", Json{{"n", i}}));
  TaskCatalog catalog =
      TaskCatalog::Builder().add("t", [](Context&, const Json& p) { return p; }).build();
  WorkerPoolOptions o = options();
  o.concurrency = 1;
  o.prefetch = 0;
  o.listen = false;
  o.poll_interval = std::chrono::hours(1);
  WorkerPool pool(catalog, o);
  pool.start();
  for (const std::string& id : ids)
    ASSERT_TRUE(eventually([&] { return state(id) == "completed"; }, 20s)) << id;
  pool.stop();
  EXPECT_EQ(pool.counters().completed, ids.size());
}

// The waker (WorkerPoolOptions::await_tasks): with no LISTEN, no schedules and
// a poll interval of an hour, once the poller's first claim has found the
// queue empty, a task spawned into the idle pool starts only because its
// commit set the latch of the waker's backend, waiting in docket.await_tasks
// (or because await_tasks found it due when the waker began to wait).
TEST_P(WorkerPoolTest, ACommitWakesTheWakerWithoutPollOrNotify) {
  TaskCatalog catalog =
      TaskCatalog::Builder().add("t", [](Context&, const Json& p) { return p; }).build();
  WorkerPoolOptions o = options();
  o.listen = false;
  o.fire_schedules = false;
  o.poll_interval = std::chrono::hours(1);
  WorkerPool pool(catalog, o);
  pool.start();
  // The waker waits on the server (its calls are not claim_tasks calls, and
  // when it reserves the slots first the poller's start has nothing to claim).
  auto waker_waits = [&] {
    pqxx::work tx(*connection_);
    const pqxx::result r = tx.exec(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'docket_waker' AND wait_event_type = 'Extension'");
    return r[0][0].as<long>() > 0;
  };
  ASSERT_TRUE(eventually(waker_waits, 20s));
  for (int i = 0; i < 3; ++i) {
    const std::string id = spawn("t", Json{{"n", i}});
    ASSERT_TRUE(eventually([&] { return state(id) == "completed"; }, 20s)) << id;
  }
  pool.stop();
  EXPECT_EQ(pool.counters().completed, 3u);
}

// Without the waker, NOTIFY wakes the poller (the same setup otherwise).
TEST_P(WorkerPoolTest, ANotifyWakesThePollerWithoutTheWaker) {
  TaskCatalog catalog =
      TaskCatalog::Builder().add("t", [](Context&, const Json& p) { return p; }).build();
  WorkerPoolOptions o = options();
  o.await_tasks = false;
  o.fire_schedules = false;
  o.poll_interval = std::chrono::hours(1);
  WorkerPool pool(catalog, o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return pool.metrics().claim_seconds.count >= 1; }, 20s));
  const std::string id = spawn("t", Json{{"n", 1}});
  ASSERT_TRUE(eventually([&] { return state(id) == "completed"; }, 20s));
  pool.stop();
  EXPECT_EQ(pool.counters().completed, 1u);
}

TEST_P(WorkerPoolTest, PollerReconnectsAfterItsConnectionIsTerminated) {
  TaskCatalog catalog =
      TaskCatalog::Builder().add("t", [](Context&, const Json& p) { return p; }).build();
  WorkerPoolOptions o = options();
  o.poll_interval = 5000ms;  // only NOTIFY (or the restart) can make it claim soon
  WorkerPool pool(catalog, o);
  pool.start();
  const std::string first = spawn("t", Json{{"n", 1}});
  ASSERT_TRUE(eventually([&] { return state(first) == "completed"; }, 4s));  // via NOTIFY

  {
    pqxx::work tx(*connection_);
    const pqxx::result r = tx.exec_params(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND application_name = 'docket_poller'");
    tx.commit();
    ASSERT_GE(r.size(), 1u);
  }
  ASSERT_TRUE(eventually([&] { return logger_->contains(LogLevel::warning, "restarting"); }, 8s));
  const std::string second = spawn("t", Json{{"n", 2}});
  ASSERT_TRUE(eventually([&] { return state(second) == "completed"; }, 8s));
  pool.stop();
  EXPECT_EQ(pool.counters().completed, 2u);
}

// The parameter: WorkerPoolOptions::runner_threads.
INSTANTIATE_TEST_SUITE_P(Runners, WorkerPoolTest, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? std::string("Threads") : std::string("Fibers");
                         });

}  // namespace
}  // namespace docket
