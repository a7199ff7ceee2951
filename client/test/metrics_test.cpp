// Worker metrics (docs/operating.md): the Prometheus text format, and the
// counters and histograms of a pool matched against the work it did.
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <httplib.h>
#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/context.hpp"
#include "docket/errors.hpp"
#include "docket/metrics.hpp"
#include "docket/worker_pool.hpp"
#include "prometheus_text.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::unique_name;

TEST(PrometheusText, FormatsCountersGaugesAndHistograms) {
  MetricsSnapshot s;
  s.queue = "a\"b\\c";
  s.tasks_completed = 7;
  s.claims_held = 3;
  s.handler_seconds.bounds = {0.001, 0.5};
  s.handler_seconds.cumulative = {2, 5};
  s.handler_seconds.count = 6;
  s.handler_seconds.sum = 1.25;
  const std::string text = to_prometheus(s);

  EXPECT_NE(text.find("# TYPE docket_tasks_completed_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE docket_claims_held gauge\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE docket_handler_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("# HELP docket_tasks_completed_total "), std::string::npos);

  const test::Samples samples = test::parse_prometheus(text);
  const std::string q = "queue=\"a\\\"b\\\\c\"";
  EXPECT_EQ(samples.at("docket_tasks_completed_total{" + q + "}"), 7);
  EXPECT_EQ(samples.at("docket_claims_held{" + q + "}"), 3);
  EXPECT_EQ(samples.at("docket_handler_duration_seconds_bucket{" + q + ",le=\"0.001\"}"), 2);
  EXPECT_EQ(samples.at("docket_handler_duration_seconds_bucket{" + q + ",le=\"0.5\"}"), 5);
  EXPECT_EQ(samples.at("docket_handler_duration_seconds_bucket{" + q + ",le=\"+Inf\"}"), 6);
  EXPECT_EQ(samples.at("docket_handler_duration_seconds_count{" + q + "}"), 6);
  EXPECT_DOUBLE_EQ(samples.at("docket_handler_duration_seconds_sum{" + q + "}"), 1.25);
  // Every metric family has its HELP and TYPE once, even for several pools.
  MetricsSnapshot other;
  other.queue = "other";
  other.tasks_completed = 1;
  const std::string both = to_prometheus(std::vector<MetricsSnapshot>{s, other});
  std::size_t types = 0;
  for (std::size_t at = both.find("# TYPE docket_tasks_completed_total"); at != std::string::npos;
       at = both.find("# TYPE docket_tasks_completed_total", at + 1))
    ++types;
  EXPECT_EQ(types, 1u);
  EXPECT_EQ(test::parse_prometheus(both).at("docket_tasks_completed_total{queue=\"other\"}"), 1);
}

class MetricsPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_ = unique_name("metrics");
    connection_ = std::make_unique<pqxx::connection>(test::conninfo());
    client_ = std::make_unique<Client>(*connection_);
  }

  WorkerPoolOptions options() const {
    WorkerPoolOptions o;
    o.conninfo = test::conninfo();
    o.queue = queue_;
    o.concurrency = 3;
    o.batch_size = 4;
    o.poll_interval = 100ms;
    o.fire_schedules = false;
    o.logger = stderr_logger(LogLevel::error);
    return o;
  }

  std::string spawn(const std::string& task_name) {
    SpawnOptions o;
    o.queue = queue_;
    return client_->spawn(task_name, Json::object(), o).run_id;
  }

  std::string queue_;
  std::unique_ptr<pqxx::connection> connection_;
  std::unique_ptr<Client> client_;
};

