// docketctl against a real database: every command, in its human form and with
// --json. The binary's path comes from the build (DOCKETCTL_PATH).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/json.hpp"
#include "test_db.hpp"

#ifndef DOCKETCTL_PATH
#error "DOCKETCTL_PATH (the docketctl binary's path) must be defined by the build"
#endif

namespace docket {
namespace {

using test::conninfo;
using test::unique_name;

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Output {
  int status = -1;  // exit code
  std::string out;
  std::string err;
  Json json() const { return Json::parse(out); }
};

// Runs `env docketctl --dsn <test db> args...` (each arg shell-quoted).
Output ctl(const std::vector<std::string>& args, const std::string& env = "",
           bool with_dsn = true) {
  const std::string err_file = "/tmp/docketctl_test_" + std::to_string(::getpid()) + ".err";
  std::string command = env + " " + shell_quote(DOCKETCTL_PATH);
  if (with_dsn) command += " --dsn " + shell_quote(conninfo());
  for (const std::string& a : args) command += " " + shell_quote(a);
  command += " 2>" + err_file;
  Output result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  std::stringstream text;
  text << err.rdbuf();
  result.err = text.str();
  std::remove(err_file.c_str());
  return result;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class DocketctlTest : public ::testing::Test {
 protected:
  DocketctlTest() : connection_(conninfo()), queue_(unique_name("ctl")) {}

  std::string spawn(const std::string& name, const std::string& scope = "tenantless") {
    SpawnOptions options;
    options.queue = queue_;
    options.owner_scope = scope;
    return Client(connection_).spawn(name, Json::object(), options).run_id;
  }

  // Poisons this queue's due task: two expired claims with max_claim_attempts 1.
  void poison() {
    pqxx::nontransaction tx(connection_);
    tx.exec("SELECT docket.claim_tasks(" + tx.quote(queue_) + ", 1, 1, 1)");
    tx.exec("SELECT pg_sleep(0.01)");
    tx.exec("SELECT docket.claim_tasks(" + tx.quote(queue_) + ", 1, 1, 1)");
  }

  pqxx::connection connection_;
  std::string queue_;
};

TEST_F(DocketctlTest, TasksSpawn) {
  const std::string key = unique_name("key");
  const Output human =
      ctl({"tasks", "spawn", "send_mail", R"({"to": "a@example.com"})", "--queue", queue_,
           "--options", R"({"max_attempts": 2, "idempotency_key": ")" + key + R"("})"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "created: true")) << human.out;
  EXPECT_TRUE(contains(human.out, "run_id: ")) << human.out;

  const Output json = ctl({"--json", "tasks", "spawn", "send_mail", "{}", "--queue", queue_,
                           "--options", R"({"idempotency_key": ")" + key + R"("})"});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(json.json()["created"], false);
  EXPECT_TRUE(contains(human.out, json.json()["run_id"].get<std::string>()));
  EXPECT_EQ(test::scalar(connection_, "SELECT max_attempts FROM docket.tasks WHERE run_id = '" +
                                          json.json()["run_id"].get<std::string>() + "'"),
            "2");

  const Output bad = ctl({"tasks", "spawn", "x", "--queue", queue_, "--options", R"({"nope": 1})"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(contains(bad.err, "bad_argument")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "22023")) << bad.err;
}

TEST_F(DocketctlTest, TasksResultAndCancel) {
  const std::string id = spawn("report");
  const Output human = ctl({"tasks", "result", id});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "state: pending")) << human.out;
  EXPECT_TRUE(contains(human.out, "task_name: report")) << human.out;
  const Output json = ctl({"--json", "tasks", "result", id});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(json.json()["state"], "pending");
  EXPECT_EQ(json.json()["queue"], queue_);

  const Output cancel = ctl({"tasks", "cancel", id, "--reason", "not needed"});
  ASSERT_EQ(cancel.status, 0) << cancel.err;
  EXPECT_TRUE(contains(cancel.out, "cancelled " + id)) << cancel.out;
  const Output again = ctl({"--json", "tasks", "cancel", id});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.json(), (Json{{"run_id", id}, {"cancelled", false}}));
  EXPECT_TRUE(contains(ctl({"tasks", "cancel", id}).out, "already finished")) << again.out;
  EXPECT_EQ(ctl({"--json", "tasks", "result", id}).json()["state"], "cancelled");

