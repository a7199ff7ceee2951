// bench_worker: the measuring half of bench/worker/run.sh (see bench/README.md).
//
//   bench_worker drain   DSN QUEUE CONCURRENCY TASKS
//       A WorkerPool with a no-op handler drains TASKS pre-spawned tasks.
//   bench_worker latency DSN QUEUE COUNT INTERVAL_MS POLL_MS LISTEN(0|1) NOTIFY_INTERVAL_MS|default
//       An idle pool (warmed up by one burst of tasks, so its runners'
//       connections are open); one task spawned (and committed) every
//       INTERVAL_MS; the wake-to-start latency is from just before the spawn's
//       COMMIT to the handler's first instruction.
//   bench_worker drain-steps DSN QUEUE CONCURRENCY TASKS STEPS
//       As drain, but each task's handler runs STEPS checkpointed steps
//       (Context::step) before it returns.
//   bench_worker wake DSN QUEUE trickle|burst COUNT INTERVAL_MS BURST
//       Wake-to-start latency into an idle pool with the default WorkerPoolOptions
//       and the spawner's default session settings: trickle spawns COUNT tasks one
//       per transaction every INTERVAL_MS; burst spawns COUNT tasks in transactions
//       of BURST tasks every INTERVAL_MS. Latency as for latency.
//   bench_worker drain-wait DSN QUEUE CONCURRENCY TASKS WAITERS
//       As drain, while WAITERS producer threads (each its own connection)
//       Client::wait for the queue's tasks, every task once, in spawn order
//       (waiter i waits for tasks i, i + WAITERS, ...): the cost of waiting
//       for every result on the workers' drain. WAITERS 0 is drain.
//   bench_worker rawloop DSN THREADS BATCH JOBS
//       The raw SKIP LOCKED loop as a client would run it (bench/claim's
//       bench.raw_jobs): THREADS connections, each claiming BATCH jobs in one
//       statement and completing each job in its own statement, until none is left.
//
// Each mode prints one line of key=value figures on stdout. drain and
// drain-steps read optional knobs from the environment: BENCH_POOL_BATCH
// (WorkerPoolOptions::batch_size, default the pool's), BENCH_POOL_PREFETCH
// (WorkerPoolOptions::prefetch, default the pool's), BENCH_POOL_CLAIMERS
// (WorkerPoolOptions::claim_connections, default the pool's) and
// BENCH_FLUSH_CONNECTIONS (WorkerPoolOptions::flush_connections, default the pool's),
// BENCH_FLUSH_MAX_BATCH (WorkerPoolOptions::flush_max_batch, default the pool's),
// BENCH_RUNNER_THREADS (WorkerPoolOptions::runner_threads: N > 0 runs the
// runners as fibers on N threads; default the pool's, a thread per runner);
// BENCH_DIAG=1 adds a line on stderr: claims and group commits (calls, sizes, ms);
// for wake, the twelve latest starts with the time of their COMMIT.
// wake reads BENCH_AWAIT_TASKS (1: the default pool, with its waker; 0: without).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/context.hpp"
#include "docket/sql.hpp"
#include "docket/worker_pool.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// An integer knob from the environment, or `fallback` when it is unset.
int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads
  return value != nullptr && *value != '\0' ? std::stoi(value) : fallback;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

docket::WorkerPoolOptions pool_options(const std::string& dsn, const std::string& queue,
                                       int concurrency) {
  docket::WorkerPoolOptions options;
  options.conninfo = dsn;
  options.queue = queue;
  options.concurrency = concurrency;
  options.batch_size = env_int("BENCH_POOL_BATCH", options.batch_size);
  options.prefetch = env_int("BENCH_POOL_PREFETCH", options.prefetch);
  options.claim_connections = env_int("BENCH_POOL_CLAIMERS", options.claim_connections);
  options.flush_connections = env_int("BENCH_FLUSH_CONNECTIONS", options.flush_connections);
  options.flush_max_batch = env_int("BENCH_FLUSH_MAX_BATCH", options.flush_max_batch);
  options.runner_threads = env_int("BENCH_RUNNER_THREADS", options.runner_threads);
  options.lease = 60s;
  options.logger = docket::stderr_logger(docket::LogLevel::warning);
  return options;
}

