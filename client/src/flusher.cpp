#include "flusher.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "docket/errors.hpp"
#include "docket/sql.hpp"
#include "fiber.hpp"
#include "pool_shared.hpp"

namespace docket::detail {

struct Flusher::Item {
  bool step = false;  // a step checkpoint; else a task completion
  FlushRunPtr run;
  std::string step_name;
  Json value;  // the step's value or the task's result
  Clock::time_point enqueued;
  // Written by the flusher thread, read by the submitter once `done` is set
  // (under decided_mutex: the item's own, so a flush's waiters are woken
  // without the flusher's lock and do not all contend for it on waking).
  std::mutex decided_mutex;
  bool done = false;
  std::condition_variable decided;  // the waiting submitter: `done` was set
  std::vector<Fiber*> parked;       // the same, when it is a fiber (no allocation until then)
  std::string outcome;
  Json stored;
  std::exception_ptr error;
  // An asynchronous completion: called on the flusher thread once decided
  // (null: completed), instead of waking a waiting submitter.
  std::function<void(std::exception_ptr)> on_done;

  const std::string& run_id() const noexcept { return run->run_id; }
  // complete_steps rejects the same (run, step) twice, complete_tasks the same run.
  bool same_key(const Item& other) const {
    return step == other.step && run_id() == other.run_id() &&
           (!step || step_name == other.step_name);
  }
};

namespace {
struct OwnedFlushRun {
  OwnedFlushRun(std::string id, std::string token)
      : run_id(std::move(id)), claim_token(std::move(token)) {}
  const std::string run_id;
  const std::string claim_token;
  const FlushRun run{run_id, claim_token};
};
}  // namespace

FlushRunPtr make_flush_run(std::string run_id, std::string claim_token) {
  auto owned = std::make_shared<const OwnedFlushRun>(std::move(run_id), std::move(claim_token));
  return FlushRunPtr(owned, &owned->run);
}

namespace {

[[noreturn]] void throw_outcome(const std::string& outcome, const std::string& run_id) {
  if (outcome == "stale")
    throw StaleFence("DK001", "stale_fence: task " + run_id + " is not held by this claim token");
  if (outcome == "cancelled") throw Cancelled("DK010", "cancelled: task " + run_id);
  if (outcome == "not_found") throw NotFound("DK003", "not_found: task " + run_id);
  throw ServerError("", "unexpected outcome \"" + outcome + "\" for task " + run_id);
}

}  // namespace

Flusher::Flusher(FlusherOptions options) : options_(std::move(options)) {}

Flusher::~Flusher() {
  stop();
}

void Flusher::start(std::unique_ptr<pqxx::connection> connection) {
  const std::size_t count = std::max<std::size_t>(1, options_.connections);
  std::vector<std::unique_ptr<pqxx::connection>> connections;
  if (connection) {
    configure(*connection);
    connections.push_back(std::move(connection));
  }
  while (connections.size() < count) connections.push_back(open());
  connections_ = std::move(connections);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    live_threads_ = count;
  }
  for (std::size_t i = 0; i < count; ++i)
    threads_.emplace_back([this, i] {
      name_thread("docket-flush");
      run(i);
    });
}

void Flusher::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& thread : threads_)
    if (thread.joinable()) thread.join();
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  space_.notify_all();
}

Json Flusher::store_step(FlushRunPtr run, const std::string& step_name, Json value) {
  auto item = std::make_shared<Item>();
  item->step = true;
  item->run = std::move(run);
  item->step_name = step_name;
  item->value = std::move(value);
  submit(item);
  if (item->error) std::rethrow_exception(item->error);
  if (item->outcome == "stored" || item->outcome == "kept") return std::move(item->stored);
  throw_outcome(item->outcome, item->run_id());
}

void Flusher::complete_task(FlushRunPtr run, Json result) {
  auto item = std::make_shared<Item>();
  item->run = std::move(run);
  item->value = std::move(result);
  submit(item);
  if (item->error) std::rethrow_exception(item->error);
  if (item->outcome != "completed") throw_outcome(item->outcome, item->run_id());
}

void Flusher::complete_task_async(FlushRunPtr run, Json result,
                                  std::function<void(std::exception_ptr)> on_done) {
  auto item = std::make_shared<Item>();
  item->run = std::move(run);
  item->value = std::move(result);
  item->on_done = std::move(on_done);
  submit(item, false);
}

std::uint64_t Flusher::flushes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return flushes_;
}

std::size_t Flusher::largest_batch() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return largest_batch_;
}

