// docketctl serve (serve.hpp): routes, safety checks, the overview cache and
// the queue_stats sampler.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include <httplib.h>

#include "assets.hpp"
#include "docket/errors.hpp"
#include "docket/json.hpp"
#include "docket/sql.hpp"
#include "docket/sql_dashboard.hpp"
#include "pool.hpp"
#include "serve.hpp"

namespace docket::serve {

namespace {

namespace dash = sql::dashboard;

constexpr const char* kTaskStates[] = {"pending",  "running",   "sleeping", "waiting",
                                       "poisoned", "completed", "failed",   "cancelled"};
constexpr int kHistoryInDetail = 500;  // timeline entries a task page gets at once
constexpr const char* kCsrfHeader = "X-Docket-CSRF";
constexpr const char* kTokenCookie = "docket_token";

// An error an endpoint answers with: HTTP status, a code word and a message.
struct HttpError : std::runtime_error {
  HttpError(int status_code, std::string error_code, const std::string& message)
      : std::runtime_error(message), status(status_code), code(std::move(error_code)) {}
  int status;
  std::string code;
};

struct Listen {
  std::string host;
  int port = 0;
};

Listen parse_listen(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    throw std::runtime_error("--listen wants HOST:PORT, not \"" + text + "\"");
  Listen listen;
  listen.host = text.substr(0, colon);
  if (listen.host.size() >= 2 && listen.host.front() == '[' && listen.host.back() == ']')
    listen.host = listen.host.substr(1, listen.host.size() - 2);
  if (listen.host.empty())
    throw std::runtime_error("--listen wants HOST:PORT, not \"" + text + "\"");
  const std::string port = text.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
      std::stoi(port) > 65535)
    throw std::runtime_error("--listen: bad port \"" + port + "\"");
  listen.port = std::stoi(port);
  return listen;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string trim(const std::string& text) {
  const std::size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

std::string read_token(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("--token-file: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::string token = trim(text.str());
  if (token.size() < 16)
    throw std::runtime_error("--token-file: the token in " + path +
                             " must be at least 16 characters");
  if (token.find_first_of(" \t\r\n;,\"") != std::string::npos)
    throw std::runtime_error("--token-file: the token must be one word (no spaces, ; , or \")");
  return token;
}

std::string random_hex(std::size_t bytes) {
  std::ifstream random("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!random.read(raw.data(), static_cast<std::streamsize>(bytes)))
    throw std::runtime_error("cannot read /dev/urandom");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const char c : raw) {
    const auto byte = static_cast<unsigned char>(c);
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

// Compares without an early exit, so the time taken does not tell how much matched.
bool same_secret(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

std::optional<std::string> cookie(const httplib::Request& req, const std::string& name) {
  const std::string header = req.get_header_value("Cookie");
  std::size_t pos = 0;
  while (pos < header.size()) {
    std::size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    const std::string pair = trim(header.substr(pos, end - pos));
    const std::size_t eq = pair.find('=');
    if (eq != std::string::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    pos = end + 1;
  }
  return std::nullopt;
}

// No claim token leaves the server, whatever a document carries.
void scrub(Json& value) {
  if (value.is_object()) {
    value.erase("claim_token");
    for (auto& [key, child] : value.items()) scrub(child);
  } else if (value.is_array()) {
    for (Json& child : value) scrub(child);
  }
}

void security_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; object-src 'none'; base-uri 'none'; "
                 "frame-ancestors 'none'; form-action 'self'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-store");
}

void send_json(httplib::Response& res, int status, Json body) {
  scrub(body);
  res.status = status;
  res.set_content(body.dump(), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message, const std::string& sqlstate = "") {
  Json body = {{"error", code}, {"message", message}};
  if (!sqlstate.empty()) body["sqlstate"] = sqlstate;
  send_json(res, status, std::move(body));
}

int status_for_sqlstate(const std::string& state) {
  if (state == "42501") return 403;  // insufficient_privilege
  if (state == "22023" || state == "23514" || state == "22P02") return 400;  // bad input
  if (state == "DK003") return 404;
  if (state == "DK004" || state == "DK010" || state == "DK001") return 409;
  return 500;
}

// Runs an endpoint and answers with its JSON, or with the error it raised.
template <typename Fn>
void answer(httplib::Response& res, Fn&& fn) {
  try {
    send_json(res, 200, fn());
  } catch (const HttpError& e) {
    send_error(res, e.status, e.code, e.what());
  } catch (const ConnectionLost& e) {
    send_error(res, 503, "database_unavailable", e.what(), e.sqlstate());
  } catch (const Ambiguous& e) {
    send_error(res, 503, "outcome_unknown", e.what(), e.sqlstate());
  } catch (const Error& e) {
    send_error(res, status_for_sqlstate(e.sqlstate()), "database_error", e.what(), e.sqlstate());
  } catch (const std::exception& e) {
    send_error(res, 500, "internal_error", e.what());
  }
}

std::optional<std::string> param(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::nullopt;
  std::string value = req.get_param_value(name);
  if (value.empty()) return std::nullopt;
  return value;
}

int int_param(const httplib::Request& req, const char* name, int fallback, int low, int high) {
  const std::optional<std::string> text = param(req, name);
  if (!text) return fallback;
  if (text->size() > 9 || text->find_first_not_of("0123456789") != std::string::npos)
    throw HttpError(400, "bad_request", std::string(name) + " must be an integer");
  const int value = std::stoi(*text);
  if (value < low || value > high)
    throw HttpError(
        400, "bad_request",
        std::string(name) + " must be in " + std::to_string(low) + ".." + std::to_string(high));
  return value;
}

Json json_body(const httplib::Request& req) {
  if (req.body.empty()) return Json::object();
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    throw HttpError(400, "bad_request", "the body must be a JSON object");
  return body;
}

std::optional<std::string> string_field(const Json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_string())
    throw HttpError(400, "bad_request", std::string(key) + " must be a string");
  return body[key].get<std::string>();
}

}  // namespace

struct Server::Impl {
  Options options;
  Listen listen;
  std::string token;  // "" = none
  std::string csrf_token = random_hex(16);
  ConnectionPool pool;
  httplib::Server http;
  int port = 0;
  // serve() and stop() from different threads: a stop() that comes before the
  // accept loop runs must still end it (httplib's stop() only stops a running loop).
  std::mutex serve_mutex;
  bool stop_requested = false;
  std::atomic<bool> serving{false};

  // The overview, shared by every viewer for overview_cache.
  std::mutex overview_mutex;
  std::chrono::steady_clock::time_point overview_at;
  std::optional<Json> overview;

  // queue_stats samples (the series of the overview's chart).
  std::mutex samples_mutex;
  std::deque<Json> samples;  // {at, completed, failed}, oldest first
  std::thread sampler;
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stopping = false;

  explicit Impl(Options opts)
      : options(std::move(opts)),
        listen(parse_listen(options.listen)),
        token(options.token_file.empty() ? std::string() : read_token(options.token_file)),
        pool(options.dsn, options.connections) {
    if (options.sample_interval.count() <= 0)
      throw std::runtime_error("the sample interval must be positive");
    sample();  // the first sample now: a database that is not there fails at start
    sampler = std::thread([this] { sample_loop(); });
    routes();
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(stop_mutex);
      stopping = true;
    }
    stop_cv.notify_all();
    if (sampler.joinable()) sampler.join();
  }

  // --- sampling ------------------------------------------------------------
  std::size_t samples_kept() const {
    const auto hour = std::chrono::milliseconds(std::chrono::hours(1));
    return static_cast<std::size_t>(hour / options.sample_interval) + 1;
  }

  void sample() {
    const dash::QueueStats stats = pool.with([&](pqxx::connection& c) {
      return sql::in_transaction(c, false, [&](pqxx::transaction_base& tx) {
        return dash::queue_stats(tx, options.scope);
      });
    });
    std::int64_t completed = 0;
    std::int64_t failed = 0;
    for (const Json& queue : stats.queues) {
      completed += queue.value("completed_last_minute", std::int64_t{0});
      failed += queue.value("failed_last_minute", std::int64_t{0});
    }
    std::lock_guard<std::mutex> lock(samples_mutex);
    samples.push_back({{"at", stats.now}, {"completed", completed}, {"failed", failed}});
    while (samples.size() > samples_kept()) samples.pop_front();
  }

  void sample_loop() {
    std::unique_lock<std::mutex> lock(stop_mutex);
    while (!stop_cv.wait_for(lock, options.sample_interval, [&] { return stopping; })) {
      lock.unlock();
      try {
        sample();
      } catch (const std::exception& e) {
        std::cerr << "docketctl serve: sampling queue_stats failed: " << e.what() << "\n";
      }
      lock.lock();
    }
  }

  Json series() {
    std::lock_guard<std::mutex> lock(samples_mutex);
    return {{"interval_ms", options.sample_interval.count()},
            {"points", Json(std::vector<Json>(samples.begin(), samples.end()))}};
  }

  // --- reads -----------------------------------------------------------------
  template <typename Fn>
  auto read(Fn&& fn) {
    return pool.with(
        [&](pqxx::connection& c) { return sql::in_transaction(c, false, std::forward<Fn>(fn)); });
  }

  template <typename Fn>
  auto write(Fn&& fn) {
    return pool.with(
        [&](pqxx::connection& c) { return sql::in_transaction(c, true, std::forward<Fn>(fn)); });
  }

  Json overview_json() {
    std::lock_guard<std::mutex> lock(overview_mutex);
    const auto now = std::chrono::steady_clock::now();
    if (!overview || now - overview_at >= options.overview_cache) {
      const dash::QueueStats stats =
          read([&](pqxx::transaction_base& tx) { return dash::queue_stats(tx, options.scope); });
      overview = Json{{"now", stats.now}, {"scope", options.scope}, {"queues", stats.queues}};
      overview_at = now;
    }
    Json out = *overview;
    out["series"] = series();
    return out;
  }

  Json tasks_json(const httplib::Request& req) {
    dash::TaskQuery query;
    query.queue = param(req, "queue");
    query.state = param(req, "state");
    query.task_name = param(req, "name");
    query.after_run_id = param(req, "after");
    query.page_limit = int_param(req, "limit", 50, 1, 500);
    if (query.state && std::none_of(std::begin(kTaskStates), std::end(kTaskStates),
                                    [&](const char* s) { return *query.state == s; }))
      throw HttpError(400, "bad_request", "unknown state \"" + *query.state + "\"");
    Json page = read(
        [&](pqxx::transaction_base& tx) { return dash::list_tasks(tx, options.scope, query); });
    page["scope"] = options.scope;
    return page;
  }

  Json task_json(const std::string& run_id) {
    return read([&](pqxx::transaction_base& tx) -> Json {
      std::optional<Json> detail = dash::task_detail(tx, options.scope, run_id);
      if (!detail)
        throw HttpError(404, "not_found", "no task " + run_id + " in scope " + options.scope);
      std::vector<Json> history =
          dash::task_history(tx, options.scope, run_id, 0, kHistoryInDetail + 1);
      const bool more = history.size() > static_cast<std::size_t>(kHistoryInDetail);
      if (more) history.resize(kHistoryInDetail);
      Json errors = Json::array();
      for (const Json& event : history) {
        if (event.value("type", "") != "attempt_failed") continue;
        const Json& payload = event["payload"];
        errors.push_back(
            {{"attempt", payload.is_object() ? payload.value("attempt", Json()) : Json()},
             {"error", payload.is_object() ? payload.value("error", Json()) : Json()},
             {"recorded_at", event["recorded_at"]}});
      }
      (*detail)["attempt_errors"] = errors;
      (*detail)["history"] = history;
      (*detail)["history_has_more"] = more;
      return *detail;
    });
  }

  Json history_json(const std::string& run_id, const httplib::Request& req) {
    const int after = int_param(req, "after_seq", 0, 0, 2147483647);
    const int limit = int_param(req, "limit", 100, 1, 1000);
    return read([&](pqxx::transaction_base& tx) -> Json {
      if (!sql::task_result(tx, options.scope, run_id))
        throw HttpError(404, "not_found", "no task " + run_id + " in scope " + options.scope);
      std::vector<Json> rows = dash::task_history(tx, options.scope, run_id, after, limit + 1);
      const bool more = rows.size() > static_cast<std::size_t>(limit);
      if (more) rows.resize(static_cast<std::size_t>(limit));
      return Json{{"run_id", run_id}, {"entries", rows}, {"has_more", more}};
    });
  }

  // --- actions ---------------------------------------------------------------
  // Refuses a request another site could have made: it must carry the session's
  // CSRF token (only a same-origin page can read it from /api/session) and a JSON
  // body (a cross-site form cannot send one without a preflight, which this
  // server never allows), and must not come from another origin.
  void check_same_origin(const httplib::Request& req) const {
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    if (!site.empty() && site != "same-origin")
      throw HttpError(403, "cross_site_refused",
                      "cross-site request refused (Sec-Fetch-Site: " + site + ")");
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && origin != "http://" + req.get_header_value("Host"))
      throw HttpError(403, "cross_site_refused",
                      "cross-site request refused (Origin: " + origin + ")");
    if (!same_secret(req.get_header_value(kCsrfHeader), csrf_token))
      throw HttpError(403, "cross_site_refused",
                      std::string("missing or wrong ") + kCsrfHeader + " header");
    const std::string type = req.get_header_value("Content-Type");
    if (type.rfind("application/json", 0) != 0)
      throw HttpError(415, "cross_site_refused", "actions take a JSON body (application/json)");
  }

  template <typename Fn>
  void action(const httplib::Request& req, httplib::Response& res, Fn&& fn) {
    answer(res, [&] {
      check_same_origin(req);
      if (!options.allow_actions)
        throw HttpError(403, "actions_disabled",
                        "actions are off: start docketctl serve with --allow-actions");
      return fn(json_body(req));
    });
  }

  Json cancel(const std::string& run_id, const Json& body) {
    const std::optional<std::string> reason = string_field(body, "reason");
    const bool cancelled = write([&](pqxx::transaction_base& tx) {
      return sql::cancel_task(tx, options.scope, run_id, reason);
    });
    return {{"run_id", run_id}, {"cancelled", cancelled}};
  }

  Json retry(const std::string& run_id) {
    const Json run = write([&](pqxx::transaction_base& tx) {
      return sql::retry_poisoned_run(tx, options.scope, run_id);
    });
    return {{"run_id", run_id}, {"status", run.is_object() ? run.value("status", Json()) : Json()}};
  }

  Json emit(const Json& body) {
    const std::optional<std::string> name = string_field(body, "name");
    if (!name || name->empty()) throw HttpError(400, "bad_request", "name is required");
    // An event belongs to an owner scope: the server's own when it is bound to
    // one, else the one asked for (tenantless by default).
    std::optional<std::string> owner = string_field(body, "scope");
    if (options.scope != "system") {
      if (owner && *owner != options.scope)
        throw HttpError(403, "scope_refused", "this server serves scope " + options.scope);
      owner = options.scope;
    }
    const std::string scope = owner.value_or("tenantless");
    const Json payload = body.contains("payload") ? body["payload"] : Json();
    const bool emitted = write(
        [&](pqxx::transaction_base& tx) { return sql::emit_event(tx, *name, payload, scope); });
    return {{"event", *name}, {"scope", scope}, {"emitted", emitted}};
  }

  // --- safety before routing ---------------------------------------------------
  bool host_allowed(const httplib::Request& req) const {
    if (!is_loopback(listen.host)) return true;  // the token is the guard then
    const std::string host = req.get_header_value("Host");
    const std::string port = ":" + std::to_string(this->port);
    for (const char* name : {"127.0.0.1", "localhost", "[::1]"})
      if (host == std::string(name) + port) return true;
    return host == listen.host + port;
  }

  bool authorized(const httplib::Request& req) const {
    if (token.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    if (header.rfind("Bearer ", 0) == 0 && same_secret(trim(header.substr(7)), token)) return true;
    const std::optional<std::string> from_cookie = cookie(req, kTokenCookie);
    return from_cookie && same_secret(*from_cookie, token);
  }

  httplib::Server::HandlerResponse before_routing(const httplib::Request& req,
                                                  httplib::Response& res) {
    security_headers(res);
    if (!host_allowed(req)) {
      send_error(res, 421, "host_refused",
                 "Host \"" + req.get_header_value("Host") + "\" is not this server's address");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
    // A page opened as /?token=...: the token moves to an HttpOnly cookie and
    // out of the address bar.
    if (req.method == "GET" && req.path.rfind("/api/", 0) != 0 && req.has_param("token") &&
        same_secret(req.get_param_value("token"), token)) {
      res.set_header("Set-Cookie", std::string(kTokenCookie) + "=" + token +
                                       "; Path=/; HttpOnly; SameSite=Strict");
      res.set_redirect("/", 303);
      return httplib::Server::HandlerResponse::Handled;
    }
    res.set_header("WWW-Authenticate", "Bearer realm=\"docket\"");
    send_error(res, 401, "unauthorized",
               "a bearer token is required (Authorization: Bearer, or open /?token=...)");
    return httplib::Server::HandlerResponse::Handled;
  }

  // --- routes ----------------------------------------------------------------
  void routes() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return before_routing(req, res);
    });
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.body.empty() && req.path.rfind("/api/", 0) == 0)
        send_error(res, res.status, "not_found",
                   "no such endpoint: " + req.method + " " + req.path);
    });
    http.set_payload_max_length(1 << 20);

    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      const Asset* page = find_asset("index.html");
      res.set_content(page->data, page->size, page->content_type);
    });
    http.Get(R"(/assets/([A-Za-z0-9._-]+))",
             [](const httplib::Request& req, httplib::Response& res) {
               const Asset* asset = find_asset(req.matches[1]);
               if (asset == nullptr) {
                 res.status = 404;
                 res.set_content("not found", "text/plain");
                 return;
               }
               res.set_content(asset->data, asset->size, asset->content_type);
             });

    http.Get("/api/session", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, [&] {
        const auto [version, now] = read([&](pqxx::transaction_base& tx) {
          return std::make_pair(sql::schema_version(tx), dash::now(tx));
        });
        return Json{{"scope", options.scope},           {"now", now},
                    {"actions", options.allow_actions}, {"csrf_token", csrf_token},
                    {"schema_version", version},        {"poll_interval_ms", 2000}};
      });
    });
    http.Get("/api/overview", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, [&] { return overview_json(); });
    });
    http.Get("/api/tasks", [this](const httplib::Request& req, httplib::Response& res) {
      answer(res, [&] { return tasks_json(req); });
    });
    http.Get(R"(/api/tasks/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      answer(res, [&] { return task_json(req.matches[1]); });
    });
    http.Get(R"(/api/tasks/([^/]+)/history)",
             [this](const httplib::Request& req, httplib::Response& res) {
               answer(res, [&] { return history_json(req.matches[1], req); });
             });
    http.Get("/api/poisoned", [this](const httplib::Request& req, httplib::Response& res) {
      answer(res, [&] {
        const int limit = int_param(req, "limit", 100, 1, 1000);
        const std::vector<Json> rows = read([&](pqxx::transaction_base& tx) {
          return dash::poisoned_runs(tx, options.scope, limit);
        });
        return Json{{"scope", options.scope}, {"entries", rows}};
      });
    });
    http.Get("/api/schedules", [this](const httplib::Request&, httplib::Response& res) {
      answer(res, [&] {
        const std::vector<Json> rows = read(
            [&](pqxx::transaction_base& tx) { return dash::list_schedules(tx, options.scope); });
        return Json{{"scope", options.scope}, {"entries", rows}};
      });
    });

    http.Post(R"(/api/tasks/([^/]+)/cancel)",
              [this](const httplib::Request& req, httplib::Response& res) {
                action(req, res, [&](const Json& body) { return cancel(req.matches[1], body); });
              });
    http.Post(R"(/api/poisoned/([^/]+)/retry)",
              [this](const httplib::Request& req, httplib::Response& res) {
                action(req, res, [&](const Json&) { return retry(req.matches[1]); });
              });
    http.Post("/api/events", [this](const httplib::Request& req, httplib::Response& res) {
      action(req, res, [&](const Json& body) { return emit(body); });
    });
  }
};

