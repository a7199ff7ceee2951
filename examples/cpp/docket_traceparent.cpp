// docket_traceparent: propagates a W3C trace context (a `traceparent` header,
// https://www.w3.org/TR/trace-context/) from a producer, through task headers,
// to the handler that runs the task, with no tracing library: the hooks only.
//
//   docket_traceparent [--dsn DSN] [--queue Q] [--timeout-s 60]
//
// 1. The producer is inside a span of its own (trace id T, span id P). The
//    Client's before_spawn hook copies the current trace context into the
//    task's headers: traceparent = 00-T-P-01.
// 2. The WorkerPool's on_task_start hook reads that header and opens a child
//    span (same trace id T, a new span id S, parent P) for the handler's run,
//    current on the runner thread; on_task_end closes it with the outcome and
//    the duration.
// 3. The handler sees the same trace (it returns the trace id it ran under)
//    and propagates it further: the child task it spawns carries 00-T-S-01.
// Exits 0 when the trace id arrived unchanged at both tasks, 1 otherwise.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/context.hpp"
#include "docket/worker_pool.hpp"

namespace {

using docket::Json;

// A W3C trace context: version 00, a 16-byte trace id, an 8-byte parent span id.
struct TraceContext {
  std::string trace_id;  // 32 lowercase hex digits
  std::string span_id;   // 16 lowercase hex digits
  std::string header() const { return "00-" + trace_id + "-" + span_id + "-01"; }
};

std::string random_hex(std::size_t digits) {
  static std::mutex mutex;
  static std::mt19937_64 random{std::random_device{}()};
  const std::lock_guard<std::mutex> lock(mutex);
  std::string out;
  while (out.size() < digits) {
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(random()));
    out += buffer;
  }
  return out.substr(0, digits);
}

bool is_hex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Parses "00-<trace id>-<span id>-<flags>"; nullopt when malformed.
std::optional<TraceContext> parse_traceparent(const Json& headers) {
  if (!headers.is_object() || !headers.contains("traceparent") ||
      !headers["traceparent"].is_string())
    return std::nullopt;
  const std::string value = headers["traceparent"].get<std::string>();
  if (value.size() != 55 || value.compare(0, 3, "00-") != 0 || value[35] != '-' || value[52] != '-')
    return std::nullopt;
  TraceContext context{value.substr(3, 32), value.substr(36, 16)};
  if (!is_hex(context.trace_id) || !is_hex(context.span_id)) return std::nullopt;
  return context;
}

// The span current on this thread (what a tracing library keeps for you).
thread_local std::optional<TraceContext> current_span;

// Opens a span in `parent`'s trace (a new trace without one) and makes it current.
TraceContext start_span(const std::optional<TraceContext>& parent, const std::string& name) {
  TraceContext span{parent ? parent->trace_id : random_hex(32), random_hex(16)};
  std::cout << "span start  " << name << " trace=" << span.trace_id << " span=" << span.span_id
            << " parent=" << (parent ? parent->span_id : "-") << std::endl;
  current_span = span;
  return span;
}

docket::TaskCatalog catalog() {
  return docket::TaskCatalog::Builder()
      .add("charge",
           [](docket::Context& context, const Json& params) {
             // The hook made the task's span current on this runner thread.
             const std::string trace_id = current_span ? current_span->trace_id : "";
             std::cout << "handler     charge sees traceparent " << context.headers()["traceparent"]
                       << ", runs in span " << (current_span ? current_span->span_id : "-")
                       << std::endl;
             // Propagates further: the child carries this task's span as its parent.
             Json headers = Json::object();
             if (current_span) headers["traceparent"] = current_span->header();
             const std::string child = context.spawn_child(
                 "receipt", params, Json{{"headers", headers}}, "spawn:receipt");
             const docket::TaskOutcome receipt = context.await_task(child);
             return Json{{"trace_id", trace_id}, {"receipt", receipt.result}};
           })
      .add("receipt",
           [](docket::Context&, const Json&) {
             return Json{{"trace_id", current_span ? current_span->trace_id : ""}};
           })
      .build();
}

int run(int argc, char** argv) {
  std::string dsn, queue = "traceparent";
  int timeout_s = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dsn") {
      dsn = argv[i + 1];
    } else if (flag == "--queue") {
      queue = argv[i + 1];
    } else if (flag == "--timeout-s") {
      timeout_s = std::stoi(argv[i + 1]);
    } else {
      std::cerr << "usage: docket_traceparent [--dsn DSN] [--queue Q] [--timeout-s N]\n";
      return 2;
    }
  }

  // The worker side: hooks turn the header into the handler's current span.
  docket::WorkerPoolOptions options;
  options.conninfo = dsn;
  options.queue = queue;
  options.concurrency = 2;
  options.poll_interval = std::chrono::milliseconds(200);
  options.fire_schedules = false;
  options.logger = docket::stderr_logger(docket::LogLevel::warning);
  options.hooks.on_task_start = [](const docket::TaskEvent& task) {
    start_span(parse_traceparent(task.headers), "task:" + task.task_name);
  };
  options.hooks.on_task_end = [](const docket::TaskEnd& end) {
    std::cout << "span end    task:" << end.task.task_name << " " << docket::to_string(end.outcome)
              << " after "
              << std::chrono::duration_cast<std::chrono::microseconds>(end.duration).count()
              << " us" << std::endl;
    current_span.reset();
  };
  docket::WorkerPool pool(catalog(), options);
  pool.start();

  // The producer side: before_spawn puts the current span in the headers.
  pqxx::connection connection(dsn);
  docket::ClientOptions client_options;
  client_options.defaults.queue = queue;
  client_options.before_spawn = [](docket::SpawnRequest& request) {
    if (!current_span) return;
    if (!request.options.headers) request.options.headers = Json::object();
    (*request.options.headers)["traceparent"] = current_span->header();
  };
  docket::Client client(connection, client_options);
  const TraceContext request_span = start_span(std::nullopt, "checkout-request");
  const std::string run_id = client.spawn("charge", Json{{"order", 42}}).run_id;
  current_span.reset();

  const std::optional<Json> result = client.wait(run_id, std::chrono::seconds(timeout_s));
  pool.stop();
  if (!result || (*result)["state"] != "completed") {
    std::cout << "charge did not complete: " << (result ? result->dump() : "timeout") << std::endl;
    return 1;
  }
  const Json& value = (*result)["result"];
  const bool propagated =
      value.value("trace_id", std::string()) == request_span.trace_id &&
      value["receipt"].value("trace_id", std::string()) == request_span.trace_id;
  std::cout << (propagated ? "trace propagated: " : "trace NOT propagated: ") << value.dump()
            << std::endl;
  return propagated ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "docket_traceparent: " << e.what() << std::endl;
    return 1;
  }
}
