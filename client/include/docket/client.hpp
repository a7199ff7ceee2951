// docket::Client: the producer API. No threads, no state beyond a connection or
// a caller's transaction: with a transaction, spawning joins the application's
// own transaction and commits or rolls back with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "docket/sql.hpp"

namespace docket {

struct SpawnOptions {
  std::string queue = "default";
  std::string owner_scope = "tenantless";
  std::optional<int> max_attempts;
  std::optional<Json> retry;  // {"kind", "base_ms", "factor", "max_ms", "jitter"}
  std::optional<std::string> idempotency_key;
  std::optional<std::string> run_at;  // ISO-8601 timestamp
  std::optional<std::int64_t> delay_ms;
  std::optional<Json> headers;
  std::optional<std::int64_t> cancel_after_ms;
  std::optional<std::int64_t> max_duration_ms;

  // The spawn_task options document (only the fields that are set).
  Json to_json() const;
};

using SpawnResult = sql::SpawnResult;

class Client {
 public:
  // Each call runs in its own transaction on `connection`.
  explicit Client(pqxx::connection_base& connection);
  // Each call runs inside `transaction`, which the caller commits.
  explicit Client(pqxx::transaction_base& transaction);

  SpawnResult spawn(const std::string& task_name, const Json& params = Json::object(),
                    const SpawnOptions& options = {});
  bool emit_event(const std::string& event_name, const Json& payload = nullptr,
                  const std::string& owner_scope = "tenantless");
  bool cancel(const std::string& scope, const std::string& run_id,
              const std::optional<std::string>& reason = std::nullopt);
  std::optional<Json> task_result(const std::string& scope, const std::string& run_id);

  std::optional<Json> fetch_run(const std::string& scope, const std::string& run_id);
  std::optional<Json> inspect_run(const std::string& scope, const std::string& run_id);
  Json list_runs(const std::string& scope, const sql::ListQuery& query = {});

 private:
  template <typename Fn>
  auto run(bool mutating, Fn&& fn);

  pqxx::connection_base* connection_ = nullptr;
  pqxx::transaction_base* transaction_ = nullptr;
};

}  // namespace docket
