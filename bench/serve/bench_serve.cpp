// bench_serve: the dashboard API's latency, measured from HTTP clients against
// a docketctl serve server (docket::serve::Server, in this process) on the
// database of --dsn. For each endpoint: 10 warm-up requests, then --requests
// requests spread over --viewers client threads (each with its own keep-alive
// connection), each timed from send to the whole body received. Prints one
// line per endpoint:
//   endpoint=<name> requests=N p50_ms=.. p95_ms=.. p99_ms=.. max_ms=.. rps=..
// --overview-cache-ms 0 (the default here) computes the overview for every
// request; docketctl serve shares one for 1000 ms among all viewers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "serve.hpp"

namespace {

struct Args {
  std::string dsn;
  std::string run_id;
  int requests = 1000;
  int viewers = 1;
  int connections = 3;
  long overview_cache_ms = 0;
};

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--dsn") {
      args.dsn = value();
    } else if (a == "--run-id") {
      args.run_id = value();
    } else if (a == "--requests") {
      args.requests = std::stoi(value());
    } else if (a == "--viewers") {
      args.viewers = std::stoi(value());
    } else if (a == "--connections") {
      args.connections = std::stoi(value());
    } else if (a == "--overview-cache-ms") {
      args.overview_cache_ms = std::stol(value());
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  if (args.run_id.empty())
    throw std::runtime_error("--run-id (the task detail's task) is required");
  return args;
}

double percentile(std::vector<double>& sorted, double p) {
  const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

void measure(int port, const std::string& name, const std::string& path, const Args& args) {
  httplib::Client warm("127.0.0.1", port);
  for (int i = 0; i < 10; ++i) {
    const httplib::Result res = warm.Get(path);
    if (!res || res->status != 200)
      throw std::runtime_error(name + ": " + (res ? res->body : std::string("no response")));
  }
  std::vector<std::vector<double>> per_viewer(static_cast<std::size_t>(args.viewers));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> viewers;
  for (int v = 0; v < args.viewers; ++v) {
    viewers.emplace_back([&, v] {
      httplib::Client client("127.0.0.1", port);
      std::vector<double>& times = per_viewer[static_cast<std::size_t>(v)];
      for (int i = v; i < args.requests; i += args.viewers) {
        const auto t0 = std::chrono::steady_clock::now();
        const httplib::Result res = client.Get(path);
        const auto t1 = std::chrono::steady_clock::now();
        if (!res || res->status != 200) {
          std::cerr << name << ": request failed\n";
          std::exit(1);
        }
        times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    });
  }
  for (std::thread& t : viewers) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> all;
  for (const auto& times : per_viewer) all.insert(all.end(), times.begin(), times.end());
  std::sort(all.begin(), all.end());
  std::printf(
      "endpoint=%s requests=%zu viewers=%d p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f max_ms=%.2f "
      "rps=%.0f\n",
      name.c_str(), all.size(), args.viewers, percentile(all, 0.50), percentile(all, 0.95),
      percentile(all, 0.99), all.back(), static_cast<double>(all.size()) / seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    docket::serve::Options options;
    options.dsn = args.dsn;
    options.listen = "127.0.0.1:0";
    options.connections = args.connections;
    options.overview_cache = std::chrono::milliseconds(args.overview_cache_ms);
    docket::serve::Server server(options);
    const int port = server.bind();
    std::thread serving([&] { server.serve(); });
    measure(port, "overview", "/api/overview", args);
    measure(port, "task_detail", "/api/tasks/" + args.run_id, args);
    measure(port, "tasks_page", "/api/tasks?limit=50", args);
    server.stop();
    serving.join();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_serve: " << e.what() << "\n";
    return 1;
  }
}
