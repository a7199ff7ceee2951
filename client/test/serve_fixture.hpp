// Test support for docketctl serve: a seeded tenant (tasks in every state over
// three queues, a poisoned run, a schedule) on the fake clock, and a dashboard
// server running in-process on a free loopback port.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <httplib.h>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "serve.hpp"
#include "test_db.hpp"

namespace docket::test {

// The seed's clock: everything happens at kSeedStart (+5 s for the poisoning
// claim); servers read at kServeNow, so the seed's completion and failure fall
// in the last minute and ages are exact.
constexpr const char* kSeedStart = "2031-03-04T05:00:00Z";
constexpr const char* kSeedLater = "2031-03-04T05:00:05Z";
constexpr const char* kServeNow = "2031-03-04T05:00:10Z";

struct Seed {
  std::string tenant;  // the seeded tenant's id; scope "tenant:" + tenant
  std::string scope;
  std::string qa, qb, qc;  // queues
  std::string event;       // the event the waiting task waits for
  std::string schedule;
  std::map<std::string, std::string> runs;  // completed, failed, running, sleeping, waiting,
                                            // cancelled, pending1, pending2, poisoned,
                                            // scheduled, other (another tenant's)
  std::string other_scope;
  std::string other_queue;
};

// conninfo of the test database on the server's fake clock.
inline std::string serve_dsn() {
  return conninfo() + " options='-c docket.fake_now=" + kServeNow + "'";
}

inline Seed seed_dashboard() {
  Seed seed;
  seed.tenant = unique_name("dash");
  seed.scope = "tenant:" + seed.tenant;
  seed.qa = unique_name("dqa");
  seed.qb = unique_name("dqb");
  seed.qc = unique_name("dqc");
  seed.event = unique_name("go");
  seed.schedule = unique_name("nightly");
  seed.other_scope = "tenant:" + unique_name("other");
  seed.other_queue = unique_name("dqo");

  pqxx::connection c(conninfo());
  pqxx::nontransaction tx(c);
  const auto q = [&](const std::string& text) { return tx.quote(text); };
  const auto at = [&](const char* when) {
    tx.exec(std::string("SET docket.fake_now = '") + when + "'");
  };
  const auto spawn = [&](const std::string& name, const std::string& params,
                         const std::string& queue, const std::string& options = "{}",
                         const std::string& scope = "") {
    return tx
        .exec1("SELECT run_id FROM docket.spawn_task(" + q(name) + ", " + q(params) + "::jsonb, " +
               q(queue) + ", " + q(scope.empty() ? seed.scope : scope) + ", " + q(options) +
               "::jsonb)")[0]
        .as<std::string>();
  };
  // Claims the queue's one due task: its claim token.
  const auto claim = [&](const std::string& queue, const std::string& run_id,
                         const std::string& lease_ms = "3600000",
                         const std::string& max_claims = "10") {
    const pqxx::result r = tx.exec("SELECT run_id, claim_token::text FROM docket.claim_tasks(" +
                                   q(queue) + ", 1, " + lease_ms + ", " + max_claims + ")");
    if (r.size() != 1 || r[0][0].as<std::string>() != run_id)
      throw std::runtime_error("seed: the claim did not return " + run_id);
    return r[0][1].as<std::string>();
  };
  const auto call = [&](const std::string& sql) { tx.exec(sql); };

  at(kSeedStart);
  // qa: one task in each state.
  std::string id = spawn(
      "send_email", R"({"to": "ops@example.com"})", seed.qa,
      R"({"headers": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})");
  std::string token = claim(seed.qa, id);
  call("SELECT docket.complete_step(" + q(id) + ", " + q(token) +
       "::uuid, 'render', '{\"bytes\": 512}')");
  call("SELECT docket.complete_task(" + q(id) + ", " + q(token) + "::uuid, '{\"sent\": true}')");
  seed.runs["completed"] = id;

  id = spawn("charge", R"({"amount": 42})", seed.qa,
             R"({"max_attempts": 2, "retry": {"kind": "none"}})");
  token = claim(seed.qa, id);
  call("SELECT docket.fail_task(" + q(id) + ", " + q(token) +
       "::uuid, '{\"message\": \"card declined\"}')");
  token = claim(seed.qa, id);
  call("SELECT docket.fail_task(" + q(id) + ", " + q(token) +
       "::uuid, '{\"message\": \"card declined again\"}')");
  seed.runs["failed"] = id;

  id = spawn("export", "{}", seed.qa);
  claim(seed.qa, id);
  seed.runs["running"] = id;

  id = spawn("digest", "{}", seed.qa);
  token = claim(seed.qa, id);
  call("SELECT docket.sleep_until(" + q(id) + ", " + q(token) +
       "::uuid, 'nap', timestamptz '2031-03-04T06:00:00Z')");
  seed.runs["sleeping"] = id;

  id = spawn("approve", "{}", seed.qa);
  token = claim(seed.qa, id);
  call("SELECT docket.await_event(" + q(id) + ", " + q(token) + "::uuid, 'approval', " +
       q(seed.event) + ", NULL)");
  seed.runs["waiting"] = id;

  id = spawn("cleanup", "{}", seed.qa, R"({"delay_ms": 600000})");
  call("SELECT docket.cancel_task(" + q(seed.scope) + ", " + q(id) + ", 'not needed')");
  seed.runs["cancelled"] = id;

  seed.runs["pending1"] = spawn("resize", R"({"image": 1})", seed.qa);
  seed.runs["pending2"] = spawn("resize", R"({"image": 2})", seed.qa);

  // qb: a task poisoned by two expired claims, and one due in an hour.
  id = spawn("crashy", "{}", seed.qb);
  claim(seed.qb, id, "1000", "1");
  at(kSeedLater);
  if (!tx.exec("SELECT 1 FROM docket.claim_tasks(" + q(seed.qb) + ", 1, 1000, 1)").empty())
    throw std::runtime_error("seed: the poisoning claim leased");
  seed.runs["poisoned"] = id;
  seed.runs["scheduled"] = spawn("later", "{}", seed.qb, R"({"delay_ms": 3600000})");

  // qc: a schedule (no task yet).
  call("SELECT docket.schedule_task(" + q(seed.schedule) + ", '*/5 * * * *', 'report', " +
       "'{\"format\": \"pdf\"}', " + q(seed.qc) + ", " + q(seed.scope) + ")");

  // Another tenant's task, which the seeded tenant must never see.
  seed.runs["other"] = spawn("secret", "{}", seed.other_queue, "{}", seed.other_scope);
  return seed;
}

// A dashboard server on 127.0.0.1 (a free port), serving from a thread.
class RunningServer {
 public:
  explicit RunningServer(serve::Options options) : server_(with_defaults(std::move(options))) {
    port_ = server_.bind();
    thread_ = std::thread([this] { server_.serve(); });
  }
  ~RunningServer() {
    server_.stop();
    thread_.join();
  }
  RunningServer(const RunningServer&) = delete;
  RunningServer& operator=(const RunningServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return server_.url(); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(std::chrono::seconds(60));
    return c;
  }

 private:
  static serve::Options with_defaults(serve::Options options) {
    if (options.dsn.empty()) options.dsn = serve_dsn();
    options.listen = "127.0.0.1:0";
    options.sample_interval = std::chrono::hours(1);  // the first sample only
    options.overview_cache = std::chrono::milliseconds(0);
    options.connections = 2;
    return options;
  }

  serve::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace docket::test
