// Flusher: group commit of a pool's step checkpoints and task completions.
// Runners hand it an item and block until the database has confirmed it; one
// thread takes everything queued (at most max_batch items, after waiting at
// most max_delay for more) and commits it in ONE transaction: complete_steps
// for the checkpoints, complete_tasks for the completions. Each item gets its
// own outcome back (stored, kept, completed; stale, cancelled, not_found are
// thrown as the typed errors the single-item calls raise). A connection lost
// while the transaction was in flight makes every item of it Ambiguous; it is
// never retried or guessed. A batch the server rejects as a whole (no item was
// stored) is retried item by item, so one bad item only fails itself.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "docket/logger.hpp"

namespace docket::detail {

struct FlusherOptions {
  std::string conninfo;
  std::size_t max_batch = 100;
  std::chrono::microseconds max_delay{2000};
  bool async_commit = false;  // synchronous_commit = off on the flush connection (opt-in)
  std::function<void(LogLevel, const std::string&)> log;
  // How many runners could hand in an item now: once that many are queued,
  // waiting longer cannot grow the batch, so it is flushed at once.
  std::function<int()> producers;
};

class Flusher {
 public:
  explicit Flusher(FlusherOptions options);
  ~Flusher();  // stop()
  Flusher(const Flusher&) = delete;
  Flusher& operator=(const Flusher&) = delete;

  // `connection` (may be null: opened at the first flush) is the first flush
  // connection; opening it before the first claim keeps it out of the leases.
  void start(std::unique_ptr<pqxx::connection> connection = nullptr);
  // Flushes what is queued, then joins the thread. Later calls throw ConnectionLost.
  void stop();

  // A step checkpoint: the stored value (for a step already stored: the first
  // value, which wins). Throws StaleFence, Cancelled, NotFound, Ambiguous, or
  // the server's typed error for this item.
  Json store_step(const std::string& run_id, const std::string& claim_token,
                  const std::string& step_name, const Json& value);
  // A task completion: returns once committed. Throws as store_step does.
  void complete_task(const std::string& run_id, const std::string& claim_token, const Json& result);

  // A task completion the caller does not wait for: `on_done` runs on the
  // flusher thread once the flush is decided, with null when the task was
  // completed, else the error complete_task would throw. Waits only while the
  // queue is full (backpressure); throws ConnectionLost once stopped.
  void complete_task_async(const std::string& run_id, const std::string& claim_token,
                           const Json& result, std::function<void(std::exception_ptr)> on_done);

  // Test hooks: transactions committed (or attempted) and the largest batch.
  std::uint64_t flushes() const;
  std::size_t largest_batch() const;

 private:
  struct Item;
  using ItemPtr = std::shared_ptr<Item>;

  // Queues the item; with `wait`, returns once it is decided.
  void submit(const ItemPtr& item, bool wait = true);
  void run();
  // Takes up to max_batch queued items, at most one per key (lock held).
  std::vector<ItemPtr> take_batch();
  // Commits one batch and fills in every item's outcome.
  void flush(const std::vector<ItemPtr>& batch);
  void execute(const std::vector<ItemPtr>& batch);
  pqxx::connection& connection();
  void configure(pqxx::connection& connection);

  const FlusherOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable work_;   // the flusher thread: items queued, or stop
  std::condition_variable space_;  // submitters: room in the queue
  std::condition_variable done_;   // submitters: their item is decided
  std::deque<ItemPtr> queue_;
  bool stopping_ = false;
  bool closed_ = false;
  std::uint64_t flushes_ = 0;
  std::size_t largest_batch_ = 0;
  std::unique_ptr<pqxx::connection> connection_;  // flusher thread only
  std::thread thread_;
};

}  // namespace docket::detail
