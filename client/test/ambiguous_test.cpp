// A server connection terminated in the middle of a call. Each call is first
// made to block on a lock held by a second session, so it is certainly inside
// the server when a third session runs pg_terminate_backend on it. A mutating
// call must then report Ambiguous (the client never guesses whether it
// committed); a read reports ConnectionLost.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
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
using test::scalar;
using test::unique_name;

enum class Outcome { returned, ambiguous, connection_lost, other };

const char* name(Outcome outcome) {
  switch (outcome) {
    case Outcome::returned:
      return "returned";
    case Outcome::ambiguous:
      return "Ambiguous";
    case Outcome::connection_lost:
      return "ConnectionLost";
    case Outcome::other:
      return "another error";
  }
  return "?";
}

class AmbiguousTest : public ::testing::Test {
 protected:
  AmbiguousTest()
      : victim_(conninfo()), locker_(conninfo()), admin_(conninfo()), queue_(unique_name("q")) {
    sql::prepare(victim_);
  }

  // Runs `call` on the victim's connection in a thread, waits until the victim
  // blocks on a lock (the locker holds it), terminates the victim's backend and
  // returns how the call ended.
  Outcome terminate_during(const std::function<void()>& call) {
    const int pid = victim_.backendpid();
    std::future<Outcome> result = std::async(std::launch::async, [&] {
      try {
        call();
        return Outcome::returned;
      } catch (const Ambiguous&) {
        return Outcome::ambiguous;
      } catch (const ConnectionLost&) {
        return Outcome::connection_lost;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected error: " << e.what();
        return Outcome::other;
      }
    });
    const std::string blocked =
        "SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid) +
        " AND wait_event_type = 'Lock'";
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (scalar(admin_, blocked) != "1") {
      if (std::chrono::steady_clock::now() > deadline ||
          result.wait_for(0ms) == std::future_status::ready) {
        ADD_FAILURE() << "the call never blocked on the lock";
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    scalar(admin_, "SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
    return result.get();
  }

  SpawnOptions on_queue() const {
    SpawnOptions options;
    options.queue = queue_;
    return options;
  }

  sql::ClaimedTask spawn_and_claim() {
    Client(admin_).spawn("job", Json::object(), on_queue());
    auto tasks = sql::in_transaction(victim_, true, [&](pqxx::transaction_base& tx) {
      return sql::claim_tasks(tx, queue_, 1, 60000, 10);
    });
    EXPECT_EQ(tasks.size(), 1u);
    return tasks.empty() ? sql::ClaimedTask{} : tasks.front();
  }

  // The locker takes the task's run row lock in an open transaction.
  std::unique_ptr<pqxx::work> lock_run(const std::string& run_id) {
    auto tx = std::make_unique<pqxx::work>(locker_);
    tx->exec("SELECT 1 FROM docket.runs WHERE run_id = " + tx->quote(run_id) + " FOR UPDATE");
    return tx;
  }

  pqxx::connection victim_;  // makes the call that is cut off
  pqxx::connection locker_;  // holds the lock the call waits for
  pqxx::connection admin_;   // watches and terminates
  std::string queue_;
};

TEST_F(AmbiguousTest, CompleteTaskCutOffIsAmbiguous) {
  const sql::ClaimedTask task = spawn_and_claim();
  auto lock = lock_run(task.run_id);
  const Outcome outcome = terminate_during([&] {
    sql::in_transaction(victim_, true, [&](pqxx::transaction_base& tx) {
      sql::complete_task(tx, task.run_id, task.claim_token, Json{{"done", true}});
    });
  });
  EXPECT_EQ(outcome, Outcome::ambiguous) << name(outcome);
  lock->abort();
  // The call had not committed: the task is still claimed by the lost worker.
  EXPECT_EQ((*Client(admin_).task_result("system", task.run_id))["state"], "running");
}

TEST_F(AmbiguousTest, CompleteStepCutOffIsAmbiguous) {
  const sql::ClaimedTask task = spawn_and_claim();
  auto lock = lock_run(task.run_id);
  const Outcome outcome = terminate_during([&] {
    sql::in_transaction(victim_, true, [&](pqxx::transaction_base& tx) {
      return sql::complete_step(tx, task.run_id, task.claim_token, "charge", Json(42));
    });
  });
  EXPECT_EQ(outcome, Outcome::ambiguous) << name(outcome);
  lock->abort();
  EXPECT_EQ(
      scalar(admin_, "SELECT count(*) FROM docket.task_steps WHERE run_id = '" + task.run_id + "'"),
      "0");
}

TEST_F(AmbiguousTest, SpawnCutOffIsAmbiguous) {
  // The locker's uncommitted spawn holds the idempotency key; the victim's spawn
  // of the same key waits for it.
  const std::string key = unique_name("key");
  SpawnOptions options = on_queue();
  options.idempotency_key = key;
  pqxx::work holder(locker_);
  Client(holder).spawn("job", Json::object(), options);
  const Outcome outcome =
      terminate_during([&] { Client(victim_).spawn("job", Json::object(), options); });
  EXPECT_EQ(outcome, Outcome::ambiguous) << name(outcome);
  holder.abort();
}

TEST_F(AmbiguousTest, ReadCutOffIsConnectionLost) {
  const SpawnResult spawned = Client(admin_).spawn("job", Json::object(), on_queue());
  // task_result reads docket.tasks: an exclusive table lock makes it wait.
  pqxx::work lock(locker_);
  lock.exec("LOCK TABLE docket.tasks IN ACCESS EXCLUSIVE MODE");
  Client client(victim_);
  const Outcome outcome = terminate_during([&] { client.task_result("system", spawned.run_id); });
  EXPECT_EQ(outcome, Outcome::connection_lost) << name(outcome);
  lock.abort();
}

}  // namespace
}  // namespace docket
