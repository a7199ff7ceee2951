// Group commit, prefetch and the bounded connections of the worker side:
// the Flusher on its own (per-item outcomes, step-after-confirm, cancellation
// mid-batch, ambiguous connection loss) and through a WorkerPool (prefetched
// claims released, connection count). Batches are made deterministic by the
// flusher's `producers` hint and a long max_delay, never by sleeping.
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/context.hpp"
#include "docket/errors.hpp"
#include "docket/sql.hpp"
#include "docket/worker_pool.hpp"
#include "flusher.hpp"
#include "pool_shared.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::eventually;
using test::unique_name;

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_ = unique_name("gc");
    connection_ = std::make_unique<pqxx::connection>(test::conninfo());
    client_ = std::make_unique<Client>(*connection_);
  }

  std::string spawn(const std::string& task_name = "t", const Json& params = Json::object()) {
    SpawnOptions o;
    o.queue = queue_;
    return client_->spawn(task_name, params, o).run_id;
  }

  std::vector<sql::ClaimedTask> claim(int limit) {
    pqxx::work tx(*connection_);
    std::vector<sql::ClaimedTask> tasks = sql::claim_tasks(tx, queue_, limit, 60000, 10);
    tx.commit();
    return tasks;
  }

  std::string scalar(const std::string& sql) { return test::scalar(*connection_, sql); }

  // Runs of this test's queue that are claimed now, as the database sees it.
  std::string claimed_rows() {
    return scalar("SELECT count(*) FROM docket.runs WHERE queue = '" + queue_ +
                  "' AND claim_token IS NOT NULL");
  }

  // Flush connections whose backend waits for a lock now.
  int flushes_waiting_for_a_lock() {
    return std::stoi(
        scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'docket_flusher' "
               "AND datname = current_database() AND wait_event_type = 'Lock'"));
  }

  std::string state(const std::string& run_id) {
    const std::optional<Json> r = client_->task_result("system", run_id);
    return r ? r->value("state", std::string("?")) : "?";
  }

  Json result(const std::string& run_id) {
    return client_->task_result("system", run_id).value_or(Json());
  }

  // A flusher that waits (up to a minute) until `producers` items are queued
  // (or wait for a flush in flight), so they are committed in one transaction.
  std::unique_ptr<detail::Flusher> flusher(int producers, std::size_t connections = 2) {
    detail::FlusherOptions o;
    o.conninfo = test::conninfo();
    o.max_batch = 100;
    o.max_delay = 60s;
    o.connections = connections;
    o.producers = [producers] { return producers; };
    auto f = std::make_unique<detail::Flusher>(o);
    f->start();
    return f;
  }

  std::string queue_;
  std::unique_ptr<pqxx::connection> connection_;
  std::unique_ptr<Client> client_;
};

// The outcomes of asynchronous completions (Flusher::complete_task_async),
// counted by kind.
struct AsyncOutcomes {
  std::atomic<int> completed{0};
  std::atomic<int> cancelled{0};
  std::atomic<int> stale{0};
  std::atomic<int> other{0};

  std::function<void(std::exception_ptr)> callback() {
    return [this](const std::exception_ptr& error) {
      if (!error) {
        ++completed;
        return;
      }
      try {
        std::rethrow_exception(error);
      } catch (const Cancelled&) {
        ++cancelled;
      } catch (const StaleFence&) {
        ++stale;
      } catch (...) {
        ++other;
      }
    };
  }
};

// Runs every call on its own thread (each blocks until its flush is
// confirmed) and joins them.
void in_parallel(const std::vector<std::function<void()>>& calls) {
  std::vector<std::thread> threads;
  for (const auto& call : calls) threads.emplace_back(call);
  for (std::thread& t : threads) t.join();
}

// The flusher's bound (WorkerPoolOptions::flush_max_batch): by default the
// larger of 100 and the concurrency, so one flush can carry a step of every
// runner; a number given is taken as it is.
TEST(FlushBatch, AutoIsTheLargerOfHundredAndConcurrency) {
  WorkerPoolOptions o;
  EXPECT_EQ(o.flush_max_batch, kAutoFlushBatch);
  o.concurrency = 10;
  EXPECT_EQ(detail::flush_batch(o), 100);
  o.concurrency = 400;
  EXPECT_EQ(detail::flush_batch(o), 400);
  o.flush_max_batch = 7;
  EXPECT_EQ(detail::flush_batch(o), 7);
}

