#include "pool_shared.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

#include "docket/errors.hpp"
#include "docket/sql.hpp"

namespace docket::detail {

WakePipe::WakePipe() {
  if (::pipe2(fds_, O_NONBLOCK | O_CLOEXEC) != 0)
    throw std::runtime_error("docket: cannot create the poller's wake pipe");
}

WakePipe::~WakePipe() {
  ::close(fds_[0]);
  ::close(fds_[1]);
}

void WakePipe::signal() noexcept {
  const char byte = 1;
  // A full pipe already wakes the poller: EAGAIN is fine.
  while (::write(fds_[1], &byte, 1) < 0 && errno == EINTR) {
  }
}

void WakePipe::drain() noexcept {
  char buffer[64];
  while (true) {
    const ssize_t n = ::read(fds_[0], buffer, sizeof buffer);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return;
  }
}

std::unique_ptr<pqxx::connection> connect(const std::string& conninfo) {
  try {
    auto connection = std::make_unique<pqxx::connection>(conninfo);
    sql::prepare(*connection);
    return connection;
  } catch (...) {
    sql::rethrow_mapped(false);
  }
}

ConnectionPool::ConnectionPool(std::string conninfo, std::size_t max_idle)
    : conninfo_(std::move(conninfo)), max_idle_(max_idle) {}

std::unique_ptr<pqxx::connection> ConnectionPool::acquire() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<pqxx::connection> connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  return connect(conninfo_);
}

void ConnectionPool::give_back(std::unique_ptr<pqxx::connection> connection) noexcept {
  if (!connection || !connection->is_open()) return;
  std::unique_ptr<pqxx::connection> dropped;
  const std::lock_guard<std::mutex> lock(mutex_);
  if (closed_ || idle_.size() >= max_idle_) {
    dropped = std::move(connection);  // closed after the lock is released
    return;
  }
  idle_.push_back(std::move(connection));
}

void ConnectionPool::close() noexcept {
  std::vector<std::unique_ptr<pqxx::connection>> idle;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    idle.swap(idle_);
  }
}

namespace {
WorkerPoolOptions with_logger(WorkerPoolOptions options) {
  if (!options.logger) options.logger = stderr_logger(LogLevel::info);
  return options;
}
}  // namespace

PoolShared::PoolShared(TaskCatalog catalog_in, WorkerPoolOptions options_in)
    : catalog(std::move(catalog_in)),
      options(with_logger(std::move(options_in))),
      connections(options.conninfo, static_cast<std::size_t>(options.concurrency)) {}

void PoolShared::log(LogLevel level, const std::string& message) const noexcept {
  try {
    options.logger->log(level, message);
  } catch (...) {
    // A failing logger must not take a runner or the poller down.
  }
}

void PoolShared::free_slot() noexcept {
  active_.fetch_sub(1);
  { const std::lock_guard<std::mutex> lock(mutex_); }  // no lost wake-up in wait_until
  changed_.notify_all();
  poller_wake.signal();
}

void PoolShared::runner_finished() noexcept {
  { const std::lock_guard<std::mutex> lock(mutex_); }
  changed_.notify_all();
}

bool PoolShared::release_claim(pqxx::connection_base& connection, const std::string& run_id,
                               const std::string& claim_token) noexcept {
  try {
    sql::in_transaction(connection, true, [&](pqxx::transaction_base& tx) {
      // The stuck runner may hold the row inside a transaction: do not wait for it.
      tx.exec("SET LOCAL lock_timeout = '2s'");
      sql::release_claim(tx, run_id, claim_token);
    });
    return true;
  } catch (const std::exception& e) {
    log(LogLevel::warning, "could not release the claim of run " + run_id +
                               " (it expires after its lease): " + e.what());
    return false;
  }
}

}  // namespace docket::detail
