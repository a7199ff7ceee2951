// docket::Client: the producer API. No threads, no state beyond a connection or
// a caller's transaction and its spawn defaults: with a transaction, spawning
// joins the application's own transaction and commits or rolls back with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "docket/sql.hpp"

namespace docket {

// Option precedence (docs/tasks.md "Spawn defaults and before_spawn"): the
// Client's defaults, then the defaults registered for the task name, then the
// call's own options; a set field overrides the layers below it. An optional
// field is set when it holds a value; queue and owner_scope count as set when
// they differ from "default" and "tenantless"; headers merge key by key.
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

// What Client::spawn is about to spawn, after option precedence: the
// before_spawn hook may rewrite any of it.
struct SpawnRequest {
  std::string task_name;
  Json params;
  SpawnOptions options;
};

// Called by Client::spawn on the caller's thread before anything is sent. It
// may rewrite the request (add headers such as a traceparent, route to another
// queue, rename...). Its output is validated: an invalid request throws
// BadArgument ("before_spawn returned an invalid spawn: ...") and nothing is
// spawned; an exception it throws propagates and nothing is spawned.
using BeforeSpawn = std::function<void(SpawnRequest& request)>;

struct ClientOptions {
  SpawnOptions defaults;     // the lowest layer of option precedence
  BeforeSpawn before_spawn;  // optional
};

// Client::wait: how a waiter polls task_result. Each poll is one indexed read in
// its own transaction; the interval starts at first_poll and doubles up to
// max_poll. Nothing is added to the completion path (no NOTIFY per task).
struct WaitOptions {
  std::string scope = "system";  // the scope task_result reads the task in
  std::chrono::milliseconds first_poll{5};
  std::chrono::milliseconds max_poll{250};
};

// The states Client::wait returns on: completed, failed, cancelled (final), and
// poisoned (the task needs an operator: retry_poisoned_run, then wait again).
bool settled_state(const std::string& state);

class Client {
 public:
  // Each call runs in its own transaction on `connection`.
  explicit Client(pqxx::connection_base& connection, ClientOptions options = {});
  // Each call runs inside `transaction`, which the caller commits.
  explicit Client(pqxx::transaction_base& transaction, ClientOptions options = {});

  // Registers the defaults of one task name (the middle layer of option
  // precedence), replacing any registered before.
  void set_task_defaults(const std::string& task_name, SpawnOptions defaults);
  // The options a spawn of `task_name` with `options` gets before before_spawn:
  // client defaults, then the task name's, then `options`.
  SpawnOptions resolve_options(const std::string& task_name, const SpawnOptions& options) const;

  // Resolves the options, runs before_spawn, validates its output and spawns.
  SpawnResult spawn(const std::string& task_name, const Json& params = Json::object(),
                    const SpawnOptions& options = {});
  bool emit_event(const std::string& event_name, const Json& payload = nullptr,
                  const std::string& owner_scope = "tenantless");
  bool cancel(const std::string& scope, const std::string& run_id,
              const std::optional<std::string>& reason = std::nullopt);
  std::optional<Json> task_result(const std::string& scope, const std::string& run_id);
  // Waits until the task has settled (settled_state) and returns its task_result
  // ({"state", "result", "error", "attempts", "task_name", "queue"}), or nullopt
  // when `timeout` passes first (the task is left as it is). Throws NotFound
  // when the task is not visible in options.scope, std::logic_error on a Client
  // bound to a transaction (the poll must see other transactions' commits).
  std::optional<Json> wait(const std::string& run_id, std::chrono::milliseconds timeout,
                           const WaitOptions& options = {});

  std::optional<Json> fetch_run(const std::string& scope, const std::string& run_id);
  std::optional<Json> inspect_run(const std::string& scope, const std::string& run_id);
  Json list_runs(const std::string& scope, const sql::ListQuery& query = {});

 private:
  template <typename Fn>
  auto run(bool mutating, Fn&& fn);

  pqxx::connection_base* connection_ = nullptr;
  pqxx::transaction_base* transaction_ = nullptr;
  ClientOptions options_;
  std::map<std::string, SpawnOptions> task_defaults_;
};

}  // namespace docket