// The waker's longest wait per await_tasks call (its statement's snapshot holds
// back vacuum everywhere meanwhile): poll_interval, at most 100 ms.
TEST(WakerWait, IsThePollIntervalAtMostAHundredMilliseconds) {
  WorkerPoolOptions o;
  EXPECT_EQ(o.poll_interval, std::chrono::milliseconds(1000));
  EXPECT_EQ(detail::waker_wait_ms(o), 100);
  o.poll_interval = std::chrono::milliseconds(30);
  EXPECT_EQ(detail::waker_wait_ms(o), 30);
  o.poll_interval = std::chrono::milliseconds(0);
  EXPECT_EQ(detail::waker_wait_ms(o), 1);
}

// A wait on a partial reservation (the waker back right after its claim, the
// claimed tasks still holding their slots) is short, doubling while partial
// waits time out (the caller doubles), never past the full wait; a full
// reservation waits the full wait.
TEST(WakerWait, APartialReservationWaitsBriefly) {
  EXPECT_EQ(detail::waker_timeout_ms(100, 10, 10, 2), 100);
  EXPECT_EQ(detail::waker_timeout_ms(100, 2, 12, 2), 2);
  EXPECT_EQ(detail::waker_timeout_ms(100, 2, 12, 64), 64);
  EXPECT_EQ(detail::waker_timeout_ms(100, 2, 12, 128), 100);
  EXPECT_EQ(detail::waker_timeout_ms(30, 1, 12, 64), 30);
  EXPECT_EQ(detail::waker_timeout_ms(100, 2, 12, 0), 1);
  EXPECT_EQ(detail::kWakerFirstPartialWaitMs, 2);
}

TEST_F(GroupCommitTest, ClaimReturnsTheCompletedStepsUnderTheNewClaim) {
  const std::string run_id = spawn();
  std::vector<sql::ClaimedTask> first = claim(1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0].steps.empty());
  {
    pqxx::work tx(*connection_);
    sql::complete_step(tx, run_id, first[0].claim_token, "a", Json{{"x", 1}});
    sql::complete_step(tx, run_id, first[0].claim_token, "b", Json("two"));
    sql::release_claim(tx, run_id, first[0].claim_token);
    tx.commit();
  }
  std::vector<sql::ClaimedTask> second = claim(1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].steps.size(), 2u);
  EXPECT_EQ(second[0].steps["a"], (Json{{"x", 1}}));
  EXPECT_EQ(second[0].steps["b"], Json("two"));
}

