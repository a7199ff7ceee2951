// docketctl serve: docket's web dashboard. An HTTP server (cpp-httplib) with a
// JSON API under /api/ and a single-page UI whose assets, Chart.js included,
// are compiled into the binary: nothing is loaded from elsewhere.
//
// It reads the database through the client's sql boundary on a small fixed
// pool of connections, whatever the number of viewers; pages poll the API
// every 2 s, and the overview is computed at most once per overview_cache for
// all of them. A sampler reads docket.queue_stats once per sample_interval to
// build the completions/failures-per-minute series of the last hour.
//
// Safety: loopback by default (and then only Host headers naming loopback, so
// a rebound DNS name cannot read it); an optional bearer token (token_file)
// protects pages and API; actions (retry a poisoned run, cancel a task, emit
// an event) exist only with allow_actions, and every action POST must carry
// the session's CSRF token in X-Docket-CSRF, a JSON body, and no cross-site
// Origin or Sec-Fetch-Site. Every read and action runs in `scope`, under the
// connection's role; no response carries a claim token.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace docket::serve {

struct Options {
  std::string dsn;                        // libpq conninfo ("" = PG* environment)
  std::string listen = "127.0.0.1:8080";  // host:port; port 0 = any free port
  bool allow_actions = false;
  std::string token_file;        // "" = no token
  std::string scope = "system";  // docket scope of every read and action
  int connections = 3;           // the fixed pool's size
  std::chrono::milliseconds sample_interval{60000};
  std::chrono::milliseconds overview_cache{1000};
};

class Server {
 public:
  // Reads the token file, opens the pool and takes the first sample; throws
  // std::runtime_error (bad options) or docket::Error (the database).
  explicit Server(Options options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listen address; returns the port (the chosen one for port 0).
  int bind();
  // Serves until stop() (from another thread); bind() first.
  void serve();
  void stop();
  // http://host:port/ of the bound server.
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs a Server until SIGINT or SIGTERM; prints the URL. Returns the exit code.
int run(const Options& options);

}  // namespace docket::serve