TEST_F(MetricsPoolTest, CountersMatchTheWorkDone) {
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("ok",
               [](Context&, const Json&) {
                 return Json{{"ok", true}};
               })
          .add("two_steps",
               [](Context& context, const Json&) {
                 context.step("a", [] { return Json(1); });
                 context.step("b", [] { return Json(2); });
                 return Json("done");
               })
          .add("fails", [](Context&, const Json&) -> Json { throw PermanentError("never works"); })
          .build();
  constexpr int kOk = 6, kSteps = 2, kFails = 3;
  for (int i = 0; i < kOk; ++i) spawn("ok");
  for (int i = 0; i < kSteps; ++i) spawn("two_steps");
  for (int i = 0; i < kFails; ++i) spawn("fails");

  // No waker: every claim is a claim_tasks call, which docket_claims_total
  // counts (a waker's await_tasks calls are not; it could take this small
  // backlog alone and leave the count at 0).
  WorkerPoolOptions o = options();
  o.await_tasks = false;
  WorkerPool pool(std::move(catalog), o);
  EXPECT_EQ(pool.metrics().tasks_started, 0u);  // readable before start()
  pool.start();
  ASSERT_TRUE(eventually([&] {
    const MetricsSnapshot m = pool.metrics();
    return m.tasks_completed == kOk + kSteps && m.tasks_failed == kFails;
  }));
  pool.stop();

  const MetricsSnapshot m = pool.metrics();
  EXPECT_EQ(m.queue, queue_);
  EXPECT_EQ(m.tasks_claimed, kOk + kSteps + kFails);
  EXPECT_EQ(m.tasks_started, kOk + kSteps + kFails);
  EXPECT_EQ(m.tasks_completed, kOk + kSteps);
  EXPECT_EQ(m.tasks_failed, kFails);
  EXPECT_EQ(m.tasks_retried, 0u);
  EXPECT_EQ(m.tasks_cancelled, 0u);
  EXPECT_EQ(m.tasks_lost, 0u);
  EXPECT_EQ(m.tasks_deferred, 0u);
  EXPECT_EQ(m.lease_warnings, 0u);
  EXPECT_EQ(m.stuck_runners, 0u);
  EXPECT_EQ(m.claims_held, 0u);
  EXPECT_EQ(m.runners_busy, 0u);
  EXPECT_EQ(m.concurrency, 3u);
  // One handler observation per start; one claim observation per claim call.
  EXPECT_EQ(m.handler_seconds.count, m.tasks_started);
  EXPECT_GE(m.claims, 1u);
  EXPECT_EQ(m.claim_seconds.count, m.claims);
  // The group commits carried every step checkpoint and every completion.
  EXPECT_EQ(m.flush_size.sum, static_cast<double>(kOk + kSteps + 2 * kSteps));
  EXPECT_GE(m.flush_size.count, 1u);
  EXPECT_EQ(m.flush_seconds.count, m.flush_size.count);
  for (const HistogramSnapshot* h :
       {&m.claim_seconds, &m.handler_seconds, &m.flush_size, &m.flush_seconds}) {
    ASSERT_EQ(h->bounds.size(), h->cumulative.size());
    for (std::size_t i = 1; i < h->cumulative.size(); ++i) {
      EXPECT_LT(h->bounds[i - 1], h->bounds[i]);
      EXPECT_LE(h->cumulative[i - 1], h->cumulative[i]);
    }
    if (!h->cumulative.empty()) {
      EXPECT_LE(h->cumulative.back(), h->count);
    }
  }
  // The old counters agree with the metrics.
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.completed, m.tasks_completed);
  EXPECT_EQ(c.claimed, m.tasks_claimed);

  const test::Samples samples = test::parse_prometheus(to_prometheus(m));
  const std::string q = "{queue=\"" + queue_ + "\"}";
  EXPECT_EQ(samples.at("docket_tasks_completed_total" + q), kOk + kSteps);
  EXPECT_EQ(samples.at("docket_tasks_failed_total" + q), kFails);
  EXPECT_EQ(samples.at("docket_tasks_started_total" + q), kOk + kSteps + kFails);
  EXPECT_EQ(samples.at("docket_flush_size_sum" + q), kOk + kSteps + 2 * kSteps);
}