TEST_F(GroupCommitTest, OneFlushDeliversEachItemItsOwnOutcome) {
  for (int i = 0; i < 6; ++i) spawn();
  std::vector<sql::ClaimedTask> tasks = claim(6);
  ASSERT_EQ(tasks.size(), 6u);
  const sql::ClaimedTask& stored = tasks[0];
  const sql::ClaimedTask& kept = tasks[1];
  const sql::ClaimedTask& cancelled = tasks[2];
  const sql::ClaimedTask& completed = tasks[3];
  const sql::ClaimedTask& cancelled_completion = tasks[4];
  const sql::ClaimedTask& stale_completion = tasks[5];
  {
    pqxx::work tx(*connection_);
    sql::complete_step(tx, kept.run_id, kept.claim_token, "k", Json("first"));
    tx.commit();
  }
  EXPECT_TRUE(client_->cancel("system", cancelled.run_id, std::string("test")));
  EXPECT_TRUE(client_->cancel("system", cancelled_completion.run_id, std::string("test")));
  const std::string other_token = "00000000-0000-4000-8000-000000000001";

  auto f = flusher(8);
  Json stored_value;
  Json kept_value;
  std::atomic<int> cancelled_step{0};
  std::atomic<int> stale_step{0};
  std::atomic<int> not_found_step{0};
  std::atomic<int> completed_ok{0};
  std::atomic<int> cancelled_done{0};
  std::atomic<int> stale_done{0};
  in_parallel({
      [&] { stored_value = f->store_step(stored.run_id, stored.claim_token, "s", Json(1)); },
      [&] { kept_value = f->store_step(kept.run_id, kept.claim_token, "k", Json("second")); },
      [&] {
        try {
          f->store_step(cancelled.run_id, cancelled.claim_token, "s", Json(3));
        } catch (const Cancelled&) {
          ++cancelled_step;
        }
      },
      [&] {
        try {
          f->store_step(stored.run_id, other_token, "s2", Json(4));
        } catch (const StaleFence&) {
          ++stale_step;
        }
      },
      [&] {
        try {
          f->store_step("no-such-run", other_token, "s", Json(5));
        } catch (const NotFound&) {
          ++not_found_step;
        }
      },
      [&] {
        f->complete_task(completed.run_id, completed.claim_token, Json{{"ok", true}});
        ++completed_ok;
      },
      [&] {
        try {
          f->complete_task(cancelled_completion.run_id, cancelled_completion.claim_token,
                           Json("late"));
        } catch (const Cancelled&) {
          ++cancelled_done;
        }
      },
      [&] {
        try {
          f->complete_task(stale_completion.run_id, other_token, Json("stale"));
        } catch (const StaleFence&) {
          ++stale_done;
        }
      },
  });
  EXPECT_EQ(f->flushes(), 1u);  // all eight in one transaction
  EXPECT_EQ(f->largest_batch(), 8u);
  EXPECT_EQ(stored_value, Json(1));
  EXPECT_EQ(kept_value, Json("first"));  // the stored value wins
  EXPECT_EQ(cancelled_step.load(), 1);
  EXPECT_EQ(stale_step.load(), 1);
  EXPECT_EQ(not_found_step.load(), 1);
  EXPECT_EQ(completed_ok.load(), 1);
  EXPECT_EQ(cancelled_done.load(), 1);
  EXPECT_EQ(stale_done.load(), 1);
  f->stop();

  EXPECT_EQ(state(completed.run_id), "completed");
  EXPECT_EQ(state(cancelled.run_id), "cancelled");
  EXPECT_EQ(state(cancelled_completion.run_id), "cancelled");
  // The stale completion changed nothing: the task still runs under its own claim.
  EXPECT_EQ(state(stale_completion.run_id), "running");
  EXPECT_EQ(scalar("SELECT value::text FROM docket.task_steps WHERE run_id = '" + kept.run_id +
                   "' AND step_name = 'k'"),
            "\"first\"");
  EXPECT_EQ(
      scalar("SELECT count(*) FROM docket.task_steps WHERE run_id = '" + cancelled.run_id + "'"),
      "0");
  // One transaction (one statement, sql::complete_steps_and_tasks): the stored
  // step and the completion carry the same transaction id.
  EXPECT_EQ(scalar("SELECT (SELECT xmin FROM docket.task_steps WHERE run_id = '" + stored.run_id +
                   "' AND step_name = 's')::text = (SELECT xmin FROM docket.runs WHERE run_id = '" +
                   completed.run_id + "')::text"),
            "t");
}

TEST_F(GroupCommitTest, AsyncCompletionsReportTheirOwnOutcome) {
  for (int i = 0; i < 2; ++i) spawn();
  std::vector<sql::ClaimedTask> tasks = claim(2);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_TRUE(client_->cancel("system", tasks[1].run_id, std::string("test")));
  auto f = flusher(2);
  AsyncOutcomes outcomes;
  f->complete_task_async(tasks[0].run_id, tasks[0].claim_token, Json(1), outcomes.callback());
  f->complete_task_async(tasks[1].run_id, tasks[1].claim_token, Json(2), outcomes.callback());
  f->stop();  // returns once everything handed in was flushed
  EXPECT_EQ(f->flushes(), 1u);
  EXPECT_EQ(outcomes.completed.load(), 1);
  EXPECT_EQ(outcomes.cancelled.load(), 1);
  EXPECT_EQ(outcomes.other.load(), 0);
  EXPECT_EQ(state(tasks[0].run_id), "completed");
  EXPECT_EQ(state(tasks[1].run_id), "cancelled");
}

