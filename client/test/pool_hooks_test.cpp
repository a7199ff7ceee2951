// WorkerPool hooks (docs/operating.md "Hooks"): on_task_start, on_task_end
// (outcome, duration, error) and on_lease_warning fire in order, once each per
// started task, and a hook that throws changes no outcome.
#include <sys/wait.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
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
using test::eventually;
using test::unique_name;

// What the hooks saw, per run, in the order they fired.
struct Recorder {
  struct Event {
    std::string kind;  // start, end, warning
    int attempt = 0;
    std::string outcome;
    bool retry_scheduled = false;
    std::string error;
    Json headers;
    std::chrono::nanoseconds duration{0};
  };
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::vector<Event>> runs;
  int ends = 0;
  int warnings = 0;

  void add(const std::string& run_id, Event event) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (event.kind == "end") ++ends;
      if (event.kind == "warning") ++warnings;
      runs[run_id].push_back(std::move(event));
    }
    changed.notify_all();
  }
  std::vector<Event> of(const std::string& run_id) const {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = runs.find(run_id);
    return it == runs.end() ? std::vector<Event>{} : it->second;
  }
  int ended() const {
    const std::lock_guard<std::mutex> lock(mutex);
    return ends;
  }

  void install(WorkerPoolHooks& hooks) {
    hooks.on_task_start = [this](const TaskEvent& task) {
      add(task.run_id, Event{"start", task.attempt, "", false, "", task.headers, {}});
    };
    hooks.on_task_end = [this](const TaskEnd& end) {
      add(end.task.run_id,
          Event{"end", end.task.attempt, to_string(end.outcome), end.retry_scheduled,
                end.error.is_null() ? "" : end.error.value("message", std::string()),
                end.task.headers, end.duration});
    };
    hooks.on_lease_warning = [this](const LeaseWarning& warning) {
      EXPECT_GE(warning.since_progress, warning.lease);
      add(warning.task.run_id, Event{"warning", warning.task.attempt, "", false, "", {}, {}});
    };
  }
};

class PoolHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_ = unique_name("hooks");
    connection_ = std::make_unique<pqxx::connection>(test::conninfo());
    client_ = std::make_unique<Client>(*connection_);
  }

  WorkerPoolOptions options() const {
    WorkerPoolOptions o;
    o.conninfo = test::conninfo();
    o.queue = queue_;
    o.concurrency = 2;
    o.batch_size = 4;
    o.poll_interval = 100ms;
    o.fire_schedules = false;
    o.logger = null_logger();
    return o;
  }

  std::string spawn(const std::string& task_name, SpawnOptions o = {}) {
    o.queue = queue_;
    return client_->spawn(task_name, Json::object(), o).run_id;
  }

  std::string queue_;
  std::unique_ptr<pqxx::connection> connection_;
  std::unique_ptr<Client> client_;
};

TEST_F(PoolHooksTest, StartAndEndFireInOrderWithTheOutcome) {
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("ok", [](Context&, const Json&) { return Json("done"); })
          .add("fails", [](Context&, const Json&) -> Json { throw std::runtime_error("boom"); })
          .add("permanent", [](Context&, const Json&) -> Json { throw PermanentError("never"); })
          .add("sleeps",
               [](Context& context, const Json&) {
                 context.sleep_for(std::chrono::hours(1));
                 return Json("woke");
               })
          .build();
  SpawnOptions traced;
  traced.headers = Json{{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  const std::string ok = spawn("ok", traced);
  SpawnOptions twice;  // fails, is retried at once, fails for good
  twice.max_attempts = 2;
  twice.retry = Json{{"kind", "none"}};
  const std::string fails = spawn("fails", twice);
  const std::string permanent = spawn("permanent");
  const std::string sleeps = spawn("sleeps");

  Recorder recorder;
  WorkerPoolOptions o = options();
  recorder.install(o.hooks);
  WorkerPool pool(std::move(catalog), o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return recorder.ended() == 5; }));  // "fails" ran twice
  pool.stop();

  const auto kinds = [](const std::vector<Recorder::Event>& events) {
    std::string out;
    for (const Recorder::Event& e : events) out += e.kind + ":" + e.outcome + " ";
    return out;
  };
  const std::vector<Recorder::Event> a = recorder.of(ok);
  EXPECT_EQ(kinds(a), "start: end:completed ");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].headers, *traced.headers);  // the spawn's headers reach the hooks
  EXPECT_EQ(a[1].headers, *traced.headers);
  EXPECT_EQ(a[0].attempt, 1);
  EXPECT_GE(a[1].duration.count(), 0);
  EXPECT_EQ(a[1].error, "");

  // The order is promised per attempt (a started task): the retry is due as
  // soon as fail_task commits, so another runner may start attempt 2 before
  // attempt 1's end hook has run.
  const std::vector<Recorder::Event> f = recorder.of(fails);
  ASSERT_EQ(f.size(), 4u);
  const auto attempt = [&](int n) {
    std::vector<Recorder::Event> out;
    for (const Recorder::Event& e : f)
      if (e.attempt == n) out.push_back(e);
    return out;
  };
  const std::vector<Recorder::Event> f1 = attempt(1);
  const std::vector<Recorder::Event> f2 = attempt(2);
  EXPECT_EQ(kinds(f1), "start: end:failed ");
  EXPECT_EQ(kinds(f2), "start: end:failed ");
  ASSERT_EQ(f1.size(), 2u);
  ASSERT_EQ(f2.size(), 2u);
  EXPECT_TRUE(f1[1].retry_scheduled);
  EXPECT_EQ(f1[1].error, "boom");
  EXPECT_FALSE(f2[1].retry_scheduled);  // the last attempt

  const std::vector<Recorder::Event> p = recorder.of(permanent);
  EXPECT_EQ(kinds(p), "start: end:failed ");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_FALSE(p[1].retry_scheduled);
  EXPECT_EQ(p[1].error, "never");

  EXPECT_EQ(kinds(recorder.of(sleeps)), "start: end:suspended ");

  // Every start has its end, and the metrics counted the same.
  const MetricsSnapshot m = pool.metrics();
  EXPECT_EQ(m.tasks_started, 5u);
  EXPECT_EQ(m.tasks_completed, 1u);
  EXPECT_EQ(m.tasks_failed, 3u);
  EXPECT_EQ(m.tasks_retried, 1u);
  EXPECT_EQ(m.tasks_suspended, 1u);
}

