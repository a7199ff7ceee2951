// docketctl serve against a seeded database: every API endpoint's JSON, the
// actions with and without --allow-actions, a role refused by the database
// (42501), the bearer token, the cross-site checks, the Host check, tenant
// isolation, the pages' assets, and the docketctl serve subcommand itself.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "serve_fixture.hpp"
#include "test_db.hpp"

namespace docket {
namespace {

using test::RunningServer;
using test::Seed;

class ServeTest : public ::testing::Test {
 protected:
  ServeTest() : seed_(test::seed_dashboard()) {}

  serve::Options options(bool allow_actions = false) const {
    serve::Options o;
    o.scope = seed_.scope;
    o.allow_actions = allow_actions;
    return o;
  }

  static Json get_json(httplib::Client& client, const std::string& path, int expected = 200) {
    const httplib::Result res = client.Get(path);
    EXPECT_TRUE(res) << path;
    if (!res) return Json();
    EXPECT_EQ(res->status, expected) << path << ": " << res->body;
    EXPECT_EQ(res->body.find("claim_token"), std::string::npos) << res->body;
    return Json::parse(res->body);
  }

  static std::string csrf(httplib::Client& client) {
    return get_json(client, "/api/session")["csrf_token"].get<std::string>();
  }

  // A same-origin action POST, as the page sends it.
  static httplib::Result post(httplib::Client& client, const std::string& path, const Json& body,
                              const std::string& csrf_token, httplib::Headers extra = {}) {
    extra.emplace("X-Docket-CSRF", csrf_token);
    return client.Post(path, extra, body.dump(), "application/json");
  }

  std::string state_of(const std::string& run) const {
    pqxx::connection c(test::serve_dsn());
    return test::scalar(c, "SELECT docket.task_result(" + c.quote(seed_.scope) + ", " +
                               c.quote(run) + ") ->> 'state'");
  }

