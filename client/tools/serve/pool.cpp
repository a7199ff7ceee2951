#include "pool.hpp"

#include "docket/errors.hpp"
#include "docket/sql.hpp"
#include "docket/sql_dashboard.hpp"

namespace docket::serve {

ConnectionPool::ConnectionPool(std::string dsn, int size)
    : dsn_(std::move(dsn)),
      slots_(static_cast<std::size_t>(size < 1 ? 1 : size)),
      busy_(slots_.size(), false) {}

std::unique_ptr<pqxx::connection> ConnectionPool::open() const {
  try {
    auto connection = std::make_unique<pqxx::connection>(dsn_);
    {
      // Timestamps as ISO-8601 in UTC; a runaway statement cannot hold a slot.
      pqxx::nontransaction tx(*connection);
      tx.exec(
          "SET application_name = 'docketctl serve'; SET TimeZone = 'UTC'; "
          "SET statement_timeout = '30s'");
    }
    sql::prepare(*connection);
    sql::dashboard::prepare(*connection);
    return connection;
  } catch (...) {
    sql::rethrow_mapped(false);
  }
}

ConnectionPool::Lease::Lease(ConnectionPool& owner, std::chrono::milliseconds wait) : pool(owner) {
  std::unique_lock<std::mutex> lock(pool.mutex_);
  const auto free_slot = [&] {
    for (std::size_t i = 0; i < pool.busy_.size(); ++i) {
      if (!pool.busy_[i]) {
        slot = i;
        return true;
      }
    }
    return false;
  };
  if (!pool.freed_.wait_for(lock, wait, free_slot))
    throw ConnectionLost("", "no database connection free (the pool is busy)");
  pool.busy_[slot] = true;
  std::unique_ptr<pqxx::connection>& held = pool.slots_[slot];
  if (!held || !held->is_open()) {
    lock.unlock();  // connecting takes a while: others may use their slots meanwhile
    try {
      std::unique_ptr<pqxx::connection> fresh = pool.open();
      lock.lock();
      held = std::move(fresh);
    } catch (...) {
      lock.lock();
      held.reset();
      pool.busy_[slot] = false;
      pool.freed_.notify_one();
      throw;
    }
  }
  connection = held.get();
}

ConnectionPool::Lease::~Lease() {
  std::lock_guard<std::mutex> lock(pool.mutex_);
  if (!connection->is_open()) pool.slots_[slot].reset();
  pool.busy_[slot] = false;
  pool.freed_.notify_one();
}

}  // namespace docket::serve