  const Output missing = ctl({"tasks", "result", unique_name("missing")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, "no task")) << missing.err;
  EXPECT_EQ(ctl({"tasks", "cancel", unique_name("missing")}).status, 1);
}

TEST_F(DocketctlTest, TasksWait) {
  // Pending, and nothing works this queue: times out (exit 4), the task unchanged.
  const std::string id = spawn("report");
  const Output timeout = ctl({"tasks", "wait", id, "--timeout", "20"});
  EXPECT_EQ(timeout.status, 4) << timeout.err;
  EXPECT_TRUE(contains(timeout.out, "timed out after 20 ms: " + id)) << timeout.out;
  EXPECT_EQ(ctl({"--json", "tasks", "wait", id, "--timeout", "0"}).json(),
            (Json{{"run_id", id}, {"state", "timeout"}}));
  EXPECT_EQ(ctl({"--json", "tasks", "result", id}).json()["state"], "pending");

  // Completed: exit 0 with the result.
  {
    pqxx::work tx(connection_);
    const pqxx::row claimed =
        tx.exec1("SELECT run_id, claim_token FROM docket.claim_tasks(" + tx.quote(queue_) + ", 1)");
    tx.exec("SELECT docket.complete_task(" + tx.quote(claimed[0].as<std::string>()) + ", " +
            tx.quote(claimed[1].as<std::string>()) + "::uuid, '{\"pages\": 3}')");
    tx.commit();
  }
  const Output done = ctl({"tasks", "wait", id});
  ASSERT_EQ(done.status, 0) << done.err;
  EXPECT_TRUE(contains(done.out, "state: completed")) << done.out;
  const Output json = ctl({"--json", "tasks", "wait", id, "--timeout", "0"});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(json.json()["result"], (Json{{"pages", 3}}));

  // Cancelled: settled but not completed, exit 3.
  const std::string other = spawn("report");
  ASSERT_EQ(ctl({"tasks", "cancel", other}).status, 0);
  const Output cancelled = ctl({"--json", "tasks", "wait", other});
  EXPECT_EQ(cancelled.status, 3) << cancelled.err;
  EXPECT_EQ(cancelled.json()["state"], "cancelled");

  const Output missing = ctl({"tasks", "wait", unique_name("missing")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, "not_found")) << missing.err;
  EXPECT_EQ(ctl({"tasks", "wait", id, "--timeout", "-1"}).status, 2);
}

TEST_F(DocketctlTest, ScopeLimitsWhatIsVisible) {
  const std::string id = spawn("private", "tenant:acme");
  EXPECT_EQ(ctl({"--scope", "tenant:acme", "--json", "tasks", "result", id}).status, 0);
  EXPECT_EQ(ctl({"--scope", "tenant:globex", "tasks", "result", id}).status, 1);
  const Output spawned =
      ctl({"--scope", "tenant:acme", "--json", "tasks", "spawn", "private", "--queue", queue_});
  ASSERT_EQ(spawned.status, 0) << spawned.err;
  EXPECT_EQ(ctl({"--scope", "tenant:acme", "--json", "runs", "show",
                 spawned.json()["run_id"].get<std::string>()})
                .json()["tenant_id"],
            "acme");
}

TEST_F(DocketctlTest, RunsListAndShow) {
  const std::string graph = unique_name("listed");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(spawn(graph));

  const Output page = ctl({"--json", "runs", "list", "--graph", graph, "--limit", "2"});
  ASSERT_EQ(page.status, 0) << page.err;
  ASSERT_EQ(page.json()["entries"].size(), 2u);
  EXPECT_TRUE(page.json()["has_more"].get<bool>());
  const Json next = page.json()["next_before"];
  const Output rest =
      ctl({"--json", "runs", "list", "--graph", graph, "--before",
           next["started_at"].get<std::string>(), next["run_id"].get<std::string>()});
  ASSERT_EQ(rest.status, 0) << rest.err;
  EXPECT_EQ(rest.json()["entries"].size(), 1u);

  const Output human = ctl({"runs", "list", "--graph", graph, "--limit", "2"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "run_id")) << human.out;
  EXPECT_TRUE(contains(human.out, "status")) << human.out;
  EXPECT_TRUE(contains(human.out, "(2 rows)")) << human.out;
  EXPECT_TRUE(contains(human.out, "more: --before ")) << human.out;

  ctl({"tasks", "cancel", ids[0]});
  const Output cancelled =
      ctl({"--json", "runs", "list", "--graph", graph, "--status", "cancelled"});
  ASSERT_EQ(cancelled.json()["entries"].size(), 1u);
  EXPECT_EQ(cancelled.json()["entries"][0]["run_id"], ids[0]);
  EXPECT_TRUE(
      contains(ctl({"runs", "list", "--graph", graph, "--status", "completed"}).out, "(0 rows)"));

  const Output show = ctl({"runs", "show", ids[1]});
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_TRUE(contains(show.out, "claim_attempts: 0")) << show.out;
  EXPECT_TRUE(contains(show.out, ids[1])) << show.out;
  const Output show_json = ctl({"--json", "runs", "show", ids[1]});
  ASSERT_EQ(show_json.status, 0) << show_json.err;
  EXPECT_EQ(show_json.json()["run"]["id"], ids[1]);
  EXPECT_EQ(show_json.json()["run"]["graph_id"], graph);
  EXPECT_EQ(ctl({"runs", "show", unique_name("missing")}).status, 1);
}

TEST_F(DocketctlTest, EventsEmit) {
  const std::string event = unique_name("approved");
  const Output first = ctl({"events", "emit", event, R"({"by": "alice"})"});
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_TRUE(contains(first.out, "emitted " + event)) << first.out;
  const Output second = ctl({"--json", "events", "emit", event, R"({"by": "mallory"})"});
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(second.json(), (Json{{"event", event}, {"emitted", false}}));
  EXPECT_TRUE(contains(ctl({"events", "emit", event}).out, "already emitted"));
  const Output other = ctl({"--json", "--scope", "tenant:acme", "events", "emit", event});
  EXPECT_EQ(other.json()["emitted"], true) << "events are per owner scope";
}

TEST_F(DocketctlTest, PoisonedListAndRetry) {
  const std::string first = spawn("fragile");
  poison();
  const std::string second = spawn("fragile");
  poison();

  const Output list = ctl({"--json", "poisoned", "list", "--limit", "10000"});
  ASSERT_EQ(list.status, 0) << list.err;
  int found = 0;
  for (const Json& row : list.json()) {
    if (row["run_id"] == first || row["run_id"] == second) {
      ++found;
      EXPECT_EQ(row["poison_reason"], "max_claim_attempts_exceeded");
      EXPECT_EQ(row["queue"], queue_);
    }
  }
  EXPECT_EQ(found, 2);
  const Output human = ctl({"poisoned", "list", "--limit", "10000"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "poison_reason")) << human.out;
  EXPECT_TRUE(contains(human.out, first)) << human.out;

  const Output retry = ctl({"poisoned", "retry", first});
  ASSERT_EQ(retry.status, 0) << retry.err;
  EXPECT_TRUE(contains(retry.out, "recovered " + first)) << retry.out;
  const Output retry_json = ctl({"--json", "poisoned", "retry", second});
  ASSERT_EQ(retry_json.status, 0) << retry_json.err;
  EXPECT_EQ(retry_json.json()["id"], second);
  EXPECT_EQ(ctl({"--json", "tasks", "result", first}).json()["state"], "pending");
  EXPECT_EQ(ctl({"--json", "tasks", "result", second}).json()["state"], "pending");
  // Idempotent for a run that is no longer poisoned; an unknown run is an error.
  EXPECT_EQ(ctl({"poisoned", "retry", first}).status, 0);
  const Output missing = ctl({"poisoned", "retry", unique_name("missing")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, "DK003")) << missing.err;
}

TEST_F(DocketctlTest, Stats) {
  spawn("a");
  spawn("a");
  const std::string later = spawn("a");
  ctl({"tasks", "cancel", later});
  const Output json = ctl({"--json", "stats"});
  ASSERT_EQ(json.status, 0) << json.err;
  Json mine;
  for (const Json& row : json.json())
    if (row["queue"] == queue_) mine = row;
  ASSERT_TRUE(mine.is_object()) << json.out;
  EXPECT_EQ(mine["due"], 2);
  // The cancelled task is finished: counted in no state, and not a completion or failure.
  EXPECT_EQ(mine["scheduled"], 0);
  EXPECT_EQ(mine["running"], 0);
  EXPECT_EQ(mine["waiting"], 0);
  EXPECT_EQ(mine["poisoned"], 0);
  EXPECT_EQ(mine["completed_last_minute"], 0);
  EXPECT_EQ(mine["failed_last_minute"], 0);
  EXPECT_TRUE(mine["oldest_due_at"].is_string());
  EXPECT_TRUE(mine["oldest_due_age_ms"].is_number());

  const Output human = ctl({"stats"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "oldest_due_age_ms")) << human.out;
  EXPECT_TRUE(contains(human.out, queue_)) << human.out;
}

TEST_F(DocketctlTest, ConnectionFromTheEnvironment) {
  const Output json =
      ctl({"--json", "stats"}, "PGDATABASE=" + shell_quote(test::database_name()), false);
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_TRUE(json.json().is_array());
  const Output nowhere = ctl({"stats"}, "PGDATABASE=no_such_database_here", false);
  EXPECT_EQ(nowhere.status, 1);
  EXPECT_FALSE(nowhere.err.empty());
}

TEST_F(DocketctlTest, UsageErrors) {
  EXPECT_EQ(ctl({}).status, 2);
  EXPECT_EQ(ctl({"--frobnicate"}).status, 2);
  EXPECT_EQ(ctl({"runs"}).status, 2);
  const Output missing = ctl({"tasks", "result"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_TRUE(contains(missing.err, "RUN_ID is required")) << missing.err;
  EXPECT_TRUE(contains(missing.err, "Usage: docketctl tasks result")) << missing.err;
  EXPECT_EQ(ctl({"tasks", "list", "--state", "bogus"}).status, 2);
  EXPECT_EQ(ctl({"tasks", "list", "--limit", "0"}).status, 2);
  EXPECT_EQ(ctl({"top", "--iterations", "-1"}).status, 2);
  EXPECT_EQ(ctl({"cleanup", "--batch", "0"}).status, 2);
  const Output help = ctl({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(contains(help.out, "Usage: docketctl")) << help.out;
}

// --help on every command: exit 0, its usage line.
TEST_F(DocketctlTest, HelpOnEveryCommand) {
  const std::vector<std::vector<std::string>> commands = {{"runs"},
                                                          {"runs", "list"},
                                                          {"runs", "show"},
                                                          {"tasks"},
                                                          {"tasks", "spawn"},
                                                          {"tasks", "cancel"},
                                                          {"tasks", "result"},
                                                          {"tasks", "wait"},
                                                          {"tasks", "list"},
                                                          {"tasks", "show"},
                                                          {"events"},
                                                          {"events", "emit"},
                                                          {"poisoned"},
                                                          {"poisoned", "list"},
                                                          {"poisoned", "retry"},
                                                          {"queues"},
                                                          {"stats"},
                                                          {"top"},
                                                          {"cleanup"},
                                                          {"serve"}};
  for (const auto& command : commands) {
    std::vector<std::string> args = command;
    args.push_back("--help");
    const Output help = ctl(args, "", false);
    std::string name = "docketctl";
    for (const std::string& word : command) name += " " + word;
    if (command == std::vector<std::string>{"stats"}) name = "docketctl queues";
    EXPECT_EQ(help.status, 0) << name;
    EXPECT_TRUE(contains(help.out, "Usage: " + name + " [OPTIONS]")) << help.out;
  }
  const Output serve = ctl({"serve", "--help"}, "", false);
  for (const char* option : {"--listen", "--allow-actions", "--token-file", "--connections"})
    EXPECT_TRUE(contains(serve.out, option)) << serve.out;
}

TEST_F(DocketctlTest, GlobalOptionsAfterTheCommand) {
  const std::string id = spawn("report", "tenant:acme");
  const Output json = ctl({"tasks", "result", id, "--json", "--scope", "tenant:acme"});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(json.json()["state"], "pending");
}

TEST_F(DocketctlTest, TasksList) {
  const std::string first = spawn("listed_a");
  const std::string second = spawn("listed_b");
  const std::string third = spawn("listed_a");
  const std::string other = spawn("listed_a", "tenant:acme");
  ASSERT_EQ(ctl({"tasks", "cancel", second}).status, 0);

  // Newest first; every column; no claim token.
  const Output all = ctl({"--json", "tasks", "list", "--queue", queue_});
  ASSERT_EQ(all.status, 0) << all.err;
  const Json page = all.json();
  ASSERT_EQ(page["entries"].size(), 4u) << all.out;
  EXPECT_EQ(page["entries"][0]["run_id"], other);
  EXPECT_EQ(page["entries"][1]["run_id"], third);
  EXPECT_EQ(page["entries"][2]["run_id"], second);
  EXPECT_EQ(page["entries"][3]["run_id"], first);
  EXPECT_EQ(page["has_more"], false);
  EXPECT_TRUE(page["next_after"].is_null());
  const Json& row = page["entries"][3];
  EXPECT_EQ(row["task_name"], "listed_a");
  EXPECT_EQ(row["queue"], queue_);
  EXPECT_EQ(row["state"], "pending");
  EXPECT_EQ(row["attempt"], 1);
  EXPECT_TRUE(row["tenant_id"].is_null());
  EXPECT_EQ(page["entries"][0]["tenant_id"], "acme");
  for (const char* key : {"started_at", "updated_at", "wake_at"})
    EXPECT_TRUE(row.contains(key)) << key;
  EXPECT_FALSE(contains(all.out, "claim_token"));

  // Filters: state, task name, scope.
  const Output cancelled =
      ctl({"--json", "tasks", "list", "--queue", queue_, "--state", "cancelled"});
  ASSERT_EQ(cancelled.json()["entries"].size(), 1u);
  EXPECT_EQ(cancelled.json()["entries"][0]["run_id"], second);
  const Output named =
      ctl({"--json", "tasks", "list", "--queue", queue_, "--task-name", "listed_a"});
  EXPECT_EQ(named.json()["entries"].size(), 3u);
  const Output tenant =
      ctl({"--json", "--scope", "tenant:acme", "tasks", "list", "--queue", queue_});
  ASSERT_EQ(tenant.json()["entries"].size(), 1u);
  EXPECT_EQ(tenant.json()["entries"][0]["run_id"], other);

  // Keyset paging: two pages of two.
  const Output page1 = ctl({"--json", "tasks", "list", "--queue", queue_, "--limit", "2"});
  ASSERT_EQ(page1.status, 0) << page1.err;
  EXPECT_EQ(page1.json()["has_more"], true);
  EXPECT_EQ(page1.json()["next_after"], third);
  const Output page2 =
      ctl({"--json", "tasks", "list", "--queue", queue_, "--limit", "2", "--after", third});
  ASSERT_EQ(page2.status, 0) << page2.err;
  ASSERT_EQ(page2.json()["entries"].size(), 2u);
  EXPECT_EQ(page2.json()["entries"][0]["run_id"], second);
  EXPECT_EQ(page2.json()["entries"][1]["run_id"], first);
  EXPECT_EQ(page2.json()["has_more"], false);

  // Human: a table, and where the next page starts.
  const Output human = ctl({"tasks", "list", "--queue", queue_, "--limit", "2"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "task_name")) << human.out;
  EXPECT_TRUE(contains(human.out, "state")) << human.out;
  EXPECT_TRUE(contains(human.out, other)) << human.out;
  EXPECT_TRUE(contains(human.out, "(2 rows)")) << human.out;
  EXPECT_TRUE(contains(human.out, "more: --after " + third)) << human.out;
  EXPECT_TRUE(
      contains(ctl({"tasks", "list", "--queue", queue_, "--state", "failed"}).out, "(0 rows)"));

  const Output bad_cursor = ctl({"tasks", "list", "--after", unique_name("missing")});
  EXPECT_EQ(bad_cursor.status, 1);
  EXPECT_TRUE(contains(bad_cursor.err, "22023")) << bad_cursor.err;
}

TEST_F(DocketctlTest, TasksShow) {
  // Attempt 1 fails and is retried at once; attempt 2 stores a step and completes.
  const Output spawned = ctl({"--json", "tasks", "spawn", "report", "--queue", queue_, "--options",
                              R"({"retry": {"kind": "none"}})"});
  ASSERT_EQ(spawned.status, 0) << spawned.err;
  const std::string id = spawned.json()["run_id"];
  for (int attempt = 1; attempt <= 2; ++attempt) {
    pqxx::work tx(connection_);
    const pqxx::row claimed =
        tx.exec1("SELECT run_id, claim_token FROM docket.claim_tasks(" + tx.quote(queue_) + ", 1)");
    ASSERT_EQ(claimed[0].as<std::string>(), id);
    const std::string token = tx.quote(claimed[1].as<std::string>()) + "::uuid";
    if (attempt == 1) {
      tx.exec("SELECT docket.fail_task(" + tx.quote(id) + ", " + token +
              R"(, '{"message": "flaky"}'))");
    } else {
      tx.exec("SELECT docket.complete_step(" + tx.quote(id) + ", " + token +
              R"(, 'fetch', '{"rows": 2}'))");
      tx.exec("SELECT docket.complete_task(" + tx.quote(id) + ", " + token +
              R"(, '{"pages": 3}'))");
    }
    tx.commit();
  }

  const Output json = ctl({"--json", "tasks", "show", id});
  ASSERT_EQ(json.status, 0) << json.err;
  const Json shown = json.json();
  EXPECT_EQ(shown["run_id"], id);
  EXPECT_EQ(shown["state"], "completed");
  EXPECT_EQ(shown["result"], (Json{{"pages", 3}}));
  EXPECT_EQ(shown["attempts"], 2);
  EXPECT_EQ(shown["task_name"], "report");
  // The history, oldest first: these events in this order (others may come between).
  const std::vector<std::string> expected = {"spawned", "claimed",        "attempt_failed",
                                             "claimed", "step_completed", "completed"};
  std::size_t next = 0;
  std::int64_t last_seq = 0;
  for (const Json& event : shown["history"]) {
    EXPECT_GT(event["seq"].get<std::int64_t>(), last_seq);
    last_seq = event["seq"].get<std::int64_t>();
    EXPECT_TRUE(event["recorded_at"].is_string());
    if (next < expected.size() && event["type"] == expected[next]) {
      if (expected[next] == "attempt_failed") {
        EXPECT_EQ(event["payload"]["attempt"], 1);
        EXPECT_EQ(event["payload"]["error"]["message"], "flaky");
      }
      if (expected[next] == "step_completed") {
        EXPECT_EQ(event["payload"]["step_name"], "fetch");
      }
      ++next;
    }
  }
  EXPECT_EQ(next, expected.size()) << json.out;

  const Output human = ctl({"tasks", "show", id});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "state: completed")) << human.out;
  EXPECT_TRUE(
      contains(human.out, "history (" + std::to_string(shown["history"].size()) + " events):"))
      << human.out;
  EXPECT_TRUE(contains(human.out, "+0.000s  spawned")) << human.out;
  EXPECT_TRUE(contains(human.out, "attempt=1")) << human.out;
  EXPECT_TRUE(contains(human.out, "step_name=fetch")) << human.out;
  EXPECT_TRUE(contains(human.out, R"(error={"message":"flaky"})")) << human.out;

  const Output missing = ctl({"tasks", "show", unique_name("missing")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, "no task")) << missing.err;
  EXPECT_EQ(ctl({"--scope", "tenant:globex", "tasks", "show", id}).status, 1);
}

TEST_F(DocketctlTest, TasksWaitFailedAndPoisoned) {
  const std::string failed = spawn("report");
  {
    pqxx::work tx(connection_);
    const pqxx::row claimed =
        tx.exec1("SELECT run_id, claim_token FROM docket.claim_tasks(" + tx.quote(queue_) + ", 1)");
    tx.exec("SELECT docket.fail_task(" + tx.quote(claimed[0].as<std::string>()) + ", " +
            tx.quote(claimed[1].as<std::string>()) + "::uuid, '{\"message\": \"no\"}', false)");
    tx.commit();
  }
  const Output human = ctl({"tasks", "wait", failed});
  EXPECT_EQ(human.status, 3) << human.err;
  EXPECT_TRUE(contains(human.out, "state: failed")) << human.out;
  const Output json = ctl({"--json", "tasks", "wait", failed});
  EXPECT_EQ(json.status, 3) << json.err;
  EXPECT_EQ(json.json()["error"]["message"], "no");

  const std::string poisoned = spawn("fragile");
  poison();
  const Output wait_poisoned = ctl({"--json", "tasks", "wait", poisoned});
  EXPECT_EQ(wait_poisoned.status, 3) << wait_poisoned.err;
  EXPECT_EQ(wait_poisoned.json()["state"], "poisoned");
}

TEST_F(DocketctlTest, Queues) {
  spawn("a");
  spawn("a", "tenant:acme");
  const Output json = ctl({"--json", "queues"});
  ASSERT_EQ(json.status, 0) << json.err;
  Json mine;
  for (const Json& row : json.json())
    if (row["queue"] == queue_) mine = row;
  ASSERT_TRUE(mine.is_object()) << json.out;
  EXPECT_EQ(mine["due"], 2);
  EXPECT_EQ(mine["running"], 0);
  EXPECT_TRUE(mine["oldest_due_age_ms"].is_number());
  // Its old name, stats, prints the same rows.
  Json again;
  for (const Json& row : ctl({"--json", "stats"}).json())
    if (row["queue"] == queue_) again = row;
  ASSERT_TRUE(again.is_object());
  EXPECT_EQ(again["due"], 2);

  // A tenant's scope counts its tasks only.
  const Output tenant = ctl({"--json", "--scope", "tenant:acme", "queues"});
  ASSERT_EQ(tenant.status, 0) << tenant.err;
  Json theirs;
  for (const Json& row : tenant.json())
    if (row["queue"] == queue_) theirs = row;
  ASSERT_TRUE(theirs.is_object()) << tenant.out;
  EXPECT_EQ(theirs["due"], 1);

  const Output human = ctl({"queues"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "completed_last_minute")) << human.out;
  EXPECT_TRUE(contains(human.out, queue_)) << human.out;
}

// top refreshes --iterations times (--interval 0: no wait), then exits.
TEST_F(DocketctlTest, Top) {
  spawn("a");
  spawn("a");
  const Output human = ctl({"top", "--iterations", "2", "--interval", "0"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "docket top")) << human.out;
  EXPECT_TRUE(contains(human.out, "frame 1")) << human.out;
  EXPECT_TRUE(contains(human.out, "frame 2")) << human.out;
  EXPECT_FALSE(contains(human.out, "frame 3")) << human.out;
  EXPECT_TRUE(contains(human.out, "completed/s")) << human.out;
  EXPECT_TRUE(contains(human.out, queue_)) << human.out;
  EXPECT_FALSE(contains(human.out, "\x1b[")) << "no screen control codes when piped";

  // --json: one document per frame.
  const Output json = ctl({"--json", "top", "--iterations", "2", "--interval", "0"});
  ASSERT_EQ(json.status, 0) << json.err;
  std::istringstream lines(json.out);
  std::string line;
  int frames = 0;
  while (std::getline(lines, line)) {
    const Json frame = Json::parse(line);
    EXPECT_EQ(frame["frame"], ++frames);
    EXPECT_TRUE(frame["at"].is_string());
    Json mine;
    for (const Json& row : frame["queues"])
      if (row["queue"] == queue_) mine = row;
    ASSERT_TRUE(mine.is_object()) << line;
    EXPECT_EQ(mine["due"], 2);
    EXPECT_GE(frame["totals"]["due"].get<int>(), 2);
  }
  EXPECT_EQ(frames, 2);
}

TEST_F(DocketctlTest, Cleanup) {
  const std::string done = spawn("old");
  const std::string pending = spawn("old");
  ASSERT_EQ(ctl({"tasks", "cancel", done}).status, 0);
  // A day's horizon keeps the task finished just now.
  const Output kept = ctl({"--json", "cleanup", "--older-than", "1 day"});
  ASSERT_EQ(kept.status, 0) << kept.err;
  EXPECT_EQ(kept.json()["older_than"], "1 day");
  EXPECT_EQ(ctl({"tasks", "result", done}).status, 0);
  // A horizon of 0 takes every finished run, one per batch, until none is left;
  // the unfinished task stays.
  const Output human = ctl({"cleanup", "--older-than", "0 seconds", "--batch", "1"});
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_TRUE(contains(human.out, "deleted ")) << human.out;
  EXPECT_TRUE(contains(human.out, "older than 0 seconds")) << human.out;
  EXPECT_EQ(ctl({"tasks", "result", done}).status, 1);
  EXPECT_EQ(ctl({"--json", "tasks", "result", pending}).json()["state"], "pending");
  const Output json = ctl({"--json", "cleanup", "--older-than", "0 seconds", "--once"});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(json.json()["batches"], 1);
  EXPECT_TRUE(json.json()["deleted"].is_number());
  const Output bad = ctl({"cleanup", "--older-than", "soon"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_FALSE(bad.err.empty());
}

}  // namespace
}  // namespace docket
