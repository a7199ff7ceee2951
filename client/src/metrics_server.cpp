#include "metrics_server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <utility>

namespace docket::detail {

std::pair<std::string, int> parse_listen_address(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos)
    throw std::invalid_argument("metrics_address must be host:port, not '" + address + "'");
  std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  if (!port_text.empty() && port_text.size() <= 5 &&
      port_text.find_first_not_of("0123456789") == std::string::npos)
    port = std::stoi(port_text);
  if (port < 0 || port > 65535)
    throw std::invalid_argument("metrics_address: bad port in '" + address + "'");
  return {host, port};
}

MetricsServer::MetricsServer(std::function<std::string()> render) : render_(std::move(render)) {}

MetricsServer::~MetricsServer() {
  stop();
}

int MetricsServer::start(const std::string& address) {
  const auto [host, port] = parse_listen_address(address);
  server_ = std::make_unique<httplib::Server>();
  server_->new_task_queue = [] { return new httplib::ThreadPool(1); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second
  // pool on the same port would share it silently instead of failing to start.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->set_keep_alive_max_count(1);
  server_->set_read_timeout(5, 0);
  server_->set_write_timeout(5, 0);
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(render_(), "text/plain; version=0.0.4; charset=utf-8");
  });
  const int bound = port == 0 ? server_->bind_to_any_port(host) : port;
  if (bound < 0 || (port != 0 && !server_->bind_to_port(host, port))) {
    server_.reset();
    throw std::runtime_error("metrics_address: cannot listen on " + address);
  }
  auto finished = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([server = server_.get(), finished] {
    server->listen_after_bind();
    finished->store(true);
  });
  // stop() before the server runs would be lost (httplib ignores it): wait until it runs.
  while (!server_->is_running() && !finished->load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!server_->is_running()) {
    stop();
    throw std::runtime_error("metrics_address: the listener on " + address + " did not start");
  }
  return bound;
}

void MetricsServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace docket::detail