  Seed seed_;
};

const Json* find_by(const Json& rows, const std::string& key, const std::string& value) {
  for (const Json& row : rows)
    if (row.value(key, Json()) == value) return &row;
  return nullptr;
}

TEST_F(ServeTest, Session) {
  RunningServer server(options());
  httplib::Client client = server.client();
  const Json session = get_json(client, "/api/session");
  EXPECT_EQ(session["scope"], seed_.scope);
  EXPECT_EQ(session["actions"], false);
  EXPECT_EQ(session["csrf_token"].get<std::string>().size(), 32u);
  EXPECT_EQ(session["schema_version"], "0.3.0");
  EXPECT_EQ(session["poll_interval_ms"], 2000);
  EXPECT_EQ(session["now"], "2031-03-04T05:00:10+00:00");  // the database's clock
}

TEST_F(ServeTest, OverviewCountsEveryQueueOfTheScope) {
  RunningServer server(options());
  httplib::Client client = server.client();
  const Json overview = get_json(client, "/api/overview");
  EXPECT_EQ(overview["now"], "2031-03-04T05:00:10+00:00");
  EXPECT_EQ(overview["scope"], seed_.scope);
  ASSERT_EQ(overview["queues"].size(), 2u) << overview.dump();  // qc has only a schedule
  const Json* qa = find_by(overview["queues"], "queue", seed_.qa);
  ASSERT_NE(qa, nullptr);
  EXPECT_EQ((*qa)["due"], 2);
  EXPECT_EQ((*qa)["scheduled"], 1);  // sleeping
  EXPECT_EQ((*qa)["running"], 1);
  EXPECT_EQ((*qa)["waiting"], 1);
  EXPECT_EQ((*qa)["poisoned"], 0);
  EXPECT_EQ((*qa)["oldest_due_at"], "2031-03-04T05:00:00+00:00");
  EXPECT_EQ((*qa)["oldest_due_age_ms"], 10000);
  EXPECT_EQ((*qa)["completed_last_minute"], 1);
  EXPECT_EQ((*qa)["failed_last_minute"], 1);
  const Json* qb = find_by(overview["queues"], "queue", seed_.qb);
  ASSERT_NE(qb, nullptr);
  EXPECT_EQ((*qb)["poisoned"], 1);
  EXPECT_EQ((*qb)["scheduled"], 1);
  EXPECT_EQ((*qb)["due"], 0);
  EXPECT_TRUE((*qb)["oldest_due_at"].is_null());

  // The chart's series: the sample taken at start, summed over the queues.
  const Json& series = overview["series"];
  EXPECT_EQ(series["interval_ms"], 3600000);
  ASSERT_EQ(series["points"].size(), 1u);
  EXPECT_EQ(series["points"][0]["at"], "2031-03-04T05:00:10+00:00");
  EXPECT_EQ(series["points"][0]["completed"], 1);
  EXPECT_EQ(series["points"][0]["failed"], 1);
}

TEST_F(ServeTest, TasksListFiltersAndPages) {
  RunningServer server(options());
  httplib::Client client = server.client();
  const Json all = get_json(client, "/api/tasks");
  EXPECT_EQ(all["entries"].size(), 10u) << all.dump();
  EXPECT_EQ(all["has_more"], false);
  EXPECT_EQ(find_by(all["entries"], "run_id", seed_.runs.at("other")), nullptr);

  std::map<std::string, std::string> expected_state = {
      {"completed", "completed"}, {"failed", "failed"},     {"running", "running"},
      {"sleeping", "sleeping"},   {"waiting", "waiting"},   {"cancelled", "cancelled"},
      {"pending1", "pending"},    {"poisoned", "poisoned"}, {"scheduled", "sleeping"}};
  for (const auto& [which, state] : expected_state) {
    const Json* row = find_by(all["entries"], "run_id", seed_.runs.at(which));
    ASSERT_NE(row, nullptr) << which;
    EXPECT_EQ((*row)["state"], state) << which;
  }
  const Json* failed = find_by(all["entries"], "run_id", seed_.runs.at("failed"));
  EXPECT_EQ((*failed)["task_name"], "charge");
  EXPECT_EQ((*failed)["queue"], seed_.qa);
  EXPECT_EQ((*failed)["attempts"], 2);
  EXPECT_EQ((*failed)["tenant_id"], seed_.tenant);

  EXPECT_EQ(get_json(client, "/api/tasks?queue=" + seed_.qb)["entries"].size(), 2u);
  const Json running = get_json(client, "/api/tasks?state=running");
  ASSERT_EQ(running["entries"].size(), 1u);
  EXPECT_EQ(running["entries"][0]["run_id"], seed_.runs.at("running"));
  const Json resize = get_json(client, "/api/tasks?name=resize&state=pending&queue=" + seed_.qa);
  EXPECT_EQ(resize["entries"].size(), 2u);
  EXPECT_EQ(get_json(client, "/api/tasks?state=bogus", 400)["error"], "bad_request");
  EXPECT_EQ(get_json(client, "/api/tasks?limit=0", 400)["error"], "bad_request");
  // A cursor that is no task of the scope: docket.list_tasks's 22023.
  const Json bad_cursor = get_json(client, "/api/tasks?after=" + seed_.runs.at("other"), 400);
  EXPECT_EQ(bad_cursor["sqlstate"], "22023");

  // Keyset pages of 3: every task once, newest first, the same order as one page.
  std::vector<std::string> paged;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {
    const Json p = get_json(client, "/api/tasks?limit=3" + cursor);
    for (const Json& e : p["entries"]) paged.push_back(e["run_id"]);
    if (!p["has_more"].get<bool>()) break;
    EXPECT_EQ(p["entries"].size(), 3u);
    cursor = "&after=" + p["next_after"].get<std::string>();
  }
  std::vector<std::string> whole;
  for (const Json& e : all["entries"]) whole.push_back(e["run_id"]);
  EXPECT_EQ(paged, whole);
}

TEST_F(ServeTest, TaskDetail) {
  RunningServer server(options());
  httplib::Client client = server.client();
  const Json done = get_json(client, "/api/tasks/" + seed_.runs.at("completed"));
  EXPECT_EQ(done["run_id"], seed_.runs.at("completed"));
  EXPECT_EQ(done["state"], "completed");
  EXPECT_EQ(done["task_name"], "send_email");
  EXPECT_EQ(done["queue"], seed_.qa);
  EXPECT_EQ(done["tenant_id"], seed_.tenant);
  EXPECT_EQ(done["params"], Json::parse(R"({"to": "ops@example.com"})"));
  EXPECT_EQ(done["headers"]["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(done["result"], Json::parse(R"({"sent": true})"));
  ASSERT_EQ(done["steps"].size(), 1u);
  EXPECT_EQ(done["steps"][0]["step_name"], "render");
  EXPECT_EQ(done["steps"][0]["value"], Json::parse(R"({"bytes": 512})"));
  EXPECT_EQ(done["steps"][0]["completed_at"], "2031-03-04T05:00:00+00:00");
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["started_at"], "2031-03-04T05:00:00+00:00");
  EXPECT_EQ(done["updated_at"], "2031-03-04T05:00:00+00:00");
  std::vector<std::string> types;
  for (const Json& entry : done["history"]) types.push_back(entry["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"spawned", "claimed", "step_completed", "completed"}))
      << done["history"].dump();
  EXPECT_EQ(done["history"][1]["payload"]["attempt"], 1);
  EXPECT_EQ(done["history"][2]["payload"]["step_name"], "render");
  EXPECT_EQ(done["history"][0]["recorded_at"], "2031-03-04T05:00:00+00:00");
  EXPECT_EQ(done["history_has_more"], false);
  EXPECT_TRUE(done["attempt_errors"].empty());

  const Json failed = get_json(client, "/api/tasks/" + seed_.runs.at("failed"));
  EXPECT_EQ(failed["state"], "failed");
  EXPECT_EQ(failed["attempts"], 2);
  EXPECT_EQ(failed["max_attempts"], 2);
  EXPECT_EQ(failed["error"]["message"], "card declined again");
  // Every attempt's error, from the history.
  ASSERT_EQ(failed["attempt_errors"].size(), 2u) << failed["history"].dump();
  EXPECT_EQ(failed["attempt_errors"][0]["attempt"], 1);
  EXPECT_EQ(failed["attempt_errors"][0]["error"]["message"], "card declined");
  EXPECT_EQ(failed["attempt_errors"][1]["attempt"], 2);
  EXPECT_EQ(failed["attempt_errors"][1]["error"]["message"], "card declined again");
  EXPECT_EQ(failed["history"].back()["type"], "failed");

  const Json poisoned = get_json(client, "/api/tasks/" + seed_.runs.at("poisoned"));
  EXPECT_EQ(poisoned["state"], "poisoned");
  EXPECT_EQ(poisoned["poison_reason"], "max_claim_attempts_exceeded");
  EXPECT_EQ(poisoned["claim_attempts"], 1);

  const Json running = get_json(client, "/api/tasks/" + seed_.runs.at("running"));
  EXPECT_EQ(running["state"], "running");
  EXPECT_FALSE(running["claimed_at"].is_null());  // the claim's time, never its token

  EXPECT_EQ(get_json(client, "/api/tasks/no-such-task", 404)["error"], "not_found");
  EXPECT_EQ(get_json(client, "/api/tasks/" + seed_.runs.at("other"), 404)["error"], "not_found");
}

TEST_F(ServeTest, TaskHistoryPages) {
  RunningServer server(options());
  httplib::Client client = server.client();
  const std::string base = "/api/tasks/" + seed_.runs.at("failed") + "/history";
  const Json whole = get_json(client, base + "?limit=1000");
  EXPECT_EQ(whole["run_id"], seed_.runs.at("failed"));
  EXPECT_EQ(whole["has_more"], false);
  ASSERT_GE(whole["entries"].size(), 6u) << whole.dump();
  EXPECT_EQ(whole["entries"][0]["type"], "spawned");
  EXPECT_EQ(whole["entries"].back()["type"], "failed");
  // Pages of 2 after each page's last seq: the same entries, in order.
  Json paged = Json::array();
  std::int64_t after = 0;
  for (int i = 0; i < 20; ++i) {
    const Json page = get_json(client, base + "?limit=2&after_seq=" + std::to_string(after));
    for (const Json& entry : page["entries"]) paged.push_back(entry);
    if (!page["has_more"].get<bool>()) break;
    ASSERT_EQ(page["entries"].size(), 2u);
    after = page["entries"].back()["seq"].get<std::int64_t>();
  }
  EXPECT_EQ(paged, whole["entries"]);
  EXPECT_EQ(get_json(client, base + "?limit=5000", 400)["error"], "bad_request");
  EXPECT_EQ(get_json(client, "/api/tasks/" + seed_.runs.at("other") + "/history", 404)["error"],
            "not_found");
}

TEST_F(ServeTest, PoisonedAndSchedules) {
  RunningServer server(options());
  httplib::Client client = server.client();
  const Json poisoned = get_json(client, "/api/poisoned");
  ASSERT_EQ(poisoned["entries"].size(), 1u) << poisoned.dump();
  const Json& run = poisoned["entries"][0];
  EXPECT_EQ(run["run_id"], seed_.runs.at("poisoned"));
  EXPECT_EQ(run["queue"], seed_.qb);
  EXPECT_EQ(run["graph_id"], "crashy");
  EXPECT_EQ(run["poison_reason"], "max_claim_attempts_exceeded");
  EXPECT_EQ(run["poisoned_at"], "2031-03-04T05:00:05+00:00");
  EXPECT_EQ(run["tenant_id"], seed_.tenant);

  const Json schedules = get_json(client, "/api/schedules");
  ASSERT_EQ(schedules["entries"].size(), 1u) << schedules.dump();
  const Json& s = schedules["entries"][0];
  EXPECT_EQ(s["schedule_name"], seed_.schedule);
  EXPECT_EQ(s["cron"], "*/5 * * * *");
  EXPECT_EQ(s["task_name"], "report");
  EXPECT_EQ(s["queue"], seed_.qc);
  EXPECT_EQ(s["owner_scope"], seed_.scope);
  EXPECT_EQ(s["next_run_at"], "2031-03-04T05:05:00+00:00");
}

TEST_F(ServeTest, ActionsAreRefusedWithoutAllowActions) {
  RunningServer server(options(false));
  httplib::Client client = server.client();
  const std::string token = csrf(client);
  for (const auto& [path, body] : std::vector<std::pair<std::string, Json>>{
           {"/api/tasks/" + seed_.runs.at("running") + "/cancel", {{"reason", "x"}}},
           {"/api/poisoned/" + seed_.runs.at("poisoned") + "/retry", Json::object()},
           {"/api/events", {{"name", seed_.event}}}}) {
    const httplib::Result res = post(client, path, body, token);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403) << path;
    EXPECT_EQ(Json::parse(res->body)["error"], "actions_disabled") << path;
  }
  EXPECT_EQ(state_of(seed_.runs.at("running")), "running");
  EXPECT_EQ(state_of(seed_.runs.at("poisoned")), "poisoned");
  EXPECT_EQ(state_of(seed_.runs.at("waiting")), "waiting");
}

TEST_F(ServeTest, ActionsWithAllowActions) {
  RunningServer server(options(true));
  httplib::Client client = server.client();
  EXPECT_EQ(get_json(client, "/api/session")["actions"], true);
  const std::string token = csrf(client);

  httplib::Result res = post(client, "/api/tasks/" + seed_.runs.at("running") + "/cancel",
                             {{"reason", "stuck"}}, token);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Json::parse(res->body)["cancelled"], true);
  EXPECT_EQ(state_of(seed_.runs.at("running")), "cancelled");
  res = post(client, "/api/tasks/" + seed_.runs.at("running") + "/cancel", Json::object(), token);
  EXPECT_EQ(Json::parse(res->body)["cancelled"], false);  // already finished

  res =
      post(client, "/api/poisoned/" + seed_.runs.at("poisoned") + "/retry", Json::object(), token);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Json::parse(res->body)["status"], "running");
  EXPECT_EQ(state_of(seed_.runs.at("poisoned")), "pending");
  EXPECT_EQ(get_json(client, "/api/poisoned")["entries"].size(), 0u);

  res = post(client, "/api/events", {{"name", seed_.event}, {"payload", {{"ok", true}}}}, token);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Json::parse(res->body)["emitted"], true);
  EXPECT_EQ(Json::parse(res->body)["scope"], seed_.scope);
  EXPECT_EQ(state_of(seed_.runs.at("waiting")), "pending");
  res = post(client, "/api/events", {{"name", seed_.event}}, token);
  EXPECT_EQ(Json::parse(res->body)["emitted"], false);