// complete_tasks takes a run once per call (22023 otherwise): a second
// completion of a run (as a stale runner of it could hand in beside the
// current one) does not go in the same flush, but in the next, once the first
// is decided.
TEST_F(GroupCommitTest, ASecondCompletionOfARunGoesInTheNextFlush) {
  spawn();
  std::vector<sql::ClaimedTask> tasks = claim(1);
  ASSERT_EQ(tasks.size(), 1u);
  const std::string other_token = "00000000-0000-4000-8000-000000000001";
  auto f = flusher(2);
  AsyncOutcomes outcomes;
  f->complete_task_async(tasks[0].run_id, tasks[0].claim_token, Json("current"),
                         outcomes.callback());
  f->complete_task_async(tasks[0].run_id, other_token, Json("stale"), outcomes.callback());
  f->stop();
  EXPECT_EQ(f->flushes(), 2u);
  EXPECT_EQ(f->largest_batch(), 1u);
  EXPECT_EQ(outcomes.completed.load(), 1);
  EXPECT_EQ(outcomes.stale.load(), 1);
  EXPECT_EQ(outcomes.other.load(), 0);
  EXPECT_EQ(result(tasks[0].run_id).value("result", Json()), Json("current"));
}

// The group commit sends its items as array literals: a step name, a value
// and a result holding the literal's own syntax (quotes, backslashes, commas,
// braces, "NULL") arrive as they were handed in.
TEST_F(GroupCommitTest, NamesAndValuesKeepTheArrayLiteralsSyntax) {
  for (int i = 0; i < 2; ++i) spawn();
  std::vector<sql::ClaimedTask> tasks = claim(2);
  ASSERT_EQ(tasks.size(), 2u);
  const std::string name = "a \"b\", {c}\\d";
  const Json value{{"text", "say \"hi\", {x} \\ NULL"}, {"list", {1, "}", "{"}}};
  const Json result = Json::array({"NULL", "\\", "\"", ",", "\u00e9"});
  auto f = flusher(2);
  Json stored;
  in_parallel({
      [&] { stored = f->store_step(tasks[0].run_id, tasks[0].claim_token, name, value); },
      [&] { f->complete_task(tasks[1].run_id, tasks[1].claim_token, result); },
  });
  EXPECT_EQ(f->flushes(), 1u);  // one statement carried both
  EXPECT_EQ(stored, value);
  pqxx::work tx(*connection_);
  const pqxx::row step = tx.exec_params1(
      "SELECT step_name, value::text FROM docket.task_steps WHERE run_id = $1", tasks[0].run_id);
  EXPECT_EQ(step[0].as<std::string>(), name);
  EXPECT_EQ(Json::parse(step[1].as<std::string>()), value);
  tx.commit();
  EXPECT_EQ(this->result(tasks[1].run_id).value("result", Json()), result);
}

TEST_F(GroupCommitTest, AStepIsVisibleToOthersOnceStoreStepReturns) {
  spawn();
  std::vector<sql::ClaimedTask> tasks = claim(1);
  ASSERT_EQ(tasks.size(), 1u);
  auto f = flusher(1);
  for (int i = 0; i < 5; ++i) {
    const std::string name = "step" + std::to_string(i);
    EXPECT_EQ(f->store_step(tasks[0].run_id, tasks[0].claim_token, name, Json(i)), Json(i));
    // Another connection sees it at once: the flush committed before returning.
    EXPECT_EQ(scalar("SELECT value::text FROM docket.task_steps WHERE run_id = '" +
                     tasks[0].run_id + "' AND step_name = '" + name + "'"),
              std::to_string(i));
  }
  f->complete_task(tasks[0].run_id, tasks[0].claim_token, Json("done"));
  EXPECT_EQ(state(tasks[0].run_id), "completed");
}

TEST_F(GroupCommitTest, ABadItemFailsOnlyItself) {
  for (int i = 0; i < 2; ++i) spawn();
  std::vector<sql::ClaimedTask> tasks = claim(2);
  ASSERT_EQ(tasks.size(), 2u);
  auto f = flusher(2);
  Json good;
  std::atomic<int> bad{0};
  in_parallel({
      [&] { good = f->store_step(tasks[0].run_id, tasks[0].claim_token, "ok", Json("fine")); },
      [&] {
        try {
          // A token that is not a uuid: the server rejects the whole statement.
          f->store_step(tasks[1].run_id, "not-a-uuid", "bad", Json(1));
        } catch (const Error&) {
          ++bad;
        }
      },
  });
  EXPECT_EQ(good, Json("fine"));
  EXPECT_EQ(bad.load(), 1);
  EXPECT_EQ(scalar("SELECT value::text FROM docket.task_steps WHERE run_id = '" + tasks[0].run_id +
                   "' AND step_name = 'ok'"),
            "\"fine\"");
}

