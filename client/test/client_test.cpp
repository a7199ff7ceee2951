// docket::Client (the producer API) and the sql boundary's error mapping,
// against a real database (see test_db.hpp).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/errors.hpp"
#include "docket/sql.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using test::conninfo;
using test::scalar;
using test::unique_name;

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() : connection_(conninfo()), other_(conninfo()), queue_(unique_name("q")) {
    sql::prepare(connection_);
  }

  // Claims the one due task of this test's queue (fails the test if none).
  sql::ClaimedTask claim() {
    auto tasks = sql::in_transaction(connection_, true, [&](pqxx::transaction_base& tx) {
      return sql::claim_tasks(tx, queue_, 1, 30000, 10);
    });
    EXPECT_EQ(tasks.size(), 1u);
    return tasks.empty() ? sql::ClaimedTask{} : tasks.front();
  }

  SpawnOptions on_queue() const {
    SpawnOptions options;
    options.queue = queue_;
    return options;
  }

  pqxx::connection connection_;
  pqxx::connection other_;  // a second session, to see what is committed
  std::string queue_;
};

// -- spawn ---------------------------------------------------------------------

TEST_F(ClientTest, SpawnWithEveryOptionStoresThem) {
  Client client(connection_);
  SpawnOptions options = on_queue();
  options.owner_scope = "tenant:acme";
  options.max_attempts = 3;
  options.retry = Json{{"kind", "fixed"}, {"base_ms", 250}};
  options.idempotency_key = unique_name("key");
  options.delay_ms = 60000;
  options.headers = Json{{"trace", "t-1"}};
  options.cancel_after_ms = 120000;
  options.max_duration_ms = 5000;
  const SpawnResult first = client.spawn("send_invoice", Json{{"invoice", 7}}, options);
  EXPECT_TRUE(first.created);
  EXPECT_EQ(first.attempt, 1);
  EXPECT_FALSE(first.run_id.empty());

  pqxx::nontransaction tx(other_);
  const pqxx::row task = tx.exec1(
      "SELECT tenant_key, queue, task_name, params::text, headers::text, max_attempts, "
      "retry->>'kind', retry->>'base_ms', idempotency_key, max_duration_ms, "
      "extract(epoch FROM cancel_at - created_at)::int "
      "FROM docket.tasks WHERE run_id = " +
      tx.quote(first.run_id));
  EXPECT_EQ(task[0].as<std::string>(), "acme");
  EXPECT_EQ(task[1].as<std::string>(), queue_);
  EXPECT_EQ(task[2].as<std::string>(), "send_invoice");
  EXPECT_EQ(Json::parse(task[3].as<std::string>()), (Json{{"invoice", 7}}));
  EXPECT_EQ(Json::parse(task[4].as<std::string>()), (Json{{"trace", "t-1"}}));
  EXPECT_EQ(task[5].as<int>(), 3);
  EXPECT_EQ(task[6].as<std::string>(), "fixed");
  EXPECT_EQ(task[7].as<std::string>(), "250");
  EXPECT_EQ(task[8].as<std::string>(), *options.idempotency_key);
  EXPECT_EQ(task[9].as<long>(), 5000);
  EXPECT_EQ(task[10].as<int>(), 180);  // delay 60 s + cancel_after 120 s

  // Delayed: sleeping, and only visible in its own tenant's scope.
  const auto result = client.task_result("tenant:acme", first.run_id);
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "sleeping");
  EXPECT_EQ((*result)["queue"], queue_);
  EXPECT_FALSE(client.task_result("tenant:globex", first.run_id));
  EXPECT_FALSE(client.task_result("tenantless", first.run_id));
  EXPECT_TRUE(client.task_result("system", first.run_id));

  // The same idempotency key returns the existing task.
  const SpawnResult again = client.spawn("send_invoice", Json::object(), options);
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.run_id, first.run_id);
}