// Runs a pool over `catalog` until `tasks` tasks completed; returns the seconds
// from start() to the last completion and the counters at that moment.
double drain_pool(docket::TaskCatalog catalog, const std::string& dsn, const std::string& queue,
                  int concurrency, long tasks, docket::PoolCounters& counters) {
  docket::WorkerPoolOptions options = pool_options(dsn, queue, concurrency);
  options.poll_interval = 1000ms;
  docket::WorkerPool pool(std::move(catalog), options);
  const Clock::time_point start = Clock::now();
  pool.start();
  while (pool.counters().completed < static_cast<std::uint64_t>(tasks)) {
    if (seconds_since(start) > 900) throw std::runtime_error("drain did not finish in 900 s");
    std::this_thread::sleep_for(2ms);
  }
  const double elapsed = seconds_since(start);
  counters = pool.counters();
  if (std::getenv("BENCH_DIAG") != nullptr) {  // NOLINT(concurrency-mt-unsafe): no setenv
    // Where a drain's time went: claims (calls, tasks per call, ms per call)
    // and group commits (flushes, items per flush, ms per flush).
    const docket::MetricsSnapshot m = pool.metrics();
    auto per = [](double sum, std::uint64_t count) {
      return count == 0 ? 0.0 : sum / static_cast<double>(count);
    };
    std::fprintf(stderr,
                 "diag claims=%llu tasks_per_claim=%.1f claim_ms=%.3f flushes=%llu "
                 "items_per_flush=%.1f flush_ms=%.3f\n",
                 static_cast<unsigned long long>(m.claims),
                 per(static_cast<double>(m.tasks_claimed), m.claims),
                 1000 * per(m.claim_seconds.sum, m.claim_seconds.count),
                 static_cast<unsigned long long>(m.flush_size.count),
                 per(m.flush_size.sum, m.flush_size.count),
                 1000 * per(m.flush_seconds.sum, m.flush_seconds.count));
  }
  pool.stop();
  return elapsed;
}

int drain(const std::string& dsn, const std::string& queue, int concurrency, long tasks) {
  docket::PoolCounters counters;
  const double elapsed = drain_pool(
      docket::TaskCatalog::Builder()
          .add("noop", [](docket::Context&, const docket::Json&) { return docket::Json(); })
          .build(),
      dsn, queue, concurrency, tasks, counters);
  std::printf("drain concurrency=%d tasks=%ld seconds=%.2f tasks_per_s=%.0f claim_ms=%.2f\n",
              concurrency, tasks, elapsed, tasks / elapsed, counters.claim_latency_ms);
  return 0;
}

