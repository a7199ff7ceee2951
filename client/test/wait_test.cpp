// Client::wait: a producer waits for a task's outcome (success, failure,
// cancellation) or gives up at its timeout, against a real database (see
// test_db.hpp). The task is finished by another thread on its own connection,
// in whatever order the two threads run: every assertion holds for every
// interleaving, and no assertion is about time.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/errors.hpp"
#include "docket/sql.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using namespace std::chrono_literals;
using test::conninfo;
using test::unique_name;

// Long enough never to pass on a loaded machine unless wait is broken.
constexpr std::chrono::milliseconds kGenerous = 120s;

class WaitTest : public ::testing::Test {
 protected:
  WaitTest() : connection_(conninfo()), queue_(unique_name("q")) {}

  std::string spawn(const std::string& name, std::optional<int> max_attempts = std::nullopt) {
    Client client(connection_);
    SpawnOptions options;
    options.queue = queue_;
    options.max_attempts = max_attempts;
    return client.spawn(name, Json::object(), options).run_id;
  }

  // Runs `finish` with the claimed task on another thread and connection, as a
  // worker would, while the test thread waits.
  std::thread worker(std::function<void(pqxx::transaction_base&, const sql::ClaimedTask&)> finish) {
    return std::thread([this, finish] {
      try {
        work(finish);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "worker: " << e.what();
      }
    });
  }
  void work(const std::function<void(pqxx::transaction_base&, const sql::ClaimedTask&)>& finish) {
    pqxx::connection connection(conninfo());
    sql::prepare(connection);
    std::vector<sql::ClaimedTask> claimed;
    // The task is due at once; a claim can only miss it while autovacuum or
    // another session holds its row, so claim until it is ours.
    test::eventually([&] {
      claimed = sql::in_transaction(connection, true, [&](pqxx::transaction_base& tx) {
        return sql::claim_tasks(tx, queue_, 1, 30000, 10);
      });
      return !claimed.empty();
    });
    ASSERT_FALSE(claimed.empty()) << "the task was never claimed";
    sql::in_transaction(connection, true,
                        [&](pqxx::transaction_base& tx) { finish(tx, claimed.front()); });
  }

  pqxx::connection connection_;
  std::string queue_;
};

TEST_F(WaitTest, ReturnsTheResultOfACompletedTask) {
  const std::string run_id = spawn("adder");
  std::thread w = worker([](pqxx::transaction_base& tx, const sql::ClaimedTask& task) {
    sql::complete_task(tx, task.run_id, task.claim_token, Json{{"sum", 42}});
  });
  Client client(connection_);
  const std::optional<Json> result = client.wait(run_id, kGenerous);
  w.join();
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "completed");
  EXPECT_EQ((*result)["result"], (Json{{"sum", 42}}));
  EXPECT_EQ((*result)["task_name"], "adder");
  // A settled task returns at once on every later wait, even with no time left.
  const std::optional<Json> again = client.wait(run_id, 0ms);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *result);
}

TEST_F(WaitTest, ReturnsTheErrorOfAFailedTask) {
  const std::string run_id = spawn("breaker", 1);
  std::thread w = worker([](pqxx::transaction_base& tx, const sql::ClaimedTask& task) {
    sql::fail_task(tx, task.run_id, task.claim_token, Json{{"message", "no such account"}});
  });
  Client client(connection_);
  const std::optional<Json> result = client.wait(run_id, kGenerous);
  w.join();
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "failed");
  EXPECT_EQ((*result)["error"]["message"], "no such account");
  EXPECT_TRUE((*result)["result"].is_null());
}

TEST_F(WaitTest, ReturnsWhenTheTaskIsCancelled) {
  const std::string run_id = spawn("cancelled");
  std::thread canceller([&] {
    try {
      pqxx::connection connection(conninfo());
      Client(connection).cancel("system", run_id, std::string("not needed"));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "canceller: " << e.what();
    }
  });
  Client client(connection_);
  const std::optional<Json> result = client.wait(run_id, kGenerous);
  canceller.join();
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "cancelled");
}

TEST_F(WaitTest, GivesUpAtTheTimeoutAndLeavesTheTaskAsItIs) {
  // Nothing works this queue: the task stays pending.
  const std::string run_id = spawn("never_runs");
  Client client(connection_);
  WaitOptions options;
  options.first_poll = 1ms;
  options.max_poll = 5ms;
  EXPECT_FALSE(client.wait(run_id, 30ms, options));
  EXPECT_FALSE(client.wait(run_id, 0ms));
  const std::optional<Json> now = client.task_result("system", run_id);
  ASSERT_TRUE(now);
  EXPECT_EQ((*now)["state"], "pending");
}

TEST_F(WaitTest, UnknownOrInvisibleTaskIsNotFound) {
  Client client(connection_);
  EXPECT_THROW(client.wait(unique_name("missing"), kGenerous), NotFound);
  const std::string run_id = spawn("tenantless");
  WaitOptions other_tenant;
  other_tenant.scope = "tenant:someone-else";
  EXPECT_THROW(client.wait(run_id, kGenerous, other_tenant), NotFound);
}

TEST_F(WaitTest, RefusesAClientBoundToATransaction) {
  const std::string run_id = spawn("in_tx");
  pqxx::work tx(connection_);
  Client client(tx);
  EXPECT_THROW(client.wait(run_id, kGenerous), std::logic_error);
}

TEST(WaitStates, SettledStates) {
  for (const char* state : {"completed", "failed", "cancelled", "poisoned"})
    EXPECT_TRUE(settled_state(state)) << state;
  for (const char* state : {"pending", "running", "sleeping", "waiting", ""})
    EXPECT_FALSE(settled_state(state)) << state;
}

}  // namespace
}  // namespace docket