std::size_t Flusher::queued() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void Flusher::submit(const ItemPtr& item, bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Backpressure: at most max_batch items wait for the next flush.
  space_.wait(lock, [&] { return closed_ || queue_.size() < options_.max_batch; });
  if (closed_) throw ConnectionLost("", "the worker pool's flusher is stopped; nothing was sent");
  item->enqueued = Clock::now();
  queue_.push_back(item);
  if (!takeable(*item)) ++blocked_;
  if (wait) ++waiting_queued_;
  // Wake the flush threads only when this item can change their decision: the
  // first item that can go, a full batch, the last producer's item, or a
  // waited item while a thread holds completions back for want of one (not
  // every waited item: each wake-up costs two thread switches).
  const std::size_t ready = count_takeable();
  const bool wake =
      ready == 1 || ready >= options_.max_batch ||
      (wait && holding_completions_ > 0 && takeable(*item)) ||
      (options_.producers && static_cast<long>(ready + in_flight_waiting_) >= options_.producers());
  // Notified after the lock is let go: a flush thread woken under it would
  // first block on it.
  lock.unlock();
  if (wake) work_.notify_all();
  if (!wait) return;
  std::unique_lock<std::mutex> own(item->decided_mutex);
  wait_for(own, item->decided, item->parked, [&] { return item->done; });
}

void Flusher::run(std::size_t index) {
  std::unique_ptr<pqxx::connection>& connection = connections_[index];
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // Queued items whose run is in another flush wait for it to be decided.
    work_.wait(lock, [&] { return (stopping_ && queue_.empty()) || count_takeable() > 0; });
    if (queue_.empty()) break;  // stopping, and everything handed in is flushed
    // Group commit: wait (at most max_delay after the oldest item) while more
    // items can still come: the batch is not full and some runner has not
    // handed one in yet (those waiting for a flush in flight cannot).
    const Clock::time_point deadline = queue_.front()->enqueued + options_.max_delay;
    for (;;) {
      const std::size_t ready = count_takeable();
      if (ready == 0) break;
      // Only completions nobody waits for: a flush beside the one in flight
      // would gain no runner anything, so they join the next one after it.
      if (!stopping_ && flushing_ > 0 && !any_waiting_takeable()) {
        ++holding_completions_;
        work_.wait(lock);
        --holding_completions_;
        continue;
      }
      if (stopping_ || ready >= options_.max_batch ||
          (options_.producers &&
           static_cast<long>(ready + in_flight_waiting_) >= options_.producers()) ||
          Clock::now() >= deadline)
        break;
      work_.wait_until(lock, deadline);
    }
    const std::vector<ItemPtr> batch = take_batch();
    if (batch.empty()) continue;  // another flush thread took them
    ++flushing_;
    lock.unlock();
    space_.notify_all();
    const auto began = std::chrono::steady_clock::now();
    flush(connection, batch);
    if (options_.observe) options_.observe(batch.size(), std::chrono::steady_clock::now() - began);
    for (const ItemPtr& item : batch) {
      if (!item->on_done) continue;
      std::exception_ptr error = item->error;
      if (!error && item->outcome != "completed") {
        try {
          throw_outcome(item->outcome, item->run_id());
        } catch (...) {
          error = std::current_exception();
        }
      }
      try {
        item->on_done(error);
      } catch (...) {
        // A completion callback must not take the flusher down.
      }
    }
    lock.lock();
    for (const ItemPtr& item : batch) {
      const auto run = in_flight_runs_.find(item->run_id());
      if (--run->second.items == 0) in_flight_runs_.erase(run);
      if (!item->on_done) --in_flight_waiting_;
    }
    // Only blocked items can have become takeable (usually there are none).
    if (blocked_ > 0) recount_blocked();
    --flushing_;
    ++flushes_;
    largest_batch_ = std::max(largest_batch_, batch.size());
    lock.unlock();
    work_.notify_all();  // items of these runs may go now; fewer producers are waiting
    // Each waiting submitter is woken on its own item's mutex, after this
    // flush's bookkeeping and outside the flusher's lock.
    for (const ItemPtr& item : batch) {
      if (item->on_done) continue;
      {
        const std::lock_guard<std::mutex> own(item->decided_mutex);
        item->done = true;
        // Under the item's lock: the fiber cannot return (and go) before.
        wake_parked(item->parked);
      }
      item->decided.notify_one();
    }
    lock.lock();
  }
  // Under the lock: once the last thread is gone, nothing can be queued.
  if (--live_threads_ == 0) closed_ = true;
  lock.unlock();
  space_.notify_all();
  connection.reset();
}

bool Flusher::takeable(const Item& item) const {
  return in_flight_runs_.count(item.run_id()) == 0;
}

bool Flusher::any_waiting_takeable() const {
  if (waiting_queued_ == 0) return false;
  return std::any_of(queue_.begin(), queue_.end(),
                     [&](const ItemPtr& item) { return !item->on_done && takeable(*item); });
}

std::size_t Flusher::count_takeable() const {
  return queue_.size() - blocked_;
}

void Flusher::recount_blocked() {
  blocked_ = 0;
  if (in_flight_runs_.empty()) return;
  for (const ItemPtr& item : queue_)
    if (!takeable(*item)) ++blocked_;
}

bool Flusher::same_key_in(const std::vector<ItemPtr>& batch, const Item& item) {
  return std::any_of(batch.begin(), batch.end(),
                     [&](const ItemPtr& taken) { return taken->same_key(item); });
}

