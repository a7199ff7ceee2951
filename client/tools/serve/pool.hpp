// A fixed pool of database connections for docketctl serve: at most `size`
// connections whatever the number of viewers or requests. A connection is
// opened on first use, prepared with the sql boundary's statements, and
// replaced after it broke.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace docket::serve {

class ConnectionPool {
 public:
  ConnectionPool(std::string dsn, int size);

  // Runs fn(connection) on a pooled connection; waits for a free one up to
  // `wait` (then docket::ConnectionLost). The connection is dropped when fn
  // leaves it broken.
  template <typename Fn>
  auto with(Fn&& fn, std::chrono::milliseconds wait = std::chrono::seconds(10)) {
    Lease lease(*this, wait);
    return fn(*lease.connection);
  }

  int size() const { return static_cast<int>(slots_.size()); }

 private:
  struct Lease {
    Lease(ConnectionPool& pool, std::chrono::milliseconds wait);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ConnectionPool& pool;
    std::size_t slot = 0;
    pqxx::connection* connection = nullptr;
  };

  std::unique_ptr<pqxx::connection> open() const;

  std::string dsn_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<pqxx::connection>> slots_;
  std::vector<bool> busy_;
};

}  // namespace docket::serve
