// MetricsServer: the WorkerPool's optional HTTP listener
// (WorkerPoolOptions::metrics_address). GET /metrics answers the pool's metrics
// in the Prometheus text format; everything else is 404. One thread accepts,
// one serves (a scrape is a snapshot and a string: no need for more), and
// connections are not kept alive, so one idle scraper cannot hold the server.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace docket::detail {

class MetricsServer {
 public:
  // `render` produces the response body; called on the server's thread.
  explicit MetricsServer(std::function<std::string()> render);
  ~MetricsServer();  // stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds `address` ("host:port", "[v6]:port" or ":port" for every interface;
  // port 0 picks a free one) and starts serving; returns the bound port.
  // Throws std::invalid_argument for a malformed address, std::runtime_error
  // when it cannot bind.
  int start(const std::string& address);
  void stop();

 private:
  std::function<std::string()> render_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

// Splits "host:port" (see MetricsServer::start); throws std::invalid_argument.
std::pair<std::string, int> parse_listen_address(const std::string& address);

}  // namespace docket::detail
