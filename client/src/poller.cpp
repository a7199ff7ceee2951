#include "poller.hpp"

#include <poll.h>

#include <algorithm>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "docket/errors.hpp"

namespace docket::detail {

namespace {

constexpr const char* kDueChannel = "docket_due";
constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::milliseconds kMaxBackoff{5000};
// A spawn the debounce suppressed commits a little after its decision.
constexpr std::chrono::milliseconds kTrailingMargin{10};

// NOTIFY docket_due carries the queue that has due work; other queues are not ours.
class DueReceiver final : public pqxx::notification_receiver {
 public:
  DueReceiver(pqxx::connection_base& connection, std::string queue, bool& due)
      : pqxx::notification_receiver(connection, kDueChannel), queue_(std::move(queue)), due_(due) {}
  void operator()(const std::string& payload, int) override {
    if (payload == queue_) due_ = true;
  }

 private:
  const std::string queue_;
  bool& due_;
};

}  // namespace

Poller::Poller(std::shared_ptr<PoolShared> pool, RunnerHost& host,
               std::unique_ptr<pqxx::connection> connection)
    : pool_(std::move(pool)),
      host_(host),
      connection_(std::move(connection)),
      prefetch_(pool_->options.prefetch, pool_->options.max_prefetch) {}

Poller::~Poller() {
  stop();
}

void Poller::start() {
  thread_ = std::thread([this] {
    name_thread("docket-poller");
    run();
  });
  if (pool_->options.claim_connections > 1)
    assistant_ = std::thread([this] {
      name_thread("docket-claimer");
      assist();
    });
  if (pool_->options.await_tasks)
    waker_ = std::thread([this] {
      name_thread("docket-waker");
      wake_loop();
    });
}

void Poller::end_backlog() {
  if (!busy_.exchange(false)) return;
  pool_->nudge();
  { const std::lock_guard<std::mutex> lock(idle_mutex_); }  // no lost wake-up
  idle_cv_.notify_all();
}

void Poller::stop() {
  stopping_.store(true);
  pool_->poller_wake.signal();
  pool_->nudge();
  { const std::lock_guard<std::mutex> lock(idle_mutex_); }
  idle_cv_.notify_all();
  {
    // A wait in await_tasks ends with its timeout; cancel it rather than wait.
    const std::lock_guard<std::mutex> lock(waker_mutex_);
    if (waker_connection_ != nullptr) {
      try {
        waker_connection_->cancel_query();
      } catch (const std::exception&) {
        // The wait then ends at its timeout (at most 100 ms).
      }
    }
  }
  if (thread_.joinable()) thread_.join();
  if (assistant_.joinable()) assistant_.join();
  if (waker_.joinable()) waker_.join();
}

int Poller::capacity() const noexcept {
  return pool_->options.concurrency + prefetch_.prefetch();
}

int Poller::refill_at() const {
  return std::max(1, std::min(pool_->options.batch_size, capacity()) / 2);
}

bool Poller::refill_due() const {
  const int free = capacity() - pool_->active();
  return free >= refill_at() || (free > 0 && pool_->local.looks_empty());
}

void Poller::assist() {
  const WorkerPoolOptions& options = pool_->options;
  std::unique_ptr<pqxx::connection> connection;
  std::chrono::milliseconds backoff = kFirstBackoff;
  while (!stopping_.load()) {
    const bool ready = pool_->wait_until(Clock::now() + options.poll_interval, [&] {
      return stopping_.load() || (busy_.load() && capacity() - pool_->active() >= refill_at());
    });
    if (stopping_.load() || !ready) continue;
    const int reserved = pool_->reserve_slots(options.batch_size, capacity());
    if (reserved == 0) continue;
    try {
      if (!connection) {
        connection = connect(options);
        connection->set_variable("application_name", "'docket_claimer'");
        if (options.claim_async_commit) connection->set_variable("synchronous_commit", "off");
      }
      if (claim(*connection, reserved) < reserved) end_backlog();
      backoff = kFirstBackoff;
    } catch (const std::exception& e) {
      // claim() gave the reserved slots back; the poller claims alone meanwhile.
      pool_->log(LogLevel::warning, "claimer of queue " + options.queue + ": " + e.what() +
                                        "; reconnecting in " + std::to_string(backoff.count()) +
                                        " ms");
      connection.reset();
      const Clock::time_point until = Clock::now() + backoff;
      pool_->wait_until(until, [&] { return stopping_.load(); });
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }
}

void Poller::wake_loop() {
  const WorkerPoolOptions& options = pool_->options;
  std::chrono::milliseconds backoff = kFirstBackoff;
  bool closed = false;
  while (!stopping_.load() && !closed) {
    std::unique_ptr<pqxx::connection> connection;
    try {
      connection = connect(options);
      connection->set_variable("application_name", "'docket_waker'");
      if (options.claim_async_commit) connection->set_variable("synchronous_commit", "off");
      const bool available = autocommit(
          *connection, false, [](pqxx::transaction_base& tx) { return sql::has_await_tasks(tx); });
      if (!available) {
        pool_->log(LogLevel::info, "queue " + options.queue +
                                       ": the server's docket has no await_tasks; waking by "
                                       "NOTIFY and polls only");
        return;
      }
      {
        const std::lock_guard<std::mutex> lock(waker_mutex_);
        waker_connection_ = connection.get();
      }
      backoff = kFirstBackoff;  // connected: a later failure starts over
      wake_serve(*connection);
      closed = true;  // it returns when stopping or when claims are closed (OnStuck::exit)
    } catch (const std::exception& e) {
      if (!stopping_.load()) {
        pool_->log(LogLevel::warning, "waker of queue " + options.queue + ": " + e.what() +
                                          "; reconnecting in " + std::to_string(backoff.count()) +
                                          " ms");
      }
    }
    waker_serving_.store(false);
    {
      const std::lock_guard<std::mutex> lock(waker_mutex_);
      waker_connection_ = nullptr;
    }
    connection.reset();
    if (stopping_.load() || closed) break;
    pool_->wait_until(Clock::now() + backoff, [&] { return stopping_.load(); });
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

void Poller::wake_serve(pqxx::connection& connection) {
  const WorkerPoolOptions& options = pool_->options;
  // A wait ends at least every poll_interval, at most 100 ms: the snapshot its
  // statement holds is never old (detail::waker_wait_ms).
  const int timeout_ms = detail::waker_wait_ms(options);
  // After a wake-up that claimed nothing (rows another claimer has locked and
  // not yet committed, plain runs of the queue handed back), await_tasks may find
  // that work again at once: pause 1 ms, doubling while fruitless wake-ups come
  // back to back, up to poll_interval.
  Clock::duration pause = Clock::duration::zero();
  Clock::time_point last_fruitless = Clock::now() - std::chrono::hours(1);
  // A wait on fewer slots than a claim would take is short (waker_timeout_ms).
  int partial_ms = detail::kWakerFirstPartialWaitMs;
  waker_serving_.store(true);
  while (!stopping_.load()) {
    if (pause > Clock::duration::zero()) {
      const Clock::time_point until = Clock::now() + pause;
      pool_->wait_until(until, [&] { return stopping_.load(); });
      if (stopping_.load()) break;
    }
    // Only while a wake-up can be used: a free slot and no backlog (the
    // claimers are at it then). A backlog is waited out on idle_cv_: on the
    // pool's condition, every task that finishes meanwhile would wake this
    // thread for nothing (measured: about two thread switches per task).
    if (pool_->claims_closed()) break;
    if (busy_.load()) {
      std::unique_lock<std::mutex> lock(idle_mutex_);
      idle_cv_.wait_until(lock, Clock::now() + options.poll_interval,
                          [&] { return stopping_.load() || !busy_.load(); });
      continue;
    }
    const bool idle = pool_->wait_until(Clock::now() + options.poll_interval, [&] {
      return stopping_.load() || pool_->claims_closed() || busy_.load() ||
             capacity() - pool_->active() > 0;
    });
    if (stopping_.load() || pool_->claims_closed()) break;
    if (!idle || busy_.load()) continue;
    // The slots are reserved while it waits: work that becomes due meanwhile
    // wakes this wait, and the claim at its timeout is a poll (timers that
    // fell due, expired claims), so the poller has nothing to claim meanwhile.
    const int reserved = pool_->reserve_slots(options.batch_size, capacity());
    if (reserved == 0) continue;
    const int wanted = std::min(options.batch_size, capacity());
    const int got = claim(connection, reserved,
                          detail::waker_timeout_ms(timeout_ms, reserved, wanted, partial_ms));
    if (got < 0) {
      pause = Clock::duration::zero();  // the wait timed out
      if (reserved < wanted) partial_ms = std::min(partial_ms * 2, timeout_ms);
      continue;
    }
    partial_ms = detail::kWakerFirstPartialWaitMs;
    if (got == 0) {
      // Back to back (within twice the pause): double it; else start at 1 ms
      // (another claimer took this wake-up's work: nothing to back off from).
      const Clock::time_point now = Clock::now();
      const Clock::duration first = std::chrono::milliseconds(1);
      pause = now - last_fruitless <= 2 * pause + std::chrono::milliseconds(10)
                  ? std::min<Clock::duration>(std::max(pause * 2, first), options.poll_interval)
                  : first;
      last_fruitless = now;
      continue;
    }
    pause = Clock::duration::zero();
    if (got == reserved) pool_->poller_wake.signal();  // a full batch: the poller claims the rest
  }
}

void Poller::run() {
  std::chrono::milliseconds backoff = kFirstBackoff;
  while (!stopping_.load()) {
    bool claimed = false;
    try {
      serve(claimed);
    } catch (const std::exception& e) {
      AtomicCounters::add(pool_->counters.poller_restarts);
      if (claimed) backoff = kFirstBackoff;  // it worked before it broke
      pool_->log(LogLevel::warning, "poller of queue " + pool_->options.queue + ": " + e.what() +
                                        "; restarting in " + std::to_string(backoff.count()) +
                                        " ms");
      connection_.reset();
      const auto until = Clock::now() + backoff;
      while (!stopping_.load() && Clock::now() < until) {
        wait(-1, std::chrono::duration_cast<std::chrono::microseconds>(until - Clock::now()));
      }
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }
  connection_.reset();
}

void Poller::serve(bool& claimed) {
  const WorkerPoolOptions& options = pool_->options;
  if (!connection_) connection_ = connect(options);
  connection_->set_variable("application_name", "'docket_poller'");
  // WorkerPoolOptions::claim_async_commit: a claim needs no flush of its own.
  if (options.claim_async_commit) connection_->set_variable("synchronous_commit", "off");
  std::unique_ptr<DueReceiver> receiver;
  if (options.listen) receiver = std::make_unique<DueReceiver>(*connection_, options.queue, due_);
  // The runners outlive a poller: capacity comes from those still holding a slot.
  pool_->log(LogLevel::debug, "poller of queue " + options.queue + " started with " +
                                  std::to_string(host_.live_runners()) + " live runners");

  // A freed slot alone does not make a claim worth it while work is queued:
  // wait until half a batch can be claimed (or the queue ran dry).
  bool claim_now = true;
  std::uint64_t freed_seen = pool_->slots_freed();
  Clock::time_point last_poll = Clock::now();
  Clock::time_point window_end = Clock::time_point::min();  // of the last NOTIFY's debounce
  while (!stopping_.load()) {
    host_.reap();
    // The next time the loop must wake for its own timers: a queued claim's
    // hand-back, the next firing of schedules.
    const Clock::time_point timer_at = std::min(release_stale_claims(), fire_schedules());
    if (claim_now) {
      claim_now = false;
      last_poll = Clock::now();
      const int limit = pool_->reserve_slots(options.batch_size, capacity());
      if (limit > 0) {
        const int got = claim(*connection_, limit);
        claimed = true;
        if (got == limit) {                           // a full batch: there is probably more
          if (!busy_.exchange(true)) pool_->nudge();  // the assistant claims too
          claim_now = true;
          continue;
        }
        end_backlog();  // the waker may wait again
      }
    }
    connection_->get_notifs();  // includes what arrived during the claim
    if (due_) {
      due_ = false;
      // The waker was woken by the same commit (or finds its work when it next
      // waits): a claim here would race it for the same rows.
      if (waker_serving_.load()) continue;
      claim_now = true;
      // The producer's later spawns within its debounce window send no NOTIFY:
      // cover the window (hot polls) and claim once more after it (trailing edge).
      window_end = Clock::now() + options.notify_debounce + kTrailingMargin;
      continue;
    }
    const Clock::time_point now = Clock::now();
    Clock::time_point next_claim = last_poll + options.poll_interval;
    if (window_end != Clock::time_point::min()) {
      if (last_poll >= window_end || waker_serving_.load()) {
        // The trailing-edge claim is done, or the waker covers the rest.
        window_end = Clock::time_point::min();
      } else {
        const Clock::duration hot = options.debounce_poll_interval;
        next_claim = std::min(next_claim, hot > Clock::duration::zero()
                                              ? std::min(last_poll + hot, window_end)
                                              : window_end);
      }
    }
    if (next_claim <= now) {
      claim_now = true;
      continue;
    }
    Clock::duration until_next = next_claim - now;
    if (timer_at != Clock::time_point::max()) {
      until_next = std::min(until_next, std::max(Clock::duration::zero(), timer_at - now));
    }
    const auto timeout = std::chrono::ceil<std::chrono::microseconds>(until_next);
    // Woken by a freed slot only when a refill is due (the test below): set
    // before the slots are read again, so a slot freed in between still wakes.
    // A slot freed before that (since the slots were last looked at) is
    // looked at here, as the wake-up it did not send.
    pool_->wake_poller_at(capacity() - refill_at());
    if (const std::uint64_t freed = pool_->slots_freed(); freed != freed_seen) {
      freed_seen = freed;
      if (refill_due()) {
        pool_->wake_poller_at(PoolShared::kPollerBusy);
        claim_now = true;
        continue;
      }
    }
    const Woken woken = wait(connection_->sock(), timeout);
    pool_->wake_poller_at(PoolShared::kPollerBusy);
    switch (woken) {
      case Woken::stopping:
        break;
      case Woken::pipe:  // a slot was freed: refill
        freed_seen = pool_->slots_freed();
        if (refill_due()) claim_now = true;
        break;
      case Woken::socket:  // a notification (or a broken connection): read it above
      case Woken::timeout:
        break;
    }
  }
  receiver.reset();
}

int Poller::claim(pqxx::connection& connection, int reserved, int await_ms) {
  const WorkerPoolOptions& options = pool_->options;
  const Clock::time_point started = Clock::now();
  std::vector<sql::ClaimedTask> tasks;
  try {
    tasks = autocommit(connection, true, [&](pqxx::transaction_base& tx) {
      if (await_ms < 0) {
        return sql::claim_tasks(tx, options.queue, reserved, options.lease.count(),
                                options.max_claim_attempts);
      }
      return sql::await_tasks(tx, options.queue, reserved, options.lease.count(),
                              options.max_claim_attempts, await_ms);
    });
  } catch (...) {
    // stop() cancels the waker's wait: not an error.
    if (!stopping_.load()) AtomicCounters::add(pool_->counters.claim_errors);
    pool_->unreserve_slots(reserved);
    throw;
  }
  const Clock::time_point done = Clock::now();
  if (await_ms < 0) {
    pool_->counters.claim_seconds.observe(nanos_since(started));
    prefetch_.observe(done - started, pool_->counters.started.load(), done);
  } else if (tasks.empty() && done - started >= std::chrono::milliseconds(await_ms)) {
    // The wait timed out. (An awaited claim's duration includes its wait: it
    // is neither a claim latency nor a prefetch sample.)
    pool_->unreserve_slots(reserved);
    return -1;
  }
  // The lease began no earlier (after an awaited claim's wait, later: its
  // claims are released half a lease after the call began, a little early).
  const Clock::time_point claimed_at = started;
  const int got = static_cast<int>(tasks.size());
  pool_->unreserve_slots(reserved - got);
  std::vector<QueuedClaim> queued;
  queued.reserve(tasks.size());
  for (sql::ClaimedTask& task : tasks) queued.push_back(QueuedClaim{std::move(task), claimed_at});
  pool_->counters.claimed.fetch_add(static_cast<std::uint64_t>(got));
  pool_->local.push_all(std::move(queued));
  return got;
}

Clock::time_point Poller::fire_schedules() {
  const WorkerPoolOptions& options = pool_->options;
  if (!options.fire_schedules) return Clock::time_point::max();
  const Clock::time_point now = Clock::now();
  if (now < next_fire_) return next_fire_;
  next_fire_ = now + options.schedule_interval;
  try {
    const int fired = autocommit(
        *connection_, true, [](pqxx::transaction_base& tx) { return sql::fire_schedules(tx); });
    AtomicCounters::add(pool_->counters.schedule_checks);
    if (fired > 0) {
      pool_->counters.fired.fetch_add(static_cast<std::uint64_t>(fired));
      pool_->log(LogLevel::debug, "poller of queue " + options.queue + " fired " +
                                      std::to_string(fired) + " schedule(s)");
    }
  } catch (const Ambiguous&) {
    throw;  // the connection broke: reconnect (the firing committed or not; a tick spawns once)
  } catch (const ConnectionLost&) {
    throw;
  } catch (const std::exception& e) {
    // Say a role without the grants: claiming goes on; try again next interval.
    pool_->log(LogLevel::warning,
               "poller of queue " + options.queue + ": firing schedules failed: " + e.what());
  }
  return next_fire_;
}

Clock::time_point Poller::release_stale_claims() {
  const Clock::duration half_lease = pool_->options.lease / 2;
  const std::vector<QueuedClaim> stale =
      pool_->local.take_claimed_before(Clock::now() - half_lease);
  for (const QueuedClaim& claim : stale) {
    pool_->log(LogLevel::warning, "run " + claim.task.run_id +
                                      " waited half its lease in the local queue: claim released");
    pool_->release_unstarted(*connection_, claim);
  }
  const std::optional<Clock::time_point> oldest = pool_->local.oldest();
  return oldest ? *oldest + half_lease : Clock::time_point::max();
}

Poller::Woken Poller::wait(int socket, std::chrono::microseconds timeout) {
  pollfd fds[2] = {{pool_->poller_wake.fd(), POLLIN, 0}, {socket, POLLIN, 0}};
  const nfds_t count = socket >= 0 ? 2 : 1;
  const std::int64_t us =
      std::clamp<std::int64_t>(timeout.count(), 0, std::int64_t{INT_MAX} * 1000);
  const timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  const int ready = ::ppoll(fds, count, &ts, nullptr);
  if (stopping_.load()) return Woken::stopping;
  if (ready > 0 && fds[0].revents != 0) {
    pool_->poller_wake.drain();
    return Woken::pipe;
  }
  if (ready > 0) return Woken::socket;
  return Woken::timeout;
}

}  // namespace docket::detail