TEST_F(ClientTest, SpawnRunAtSchedulesTheWake) {
  Client client(connection_);
  SpawnOptions options = on_queue();
  options.run_at = "2099-06-01T12:00:00Z";
  const SpawnResult spawned = client.spawn("later", Json::object(), options);
  const auto info = client.inspect_run("system", spawned.run_id);
  ASSERT_TRUE(info);
  EXPECT_FALSE((*info)["wake_at"].is_null());
  EXPECT_EQ(scalar(other_,
                   "SELECT wake_at = '2099-06-01T12:00:00Z' FROM docket.runs "
                   "WHERE run_id = '" +
                       spawned.run_id + "'"),
            "t");
  EXPECT_EQ((*client.task_result("system", spawned.run_id))["state"], "sleeping");
}

TEST_F(ClientTest, SpawnDefaultsAndValidation) {
  Client client(connection_);
  const SpawnResult spawned = client.spawn("plain", Json::object(), on_queue());
  EXPECT_TRUE(spawned.created);
  const auto result = client.task_result("tenantless", spawned.run_id);
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "pending");
  EXPECT_EQ((*result)["attempts"], 1);
  EXPECT_EQ((*result)["task_name"], "plain");

  SpawnOptions both = on_queue();
  both.run_at = "2099-01-01T00:00:00Z";
  both.delay_ms = 10;
  EXPECT_THROW(client.spawn("plain", Json::object(), both), BadArgument);
  SpawnOptions system_scope = on_queue();
  system_scope.owner_scope = "system";
  EXPECT_THROW(client.spawn("plain", Json::object(), system_scope), BadArgument);
  EXPECT_THROW(client.spawn("", Json::object(), on_queue()), BadArgument);
  SpawnOptions bad_retry = on_queue();
  bad_retry.retry = Json{{"kind", "sometimes"}};
  EXPECT_THROW(client.spawn("plain", Json::object(), bad_retry), BadArgument);
}

// -- spawning inside the caller's transaction ------------------------------------

TEST_F(ClientTest, SpawnInCallerTransactionIsVisibleAfterCommit) {
  const std::string order = unique_name("order");
  std::string run_id;
  {
    pqxx::work tx(connection_);
    tx.exec("CREATE TABLE IF NOT EXISTS client_test_orders (id text PRIMARY KEY)");
    tx.exec("INSERT INTO client_test_orders VALUES (" + tx.quote(order) + ")");
    Client client(tx);
    run_id = client.spawn("ship_order", Json{{"order", order}}, on_queue()).run_id;
    // Not committed yet: another session sees neither the order nor the task.
    Client outside(other_);
    EXPECT_FALSE(outside.task_result("system", run_id));
    tx.commit();
  }
  Client outside(other_);
  const auto result = outside.task_result("system", run_id);
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "pending");
  EXPECT_EQ(scalar(other_, "SELECT count(*) FROM client_test_orders WHERE id = '" + order + "'"),
            "1");
}

TEST_F(ClientTest, SpawnInCallerTransactionRollsBackWithIt) {
  std::string run_id;
  {
    pqxx::work tx(connection_);
    Client client(tx);
    run_id = client.spawn("ship_order", Json::object(), on_queue()).run_id;
    tx.abort();
  }
  Client outside(other_);
  EXPECT_FALSE(outside.task_result("system", run_id));
  EXPECT_FALSE(outside.fetch_run("system", run_id));
  EXPECT_EQ(scalar(other_, "SELECT count(*) FROM docket.tasks WHERE queue = '" + queue_ + "'"),
            "0");
}

TEST_F(ClientTest, ErrorInCallerTransactionIsTyped) {
  pqxx::work tx(connection_);
  Client client(tx);
  SpawnOptions bad = on_queue();
  bad.max_attempts = 0;
  EXPECT_THROW(client.spawn("x", Json::object(), bad), BadArgument);
}

// -- events --------------------------------------------------------------------