std::vector<Flusher::ItemPtr> Flusher::take_batch() {
  std::vector<ItemPtr> batch;
  const std::uint64_t this_batch = ++batches_;
  // Every item the loop looks at and leaves is blocked: its run is in flight,
  // in another flush or in this one. The items after a full batch are counted
  // apart.
  blocked_ = 0;
  auto it = queue_.begin();
  for (; it != queue_.end() && batch.size() < options_.max_batch;) {
    Item& item = **it;
    // A run in flight in another flush waits for it; a run this batch took
    // already can go along (a second runner's item of it), unless its key is
    // taken (the same step twice, or a second completion).
    const auto [run, fresh] = in_flight_runs_.try_emplace(item.run_id());
    if (fresh || (run->second.batch == this_batch && !same_key_in(batch, item))) {
      run->second.batch = this_batch;
      ++run->second.items;
      if (!item.on_done) {
        ++in_flight_waiting_;
        --waiting_queued_;
      }
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++blocked_;
      ++it;
    }
  }
  for (; it != queue_.end(); ++it)
    if (!takeable(**it)) ++blocked_;
  return batch;
}

void Flusher::configure(pqxx::connection& connection) {
  try {
    connection.set_variable("application_name", "'docket_flusher'");
    // Opt-in only (WorkerPoolOptions::flush_async_commit): a server crash can
    // then lose flushes the runners were told had committed.
    if (options_.async_commit) connection.set_variable("synchronous_commit", "off");
  } catch (...) {
    sql::rethrow_mapped(false);
  }
}

std::unique_ptr<pqxx::connection> Flusher::open() {
  std::unique_ptr<pqxx::connection> fresh =
      options_.connect ? options_.connect() : connect(options_.conninfo);
  configure(*fresh);
  return fresh;
}

void Flusher::execute(std::unique_ptr<pqxx::connection>& connection,
                      const std::vector<ItemPtr>& batch) {
  // Steps and completions go out in the order of the batch; their outcomes
  // come back in that order, the steps first.
  sql::GroupCommit group;
  std::vector<Item*> step_items;
  std::vector<Item*> completion_items;
  for (const ItemPtr& item : batch) {
    item->error = nullptr;
    if (item->step) {
      group.add_step(item->run_id(), item->run->claim_token, item->step_name, item->value);
      step_items.push_back(item.get());
    } else {
      group.add_completion(item->run_id(), item->run->claim_token, item->value);
      completion_items.push_back(item.get());
    }
  }
  if (!connection) connection = open();  // reconnects after a lost connection
  // One statement, so no BEGIN and COMMIT round trips: it is its own
  // transaction, committed (or rolled back as a whole) when it returns.
  pqxx::nontransaction tx(*connection);
  sql::StepsAndTasksOutcome out = sql::commit(tx, group);
  if (out.steps.size() != step_items.size())
    throw std::runtime_error("complete_steps returned " + std::to_string(out.steps.size()) +
                             " rows for " + std::to_string(step_items.size()) + " steps");
  if (out.completions.size() != completion_items.size())
    throw std::runtime_error("complete_tasks returned " + std::to_string(out.completions.size()) +
                             " rows for " + std::to_string(completion_items.size()) + " tasks");
  for (std::size_t i = 0; i < step_items.size(); ++i) {
    step_items[i]->outcome = std::move(out.steps[i].outcome);
    step_items[i]->stored = std::move(out.steps[i].value);
  }
  for (std::size_t i = 0; i < completion_items.size(); ++i)
    completion_items[i]->outcome = std::move(out.completions[i].outcome);
}

void Flusher::flush(std::unique_ptr<pqxx::connection>& connection,
                    const std::vector<ItemPtr>& batch) {
  try {
    execute(connection, batch);
    return;
  } catch (...) {
    std::exception_ptr error;
    bool connection_problem = false;
    bool ambiguous = false;
    std::string message;
    try {
      sql::rethrow_mapped(true);
    } catch (const Ambiguous& e) {
      connection_problem = ambiguous = true;
      message = e.what();
    } catch (const ConnectionLost& e) {
      connection_problem = true;  // nothing was sent
      message = e.what();
    } catch (const std::exception& e) {
      error = std::current_exception();
      message = e.what();
    } catch (...) {
      error = std::current_exception();
      message = "unknown error";
    }
    if (connection_problem) {
      connection.reset();
      if (options_.log)
        options_.log(LogLevel::warning, "flush of " + std::to_string(batch.size()) + " item(s): " +
                                            message + (ambiguous ? " (outcome unknown)" : ""));
      // Each runner gets its own exception object.
      for (const ItemPtr& item : batch) {
        item->error = ambiguous ? std::make_exception_ptr(Ambiguous("", message))
                                : std::make_exception_ptr(ConnectionLost("", message));
      }
      return;
    }
    if (batch.size() == 1) {
      batch[0]->error = error;
      return;
    }
    // The server rejected the transaction as a whole, so nothing of it was
    // stored: each item on its own finds the one(s) at fault.
    if (options_.log)
      options_.log(LogLevel::warning, "a flush of " + std::to_string(batch.size()) +
                                          " items was rejected (" + message +
                                          "); retrying them one by one");
    for (const ItemPtr& item : batch) flush(connection, {item});
  }
}

}  // namespace docket::detail