TEST_F(PoolHooksTest, LeaseWarningFiresBetweenStartAndEnd) {
  std::mutex mutex;
  std::condition_variable warned_cv;
  bool warned = false;
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("quiet",
                                 [&](Context&, const Json&) {
                                   // Blocks, making no progress, until the watchdog warned.
                                   std::unique_lock<std::mutex> lock(mutex);
                                   warned_cv.wait_for(lock, 120s, [&] { return warned; });
                                   return Json("done");
                                 })
                            .build();
  const std::string run_id = spawn("quiet");
  Recorder recorder;
  WorkerPoolOptions o = options();
  o.lease = 1000ms;
  recorder.install(o.hooks);
  auto record_warning = o.hooks.on_lease_warning;
  o.hooks.on_lease_warning = [&, record_warning](const LeaseWarning& warning) {
    record_warning(warning);
    {
      const std::lock_guard<std::mutex> lock(mutex);
      warned = true;
    }
    warned_cv.notify_all();
  };
  WorkerPool pool(std::move(catalog), o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return recorder.ended() >= 1; }, 120s));
  pool.stop();

  // The first start, then the warning, then an end. The run makes no progress
  // for a lease, so its claim may also expire and be recovered (by this pool's
  // own poll) while it blocks: a second start may come before the first end,
  // whose outcome is then lost (the fence moved on).
  const std::vector<Recorder::Event> events = recorder.of(run_id);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "start");
  const auto kind_is = [](const char* kind) {
    return [kind](const Recorder::Event& e) { return e.kind == kind; };
  };
  const auto warning = std::find_if(events.begin(), events.end(), kind_is("warning"));
  ASSERT_NE(warning, events.end());
  const auto end = std::find_if(warning, events.end(), kind_is("end"));
  ASSERT_NE(end, events.end());
  const bool recovered = std::count_if(events.begin(), end, kind_is("start")) > 1;
  // It returned after the warning; on a slow machine the watchdog may have
  // stopped it at two leases first, so either outcome is right.
  EXPECT_TRUE(end->outcome == "completed" || end->outcome == "stopped" ||
              (recovered && end->outcome == "lost"))
      << end->outcome;
  EXPECT_GE(pool.metrics().lease_warnings, 1u);
}

TEST_F(PoolHooksTest, HooksThatThrowChangeNoOutcome) {
  TaskCatalog catalog =
      TaskCatalog::Builder().add("ok", [](Context&, const Json&) { return Json(1); }).build();
  const std::string run_id = spawn("ok");
  WorkerPoolOptions o = options();
  std::atomic<int> ends{0};
  o.hooks.on_task_start = [](const TaskEvent&) { throw std::runtime_error("start hook"); };
  o.hooks.on_task_end = [&](const TaskEnd&) {
    ++ends;
    throw std::runtime_error("end hook");
  };
  WorkerPool pool(std::move(catalog), o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return pool.metrics().tasks_completed == 1; }));
  pool.stop();
  EXPECT_EQ(ends.load(), 1);
  const std::optional<Json> result = client_->task_result("system", run_id);
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "completed");
}

// examples/cpp/docket_traceparent.cpp: a W3C traceparent from the producer's
// span reaches the handler (before_spawn -> headers -> on_task_start) and its
// child task; the example exits 0 only when the trace id arrived unchanged.
TEST(TraceparentExample, PropagatesTheTraceFromProducerToHandler) {
  const std::string command = std::string(DOCKET_TRACEPARENT_EXAMPLE) + " --dsn '" +
                              test::conninfo() + "' --queue " + unique_name("traceparent") +
                              " --timeout-s 90 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("trace propagated"), std::string::npos) << out;
  EXPECT_NE(out.find("span start  task:charge"), std::string::npos) << out;
  EXPECT_NE(out.find("span start  task:receipt"), std::string::npos) << out;
  EXPECT_NE(out.find("handler     charge sees traceparent \"00-"), std::string::npos) << out;
}

}  // namespace
}  // namespace docket