TEST_F(ClientTest, EmitEventFirstWinsAndWakesTheWaiter) {
  Client client(connection_);
  const std::string event = unique_name("approved");
  const SpawnResult spawned = client.spawn("await_approval", Json::object(), on_queue());
  const sql::ClaimedTask task = claim();
  const sql::Suspension wait = sql::in_transaction(connection_, true, [&](auto& tx) {
    return sql::await_event(tx, task.run_id, task.claim_token, "approval", event, std::nullopt);
  });
  EXPECT_TRUE(wait.suspended);
  EXPECT_EQ((*client.task_result("system", spawned.run_id))["state"], "waiting");

  EXPECT_TRUE(client.emit_event(event, Json{{"by", "alice"}}));
  EXPECT_FALSE(client.emit_event(event, Json{{"by", "mallory"}}));
  EXPECT_EQ(Json::parse(scalar(other_,
                               "SELECT payload::text FROM docket.task_events "
                               "WHERE event_name = '" +
                                   event + "'")),
            (Json{{"by", "alice"}}));
  EXPECT_EQ((*client.task_result("system", spawned.run_id))["state"], "pending");

  // The woken task sees the first payload.
  const sql::ClaimedTask again = claim();
  EXPECT_EQ(again.wake_reason, "event");
  const sql::Suspension received = sql::in_transaction(connection_, true, [&](auto& tx) {
    return sql::await_event(tx, again.run_id, again.claim_token, "approval", event, std::nullopt);
  });
  EXPECT_FALSE(received.suspended);
  EXPECT_EQ(received.status, "received");
  EXPECT_EQ(received.payload, (Json{{"by", "alice"}}));
}

TEST_F(ClientTest, EmitEventIsScopedByTenant) {
  Client client(connection_);
  const std::string event = unique_name("ping");
  EXPECT_TRUE(client.emit_event(event, nullptr, "tenant:a"));
  EXPECT_TRUE(client.emit_event(event, nullptr, "tenant:b"));
  EXPECT_TRUE(client.emit_event(event));
  EXPECT_FALSE(client.emit_event(event, nullptr, "tenant:a"));
  EXPECT_THROW(client.emit_event(event, nullptr, "system"), BadArgument);
}

// -- cancel and results -----------------------------------------------------------

TEST_F(ClientTest, CancelIsDurableAndIdempotent) {
  Client client(connection_);
  const SpawnResult spawned = client.spawn("long_job", Json::object(), on_queue());
  EXPECT_TRUE(client.cancel("tenantless", spawned.run_id, std::string("no longer needed")));
  EXPECT_FALSE(client.cancel("tenantless", spawned.run_id));
  const auto result = client.task_result("tenantless", spawned.run_id);
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["state"], "cancelled");
  const auto run = client.fetch_run("system", spawned.run_id);
  ASSERT_TRUE(run);
  EXPECT_EQ((*run)["cancel_reason"], "no longer needed");
  EXPECT_THROW(client.cancel("system", unique_name("missing")), NotFound);
}

TEST_F(ClientTest, TaskResultFollowsTheTask) {
  Client client(connection_);
  EXPECT_FALSE(client.task_result("system", unique_name("missing")));
  SpawnOptions options = on_queue();
  options.max_attempts = 2;
  options.retry = Json{{"kind", "none"}};
  const SpawnResult spawned = client.spawn("flaky", Json::object(), options);

  sql::ClaimedTask task = claim();
  EXPECT_EQ(task.task_name, "flaky");
  EXPECT_EQ(task.wake_reason, "new");
  EXPECT_EQ((*client.task_result("system", spawned.run_id))["state"], "running");
  const sql::FailOutcome failed = sql::in_transaction(connection_, true, [&](auto& tx) {
    return sql::fail_task(tx, task.run_id, task.claim_token, Json{{"message", "boom"}});
  });
  EXPECT_EQ(failed.disposition, "retry_scheduled");
  auto result = client.task_result("system", spawned.run_id);
  EXPECT_EQ((*result)["state"], "pending");
  EXPECT_EQ((*result)["attempts"], 2);
  EXPECT_EQ((*result)["error"]["message"], "boom");  // the last error, while retrying

  task = claim();
  EXPECT_EQ(task.attempt, 2);
  EXPECT_EQ(task.wake_reason, "retry");
  sql::in_transaction(connection_, true, [&](auto& tx) {
    sql::complete_task(tx, task.run_id, task.claim_token, Json{{"ok", true}});
  });
  result = client.task_result("system", spawned.run_id);
  EXPECT_EQ((*result)["state"], "completed");
  EXPECT_EQ((*result)["result"], (Json{{"ok", true}}));
}