TEST_F(GroupCommitTest, ConnectionLossDuringAFlushIsAmbiguous) {
  spawn();
  std::vector<sql::ClaimedTask> tasks = claim(1);
  ASSERT_EQ(tasks.size(), 1u);
  auto f = flusher(1);  // two flush connections, both opened by start()
  f->store_step(tasks[0].run_id, tasks[0].claim_token, "first", Json(1));
  // Terminate the flushers' backends and wait until they are gone.
  EXPECT_EQ(scalar("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 30000)) FROM "
                   "pg_stat_activity WHERE application_name = 'docket_flusher' AND "
                   "datname = current_database()"),
            "2");
  EXPECT_THROW(f->store_step(tasks[0].run_id, tasks[0].claim_token, "second", Json(2)), Ambiguous);
  // Each flush thread finds its connection broken once (Ambiguous: nothing is
  // guessed), then reconnects: within one more try per connection, it is stored.
  int ambiguous = 0;
  Json third;
  for (int attempt = 0; attempt < 2 && third.is_null(); ++attempt) {
    try {
      third = f->store_step(tasks[0].run_id, tasks[0].claim_token, "third", Json(3));
    } catch (const Ambiguous&) {
      ++ambiguous;
    }
  }
  EXPECT_EQ(third, Json(3));
  EXPECT_LE(ambiguous, 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM docket.task_steps WHERE run_id = '" + tasks[0].run_id +
                   "' AND step_name = 'second'"),
            "0");
}

// Holds a row lock on a run from another connection, so a flush touching that
// run blocks until release() (or the end of the scope).
class RunLock {
 public:
  explicit RunLock(const std::string& run_id)
      : connection_(test::conninfo()), tx_(std::make_unique<pqxx::work>(connection_)) {
    tx_->exec("SELECT 1 FROM docket.runs WHERE run_id = " + tx_->quote(run_id) + " FOR UPDATE");
  }
  void release() {
    if (tx_) tx_->commit();
    tx_.reset();
  }

 private:
  pqxx::connection connection_;
  std::unique_ptr<pqxx::work> tx_;
};

TEST_F(GroupCommitTest, ASecondFlushCommitsWhileTheFirstIsInFlight) {
  for (int i = 0; i < 2; ++i) spawn();
  std::vector<sql::ClaimedTask> tasks = claim(2);
  ASSERT_EQ(tasks.size(), 2u);
  const sql::ClaimedTask& blocked = tasks[0];
  const sql::ClaimedTask& other = tasks[1];
  auto f = flusher(1);
  RunLock lock(blocked.run_id);
  std::atomic<bool> first_done{false};
  Json first;
  std::thread first_step([&] {
    first = f->store_step(blocked.run_id, blocked.claim_token, "a", Json("first"));
    first_done.store(true);
  });
  // The first flush waits for the row lock held above.
  ASSERT_TRUE(eventually([&] { return flushes_waiting_for_a_lock() == 1; }));
  // The second flush goes out on the other connection and commits meanwhile.
  EXPECT_EQ(f->store_step(other.run_id, other.claim_token, "b", Json("second")), Json("second"));
  EXPECT_FALSE(first_done.load());
  EXPECT_EQ(scalar("SELECT value::text FROM docket.task_steps WHERE run_id = '" + other.run_id +
                   "' AND step_name = 'b'"),
            "\"second\"");
  lock.release();
  first_step.join();
  EXPECT_EQ(first, Json("first"));
  EXPECT_EQ(f->flushes(), 2u);
  EXPECT_EQ(f->largest_batch(), 1u);
}