  // A bound server emits only in its own scope.
  res = post(client, "/api/events", {{"name", "x"}, {"scope", seed_.other_scope}}, token);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(Json::parse(res->body)["error"], "scope_refused");
  res = post(client, "/api/events", {{"payload", 1}}, token);
  EXPECT_EQ(res->status, 400);

  // Another tenant's task cannot be cancelled from this scope.
  res = post(client, "/api/tasks/" + seed_.runs.at("other") + "/cancel", Json::object(), token);
  EXPECT_NE(res->status, 200) << res->body;
  pqxx::connection c(test::serve_dsn());
  EXPECT_EQ(test::scalar(c, "SELECT docket.task_result(" + c.quote(seed_.other_scope) + ", " +
                                c.quote(seed_.runs.at("other")) + ") ->> 'state'"),
            "pending");
}

TEST_F(ServeTest, ActionRefusedByTheDatabaseShowsItsSqlstate) {
  // A role that may read but not cancel: the database refuses with 42501.
  {
    pqxx::connection admin(test::conninfo());
    pqxx::nontransaction tx(admin);
    tx.exec(
        "DO $$ BEGIN CREATE ROLE docket_dash_viewer LOGIN; "
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$");
    tx.exec("GRANT USAGE ON SCHEMA docket TO docket_dash_viewer");
    tx.exec("GRANT SELECT ON ALL TABLES IN SCHEMA docket TO docket_dash_viewer");
    tx.exec("REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA docket FROM docket_dash_viewer");
    for (const char* reader :
         {"docket.now()", "docket.inspect_run(docket.scope, text)",
          "docket.task_result(docket.scope, text)", "docket.queue_stats(docket.scope)",
          "docket.list_tasks(docket.scope, text, text, text, text, int)",
          "docket.list_schedules(docket.scope)",
          "docket.list_events(docket.scope, text, bigint, int)"})
      tx.exec(std::string("GRANT EXECUTE ON FUNCTION ") + reader + " TO docket_dash_viewer");
    tx.exec(
        "DO $$ BEGIN IF to_regprocedure('docket.task_history(docket.scope, text, bigint, integer)')"
        " IS NOT NULL THEN GRANT EXECUTE ON FUNCTION"
        " docket.task_history(docket.scope, text, bigint, integer) TO docket_dash_viewer;"
        " END IF; END $$");
  }
  serve::Options o = options(true);
  o.dsn = test::serve_dsn() + " user=docket_dash_viewer";
  RunningServer server(o);
  httplib::Client client = server.client();
  EXPECT_EQ(get_json(client, "/api/overview")["queues"].size(), 2u);
  EXPECT_EQ(get_json(client, "/api/tasks?state=running")["entries"].size(), 1u);
  const httplib::Result res = post(client, "/api/tasks/" + seed_.runs.at("running") + "/cancel",
                                   Json::object(), csrf(client));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403) << res->body;
  const Json body = Json::parse(res->body);
  EXPECT_EQ(body["sqlstate"], "42501");
  EXPECT_NE(body["message"].get<std::string>().find("permission denied"), std::string::npos)
      << body.dump();
  EXPECT_EQ(state_of(seed_.runs.at("running")), "running");
}

TEST_F(ServeTest, CrossSiteActionsAreRefused) {
  RunningServer server(options(true));
  httplib::Client client = server.client();
  const std::string token = csrf(client);
  const std::string cancel = "/api/tasks/" + seed_.runs.at("running") + "/cancel";
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  struct Attempt {
    const char* what;
    httplib::Headers headers;
    std::string content_type;
    int status;
  };
  const std::vector<Attempt> attempts = {
      {"no CSRF header", {}, "application/json", 403},
      {"a wrong CSRF token", {{"X-Docket-CSRF", std::string(32, '0')}}, "application/json", 403},
      {"another Origin",
       {{"X-Docket-CSRF", token}, {"Origin", "http://evil.example"}},
       "application/json",
       403},
      {"Sec-Fetch-Site cross-site",
       {{"X-Docket-CSRF", token}, {"Sec-Fetch-Site", "cross-site"}},
       "application/json",
       403},
      {"a form body", {{"X-Docket-CSRF", token}}, "application/x-www-form-urlencoded", 415},
      {"a text body", {{"X-Docket-CSRF", token}}, "text/plain", 415},
  };
  for (const Attempt& attempt : attempts) {
    const httplib::Result res = client.Post(cancel, attempt.headers, "{}", attempt.content_type);
    ASSERT_TRUE(res) << attempt.what;
    EXPECT_EQ(res->status, attempt.status) << attempt.what << ": " << res->body;
    EXPECT_EQ(Json::parse(res->body)["error"], "cross_site_refused") << attempt.what;
  }
  EXPECT_EQ(state_of(seed_.runs.at("running")), "running");

  // The same request from the page's own origin goes through.
  const httplib::Result ok = client.Post(
      cancel,
      {{"X-Docket-CSRF", token}, {"Origin", "http://" + host}, {"Sec-Fetch-Site", "same-origin"}},
      "{}", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(state_of(seed_.runs.at("running")), "cancelled");
}

TEST_F(ServeTest, BearerTokenProtectsApiAndPages) {
  const std::string path = "/tmp/docket_serve_token_" + std::to_string(::getpid());
  const std::string secret = "s3cret-token-" + test::unique_name("t");
  {
    std::ofstream out(path);
    out << secret << "\n";
  }
  serve::Options o = options();
  o.token_file = path;
  RunningServer server(o);
  std::remove(path.c_str());
  httplib::Client client = server.client();

  for (const char* target :
       {"/api/overview", "/api/session", "/api/tasks", "/", "/assets/app.js"}) {
    const httplib::Result res = client.Get(target);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << target;
    EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer realm=\"docket\"");
  }
  httplib::Result res =
      client.Get("/api/overview", {{"Authorization", "Bearer wrong-token-123456"}});
  EXPECT_EQ(res->status, 401);
  res = client.Get("/api/overview", {{"Authorization", "Bearer " + secret}});
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(Json::parse(res->body)["queues"].size(), 2u);

  // The page opened once with ?token= moves it into an HttpOnly cookie.
  res = client.Get("/?token=" + secret);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 303);
  EXPECT_EQ(res->get_header_value("Location"), "/");
  const std::string set_cookie = res->get_header_value("Set-Cookie");
  EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos) << set_cookie;
  EXPECT_NE(set_cookie.find("SameSite=Strict"), std::string::npos) << set_cookie;
  res = client.Get("/?token=wrong-token-123456");
  EXPECT_EQ(res->status, 401);
  res = client.Get("/", {{"Cookie", "docket_token=" + secret}});
  EXPECT_EQ(res->status, 200);
  res = client.Get("/api/session", {{"Cookie", "theme=dark; docket_token=" + secret}});
  EXPECT_EQ(res->status, 200);
  res = client.Get("/api/session", {{"Cookie", "docket_token=" + secret + "x"}});
  EXPECT_EQ(res->status, 401);
}

