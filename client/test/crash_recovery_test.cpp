// Crash recovery: a worker PROCESS (crash_worker) is killed with SIGKILL while
// its task is blocked in the second of three steps. Another worker (a pool in
// this process, with a short lease) resumes the task once the dead worker's
// claim expires, from its last completed step: the first step never runs again.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "crash_task.hpp"
#include "docket/client.hpp"
#include "docket/worker_pool.hpp"
#include "test_db.hpp"

#ifndef DOCKET_CRASH_WORKER
#error "DOCKET_CRASH_WORKER (the crash_worker binary's path) must be defined by the build"
#endif

namespace docket {
namespace {

using namespace std::chrono_literals;
using test::conninfo;
using test::eventually;
using test::scalar;
using test::unique_name;

// The worker process; killed (and reaped) when the test ends early.
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ > 0) kill_now();
  }
  int kill_now() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST(CrashRecovery, KilledWorkerProcessIsResumedFromItsLastStep) {
  pqxx::connection connection(conninfo());
  test::create_crash_table(connection);
  const std::string queue = unique_name("crash");
  SpawnOptions options;
  options.queue = queue;
  const std::string run_id =
      Client(connection).spawn(test::kCrashTask, Json::object(), options).run_id;
  const auto executions = [&](const std::string& step) {
    const std::string n =
        scalar(connection, "SELECT executions FROM crash_step_runs WHERE run_id = '" + run_id +
                               "' AND step = '" + step + "'");
    return n.empty() ? 0 : std::stoi(n);
  };

  ChildProcess worker({DOCKET_CRASH_WORKER, conninfo(), queue});
  ASSERT_GT(worker.pid(), 0);
  ASSERT_TRUE(eventually([&] { return executions("second") == 1; }, 60s))
      << "the worker process never reached the second step";
  // The first step is checkpointed; the second is running in the worker.
  EXPECT_EQ(scalar(connection,
                   "SELECT string_agg(step_name, ',' ORDER BY step_name) FROM "
                   "docket.task_steps WHERE run_id = '" +
                       run_id + "'"),
            "first");
  const int status = worker.kill_now();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ((*Client(connection).task_result("system", run_id))["state"], "running")
      << "the dead worker's claim holds until it expires";

  // Another worker with a short lease: the dead claim expires once the dead
  // worker's own lease (5 s) has passed since its last step, not the new one's.
  WorkerPoolOptions pool_options;
  pool_options.conninfo = conninfo();
  pool_options.queue = queue;
  pool_options.concurrency = 2;
  pool_options.poll_interval = 100ms;
  pool_options.lease = 1000ms;
  pool_options.logger = null_logger();
  WorkerPool pool(TaskCatalog::Builder()
                      .add(test::kCrashTask, test::crash_task_handler(conninfo(), false))
                      .build(),
                  pool_options);
  pool.start();
  ASSERT_TRUE(eventually(
      [&] { return (*Client(connection).task_result("system", run_id))["state"] == "completed"; },
      60s));
  pool.stop();

  const Json result = *Client(connection).task_result("system", run_id);
  EXPECT_EQ(result["result"]["steps"], (Json{"one", "two", "three"}));
  EXPECT_EQ(result["result"]["wake_reason"], "recovered");
  EXPECT_EQ(result["attempts"], 1) << "a recovered claim is not a failed attempt";
  EXPECT_EQ(executions("first"), 1) << "a completed step ran twice";
  EXPECT_EQ(executions("second"), 2) << "the interrupted step runs again, once";
  EXPECT_EQ(executions("third"), 1);
  EXPECT_EQ(scalar(connection, "SELECT last_wake_reason FROM crash_step_runs WHERE run_id = '" +
                                   run_id + "' AND step = 'second'"),
            "recovered");
  EXPECT_EQ(pool.counters().completed, 1u);
}

}  // namespace
}  // namespace docket
