#include "docket/client.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

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

Client::Client(pqxx::connection_base& connection) : connection_(&connection) {
  sql::prepare(connection);
}

Client::Client(pqxx::transaction_base& transaction) : transaction_(&transaction) {
  sql::prepare(transaction.conn());
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
  return run(true, [&](pqxx::transaction_base& tx) {
    return sql::spawn_task(tx, task_name, params, options.queue, options.owner_scope,
                           options.to_json());
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
    const std::optional<Json> result = task_result(options.scope, run_id);
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