TEST_F(ServeTest, ForeignHostHeaderIsRefused) {
  RunningServer server(options());
  httplib::Client client = server.client();
  // A DNS name rebound to 127.0.0.1 arrives with its own Host header.
  httplib::Result res =
      client.Get("/api/overview", {{"Host", "evil.example:" + std::to_string(server.port())}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 421);
  EXPECT_EQ(Json::parse(res->body)["error"], "host_refused");
  res = client.Get("/api/overview", {{"Host", "localhost:" + std::to_string(server.port())}});
  EXPECT_EQ(res->status, 200);
}

TEST_F(ServeTest, SystemScopeSeesEveryTenant) {
  serve::Options o = options();
  o.scope = "system";
  RunningServer server(o);
  httplib::Client client = server.client();
  const Json overview = get_json(client, "/api/overview");
  EXPECT_NE(find_by(overview["queues"], "queue", seed_.qa), nullptr);
  EXPECT_NE(find_by(overview["queues"], "queue", seed_.other_queue), nullptr);
  EXPECT_EQ(get_json(client, "/api/tasks/" + seed_.runs.at("other"))["task_name"], "secret");
  EXPECT_EQ(get_json(client, "/api/tasks?queue=" + seed_.other_queue)["entries"].size(), 1u);
}

TEST_F(ServeTest, PagesAndAssetsAreServedLocally) {
  RunningServer server(options());
  httplib::Client client = server.client();
  httplib::Result res = client.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(res->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  EXPECT_EQ(res->get_header_value("X-Frame-Options"), "DENY");
  EXPECT_NE(res->body.find("/assets/chart.min.js"), std::string::npos);
  EXPECT_EQ(res->body.find("http://"), std::string::npos);  // nothing from elsewhere
  EXPECT_EQ(res->body.find("https://"), std::string::npos);
  for (const char* asset : {"/assets/app.js", "/assets/app.css", "/assets/chart.min.js"}) {
    res = client.Get(asset);
    ASSERT_TRUE(res) << asset;
    EXPECT_EQ(res->status, 200) << asset;
    EXPECT_FALSE(res->body.empty()) << asset;
  }
  EXPECT_NE(client.Get("/assets/chart.min.js")->body.find("Chart"), std::string::npos);
  EXPECT_EQ(client.Get("/assets/nope.js")->status, 404);
  const httplib::Result missing = client.Get("/api/nope");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Json::parse(missing->body)["error"], "not_found");
}

// A child process, killed (SIGKILL) and reaped if the test ends before it does.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  // Sends the signal and reaps the child: its wait status.
  int signal_and_wait(int signal) {
    ::kill(pid_, signal);
    int status = 0;
    const pid_t reaped = ::waitpid(pid_, &status, 0);
    pid_ = 0;
    return reaped < 0 ? -1 : status;
  }

 private:
  pid_t pid_;
};

