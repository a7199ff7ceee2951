// WorkerPoolOptions::connection_factory: a caller-owned connection source that
// the pool uses for every connection it opens (poller, flusher, runners), in
// place of its conninfo. Against a real cluster (PGHOST/PGPORT/PGUSER), in a
// database of its own so that every docket backend in it belongs to this test.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

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

void admin(const std::string& statement) {
  pqxx::connection connection("dbname=postgres");
  pqxx::nontransaction tx(connection);
  tx.exec(statement);
}

// Every connection the factory opened (backend pids) and how often it was called.
struct FactoryLog {
  std::mutex mutex;
  std::set<int> pids;
  std::atomic<int> calls{0};
};

class ConnectionFactoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    database_ = unique_name("docket_cf");
    admin("CREATE DATABASE " + database_);
    pqxx::connection connection("dbname=" + database_);
    pqxx::nontransaction tx(connection);
    tx.exec("CREATE EXTENSION docket");
  }
  static void TearDownTestSuite() {
    admin("DROP DATABASE IF EXISTS " + database_ + " WITH (FORCE)");
  }

  WorkerPoolOptions options() const {
    WorkerPoolOptions o;
    // Unusable on purpose: the pool must not open anything from it.
    o.conninfo = "host=/nonexistent/docket-no-socket dbname=nowhere connect_timeout=1";
    o.queue = queue_;
    o.concurrency = 2;
    o.batch_size = 2;
    o.poll_interval = 100ms;
    o.lease = 5000ms;
    o.shutdown_grace = 3000ms;
    o.logger = stderr_logger(LogLevel::warning);
    return o;
  }

  static std::string database_;
  const std::string queue_ = unique_name("q");
};

std::string ConnectionFactoryTest::database_;

TEST_F(ConnectionFactoryTest, EveryConnectionOfThePoolComesFromTheFactory) {
  auto log = std::make_shared<FactoryLog>();
  const std::string dsn = "dbname=" + database_;
  WorkerPoolOptions o = options();
  o.connection_factory = [log, dsn] {
    auto connection = std::make_unique<pqxx::connection>(dsn);
    log->calls.fetch_add(1);
    const std::lock_guard<std::mutex> lock(log->mutex);
    log->pids.insert(connection->backendpid());
    return connection;
  };
  // A step (flusher), a heartbeat (a runner connection), a completion
  // (flusher) and a permanent failure (a runner connection).
  TaskCatalog catalog =
      TaskCatalog::Builder()
          .add("work",
               [](Context& ctx, const Json&) -> Json {
                 const Json v = ctx.step("s", [] { return Json(7); });
                 ctx.heartbeat();
                 return v;
               })
          .add("broken", [](Context&, const Json&) -> Json { throw PermanentError("cannot work"); })
          .build();
  WorkerPool pool(std::move(catalog), o);
  pool.start();

  pqxx::connection connection(dsn);
  Client client(connection);
  SpawnOptions spawn;
  spawn.queue = queue_;
  const std::string ok = client.spawn("work", Json::object(), spawn).run_id;
  const std::string bad = client.spawn("broken", Json::object(), spawn).run_id;
  const auto state = [&](const std::string& run_id) {
    const std::optional<Json> r = client.task_result("system", run_id);
    return r ? r->value("state", std::string()) : std::string();
  };
  ASSERT_TRUE(eventually([&] { return state(ok) == "completed" && state(bad) == "failed"; }));
  EXPECT_EQ(client.task_result("system", ok)->at("result"), Json(7));

  // Every docket backend of this database now open is one the factory opened.
  std::set<int> pool_pids;
  {
    pqxx::nontransaction tx(connection);
    for (const pqxx::row& row :
         tx.exec("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                 "AND application_name IN ('docket_poller', 'docket_claimer', 'docket_flusher', "
                 "'docket_runner')"))
      pool_pids.insert(row[0].as<int>());
  }
  pool.stop();
  // poller, flusher and at least one runner connection
  EXPECT_GE(log->calls.load(), 3);
  EXPECT_GE(pool_pids.size(), 3u);
  const std::lock_guard<std::mutex> lock(log->mutex);
  for (const int pid : pool_pids) EXPECT_EQ(log->pids.count(pid), 1u) << "backend " << pid;
  EXPECT_EQ(static_cast<std::size_t>(log->calls.load()), log->pids.size());
}

TEST_F(ConnectionFactoryTest, AFailingFactoryKeepsThePoolFromStarting) {
  TaskCatalog catalog =
      TaskCatalog::Builder().add("work", [](Context&, const Json&) { return Json(); }).build();
  WorkerPoolOptions throwing = options();
  throwing.connection_factory = []() -> std::unique_ptr<pqxx::connection> {
    throw std::runtime_error("vault unavailable");
  };
  WorkerPool first(catalog, throwing);
  try {
    first.start();
    ADD_FAILURE() << "start() succeeded without a connection";
  } catch (const ConnectionLost& e) {
    EXPECT_NE(std::string(e.what()).find("vault unavailable"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(first.running());

  WorkerPoolOptions null = options();
  null.connection_factory = [] { return std::unique_ptr<pqxx::connection>(); };
  WorkerPool second(catalog, null);
  EXPECT_THROW(second.start(), ConnectionLost);
  EXPECT_FALSE(second.running());
}

}  // namespace
}  // namespace docket
