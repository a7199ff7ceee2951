// docket_worker: a WorkerPool serving the example tasks of docket_producer.
//
//   docket_worker [--dsn DSN] [--queue demo] [--concurrency 4] [--poll-ms 200]
//
// Runs until SIGINT or SIGTERM, then shuts down gracefully and prints the pool's
// counters. Each handler prints what it does, so the output shows tasks moving:
// steps running (or replayed from their checkpoint), a retry, a durable sleep,
// an event wait, a child task.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "docket/context.hpp"
#include "docket/logger.hpp"
#include "docket/task_catalog.hpp"
#include "docket/worker_pool.hpp"

namespace {

using docket::Context;
using docket::Json;
std::mutex print_mutex;

// "worker | charge_order 1a2b3c4d: <what>" (one line at a time across runners)
void say(const Context& ctx, const std::string& what) {
  const std::lock_guard<std::mutex> lock(print_mutex);
  std::printf("  worker | %-14s %.8s: %s\n", ctx.task_name().c_str(), ctx.run_id().c_str(),
              what.c_str());
}

// A step that says whether it ran now or came back from its checkpoint.
Json logged_step(Context& ctx, const std::string& name, const std::function<Json()>& fn) {
  bool ran = false;
  Json value = ctx.step(name, [&] {
    ran = true;
    return fn();
  });
  say(ctx, "step " + name + (ran ? " ran" : " replayed") + " -> " + value.dump());
  return value;
}

long long epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Charges each item in its own step, then fails its first attempt after the
// charges: the retry replays the charges from their checkpoints, never charging twice.
Json charge_order(Context& ctx, const Json& params) {
  say(ctx, "attempt " + std::to_string(ctx.attempt()) + " (woke: " + ctx.wake_reason() + ")");
  const std::string order = params.at("order_id").get<std::string>();
  Json charged = Json::array();
  for (const Json& item : params.at("items")) {
    charged.push_back(logged_step(ctx, "charge", [&] {
      return Json{{"item", item}, {"charge_id", "ch-" + order + "-" + item.get<std::string>()}};
    }));
  }
  if (ctx.attempt() == 1) throw std::runtime_error("payment gateway timed out (simulated)");
  ctx.emit_event("order_charged:" + order, Json{{"order_id", order}});
  return Json{{"order_id", order}, {"charged", charged}, {"attempt", ctx.attempt()}};
}

// A durable sleep: the task suspends (its worker slot is freed) and a worker
// claims it again when the time has come.
Json nap(Context& ctx, const Json& params) {
  const Json fell_asleep = logged_step(ctx, "fell_asleep", [] { return Json(epoch_ms()); });
  say(ctx, ctx.wake_reason() == "sleep" ? "woke up" : "going to sleep");
  ctx.sleep_for(std::chrono::milliseconds(params.value("ms", 1000)), "nap");
  const Json woke = logged_step(ctx, "woke", [] { return Json(epoch_ms()); });
  return Json{{"slept_ms", woke.get<long long>() - fell_asleep.get<long long>()}};
}

// Waits (suspended, holding no slot) until the producer emits the approval.
Json await_approval(Context& ctx, const Json& params) {
  const std::string order = params.at("order_id").get<std::string>();
  logged_step(ctx, "request_approval", [&] { return Json{{"requested", order}}; });
  say(ctx, "waiting for approved:" + order);
  std::optional<std::chrono::milliseconds> timeout;
  if (params.contains("timeout_ms"))
    timeout = std::chrono::milliseconds(params["timeout_ms"].get<long long>());
  const std::optional<Json> approval = ctx.await_event("approved:" + order, timeout);
  if (!approval) return Json{{"approved", false}, {"reason", "timeout"}};
  say(ctx, "approved by " + approval->value("by", std::string("?")));
  return Json{{"approved", true}, {"by", approval->value("by", std::string())}};
}

// Spawns a child task and joins it; the parent waits suspended meanwhile.
Json fulfil_order(Context& ctx, const Json& params) {
  const std::string order = params.at("order_id").get<std::string>();
  const std::string child = ctx.spawn_child("send_receipt", Json{{"order_id", order}});
  say(ctx, "joining child send_receipt " + child.substr(0, 8));
  const docket::TaskOutcome outcome = ctx.await_task(child);
  say(ctx, "child " + outcome.state);
  if (outcome.state != "completed") throw std::runtime_error("receipt " + outcome.state);
  return Json{{"order_id", order}, {"receipt", outcome.result}};
}

Json send_receipt(Context& ctx, const Json& params) {
  const Json receipt = logged_step(ctx, "render", [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rendering a PDF, say
    return Json{{"receipt_id", "rc-" + params.at("order_id").get<std::string>()}};
  });
  return receipt;
}

struct Options {
  docket::WorkerPoolOptions pool;
};

Options parse(int argc, char** argv) {
  Options o;
  o.pool.queue = "demo";
  o.pool.concurrency = 4;
  o.pool.poll_interval = std::chrono::milliseconds(200);  // timers (sleeps, retries) do not notify
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value for " + a);
    const std::string v = argv[++i];
    if (a == "--dsn") {
      o.pool.conninfo = v;
    } else if (a == "--queue") {
      o.pool.queue = v;
    } else if (a == "--concurrency") {
      o.pool.concurrency = std::stoi(v);
    } else if (a == "--poll-ms") {
      o.pool.poll_interval = std::chrono::milliseconds(std::stoi(v));
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "docket_worker: " << e.what()
              << "\nusage: docket_worker [--dsn DSN] [--queue Q] [--concurrency N] [--poll-ms N]\n";
    return 2;
  }

  // Signals are taken by sigwait below; every pool thread inherits the mask.
  // (A shell starts background jobs with SIGINT ignored; take it back.)
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // the pool stopped by itself: end the signal thread
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const docket::TaskCatalog catalog = docket::TaskCatalog::Builder()
                                          .add("charge_order", charge_order)
                                          .add("nap", nap)
                                          .add("await_approval", await_approval)
                                          .add("fulfil_order", fulfil_order)
                                          .add("send_receipt", send_receipt)
                                          .build();
  options.pool.logger = docket::stderr_logger(docket::LogLevel::info);
  docket::WorkerPool pool(catalog, options.pool);
  try {
    pool.start();
  } catch (const std::exception& e) {
    std::cerr << "docket_worker: cannot start: " << e.what() << "\n";
    return 1;
  }
  std::printf("worker: serving queue %s with %d runners\n", options.pool.queue.c_str(),
              options.pool.concurrency);

  // SIGINT/SIGTERM stop the pool; so does a stuck runner (on_stuck = exit), and
  // the process then exits with kStuckExitCode for its supervisor to restart it.
  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    if (signal_number != SIGUSR1) std::printf("worker: signal %d, shutting down\n", signal_number);
    pool.stop();
  });
  const int code = pool.wait();
  kill(getpid(), SIGUSR1);  // blocked everywhere: ends sigwait if no signal came
  stopper.join();

  const docket::PoolCounters c = pool.counters();
  std::printf(
      "worker summary: claimed %llu, completed %llu, failed %llu (retried %llu), suspended %llu, "
      "cancelled %llu, abandoned %llu, lost %llu, mean claim %.2f ms\n",
      static_cast<unsigned long long>(c.claimed), static_cast<unsigned long long>(c.completed),
      static_cast<unsigned long long>(c.failed), static_cast<unsigned long long>(c.retried),
      static_cast<unsigned long long>(c.suspended), static_cast<unsigned long long>(c.cancelled),
      static_cast<unsigned long long>(c.abandoned), static_cast<unsigned long long>(c.lost),
      c.claim_latency_ms);
  if (code != 0) std::printf("worker: a runner was stuck; exiting with %d\n", code);
  return code;
}