TEST_F(GroupCommitTest, AnItemWaitsWhileItsRunIsInAnotherFlush) {
  for (int i = 0; i < 2; ++i) spawn();
  std::vector<sql::ClaimedTask> tasks = claim(2);
  ASSERT_EQ(tasks.size(), 2u);
  const sql::ClaimedTask& blocked = tasks[0];
  const sql::ClaimedTask& other = tasks[1];
  auto f = flusher(1);
  RunLock lock(blocked.run_id);
  std::atomic<bool> completion_done{false};
  std::thread first_step(
      [&] { f->store_step(blocked.run_id, blocked.claim_token, "a", Json("first")); });
  ASSERT_TRUE(eventually([&] { return flushes_waiting_for_a_lock() == 1; }));
  // The same run's completion (as a second, stale runner of the run could hand
  // in) is not taken by the idle flush thread while the step is in flight.
  std::thread completion([&] {
    try {
      f->complete_task(blocked.run_id, blocked.claim_token, Json("done"));
    } catch (const Error&) {
    }
    completion_done.store(true);
  });
  ASSERT_TRUE(eventually([&] { return f->queued() == 1; }));
  // Another run's item passes it.
  EXPECT_EQ(f->store_step(other.run_id, other.claim_token, "b", Json(2)), Json(2));
  EXPECT_EQ(f->queued(), 1u);
  EXPECT_FALSE(completion_done.load());
  EXPECT_EQ(f->flushes(), 1u);
  lock.release();
  first_step.join();
  completion.join();
  EXPECT_EQ(f->flushes(), 3u);  // the step, the other run's step, then the completion
  EXPECT_EQ(state(blocked.run_id), "completed");
  EXPECT_EQ(scalar("SELECT value::text FROM docket.task_steps WHERE run_id = '" + blocked.run_id +
                   "' AND step_name = 'a'"),
            "\"first\"");
}

TEST_F(GroupCommitTest, CompletionsWaitForTheFlushInFlightUnlessAStepGoes) {
  for (int i = 0; i < 3; ++i) spawn();
  std::vector<sql::ClaimedTask> tasks = claim(3);
  ASSERT_EQ(tasks.size(), 3u);
  const sql::ClaimedTask& blocked = tasks[0];
  const sql::ClaimedTask& completion = tasks[1];
  const sql::ClaimedTask& step = tasks[2];
  auto f = flusher(1);
  RunLock lock(blocked.run_id);
  std::thread first_step(
      [&] { f->store_step(blocked.run_id, blocked.claim_token, "a", Json("first")); });
  ASSERT_TRUE(eventually([&] { return flushes_waiting_for_a_lock() == 1; }));
  // Nobody waits for this completion: it does not start a flush of its own
  // beside the one in flight.
  std::atomic<int> completed{0};
  f->complete_task_async(completion.run_id, completion.claim_token, Json("done"),
                         [&](std::exception_ptr error) {
                           if (!error) ++completed;
                         });
  EXPECT_EQ(f->queued(), 1u);
  // A step's runner waits: its flush goes at once, and takes the completion along.
  EXPECT_EQ(f->store_step(step.run_id, step.claim_token, "c", Json(3)), Json(3));
  EXPECT_EQ(completed.load(), 1);
  EXPECT_EQ(f->queued(), 0u);
  EXPECT_EQ(f->flushes(), 1u);
  EXPECT_EQ(f->largest_batch(), 2u);
  lock.release();
  first_step.join();
  EXPECT_EQ(f->flushes(), 2u);
  EXPECT_EQ(state(completion.run_id), "completed");
}

TEST_F(GroupCommitTest, AStoppedFlusherRefusesWithoutSending) {
  auto f = flusher(1);
  f->stop();
  EXPECT_THROW(f->store_step("r", "00000000-0000-4000-8000-000000000001", "s", Json(1)),
               ConnectionLost);
}

// --- through a WorkerPool --------------------------------------------------

WorkerPoolOptions pool_options(const std::string& queue) {
  WorkerPoolOptions o;
  o.conninfo = test::conninfo();
  o.queue = queue;
  o.poll_interval = 100ms;
  o.lease = 10000ms;
  o.shutdown_grace = 0ms;
  o.logger = stderr_logger(LogLevel::error);
  return o;
}

// A pool of `queue` holding up to concurrency + prefetch claims, claimed
// batch_size at a time.
WorkerPoolOptions small_pool(const std::string& queue, int concurrency, int prefetch,
                             int batch_size) {
  WorkerPoolOptions o = pool_options(queue);
  o.concurrency = concurrency;
  o.prefetch = prefetch;
  o.batch_size = batch_size;
  return o;
}