// -- reading runs ----------------------------------------------------------------

TEST_F(ClientTest, FetchInspectAndListRuns) {
  Client client(connection_);
  const std::string name = unique_name("report");
  SpawnOptions options = on_queue();
  options.owner_scope = "tenant:acme";
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(client.spawn(name, Json{{"i", i}}, options).run_id);

  const auto run = client.fetch_run("tenant:acme", ids[0]);
  ASSERT_TRUE(run);
  EXPECT_EQ((*run)["id"], ids[0]);
  EXPECT_EQ((*run)["graph_id"], name);
  EXPECT_EQ((*run)["graph_hash"], "task");
  EXPECT_EQ((*run)["status"], "running");
  EXPECT_FALSE(client.fetch_run("tenant:other", ids[0]));

  const auto info = client.inspect_run("system", ids[1]);
  ASSERT_TRUE(info);
  EXPECT_EQ((*info)["tenant_id"], "acme");
  EXPECT_EQ((*info)["claim_attempts"], 0);
  EXPECT_TRUE((*info)["poisoned_at"].is_null());
  EXPECT_EQ((*info)["run"]["id"], ids[1]);
  EXPECT_FALSE(info->contains("claim_token"));

  sql::ListQuery query;
  query.graph_id = name;
  query.page_limit = 2;
  const Json page = client.list_runs("tenant:acme", query);
  ASSERT_EQ(page["entries"].size(), 2u);
  EXPECT_TRUE(page["has_more"].get<bool>());
  query.before_started_at = page["next_before"]["started_at"].get<std::string>();
  query.before_run_id = page["next_before"]["run_id"].get<std::string>();
  const Json rest = client.list_runs("tenant:acme", query);
  ASSERT_EQ(rest["entries"].size(), 1u);
  EXPECT_FALSE(rest["has_more"].get<bool>());
  std::set<std::string> listed;
  for (const Json& e : page["entries"]) listed.insert(e["run_id"].get<std::string>());
  for (const Json& e : rest["entries"]) listed.insert(e["run_id"].get<std::string>());
  EXPECT_EQ(listed, std::set<std::string>(ids.begin(), ids.end()));

  sql::ListQuery completed;
  completed.graph_id = name;
  completed.statuses = {"completed", "failed"};
  EXPECT_TRUE(client.list_runs("system", completed)["entries"].empty());
  sql::ListQuery elsewhere;
  elsewhere.graph_id = name;
  EXPECT_TRUE(client.list_runs("tenant:other", elsewhere)["entries"].empty());
}

// -- the sql boundary's error mapping ------------------------------------------------

// Runs raw SQL and maps its error like the boundary does.
void exec_mapped(pqxx::connection_base& connection, const std::string& sql, bool mutating) {
  sql::in_transaction(connection, mutating, [&](pqxx::transaction_base& tx) { tx.exec(sql); });
}

template <typename E>
std::string thrown_sqlstate(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.sqlstate();
  } catch (const std::exception& e) {
    return std::string("wrong type: ") + e.what();
  }
  return "nothing thrown";
}

