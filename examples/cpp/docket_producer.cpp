// docket_producer: spawns the example tasks (see docket_worker), follows them
// until they finish, and prints each task's result.
//
//   docket_producer [--dsn DSN] [--queue demo] [--timeout-s 60]
//
// No worker is needed to produce work: docket::Client is plain SQL calls on a
// connection (or inside the application's own transaction). Exits 1 when a task
// does not reach its expected final state in time.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/errors.hpp"

namespace {

using docket::Json;
using Clock = std::chrono::steady_clock;

const Clock::time_point started = Clock::now();

double seconds() {
  return std::chrono::duration<double>(Clock::now() - started).count();
}

struct Tracked {
  std::string label;
  std::string run_id;
  std::string state = "-";
  Json result;  // task_result once finished
};

bool finished(const std::string& state) {
  return state == "completed" || state == "failed" || state == "cancelled";
}

struct Args {
  std::string dsn;
  std::string queue = "demo";
  int timeout_s = 60;
};

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--dsn") {
      args.dsn = argv[i + 1];
    } else if (a == "--queue") {
      args.queue = argv[i + 1];
    } else if (a == "--timeout-s") {
      args.timeout_s = std::stoi(argv[i + 1]);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  if (argc % 2 == 0) throw std::invalid_argument("options come in pairs");
  return args;
}

int run(const Args& args) {
  pqxx::connection connection(args.dsn);
  docket::Client client(connection);
  // A fresh order per run, so idempotency keys and event names never collide.
  const std::string order =
      std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 100000);
  std::vector<Tracked> tasks;
  auto track = [&](const std::string& label, const docket::SpawnResult& spawned) {
    Tracked tracked;
    tracked.label = label;
    tracked.run_id = spawned.run_id;
    tasks.push_back(tracked);
    std::printf("[%6.2fs] spawned %-15s %s%s\n", seconds(), label.c_str(), spawned.run_id.c_str(),
                spawned.created ? "" : " (existing task: same idempotency key)");
  };

  docket::SpawnOptions options;
  options.queue = args.queue;

  // 1. The order row and its charge task commit together, or not at all.
  {
    pqxx::work tx(connection);
    tx.exec(
        "CREATE TABLE IF NOT EXISTS demo_orders (id text PRIMARY KEY, created_at timestamptz "
        "NOT NULL DEFAULT now())");
    tx.exec("INSERT INTO demo_orders (id) VALUES (" + tx.quote(order) + ")");
    docket::SpawnOptions charge = options;
    charge.max_attempts = 3;
    charge.retry = Json{{"kind", "fixed"}, {"base_ms", 300}};
    charge.idempotency_key = "charge-" + order;
    charge.headers = Json{{"source", "docket_producer"}};
    track("charge_order",
          docket::Client(tx).spawn("charge_order",
                                   Json{{"order_id", order}, {"items", {"book", "pen"}}}, charge));
    tx.commit();
  }
  // The same key again returns the same task instead of a second charge.
  docket::SpawnOptions same_key = options;
  same_key.idempotency_key = "charge-" + order;
  const docket::SpawnResult duplicate = client.spawn("charge_order", Json::object(), same_key);
  std::printf("[%6.2fs] spawn with the same idempotency key -> %s (created: %s)\n", seconds(),
              duplicate.run_id.c_str(), duplicate.created ? "true" : "false");

  track("nap", client.spawn("nap", Json{{"ms", 1000}}, options));
  track("await_approval", client.spawn("await_approval", Json{{"order_id", order}}, options));
  docket::SpawnOptions bounded = options;
  bounded.cancel_after_ms = 60000;  // cancelled if not started within a minute
  bounded.max_duration_ms = 30000;  // and if it runs longer than 30 s
  track("fulfil_order", client.spawn("fulfil_order", Json{{"order_id", order}}, bounded));

  // 2. Follow the tasks; emit the approval once its task waits for it.
  bool emitted = false, first_emit = false, second_emit = true;
  const auto deadline = Clock::now() + std::chrono::seconds(args.timeout_s);
  for (;;) {
    bool all_done = true;
    for (Tracked& t : tasks) {
      if (finished(t.state)) continue;
      const std::optional<Json> result = client.task_result("tenantless", t.run_id);
      const std::string state = result ? (*result)["state"].get<std::string>() : "missing";
      if (state != t.state) {
        std::printf("[%6.2fs] %-15s %-9s -> %s\n", seconds(), t.label.c_str(), t.state.c_str(),
                    state.c_str());
        t.state = state;
      }
      if (finished(state)) t.result = *result;
      all_done = all_done && finished(state);
    }
    const Tracked& approval = tasks[2];
    if (!emitted && approval.state == "waiting") {
      first_emit = client.emit_event("approved:" + order, Json{{"by", "alice"}});
      second_emit = client.emit_event("approved:" + order, Json{{"by", "mallory"}});
      std::printf("[%6.2fs] emitted approved:%s (first emit: %s, second emit: %s)\n", seconds(),
                  order.c_str(), first_emit ? "true" : "false", second_emit ? "true" : "false");
      emitted = true;
    }
    if (all_done || Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }

  // 3. Results, and what the demo expects of them.
  std::printf("\nsummary (queue %s, order %s):\n", args.queue.c_str(), order.c_str());
  std::vector<std::string> problems;
  for (const Tracked& t : tasks) {
    std::printf("  %-15s %-9s %s\n", t.label.c_str(), t.state.c_str(),
                t.result.is_null() ? "-" : t.result.dump().c_str());
    if (t.state != "completed") problems.push_back(t.label + " is " + t.state);
  }
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok) problems.push_back(what);
  };
  expect(!duplicate.created && duplicate.run_id == tasks[0].run_id,
         "the same idempotency key returned another task");
  expect(tasks[0].result.value("attempts", 0) == 2, "charge_order did not take 2 attempts");
  expect(first_emit && !second_emit, "the first emit must win, the second change nothing");
  if (tasks[2].state == "completed")
    expect(tasks[2].result["result"].value("by", "") == "alice", "approval not by alice");
  if (tasks[1].state == "completed")
    expect(tasks[1].result["result"].value("slept_ms", 0) >= 1000, "nap woke too early");
  if (problems.empty()) {
    std::printf("demo: all %zu tasks reached their expected final state\n", tasks.size());
    return 0;
  }
  for (const std::string& p : problems) std::printf("demo FAILED: %s\n", p.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::cerr << "docket_producer: " << e.what()
              << "\nusage: docket_producer [--dsn DSN] [--queue Q] [--timeout-s N]\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "docket_producer: " << e.what() << "\n";
    return 1;
  }
}