TEST_F(GroupCommitTest, CancellationBetweenStepsUnwindsTheRunner) {
  auto started = std::make_shared<std::atomic<int>>(0);
  auto unwound = std::make_shared<std::atomic<int>>(0);
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("steps",
                                 [started, unwound](Context& ctx, const Json&) -> Json {
                                   ++*started;
                                   try {
                                     for (int i = 0;; ++i) ctx.step("s", [i] { return Json(i); });
                                   } catch (const ControlSignal& signal) {
                                     if (signal.kind() == ControlSignal::Kind::cancelled)
                                       ++*unwound;
                                     throw;
                                   }
                                 })
                            .build();
  WorkerPoolOptions o = pool_options(queue_);
  o.concurrency = 3;
  o.shutdown_grace = 10s;
  WorkerPool pool(catalog, o);
  pool.start();
  const std::string a = spawn("steps");
  const std::string b = spawn("steps");
  ASSERT_TRUE(eventually([&] { return started->load() == 2; }));
  EXPECT_TRUE(client_->cancel("system", a, std::string("test")));
  EXPECT_TRUE(client_->cancel("system", b, std::string("test")));
  ASSERT_TRUE(eventually([&] { return pool.counters().cancelled == 2; }));
  pool.stop();
  EXPECT_EQ(unwound->load(), 2);
  EXPECT_EQ(state(a), "cancelled");
  EXPECT_EQ(state(b), "cancelled");
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.completed, 0u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.lost, 0u);
}

TEST_F(GroupCommitTest, PrefetchedClaimsAreReleasedAtShutdown) {
  auto started = std::make_shared<std::atomic<int>>(0);
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("hold",
                                 [started](Context& ctx, const Json&) -> Json {
                                   ++*started;
                                   // Until the shutdown stops this runner.
                                   while (!ctx.invalidated()) std::this_thread::sleep_for(2ms);
                                   ctx.heartbeat();  // throws: invalidated
                                   return Json();
                                 })
                            .build();
  std::vector<std::string> runs;
  for (int i = 0; i < 4; ++i) runs.push_back(spawn("hold"));
  WorkerPoolOptions o = small_pool(queue_, 1, 3, 4);
  WorkerPool pool(catalog, o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return started->load() == 1 && pool.counters().claimed == 4; }));
  EXPECT_EQ(claimed_rows(), "4");
  pool.stop();
  const PoolCounters c = pool.counters();
  EXPECT_EQ(started->load(), 1);
  EXPECT_EQ(c.released, 3u);   // the prefetched ones, never started
  EXPECT_EQ(c.abandoned, 1u);  // the running one, past the (zero) grace period
  EXPECT_EQ(c.active, 0u);
  EXPECT_EQ(claimed_rows(), "0");
  for (const std::string& run_id : runs) EXPECT_EQ(state(run_id), "pending");
}

TEST_F(GroupCommitTest, PrefetchedClaimsAreNotHeldPastHalfTheLease) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto started = std::make_shared<std::atomic<int>>(0);
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("t",
                                 [release, started](Context& ctx, const Json&) -> Json {
                                   if (++*started == 1) {
                                     while (!release->load()) {
                                       ctx.heartbeat();
                                       std::this_thread::sleep_for(20ms);
                                     }
                                   }
                                   return Json("done");
                                 })
                            .build();
  std::vector<std::string> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(spawn("t"));
  WorkerPoolOptions o = small_pool(queue_, 1, 2, 3);
  o.lease = 1000ms;
  o.shutdown_grace = 10s;
  WorkerPool pool(catalog, o);
  pool.start();
  // The two queued behind the blocked runner go back at half the lease.
  ASSERT_TRUE(eventually([&] { return pool.counters().released >= 2; }));
  release->store(true);
  ASSERT_TRUE(eventually([&] {
    for (const std::string& run_id : runs)
      if (state(run_id) != "completed") return false;
    return true;
  }));
  pool.stop();
  EXPECT_EQ(pool.counters().completed, 3u);
}