Server::Server(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() = default;

int Server::bind() {
  const int port =
      impl_->listen.port == 0
          ? impl_->http.bind_to_any_port(impl_->listen.host)
          : (impl_->http.bind_to_port(impl_->listen.host, impl_->listen.port) ? impl_->listen.port
                                                                              : -1);
  if (port <= 0) throw std::runtime_error("cannot listen on " + impl_->options.listen);
  impl_->port = port;
  return port;
}

void Server::serve() {
  {
    std::lock_guard<std::mutex> lock(impl_->serve_mutex);
    if (impl_->stop_requested) return;
    impl_->serving = true;
  }
  impl_->http.listen_after_bind();
  impl_->serving = false;
}

void Server::stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->serve_mutex);
    impl_->stop_requested = true;
    if (!impl_->serving) return;
  }
  // serve() is on its way into the accept loop: wait until it runs, then end it.
  while (impl_->serving && !impl_->http.is_running()) std::this_thread::yield();
  impl_->http.stop();
}

std::string Server::url() const {
  const std::string& host = impl_->listen.host;
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return "http://" + shown + ":" + std::to_string(impl_->port) + "/";
}

int run(const Options& options) {
  // SIGINT and SIGTERM are taken by one thread (sigwait), blocked in every other.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Server server(options);
  server.bind();
  std::cout << "docket dashboard on " << server.url() << " (scope " << options.scope << ", actions "
            << (options.allow_actions ? "on" : "off")
            << (options.token_file.empty() ? "" : ", token required") << ")" << std::endl;
  if (!options.token_file.empty())
    std::cout << "open " << server.url() << "?token=<the token in " << options.token_file
              << "> once in the browser, or send Authorization: Bearer <token>" << std::endl;
  else if (!is_loopback(parse_listen(options.listen).host))
    std::cerr << "docketctl serve: warning: listening beyond loopback without --token-file"
              << std::endl;
  std::atomic<bool> signalled{false};
  std::atomic<bool> served{false};
  std::thread waiter([&] {
    const timespec tick{0, 200L * 1000 * 1000};
    while (!served) {
      if (sigtimedwait(&signals, nullptr, &tick) > 0) {
        signalled = true;
        server.stop();
        return;
      }
    }
  });
  server.serve();
  served = true;
  waiter.join();
  return signalled ? 0 : 1;
}

}  // namespace docket::serve
