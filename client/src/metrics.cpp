#include "docket/metrics.hpp"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace docket {

namespace {

using Counter = std::function<std::uint64_t(const MetricsSnapshot&)>;
using Histo = std::function<const HistogramSnapshot&(const MetricsSnapshot&)>;

struct Scalar {
  const char* name;
  const char* type;  // counter or gauge
  const char* help;
  Counter value;
};

struct Distribution {
  const char* name;
  const char* help;
  Histo value;
};

// The metrics in exposition order (docs/operating.md lists them).
const std::vector<Scalar>& scalars() {
  static const std::vector<Scalar> list = {
      {"docket_claims_total", "counter", "claim_tasks calls that returned.",
       [](const MetricsSnapshot& s) { return s.claims; }},
      {"docket_claim_errors_total", "counter", "claim_tasks calls that failed.",
       [](const MetricsSnapshot& s) { return s.claim_errors; }},
      {"docket_tasks_claimed_total", "counter", "Tasks claimed (leased to this pool).",
       [](const MetricsSnapshot& s) { return s.tasks_claimed; }},
      {"docket_tasks_started_total", "counter", "Task handlers invoked.",
       [](const MetricsSnapshot& s) { return s.tasks_started; }},
      {"docket_tasks_completed_total", "counter", "Task completions committed.",
       [](const MetricsSnapshot& s) { return s.tasks_completed; }},
      {"docket_tasks_failed_total", "counter", "Task attempts failed (retried or for good).",
       [](const MetricsSnapshot& s) { return s.tasks_failed; }},
      {"docket_tasks_retried_total", "counter", "Failed attempts for which a retry was scheduled.",
       [](const MetricsSnapshot& s) { return s.tasks_retried; }},
      {"docket_tasks_cancelled_total", "counter", "Tasks unwound or refused as cancelled.",
       [](const MetricsSnapshot& s) { return s.tasks_cancelled; }},
      {"docket_tasks_suspended_total", "counter", "Tasks suspended (sleeps and waits).",
       [](const MetricsSnapshot& s) { return s.tasks_suspended; }},
      {"docket_tasks_deferred_total", "counter",
       "Claims handed back without an attempt (unknown task name, shutdown).",
       [](const MetricsSnapshot& s) { return s.tasks_deferred; }},
      {"docket_tasks_lost_total", "counter",
       "Claims lost (stale fence) or outcomes unknown (connection lost).",
       [](const MetricsSnapshot& s) { return s.tasks_lost; }},
      {"docket_claims_released_total", "counter", "Prefetched claims handed back unstarted.",
       [](const MetricsSnapshot& s) { return s.claims_released; }},
      {"docket_lease_warnings_total", "counter",
       "Runners that made no progress for one lease (watchdog warnings).",
       [](const MetricsSnapshot& s) { return s.lease_warnings; }},
      {"docket_stuck_runners_total", "counter",
       "Runners given up on while their thread was still blocked.",
       [](const MetricsSnapshot& s) { return s.stuck_runners; }},
      {"docket_poller_restarts_total", "counter", "Poller restarts after a failure.",
       [](const MetricsSnapshot& s) { return s.poller_restarts; }},
      {"docket_schedules_fired_total", "counter", "Tasks spawned by schedules this pool fired.",
       [](const MetricsSnapshot& s) { return s.schedules_fired; }},
      {"docket_claims_held", "gauge", "Claims held now (running or queued locally).",
       [](const MetricsSnapshot& s) { return s.claims_held; }},
      {"docket_runners_busy", "gauge", "Task handlers running now.",
       [](const MetricsSnapshot& s) { return s.runners_busy; }},
      {"docket_concurrency", "gauge", "Runner threads configured.",
       [](const MetricsSnapshot& s) { return s.concurrency; }},
  };
  return list;
}

const std::vector<Distribution>& distributions() {
  static const std::vector<Distribution> list = {
      {"docket_claim_duration_seconds", "Duration of a claim_tasks call.",
       [](const MetricsSnapshot& s) -> const HistogramSnapshot& { return s.claim_seconds; }},
      {"docket_handler_duration_seconds", "Duration of a task handler, invocation to return.",
       [](const MetricsSnapshot& s) -> const HistogramSnapshot& { return s.handler_seconds; }},
      {"docket_flush_size", "Items (steps and completions) per group commit.",
       [](const MetricsSnapshot& s) -> const HistogramSnapshot& { return s.flush_size; }},
      {"docket_flush_duration_seconds", "Duration of a group commit transaction.",
       [](const MetricsSnapshot& s) -> const HistogramSnapshot& { return s.flush_seconds; }},
  };
  return list;
}

// A label value: backslash, double quote and line feed escaped.
std::string escape(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

}  // namespace

std::string to_prometheus(const std::vector<MetricsSnapshot>& snapshots) {
  std::string out;
  std::vector<std::string> labels;
  labels.reserve(snapshots.size());
  for (const MetricsSnapshot& s : snapshots) labels.push_back("queue=\"" + escape(s.queue) + "\"");
  for (const Scalar& metric : scalars()) {
    out += std::string("# HELP ") + metric.name + " " + metric.help + "\n";
    out += std::string("# TYPE ") + metric.name + " " + metric.type + "\n";
    for (std::size_t i = 0; i < snapshots.size(); ++i)
      out += std::string(metric.name) + "{" + labels[i] + "} " +
             std::to_string(metric.value(snapshots[i])) + "\n";
  }
  for (const Distribution& metric : distributions()) {
    const std::string name = metric.name;
    out += "# HELP " + name + " " + metric.help + "\n";
    out += "# TYPE " + name + " histogram\n";
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
      const HistogramSnapshot& h = metric.value(snapshots[i]);
      for (std::size_t b = 0; b < h.bounds.size() && b < h.cumulative.size(); ++b)
        out += name + "_bucket{" + labels[i] + ",le=\"" + number(h.bounds[b], 6) + "\"} " +
               std::to_string(h.cumulative[b]) + "\n";
      out += name + "_bucket{" + labels[i] + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
      out += name + "_sum{" + labels[i] + "} " + number(h.sum, 12) + "\n";
      out += name + "_count{" + labels[i] + "} " + std::to_string(h.count) + "\n";
    }
  }
  return out;
}

std::string to_prometheus(const MetricsSnapshot& snapshot) {
  return to_prometheus(std::vector<MetricsSnapshot>{snapshot});
}

}  // namespace docket