// docketctl serve: prints its address once it listens (the test reads that
// line, it does not wait for a time), answers in --scope, and exits 0 on SIGTERM.
TEST_F(ServeTest, DocketctlServeRunsUntilSigterm) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const std::vector<std::string> args = {DOCKETCTL_PATH, "--dsn", test::serve_dsn(), "--scope",
                                         seed_.scope,    "serve", "--listen",        "127.0.0.1:0"};
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, out[1]);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, DOCKETCTL_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ASSERT_EQ(spawned, 0);
  Child child(pid);
  // Its first line: "docket dashboard on http://127.0.0.1:PORT/ (scope ..., actions off)".
  std::string line;
  char c = 0;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);
  const std::string prefix = "docket dashboard on http://127.0.0.1:";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  EXPECT_NE(line.find("(scope " + seed_.scope + ", actions off)"), std::string::npos) << line;
  const int port = std::stoi(line.substr(prefix.size()));
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(60));
  const Json session = get_json(client, "/api/session");
  EXPECT_EQ(session["scope"], seed_.scope);
  EXPECT_EQ(session["actions"], false);
  const Json running = get_json(client, "/api/tasks?state=running");
  ASSERT_EQ(running["entries"].size(), 1u);
  EXPECT_EQ(running["entries"][0]["run_id"], seed_.runs.at("running"));
  const int status = child.signal_and_wait(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(ServeTest, BadOptionsFailAtStart) {
  serve::Options o = options();
  o.listen = "nonsense";
  EXPECT_THROW(serve::Server{o}, std::runtime_error);
  o = options();
  o.token_file = "/nonexistent/token";
  EXPECT_THROW(serve::Server{o}, std::runtime_error);
  o = options();
  o.dsn = "host=127.0.0.1 port=1 connect_timeout=2";
  EXPECT_THROW(serve::Server{o}, std::exception);
}

}  // namespace
}  // namespace docket
