// crash_worker CONNINFO QUEUE: a worker process for crash_recovery_test. It
// serves crash_task with the second step blocking forever, so the test can kill
// it with SIGKILL in the middle of the task.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "crash_task.hpp"
#include "docket/worker_pool.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crash_worker CONNINFO QUEUE\n");
    return 2;
  }
  docket::WorkerPoolOptions options;
  options.conninfo = argv[1];
  options.queue = argv[2];
  options.concurrency = 1;
  options.poll_interval = std::chrono::milliseconds(100);
  // The claim's lease: the test's recovering pool takes the task over once it
  // has passed (a claim never expires before its holder's lease, whatever lease
  // the next claimer passes). Long enough that the watchdog (two leases) never
  // acts before the kill.
  options.lease = std::chrono::milliseconds(5000);
  docket::WorkerPool pool(
      docket::TaskCatalog::Builder()
          .add(docket::test::kCrashTask, docket::test::crash_task_handler(argv[1], true))
          .build(),
      options);
  pool.start();
  for (;;) ::pause();
}