TEST_F(MetricsPoolTest, EndpointIsScrapedOverHttp) {
  TaskCatalog catalog =
      TaskCatalog::Builder().add("ok", [](Context&, const Json&) { return Json(1); }).build();
  constexpr int kTasks = 5;
  for (int i = 0; i < kTasks; ++i) spawn("ok");
  WorkerPoolOptions o = options();
  o.metrics_address = "127.0.0.1:0";  // a free port
  WorkerPool pool(std::move(catalog), o);
  EXPECT_EQ(pool.metrics_port(), 0);
  pool.start();
  const int port = pool.metrics_port();
  ASSERT_GT(port, 0);
  ASSERT_TRUE(eventually([&] { return pool.metrics().tasks_completed == kTasks; }));

  httplib::Client http("127.0.0.1", port);
  const httplib::Result response = http.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u)
      << response->get_header_value("Content-Type");
  const test::Samples samples = test::parse_prometheus(response->body);
  const std::string q = "{queue=\"" + queue_ + "\"}";
  EXPECT_EQ(samples.at("docket_tasks_completed_total" + q), kTasks);
  EXPECT_EQ(samples.at("docket_tasks_started_total" + q), kTasks);
  EXPECT_EQ(samples.at("docket_tasks_claimed_total" + q), kTasks);
  EXPECT_EQ(samples.at("docket_tasks_failed_total" + q), 0);
  EXPECT_EQ(samples.at("docket_stuck_runners_total" + q), 0);
  EXPECT_EQ(samples.at("docket_concurrency" + q), 3);
  EXPECT_EQ(samples.at("docket_handler_duration_seconds_count" + q), kTasks);
  EXPECT_EQ(
      samples.at("docket_handler_duration_seconds_bucket{queue=\"" + queue_ + "\",le=\"+Inf\"}"),
      kTasks);
  EXPECT_EQ(samples.at("docket_claim_duration_seconds_count" + q),
            samples.at("docket_claims_total" + q));
  for (const char* family : {"docket_claim_duration_seconds", "docket_handler_duration_seconds",
                             "docket_flush_size", "docket_flush_duration_seconds"}) {
    EXPECT_EQ(samples.count(std::string(family) + "_sum" + q), 1u) << family;
    EXPECT_EQ(samples.count(std::string(family) + "_count" + q), 1u) << family;
  }
  const httplib::Result missing = http.Get("/other");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  pool.stop();
  EXPECT_EQ(pool.metrics_port(), 0);
  EXPECT_FALSE(httplib::Client("127.0.0.1", port).Get("/metrics"));  // the listener is closed
  EXPECT_EQ(pool.metrics().tasks_completed, kTasks);                 // the snapshot stays
}

TEST_F(MetricsPoolTest, UnusableAddressRefusesToStart) {
  const auto catalog = [] {
    return TaskCatalog::Builder().add("ok", [](Context&, const Json&) { return Json(1); }).build();
  };
  const std::string run_id = spawn("ok");
  for (const std::string address : {"no-port", "127.0.0.1:99999", "127.0.0.1:x"}) {
    WorkerPoolOptions o = options();
    o.metrics_address = address;
    WorkerPool pool(catalog(), o);
    EXPECT_THROW(pool.start(), std::invalid_argument) << address;
    EXPECT_FALSE(pool.running());
  }
  // A port another listener holds: start() throws, nothing is claimed.
  WorkerPoolOptions first_options = options();
  first_options.queue = unique_name("metrics_other");  // claims nothing of ours
  first_options.metrics_address = "127.0.0.1:0";
  WorkerPool first(catalog(), first_options);
  first.start();
  WorkerPoolOptions o = options();
  o.metrics_address = "127.0.0.1:" + std::to_string(first.metrics_port());
  WorkerPool second(catalog(), o);
  EXPECT_THROW(second.start(), std::runtime_error);
  EXPECT_FALSE(second.running());
  EXPECT_EQ(second.metrics().tasks_claimed, 0u);
  first.stop();
  const std::optional<Json> result = client_->task_result("system", run_id);
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "pending");
}

}  // namespace
}  // namespace docket
