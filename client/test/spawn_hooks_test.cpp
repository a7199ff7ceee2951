// Client spawn defaults and the before_spawn hook (docs/tasks.md "Spawn
// defaults and before_spawn"): option precedence (client defaults, then the
// task name's, then the call's), rewriting by the hook, and the validation of
// its output (an invalid spawn throws and nothing is spawned).
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/errors.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using test::conninfo;
using test::unique_name;

class SpawnHooksTest : public ::testing::Test {
 protected:
  SpawnHooksTest() : connection_(conninfo()), other_(conninfo()) {}

  // What docket.tasks stored for a run.
  struct Stored {
    std::string queue, task_name, tenant;
    Json params, headers;
    int max_attempts = 0;
    std::int64_t max_duration_ms = 0;
  };
  Stored stored(const std::string& run_id) {
    pqxx::nontransaction tx(other_);
    const pqxx::row r = tx.exec1(
        "SELECT queue, task_name, coalesce(tenant_key, ''), params::text, headers::text, "
        "max_attempts, coalesce(max_duration_ms, 0) FROM docket.tasks WHERE run_id = " +
        tx.quote(run_id));
    return Stored{r[0].as<std::string>(),
                  r[1].as<std::string>(),
                  r[2].as<std::string>(),
                  Json::parse(r[3].as<std::string>()),
                  Json::parse(r[4].as<std::string>()),
                  r[5].as<int>(),
                  r[6].as<std::int64_t>()};
  }
  long tasks_in(const std::string& queue) {
    pqxx::nontransaction tx(other_);
    return tx.exec1("SELECT count(*) FROM docket.tasks WHERE queue = " + tx.quote(queue))[0]
        .as<long>();
  }

  pqxx::connection connection_;
  pqxx::connection other_;  // reads what is committed
};

TEST_F(SpawnHooksTest, PrecedenceClientThenTaskNameThenCall) {
  const std::string client_queue = unique_name("client_q");
  const std::string task_queue = unique_name("task_q");
  const std::string call_queue = unique_name("call_q");
  ClientOptions client_options;
  client_options.defaults.queue = client_queue;
  client_options.defaults.max_attempts = 2;
  client_options.defaults.max_duration_ms = 60000;
  client_options.defaults.headers = Json{{"a", "client"}, {"b", "client"}};
  Client client(connection_, client_options);
  SpawnOptions report;
  report.queue = task_queue;
  report.max_attempts = 3;
  report.headers = Json{{"b", "task"}, {"c", "task"}};
  client.set_task_defaults("report", report);

  // Nothing per call: the task name's defaults over the client's.
  const Stored plain = stored(client.spawn("report").run_id);
  EXPECT_EQ(plain.queue, task_queue);
  EXPECT_EQ(plain.max_attempts, 3);
  EXPECT_EQ(plain.max_duration_ms, 60000);  // only the client set it
  EXPECT_EQ(plain.headers, (Json{{"a", "client"}, {"b", "task"}, {"c", "task"}}));

  // The call's options over both; headers merge key by key.
  SpawnOptions call;
  call.queue = call_queue;
  call.max_attempts = 4;
  call.headers = Json{{"c", "call"}};
  const Stored overridden = stored(client.spawn("report", Json::object(), call).run_id);
  EXPECT_EQ(overridden.queue, call_queue);
  EXPECT_EQ(overridden.max_attempts, 4);
  EXPECT_EQ(overridden.max_duration_ms, 60000);
  EXPECT_EQ(overridden.headers, (Json{{"a", "client"}, {"b", "task"}, {"c", "call"}}));

  // Another task name: only the client's defaults.
  const Stored other = stored(client.spawn("other").run_id);
  EXPECT_EQ(other.queue, client_queue);
  EXPECT_EQ(other.max_attempts, 2);
  EXPECT_EQ(other.headers, (Json{{"a", "client"}, {"b", "client"}}));

  // Registering again replaces the task name's defaults.
  SpawnOptions replaced;
  replaced.max_attempts = 7;
  client.set_task_defaults("report", replaced);
  const SpawnOptions resolved = client.resolve_options("report", SpawnOptions{});
  EXPECT_EQ(resolved.queue, client_queue);
  EXPECT_EQ(resolved.max_attempts, 7);
  EXPECT_EQ(*resolved.headers, (Json{{"a", "client"}, {"b", "client"}}));

  // A client without defaults spawns as before: queue "default", 5 attempts.
  Client bare(connection_);
  const SpawnOptions nothing = bare.resolve_options("report", SpawnOptions{});
  EXPECT_EQ(nothing.queue, "default");
  EXPECT_EQ(nothing.owner_scope, "tenantless");
  EXPECT_FALSE(nothing.max_attempts);
  EXPECT_EQ(nothing.to_json(), Json::object());
}

TEST_F(SpawnHooksTest, RunAtAndDelayComeFromOneLayer) {
  ClientOptions client_options;
  client_options.defaults.delay_ms = 1000;
  Client client(connection_, client_options);
  SpawnOptions call;
  call.run_at = "2030-01-01T00:00:00Z";
  const SpawnOptions resolved = client.resolve_options("t", call);
  EXPECT_EQ(resolved.run_at, call.run_at);
  EXPECT_FALSE(resolved.delay_ms);  // not both: the call's choice replaced the default's
}