TEST_F(ClientTest, StaleTokenIsStaleFence) {
  Client(connection_).spawn("t", Json::object(), on_queue());
  const sql::ClaimedTask task = claim();
  const std::string stranger = "00000000-0000-4000-8000-000000000000";
  EXPECT_EQ(thrown_sqlstate<StaleFence>([&] {
              sql::in_transaction(connection_, true, [&](auto& tx) {
                return sql::complete_step(tx, task.run_id, stranger, "s", Json(1));
              });
            }),
            "DK001");
  // Released claims are stale too.
  sql::in_transaction(connection_, true,
                      [&](auto& tx) { sql::release_claim(tx, task.run_id, task.claim_token); });
  EXPECT_EQ(thrown_sqlstate<StaleFence>([&] {
              sql::in_transaction(connection_, true, [&](auto& tx) {
                sql::heartbeat(tx, task.run_id, task.claim_token);
              });
            }),
            "DK001");
}

TEST_F(ClientTest, UnknownTaskIsNotFound) {
  const std::string token = "00000000-0000-4000-8000-000000000000";
  EXPECT_EQ(thrown_sqlstate<NotFound>([&] {
              sql::in_transaction(connection_, true, [&](auto& tx) {
                sql::complete_task(tx, unique_name("missing"), token, nullptr);
              });
            }),
            "DK003");
}

TEST_F(ClientTest, CancelledTaskIsCancelled) {
  Client client(connection_);
  const SpawnResult spawned = client.spawn("t", Json::object(), on_queue());
  const sql::ClaimedTask task = claim();
  EXPECT_TRUE(client.cancel("system", spawned.run_id, std::string("stop")));
  try {
    sql::in_transaction(connection_, true,
                        [&](auto& tx) { sql::heartbeat(tx, task.run_id, task.claim_token); });
    FAIL() << "heartbeat of a cancelled task succeeded";
  } catch (const Cancelled& e) {
    EXPECT_EQ(e.sqlstate(), "DK010");
    EXPECT_EQ(std::string(e.what()).rfind("cancelled:", 0), 0u) << e.what();
  }
  EXPECT_EQ(thrown_sqlstate<Cancelled>([&] {
              sql::in_transaction(connection_, true, [&](auto& tx) {
                sql::complete_task(tx, task.run_id, task.claim_token, nullptr);
              });
            }),
            "DK010");
}

TEST_F(ClientTest, BadArgumentIsBadArgument) {
  try {
    sql::in_transaction(connection_, true, [&](auto& tx) {
      return sql::spawn_task(tx, "t", Json::object(), queue_, "tenantless",
                             Json{{"colour", "blue"}});
    });
    FAIL() << "an unknown option was accepted";
  } catch (const BadArgument& e) {
    EXPECT_EQ(e.sqlstate(), "22023");
    EXPECT_EQ(std::string(e.what()).rfind("bad_argument:", 0), 0u) << e.what();
  }
}

