#include "docket/client.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>
#include <utility>

#include "docket/errors.hpp"

namespace docket {

Json SpawnOptions::to_json() const {
  Json options = Json::object();
  if (max_attempts) options["max_attempts"] = *max_attempts;
  if (retry) options["retry"] = *retry;
  if (idempotency_key) options["idempotency_key"] = *idempotency_key;
  if (run_at) options["run_at"] = *run_at;
  if (delay_ms) options["delay_ms"] = *delay_ms;
  if (headers) options["headers"] = *headers;
  if (cancel_after_ms) options["cancel_after_ms"] = *cancel_after_ms;
  if (max_duration_ms) options["max_duration_ms"] = *max_duration_ms;
  return options;
}

Client::Client(pqxx::connection_base& connection, ClientOptions options)
    : connection_(&connection), options_(std::move(options)) {
  sql::prepare(connection);
}

Client::Client(pqxx::transaction_base& transaction, ClientOptions options)
    : transaction_(&transaction), options_(std::move(options)) {
  sql::prepare(transaction.conn());
}

namespace {

// SpawnOptions' built-in values: a layer holding them has not set the field.
constexpr const char* kDefaultQueue = "default";
constexpr const char* kDefaultScope = "tenantless";

// Lays `top` over `base`: each field set in `top` wins; headers merge by key.
void overlay(SpawnOptions& base, const SpawnOptions& top) {
  if (top.queue != kDefaultQueue) base.queue = top.queue;
  if (top.owner_scope != kDefaultScope) base.owner_scope = top.owner_scope;
  if (top.max_attempts) base.max_attempts = top.max_attempts;
  if (top.retry) base.retry = top.retry;
  if (top.idempotency_key) base.idempotency_key = top.idempotency_key;
  if (top.run_at || top.delay_ms) {  // one or the other: a layer's choice replaces both
    base.run_at = top.run_at;
    base.delay_ms = top.delay_ms;
  }
  if (top.headers) {
    if (base.headers && base.headers->is_object() && top.headers->is_object()) {
      for (const auto& [key, value] : top.headers->items()) (*base.headers)[key] = value;
    } else {
      base.headers = top.headers;
    }
  }
  if (top.cancel_after_ms) base.cancel_after_ms = top.cancel_after_ms;
  if (top.max_duration_ms) base.max_duration_ms = top.max_duration_ms;
}

constexpr std::size_t kMaxQueueBytes = 128;  // the contract's limits (src/core/limits.hpp)
constexpr std::size_t kMaxNameBytes = 255;
constexpr std::int64_t kMaxDurationMs = 86400000LL * 3650;
constexpr int kMaxTaskAttempts = 1000;

// The checks spawn_task would make that the client can make itself, so a bad
// before_spawn output is refused before anything reaches the database (and a
// caller's transaction is not aborted by a server error). "" when valid.
std::string invalid_spawn(const SpawnRequest& request) {
  const SpawnOptions& o = request.options;
  if (request.task_name.empty() || request.task_name.size() > kMaxNameBytes)
    return "task name must be 1 to 255 bytes";
  if (request.params.is_discarded()) return "params are not a JSON value";
  if (o.queue.empty() || o.queue.size() > kMaxQueueBytes) return "queue must be 1 to 128 bytes";
  if (o.owner_scope != "tenantless" &&
      (o.owner_scope.rfind("tenant:", 0) != 0 || o.owner_scope.size() == 7))
    return "owner_scope must be tenantless or tenant:<id>, not '" + o.owner_scope + "'";
  if (o.max_attempts && (*o.max_attempts < 1 || *o.max_attempts > kMaxTaskAttempts))
    return "max_attempts must be 1 to 1000";
  if (o.retry && !o.retry->is_object()) return "retry must be a JSON object";
  if (o.idempotency_key &&
      (o.idempotency_key->empty() || o.idempotency_key->size() > kMaxNameBytes))
    return "idempotency_key must be 1 to 255 bytes";
  if (o.run_at && o.delay_ms) return "run_at and delay_ms are exclusive";
  if (o.run_at && o.run_at->empty()) return "run_at must be a timestamp";
  if (o.delay_ms && (*o.delay_ms < 0 || *o.delay_ms > kMaxDurationMs))
    return "delay_ms must be 0 to ten years";
  if (o.headers && !o.headers->is_object()) return "headers must be a JSON object";
  if (o.cancel_after_ms && (*o.cancel_after_ms <= 0 || *o.cancel_after_ms > kMaxDurationMs))
    return "cancel_after_ms must be > 0 and at most ten years";
  if (o.max_duration_ms && (*o.max_duration_ms <= 0 || *o.max_duration_ms > kMaxDurationMs))
    return "max_duration_ms must be > 0 and at most ten years";
  return "";
}

}  // namespace

void Client::set_task_defaults(const std::string& task_name, SpawnOptions defaults) {
  task_defaults_[task_name] = std::move(defaults);
}

SpawnOptions Client::resolve_options(const std::string& task_name,
                                     const SpawnOptions& options) const {
  SpawnOptions resolved = options_.defaults;
  const auto registered = task_defaults_.find(task_name);
  if (registered != task_defaults_.end()) overlay(resolved, registered->second);
  overlay(resolved, options);
  return resolved;
}

template <typename Fn>
auto Client::run(bool mutating, Fn&& fn) {
  if (transaction_ != nullptr) {
    try {
      return fn(*transaction_);
    } catch (...) {
      sql::rethrow_mapped(mutating);
    }
  }
  return sql::in_transaction(*connection_, mutating, std::forward<Fn>(fn));
}

SpawnResult Client::spawn(const std::string& task_name, const Json& params,
                          const SpawnOptions& options) {
  SpawnRequest request{task_name, params, resolve_options(task_name, options)};
  if (options_.before_spawn) {
    options_.before_spawn(request);
    const std::string problem = invalid_spawn(request);
    if (!problem.empty())
      throw BadArgument("", "before_spawn returned an invalid spawn of task '" + task_name +
                                "': " + problem + "; nothing was spawned");
  }
  return run(true, [&](pqxx::transaction_base& tx) {
    return sql::spawn_task(tx, request.task_name, request.params, request.options.queue,
                           request.options.owner_scope, request.options.to_json());
  });
}

bool Client::emit_event(const std::string& event_name, const Json& payload,
                        const std::string& owner_scope) {
  return run(true, [&](pqxx::transaction_base& tx) {
    return sql::emit_event(tx, event_name, payload, owner_scope);
  });
}

bool Client::cancel(const std::string& scope, const std::string& run_id,
                    const std::optional<std::string>& reason) {
  return run(true, [&](pqxx::transaction_base& tx) {
    return sql::cancel_task(tx, scope, run_id, reason);
  });
}

std::optional<Json> Client::task_result(const std::string& scope, const std::string& run_id) {
  return run(false,
             [&](pqxx::transaction_base& tx) { return sql::task_result(tx, scope, run_id); });
}

bool settled_state(const std::string& state) {
  return state == "completed" || state == "failed" || state == "cancelled" || state == "poisoned";
}

std::optional<Json> Client::wait(const std::string& run_id, std::chrono::milliseconds timeout,
                                 const WaitOptions& options) {
  if (transaction_ != nullptr)
    throw std::logic_error(
        "docket::Client::wait needs a Client on a connection, not a transaction");
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::milliseconds interval = std::max(options.first_poll, std::chrono::milliseconds(1));
  for (;;) {
    std::optional<Json> result = task_result(options.scope, run_id);
    if (!result)
      throw NotFound("", "not_found: task " + run_id + " is not visible in scope " + options.scope);
    if (settled_state(result->value("state", std::string()))) return result;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::min<Clock::duration>(interval, deadline - now));
    interval = std::min(interval * 2, std::max(options.max_poll, options.first_poll));
  }
}

std::optional<Json> Client::fetch_run(const std::string& scope, const std::string& run_id) {
  return run(false, [&](pqxx::transaction_base& tx) { return sql::fetch_run(tx, scope, run_id); });
}

std::optional<Json> Client::inspect_run(const std::string& scope, const std::string& run_id) {
  return run(false,
             [&](pqxx::transaction_base& tx) { return sql::inspect_run(tx, scope, run_id); });
}

Json Client::list_runs(const std::string& scope, const sql::ListQuery& query) {
  return run(false, [&](pqxx::transaction_base& tx) { return sql::list_runs(tx, scope, query); });
}

}  // namespace docket