int drain_wait(const std::string& dsn, const std::string& queue, int concurrency, long tasks,
               int waiters) {
  std::vector<std::string> ids;
  {
    pqxx::connection connection(dsn);
    pqxx::nontransaction tx(connection);
    for (const pqxx::row& row :
         tx.exec_params("SELECT run_id FROM docket.tasks WHERE queue = $1 ORDER BY run_id", queue))
      ids.push_back(row[0].as<std::string>());
  }
  std::atomic<long> settled{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  const Clock::time_point start = Clock::now();
  for (int w = 0; w < waiters; ++w) {
    threads.emplace_back([&, w] {
      try {
        pqxx::connection connection(dsn);
        docket::Client client(connection);
        for (std::size_t i = static_cast<std::size_t>(w); i < ids.size();
             i += static_cast<std::size_t>(waiters)) {
          if (!client.wait(ids[i], 900s)) throw std::runtime_error("a wait timed out");
          settled.fetch_add(1);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_worker: waiter: %s\n", e.what());
        failed = true;
      }
    });
  }
  docket::PoolCounters counters;
  const double elapsed = drain_pool(
      docket::TaskCatalog::Builder()
          .add("noop", [](docket::Context&, const docket::Json&) { return docket::Json(); })
          .build(),
      dsn, queue, concurrency, tasks, counters);
  for (std::thread& t : threads) t.join();
  const double waited = seconds_since(start);
  std::printf(
      "drain_wait concurrency=%d tasks=%ld waiters=%d seconds=%.2f tasks_per_s=%.0f "
      "waits=%ld wait_seconds=%.2f claim_ms=%.2f\n",
      concurrency, tasks, waiters, elapsed, tasks / elapsed, settled.load(), waited,
      counters.claim_latency_ms);
  return failed ? 1 : 0;
}

// Tasks named "steps": the handler checkpoints `steps` steps (each stores its
// index), then returns.
int drain_steps(const std::string& dsn, const std::string& queue, int concurrency, long tasks,
                int steps) {
  docket::PoolCounters counters;
  const double elapsed =
      drain_pool(docket::TaskCatalog::Builder()
                     .add("steps",
                          [steps](docket::Context& ctx, const docket::Json&) {
                            for (int i = 1; i <= steps; ++i)
                              ctx.step("s" + std::to_string(i), [i] { return docket::Json(i); });
                            return docket::Json();
                          })
                     .build(),
                 dsn, queue, concurrency, tasks, counters);
  std::printf(
      "drain_steps concurrency=%d tasks=%ld steps=%d seconds=%.2f tasks_per_s=%.0f "
      "steps_per_s=%.0f claim_ms=%.2f\n",
      concurrency, tasks, steps, elapsed, tasks / elapsed, tasks * steps / elapsed,
      counters.claim_latency_ms);
  return 0;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const std::size_t index =
      std::min(sorted.size() - 1, static_cast<std::size_t>(p * static_cast<double>(sorted.size())));
  return sorted[index];
}

// Wake-to-start latencies in ms, sorted: `count` no-op tasks spawned into an
// idle pool, `per_tx` per transaction every `interval_ms`, each measured from
// just before its spawn's COMMIT to its handler's first instruction. The pool
// is warmed up first (a burst of as many tasks as it has runners opens the
// runners' connections, as in a pool that has been serving for a while), then
// left idle; `session` statements run on the spawner's connection before the
// measured spawns.
// Wake-to-start latencies, sorted (ms): from just before the spawn's COMMIT
// (the figure the targets are about), and from when that COMMIT returned (the
// producer's own WAL flush taken out); and the COMMITs' durations.
struct WakeLatencies {
  std::vector<double> from_commit;
  std::vector<double> after_commit;
  std::vector<double> commit;
};

WakeLatencies wake_latencies(const docket::WorkerPoolOptions& options, const std::string& queue,
                             int count, int interval_ms, int per_tx,
                             const std::vector<std::string>& session) {
  std::mutex mutex;
  std::unordered_map<std::string, Clock::time_point> committing;  // run id -> before COMMIT
  std::unordered_map<std::string, Clock::time_point> committed;   // run id -> COMMIT returned
  std::unordered_map<std::string, Clock::time_point> started;     // run id -> handler start
  docket::WorkerPool pool(docket::TaskCatalog::Builder()
                              .add("noop",
                                   [&](docket::Context& ctx, const docket::Json&) {
                                     const Clock::time_point now = Clock::now();
                                     const std::lock_guard<std::mutex> lock(mutex);
                                     started.emplace(ctx.run_id(), now);
                                     return docket::Json();
                                   })
                              .build(),
                          options);
  pool.start();
  pqxx::connection spawner(options.conninfo);
  docket::sql::prepare(spawner);

  const int warm = std::max(1, options.concurrency);
  {
    pqxx::work tx(spawner);
    for (int i = 0; i < warm; ++i)
      docket::sql::spawn_task(tx, "noop", docket::Json::object(), queue, "tenantless",
                              docket::Json::object());
    tx.commit();
  }
  const Clock::time_point warm_deadline = Clock::now() + 60s;
  while (pool.counters().completed < static_cast<std::uint64_t>(warm)) {
    if (Clock::now() > warm_deadline) throw std::runtime_error("warm-up did not finish in 60 s");
    std::this_thread::sleep_for(5ms);
  }
  {
    const std::lock_guard<std::mutex> lock(mutex);
    started.clear();
  }
  std::this_thread::sleep_for(500ms);  // idle: the pool waits for work
  {
    pqxx::nontransaction tx(spawner);
    for (const std::string& statement : session) tx.exec(statement);
  }

  const Clock::time_point begin = Clock::now();
  int spawned_total = 0;
  for (int i = 0; spawned_total < count; ++i) {
    std::this_thread::sleep_until(begin + i * std::chrono::milliseconds(interval_ms));
    pqxx::work tx(spawner);
    std::vector<std::string> ids;
    for (int k = 0; k < per_tx && spawned_total < count; ++k, ++spawned_total)
      ids.push_back(docket::sql::spawn_task(tx, "noop", docket::Json::object(), queue, "tenantless",
                                            docket::Json::object())
                        .run_id);
    const Clock::time_point before_commit = Clock::now();
    tx.commit();
    const Clock::time_point after_commit = Clock::now();
    const std::lock_guard<std::mutex> lock(mutex);
    for (const std::string& id : ids) {
      committing.emplace(id, before_commit);
      committed.emplace(id, after_commit);
    }
  }
  const Clock::time_point deadline = Clock::now() + 60s;
  for (;;) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (started.size() >= static_cast<std::size_t>(count)) break;
    }
    if (Clock::now() > deadline) throw std::runtime_error("not every task started within 60 s");
    std::this_thread::sleep_for(5ms);
  }
  pool.stop();

  const auto ms = [](Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  // BENCH_DIAG: the twelve latest starts, each with the time of its COMMIT
  // (which tells a late wake-up of a whole burst from a late runner).
  if (std::getenv("BENCH_DIAG") != nullptr) {  // NOLINT(concurrency-mt-unsafe): no setenv
    std::vector<std::pair<double, std::string>> late;
    for (const auto& [run_id, at] : committed)
      late.emplace_back(std::chrono::duration<double, std::milli>(started.at(run_id) - at).count(),
                        run_id);
    std::sort(late.begin(), late.end());
    for (std::size_t i = late.size() > 12 ? late.size() - 12 : 0; i < late.size(); ++i) {
      const double at =
          std::chrono::duration<double, std::milli>(committed.at(late[i].second) - begin).count();
      std::fprintf(stderr, "late start: %s %.2f ms after its COMMIT returned at %.1f ms\n",
                   late[i].second.c_str(), late[i].first, at);
    }
  }
  WakeLatencies out;
  for (const auto& [run_id, at] : committing) {
    const Clock::time_point done = committed.at(run_id);
    out.from_commit.push_back(ms(started.at(run_id) - at));
    out.after_commit.push_back(ms(started.at(run_id) - done));
    out.commit.push_back(ms(done - at));
  }
  for (std::vector<double>* v : {&out.from_commit, &out.after_commit, &out.commit})
    std::sort(v->begin(), v->end());
  return out;
}

// The key=value tail of a latency line: count and percentiles (ms).
// After them: the same from the COMMIT's return (after_commit_*), and the
// COMMIT's own duration (commit_*).
void print_latencies(const WakeLatencies& latencies) {
  const std::vector<double>& ms = latencies.from_commit;
  double sum = 0;
  for (const double v : ms) sum += v;
  std::printf("count=%zu p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f mean_ms=%.2f", ms.size(),
              percentile(ms, 0.50), percentile(ms, 0.90), percentile(ms, 0.99),
              ms.empty() ? 0.0 : ms.back(),
              ms.empty() ? 0.0 : sum / static_cast<double>(ms.size()));
  std::printf(
      " after_commit_p50_ms=%.2f after_commit_p99_ms=%.2f commit_p50_ms=%.2f"
      " commit_p99_ms=%.2f\n",
      percentile(latencies.after_commit, 0.50), percentile(latencies.after_commit, 0.99),
      percentile(latencies.commit, 0.50), percentile(latencies.commit, 0.99));
}

int latency(const std::string& dsn, const std::string& queue, int count, int interval_ms,
            int poll_ms, bool listen, const std::string& notify_interval) {
  docket::WorkerPoolOptions options = pool_options(dsn, queue, 10);
  options.poll_interval = std::chrono::milliseconds(poll_ms);
  options.listen = listen;
  std::vector<std::string> session;
  if (!listen) session.emplace_back("SET docket.notify = off");
  if (notify_interval != "default")
    session.push_back("SET docket.notify_interval_ms = " + notify_interval);
  const WakeLatencies ms = wake_latencies(options, queue, count, interval_ms, 1, session);
  std::printf("latency listen=%d notify_interval_ms=%s poll_ms=%d ", listen ? 1 : 0,
              notify_interval.c_str(), poll_ms);
  print_latencies(ms);
  return 0;
}

int wake(const std::string& dsn, const std::string& queue, const std::string& pattern, int count,
         int interval_ms, int burst) {
  if (pattern != "trickle" && pattern != "burst")
    throw std::runtime_error("pattern must be trickle or burst");
  const int per_tx = pattern == "trickle" ? 1 : std::max(1, burst);
  docket::WorkerPoolOptions options;  // the defaults, as a user would run the pool
  options.conninfo = dsn;
  options.queue = queue;
  options.logger = docket::stderr_logger(docket::LogLevel::warning);
  // BENCH_AWAIT_TASKS=0: without the waker (NOTIFY and the poller's polls only).
  options.await_tasks = env_int("BENCH_AWAIT_TASKS", 1) != 0;
  const WakeLatencies ms = wake_latencies(options, queue, count, interval_ms, per_tx, {});
  std::printf("wake pattern=%s interval_ms=%d burst=%d ", pattern.c_str(), interval_ms, per_tx);
  print_latencies(ms);
  return 0;
}

int rawloop(const std::string& dsn, int threads, int batch, long jobs) {
  std::atomic<long> done{0};
  std::vector<std::thread> workers;
  const Clock::time_point start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      pqxx::connection connection(dsn);
      connection.prepare("claim",
                         "UPDATE bench.raw_jobs SET status = 'running', token = gen_random_uuid(), "
                         "claimed_at = clock_timestamp(), due = NULL, attempts = attempts + 1 "
                         "WHERE id = ANY(ARRAY(SELECT id FROM bench.raw_jobs WHERE status = "
                         "'pending' AND due <= clock_timestamp() ORDER BY due LIMIT $1 "
                         "FOR UPDATE SKIP LOCKED)) RETURNING id, seq, token");
      connection.prepare("complete",
                         "UPDATE bench.raw_jobs SET status = 'done', seq = $2 + 1, token = NULL, "
                         "claimed_at = NULL, updated_at = clock_timestamp(), "
                         "doc = bench.run_doc($1, 'completed', $2 + 1) "
                         "WHERE id = $1 AND token = $3::uuid AND seq = $2");
      for (;;) {
        pqxx::result claimed;
        {
          pqxx::nontransaction tx(connection);
          claimed = tx.exec_prepared("claim", batch);
        }
        if (claimed.empty()) return;
        for (const pqxx::row& job : claimed) {
          pqxx::nontransaction tx(connection);
          tx.exec_prepared("complete", job[0].c_str(), job[1].as<long>(), job[2].c_str());
          done.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const double elapsed = seconds_since(start);
  std::printf("rawloop threads=%d batch=%d jobs=%ld done=%ld seconds=%.2f jobs_per_s=%.0f\n",
              threads, batch, jobs, done.load(), elapsed, done.load() / elapsed);
  return done.load() == jobs ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 5 && a[0] == "drain")
      return drain(a[1], a[2], std::stoi(a[3]), std::stol(a[4]));
    if (a.size() == 8 && a[0] == "latency")
      return latency(a[1], a[2], std::stoi(a[3]), std::stoi(a[4]), std::stoi(a[5]), a[6] == "1",
                     a[7]);
    if (a.size() == 6 && a[0] == "drain-steps")
      return drain_steps(a[1], a[2], std::stoi(a[3]), std::stol(a[4]), std::stoi(a[5]));
    if (a.size() == 7 && a[0] == "wake")
      return wake(a[1], a[2], a[3], std::stoi(a[4]), std::stoi(a[5]), std::stoi(a[6]));
    if (a.size() == 6 && a[0] == "drain-wait")
      return drain_wait(a[1], a[2], std::stoi(a[3]), std::stol(a[4]), std::stoi(a[5]));
    if (a.size() == 5 && a[0] == "rawloop")
      return rawloop(a[1], std::stoi(a[2]), std::stoi(a[3]), std::stol(a[4]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_worker: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: bench_worker drain DSN QUEUE CONCURRENCY TASKS\n"
               "       bench_worker drain-steps DSN QUEUE CONCURRENCY TASKS STEPS\n"
               "       bench_worker wake DSN QUEUE trickle|burst COUNT INTERVAL_MS BURST\n"
               "       bench_worker latency DSN QUEUE COUNT INTERVAL_MS POLL_MS LISTEN "
               "NOTIFY_INTERVAL_MS|default\n"
               "       bench_worker drain-wait DSN QUEUE CONCURRENCY TASKS WAITERS\n"
               "       bench_worker rawloop DSN THREADS BATCH JOBS\n");
  return 2;
}
