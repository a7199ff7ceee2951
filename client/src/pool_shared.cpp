#include "pool_shared.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
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

void name_thread(const char* name) noexcept {
  ::pthread_setname_np(::pthread_self(), name);
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

std::unique_ptr<pqxx::connection> connect(const WorkerPoolOptions& options) {
  if (!options.connection_factory) return connect(options.conninfo);
  std::unique_ptr<pqxx::connection> connection;
  try {
    connection = options.connection_factory();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw ConnectionLost("", std::string("the connection factory failed: ") + e.what());
  }
  try {
    if (!connection || !connection->is_open())
      throw ConnectionLost("", "the connection factory returned no open connection");
    sql::prepare(*connection);
    return connection;
  } catch (...) {
    sql::rethrow_mapped(false);
  }
}

ConnectionPool::ConnectionPool(const WorkerPoolOptions& options, std::size_t size)
    : options_(options), size_(size) {}

std::unique_ptr<pqxx::connection> ConnectionPool::acquire() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    available_.wait(lock, [&] { return closed_ || !idle_.empty() || open_ < size_; });
    if (closed_) throw ConnectionLost("", "the worker pool is stopped");
    if (!idle_.empty()) {
      std::unique_ptr<pqxx::connection> connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
    ++open_;  // reserved: opened below, outside the lock
  }
  try {
    auto connection = connect(options_);
    connection->set_variable("application_name", "'docket_runner'");
    return connection;
  } catch (...) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      --open_;
    }
    available_.notify_one();
    sql::rethrow_mapped(false);
  }
}

void ConnectionPool::give_back(std::unique_ptr<pqxx::connection> connection) noexcept {
  std::unique_ptr<pqxx::connection> dropped;  // closed after the lock is released
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!connection) {
      if (open_ > 0) --open_;
    } else if (closed_ || !connection->is_open()) {
      dropped = std::move(connection);
      if (open_ > 0) --open_;
    } else {
      idle_.push_back(std::move(connection));
    }
  }
  available_.notify_one();
}

void ConnectionPool::close() noexcept {
  std::vector<std::unique_ptr<pqxx::connection>> idle;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    idle.swap(idle_);
    open_ -= std::min(open_, idle.size());
  }
  available_.notify_all();
}

std::size_t ConnectionPool::open() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

void LocalQueue::push_all(std::vector<QueuedClaim> claims) {
  if (claims.empty()) return;
  const std::size_t n = claims.size();
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (QueuedClaim& claim : claims) claims_.push_back(std::move(claim));
    count_.store(claims_.size());
    wake_parked(parked_, n);
  }
  if (n == 1)
    ready_.notify_one();
  else
    ready_.notify_all();
}

std::optional<QueuedClaim> LocalQueue::pop() {
  std::unique_lock<std::mutex> lock(mutex_);
  wait_for(lock, ready_, parked_, [&] { return closed_ || !claims_.empty(); });
  if (closed_) return std::nullopt;
  QueuedClaim claim = std::move(claims_.front());
  claims_.pop_front();
  count_.store(claims_.size());
  return claim;
}

std::vector<QueuedClaim> LocalQueue::take_claimed_before(Clock::time_point cutoff) {
  std::vector<QueuedClaim> out;
  const std::lock_guard<std::mutex> lock(mutex_);
  while (!claims_.empty() && claims_.front().claimed_at <= cutoff) {
    out.push_back(std::move(claims_.front()));
    claims_.pop_front();
  }
  count_.store(claims_.size());
  return out;
}

std::optional<Clock::time_point> LocalQueue::oldest() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (claims_.empty()) return std::nullopt;
  return claims_.front().claimed_at;
}

std::size_t LocalQueue::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return claims_.size();
}

std::vector<QueuedClaim> LocalQueue::close() {
  std::vector<QueuedClaim> out;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    for (QueuedClaim& claim : claims_) out.push_back(std::move(claim));
    claims_.clear();
    count_.store(0);
    wake_parked(parked_);
  }
  ready_.notify_all();
  return out;
}