TEST_F(ClientTest, RunStoreErrorsMapToTheirTypes) {
  const std::string graph = unique_name("g");
  const std::string id = unique_name("r");
  exec_mapped(connection_, "SELECT docket.save_graph('" + graph + "', 'h1', '{\"n\": 1}')", true);
  const std::string doc = "jsonb_build_object('id', '" + id + "', 'graph_id', '" + graph +
                          "', 'graph_hash', 'h1', 'status', 'running', 'checkpoint_seq', 0, "
                          "'started_at', '2030-01-01T00:00:00Z')";
  const std::string insert =
      "SELECT docket.insert_run('tenantless', " + doc + ", 'run_initialized', now())";
  exec_mapped(connection_, insert, true);

  EXPECT_EQ(thrown_sqlstate<DuplicateRun>([&] { exec_mapped(connection_, insert, true); }),
            "23505");
  EXPECT_EQ(thrown_sqlstate<GraphConflict>([&] {
              exec_mapped(connection_,
                          "SELECT docket.save_graph('" + graph + "', 'h1', '{\"n\": 2}')", true);
            }),
            "DK006");
  EXPECT_EQ(thrown_sqlstate<InvalidRun>([&] {
              exec_mapped(connection_,
                          "SELECT docket.insert_run('tenantless', jsonb_build_object('id', '" +
                              unique_name("r") +
                              "', 'graph_id', 'never_saved', 'graph_hash', "
                              "'h1', 'status', 'running', 'checkpoint_seq', "
                              "0, 'started_at', '2030-01-01T00:00:00Z'), "
                              "'run_initialized', now())",
                          true);
            }),
            "DK007");
  EXPECT_EQ(thrown_sqlstate<InvalidCommit>([&] {
              exec_mapped(connection_,
                          "SELECT docket.commit('system', " + doc +
                              ", 0, '00000000-0000-4000-8000-000000000000', 'run_completed', "
                              "'terminal')",  // checkpoint_seq must be expected + 1
                          true);
            }),
            "DK002");
  // A mutation whose decision is neither commit, no_change nor error.
  exec_mapped(connection_,
              "CREATE OR REPLACE FUNCTION client_test_bogus(run jsonb, arg jsonb) "
              "RETURNS docket.mutation_decision LANGUAGE sql STABLE AS $$ "
              "SELECT ROW('bogus', NULL, NULL, NULL, NULL, NULL)::docket.mutation_decision $$",
              true);
  EXPECT_EQ(thrown_sqlstate<InvalidMutation>([&] {
              exec_mapped(connection_,
                          "SELECT docket.mutate_run('system', '" + id +
                              "', 'client_test_bogus(jsonb,jsonb)', NULL)",
                          true);
            }),
            "DK005");
  // retry_poisoned_run of a finished run.
  exec_mapped(
      connection_,
      "SELECT docket.mutate_run('system', '" + id + "', 'docket.task_cancel(jsonb,jsonb)', '{}')",
      true);
  EXPECT_EQ(thrown_sqlstate<InactiveRun>([&] {
              sql::in_transaction(connection_, true, [&](auto& tx) {
                return sql::retry_poisoned_run(tx, "system", id);
              });
            }),
            "DK004");
  EXPECT_EQ(thrown_sqlstate<ServerError>([&] { exec_mapped(connection_, "SELECT 1/0", false); }),
            "22012");
}

// The client-side cases: a lost connection is Ambiguous when a mutating call was
// in flight (libpqxx's in-doubt commit included), ConnectionLost otherwise.
template <typename Thrown, typename Expected>
bool maps(Thrown thrown, bool mutating) {
  try {
    try {
      throw thrown;
    } catch (...) {
      sql::rethrow_mapped(mutating);
    }
  } catch (const Expected&) {
    return true;
  } catch (...) {
    return false;
  }
}

TEST(SqlBoundaryMapping, ConnectionFailures) {
  EXPECT_TRUE((maps<pqxx::broken_connection, Ambiguous>(pqxx::broken_connection("gone"), true)));
  EXPECT_TRUE(
      (maps<pqxx::broken_connection, ConnectionLost>(pqxx::broken_connection("gone"), false)));
  EXPECT_TRUE((maps<pqxx::in_doubt_error, Ambiguous>(pqxx::in_doubt_error("?"), true)));
  EXPECT_TRUE((maps<pqxx::in_doubt_error, Ambiguous>(pqxx::in_doubt_error("?"), false)));
  const pqxx::sql_error terminated("terminating connection", "SELECT 1", "57P01");
  EXPECT_TRUE((maps<pqxx::sql_error, Ambiguous>(terminated, true)));
  EXPECT_TRUE((maps<pqxx::sql_error, ConnectionLost>(terminated, false)));
  const pqxx::sql_error stale("stale_fence: x", "SELECT 1", "DK001");
  EXPECT_TRUE((maps<pqxx::sql_error, StaleFence>(stale, true)));
  // Typed errors pass through unchanged.
  EXPECT_TRUE((maps<NotFound, NotFound>(NotFound("DK003", "x"), true)));
}

TEST_F(ClientTest, SchemaVersionIsChecked) {
  pqxx::work tx(connection_);
  EXPECT_EQ(sql::schema_version(tx), sql::kSupportedSchemaVersion);
  EXPECT_NO_THROW(sql::require_supported_schema(tx));
}

}  // namespace
}  // namespace docket