TEST_F(SpawnHooksTest, BeforeSpawnRewritesNameParamsOptionsAndHeaders) {
  const std::string queue = unique_name("hooked");
  const std::string rerouted = unique_name("rerouted");
  std::vector<std::string> seen;  // what the hook received
  ClientOptions client_options;
  client_options.defaults.queue = queue;
  client_options.before_spawn = [&](SpawnRequest& request) {
    seen.push_back(request.task_name + "@" + request.options.queue);
    if (request.task_name == "legacy_name") request.task_name = "new_name";
    request.params["enriched"] = true;
    request.options.queue = rerouted;
    request.options.max_attempts = 9;
    if (!request.options.headers) request.options.headers = Json::object();
    (*request.options.headers)["traceparent"] =
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  };
  Client client(connection_, client_options);
  SpawnOptions call;
  call.headers = Json{{"tenant", "acme"}};
  const SpawnResult r = client.spawn("legacy_name", Json{{"x", 1}}, call);

  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "legacy_name@" + queue);  // the hook sees the resolved options
  const Stored s = stored(r.run_id);
  EXPECT_EQ(s.task_name, "new_name");
  EXPECT_EQ(s.queue, rerouted);
  EXPECT_EQ(s.max_attempts, 9);
  EXPECT_EQ(s.params, (Json{{"x", 1}, {"enriched", true}}));
  EXPECT_EQ(s.headers,
            (Json{{"tenant", "acme"},
                  {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}));
  EXPECT_EQ(tasks_in(queue), 0);
}

TEST_F(SpawnHooksTest, InvalidHookOutputIsRejectedAndNothingIsSpawned) {
  const std::string queue = unique_name("invalid");
  using Rewrite = std::function<void(SpawnRequest&)>;
  const std::vector<std::pair<std::string, Rewrite>> cases = {
      {"task name", [](SpawnRequest& r) { r.task_name.clear(); }},
      {"task name", [](SpawnRequest& r) { r.task_name = std::string(256, 'n'); }},
      {"queue", [](SpawnRequest& r) { r.options.queue.clear(); }},
      {"queue", [](SpawnRequest& r) { r.options.queue = std::string(129, 'q'); }},
      {"owner_scope", [](SpawnRequest& r) { r.options.owner_scope = "system"; }},
      {"owner_scope", [](SpawnRequest& r) { r.options.owner_scope = "tenant:"; }},
      {"max_attempts", [](SpawnRequest& r) { r.options.max_attempts = 0; }},
      {"max_attempts", [](SpawnRequest& r) { r.options.max_attempts = 1001; }},
      {"retry", [](SpawnRequest& r) { r.options.retry = Json("fast"); }},
      {"idempotency_key", [](SpawnRequest& r) { r.options.idempotency_key = ""; }},
      {"exclusive",
       [](SpawnRequest& r) {
         r.options.run_at = "2030-01-01T00:00:00Z";
         r.options.delay_ms = 5;
       }},
      {"delay_ms", [](SpawnRequest& r) { r.options.delay_ms = -1; }},
      {"headers",
       [](SpawnRequest& r) {
         r.options.headers = Json::array({1, 2});
       }},
      {"cancel_after_ms", [](SpawnRequest& r) { r.options.cancel_after_ms = 0; }},
      {"max_duration_ms", [](SpawnRequest& r) { r.options.max_duration_ms = -5; }},
  };
  for (const auto& [expected, rewrite] : cases) {
    ClientOptions client_options;
    client_options.defaults.queue = queue;
    client_options.before_spawn = [&, rewrite = rewrite](SpawnRequest& request) {
      request.options.queue = queue;  // so that nothing could land elsewhere unseen
      rewrite(request);
    };
    // In the caller's transaction: refused before the server, the transaction
    // stays usable and commits what else it did.
    pqxx::work tx(connection_);
    Client client(tx, client_options);
    try {
      client.spawn("task");
      ADD_FAILURE() << "accepted an invalid " << expected;
    } catch (const BadArgument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("before_spawn returned an invalid spawn"), std::string::npos)
          << message;
      EXPECT_NE(message.find(expected), std::string::npos) << message;
      EXPECT_NE(message.find("nothing was spawned"), std::string::npos) << message;
    }
    EXPECT_EQ(tx.exec1("SELECT 1")[0].as<int>(), 1);
    tx.commit();
  }
  EXPECT_EQ(tasks_in(queue), 0);
  EXPECT_EQ(tasks_in(""), 0);

  // A hook that throws stops the spawn too; its exception reaches the caller.
  ClientOptions throwing;
  throwing.defaults.queue = queue;
  throwing.before_spawn = [](SpawnRequest&) { throw std::runtime_error("no spawning today"); };
  Client client(connection_, throwing);
  EXPECT_THROW(client.spawn("task"), std::runtime_error);
  EXPECT_EQ(tasks_in(queue), 0);

  // The same options without a hook are the server's to check, as before.
  Client plain(connection_);
  SpawnOptions bad;
  bad.queue = queue;
  bad.headers = Json::array({1});
  EXPECT_THROW(plain.spawn("task", Json::object(), bad), BadArgument);
  EXPECT_EQ(tasks_in(queue), 0);
}

}  // namespace
}  // namespace docket