TEST_F(GroupCommitTest, ConnectionCountDoesNotGrowWithConcurrency) {
  constexpr int kTasks = 12;
  auto started = std::make_shared<std::atomic<int>>(0);
  auto peak = std::make_shared<std::atomic<int>>(0);
  const std::string conninfo = test::conninfo();
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("t",
                                 [started](Context& ctx, const Json&) -> Json {
                                   ctx.step("before", [] { return Json(1); });
                                   ++*started;
                                   // Every runner keeps calling the database until all run at once.
                                   while (started->load() < kTasks) ctx.heartbeat();
                                   ctx.step("after", [] { return Json(2); });
                                   return Json("done");
                                 })
                            .build();
  WorkerPoolOptions o = pool_options(queue_);
  o.concurrency = kTasks;
  o.batch_size = kTasks;
  o.runner_connections = 2;
  o.shutdown_grace = 10s;
  for (int i = 0; i < kTasks; ++i) spawn("t");
  WorkerPool pool(catalog, o);
  pool.start();
  // Sample the pool's connections while it works (the test's own is excluded).
  const std::string count_sql =
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
      "pg_backend_pid() AND backend_type = 'client backend'";
  ASSERT_TRUE(eventually([&] {
    peak->store(std::max(peak->load(), std::stoi(scalar(count_sql))));
    return pool.counters().completed == static_cast<std::uint64_t>(kTasks);
  }));
  pool.stop();
  // poller + waker + flush_connections + runner_connections (the watchdog
  // released nothing).
  EXPECT_LE(peak->load(), 2 + o.flush_connections + o.runner_connections);
  EXPECT_GE(peak->load(), 1);
}

// Two claimers reserve their slots before claiming: whatever the interleaving,
// the claims held never exceed the capacity, and what is given back is free.
TEST(ClaimSlots, ConcurrentReservationsNeverExceedTheCapacity) {
  WorkerPoolOptions o;
  o.logger = null_logger();
  detail::PoolShared pool(TaskCatalog::Builder().build(), o);
  constexpr int kCapacity = 7;
  std::atomic<int> peak{0};
  auto claimer = [&] {
    for (int i = 0; i < 20000; ++i) {
      const int got = pool.reserve_slots(3, kCapacity);
      const int now = pool.active();
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      pool.unreserve_slots(got);
    }
  };
  std::thread a(claimer);
  std::thread b(claimer);
  std::thread c(claimer);
  a.join();
  b.join();
  c.join();
  EXPECT_LE(peak.load(), kCapacity);
  EXPECT_EQ(pool.active(), 0);
  EXPECT_EQ(pool.reserve_slots(10, kCapacity), kCapacity);
  EXPECT_EQ(pool.reserve_slots(1, kCapacity), 0);
  pool.unreserve_slots(kCapacity);
}

// With a second claimer, a backlog is drained exactly once, and while every
// runner is blocked the pool holds exactly concurrency + prefetch claims.
TEST_F(GroupCommitTest, TwoClaimersHoldNoMoreThanTheCapacity) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto runs_seen = std::make_shared<std::atomic<int>>(0);
  TaskCatalog catalog = TaskCatalog::Builder()
                            .add("t",
                                 [release, runs_seen](Context&, const Json& params) -> Json {
                                   ++*runs_seen;
                                   while (!release->load()) std::this_thread::sleep_for(2ms);
                                   return params.at("i");
                                 })
                            .build();
  constexpr int kTasks = 60;
  std::vector<std::string> runs;
  for (int i = 0; i < kTasks; ++i) runs.push_back(spawn("t", Json{{"i", i}}));
  WorkerPoolOptions o = small_pool(queue_, 2, 4, 3);
  o.claim_connections = 2;
  WorkerPool pool(catalog, o);
  pool.start();
  ASSERT_TRUE(eventually([&] { return runs_seen->load() == 2 && pool.counters().claimed == 6; }));
  // Full: both claimers wait for a slot; the database agrees.
  EXPECT_EQ(claimed_rows(), "6");
  EXPECT_EQ(pool.counters().active, 6u);
  release->store(true);
  ASSERT_TRUE(eventually([&] {
    for (const std::string& run_id : runs)
      if (state(run_id) != "completed") return false;
    return true;
  }));
  pool.stop();
  const PoolCounters c = pool.counters();
  EXPECT_EQ(c.completed, static_cast<std::uint64_t>(kTasks));
  EXPECT_EQ(c.claimed, static_cast<std::uint64_t>(kTasks));  // none twice
  EXPECT_EQ(c.active, 0u);
  EXPECT_EQ(runs_seen->load(), kTasks);
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(result(runs[i])["result"], i);
}

}  // namespace
}  // namespace docket