int waker_wait_ms(const WorkerPoolOptions& options) {
  return static_cast<int>(std::clamp<std::int64_t>(options.poll_interval.count(), 1, kWakerWaitMs));
}

int waker_timeout_ms(int full_ms, int reserved, int wanted, int partial_ms) {
  return reserved < wanted ? std::clamp(partial_ms, 1, full_ms) : full_ms;
}

int flush_batch(const WorkerPoolOptions& options) {
  if (options.flush_max_batch == kAutoFlushBatch) return std::max(100, options.concurrency);
  return std::max(1, options.flush_max_batch);
}

namespace {
WorkerPoolOptions with_logger(WorkerPoolOptions options) {
  if (!options.logger) options.logger = stderr_logger(LogLevel::info);
  return options;
}

FlusherOptions flusher_options(const WorkerPoolOptions& options, PoolShared& pool) {
  FlusherOptions out;
  out.conninfo = options.conninfo;
  out.connect = [&pool] { return connect(pool.options); };
  out.max_batch = static_cast<std::size_t>(flush_batch(options));
  out.max_delay = options.flush_max_delay;
  out.async_commit = options.flush_async_commit;
  out.log = [&pool](LogLevel level, const std::string& message) { pool.log(level, message); };
  out.producers = [&pool] { return pool.running(); };
  out.connections = static_cast<std::size_t>(std::max(1, options.flush_connections));
  out.observe = [&pool](std::size_t items, std::chrono::nanoseconds took) {
    pool.counters.flush_size.observe(items);
    pool.counters.flush_seconds.observe(took.count() > 0 ? static_cast<std::uint64_t>(took.count())
                                                         : 0);
  };
  return out;
}
}  // namespace

PoolShared::PoolShared(TaskCatalog catalog_in, WorkerPoolOptions options_in)
    : catalog(std::move(catalog_in)),
      options(with_logger(std::move(options_in))),
      connections(options, static_cast<std::size_t>(std::max(1, options.runner_connections))),
      flusher(flusher_options(options, *this)) {}

void PoolShared::log(LogLevel level, const std::string& message) const noexcept {
  try {
    options.logger->log(level, message);
  } catch (...) {
    // A failing logger must not take a runner or the poller down.
  }
}

void PoolShared::free_slot() noexcept {
  const int active = active_.fetch_sub(1) - 1;
  freed_.fetch_add(1);
  { const std::lock_guard<std::mutex> lock(mutex_); }  // no lost wake-up in wait_until
  changed_.notify_all();
  const int wake_at = wake_at_active_.load();
  if (wake_at != kPollerBusy && (active <= wake_at || local.looks_empty())) poller_wake.signal();
}

int PoolShared::reserve_slots(int wanted, int capacity) noexcept {
  int active = active_.load();
  for (;;) {
    if (claims_closed_.load()) return 0;
    const int take = std::min(wanted, capacity - active);
    if (take <= 0) return 0;
    if (active_.compare_exchange_weak(active, active + take)) return take;
  }
}

void PoolShared::unreserve_slots(int count) noexcept {
  if (count <= 0) return;
  active_.fetch_sub(count);
  nudge();
}

void PoolShared::nudge() noexcept {
  { const std::lock_guard<std::mutex> lock(mutex_); }
  changed_.notify_all();
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

bool PoolShared::release_unstarted(pqxx::connection_base& connection,
                                   const QueuedClaim& claim) noexcept {
  bool ok = true;
  try {
    sql::in_transaction(connection, true, [&](pqxx::transaction_base& tx) {
      tx.exec("SET LOCAL lock_timeout = '2s'");
      sql::abandon_unstarted_claim(tx, claim.task.run_id, claim.task.claim_token,
                                   claim.task.checkpoint_seq);
    });
  } catch (const std::exception& e) {
    log(LogLevel::warning, "could not hand back the prefetched claim of run " + claim.task.run_id +
                               " (it expires after its lease): " + e.what());
    ok = false;
  }
  counters.released.fetch_add(1);
  free_slot();
  return ok;
}

}  // namespace docket::detail
