// Flusher: group commit of a pool's step checkpoints and task completions.
// Runners hand it an item and block (a fiber parks) until the database has
// confirmed it; a flush thread takes everything queued (at most max_batch items, after waiting
// at most max_delay for more) and commits it in ONE transaction: complete_steps
// for the checkpoints, complete_tasks for the completions. `connections` flush
// threads, each with its own connection, take turns: items handed in while one
// flush commits go out in the next one at once if a submitter waits for one of
// them (a step), so their commits overlap (and the server merges their WAL
// flushes); completions nobody waits for join the flush after the one in
// flight, as with one thread. A run with an item in flight is never
// in another flush at the same time: its later items wait for that flush to be
// decided, so a task's items commit in the order they were handed in. Each item gets its
// own outcome back (stored, kept, completed; stale, cancelled, not_found are
// thrown as the typed errors the single-item calls raise). A connection lost
// while the transaction was in flight makes every item of it Ambiguous; it is
// never retried or guessed. A batch the server rejects as a whole (no item was
// stored) is retried item by item, so one bad item only fails itself.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "docket/logger.hpp"

namespace docket::detail {

// The run an item belongs to: its id and claim token, referenced by every item
// of the run instead of copied into each (a runner hands in a pointer into
// itself, which the items keep alive). The flusher holds it from submit until
// the item's outcome is decided.
struct FlushRun {
  const std::string& run_id;
  const std::string& claim_token;
};
using FlushRunPtr = std::shared_ptr<const FlushRun>;
// A FlushRun owning copies of its strings, for callers without a runner.
FlushRunPtr make_flush_run(std::string run_id, std::string claim_token);

struct FlusherOptions {
  std::string conninfo;
  // Opens the flush connection when set (the pool's connection source), else conninfo.
  std::function<std::unique_ptr<pqxx::connection>()> connect;
  std::size_t max_batch = 100;
  std::chrono::microseconds max_delay{2000};
  bool async_commit = false;  // synchronous_commit = off on the flush connection (opt-in)
  std::function<void(LogLevel, const std::string&)> log;
  // How many runners could hand in an item now: once that many are queued,
  // waiting longer cannot grow the batch, so it is flushed at once.
  std::function<int()> producers;
  // Flush threads, each with its own connection (>= 1).
  std::size_t connections = 2;
  // Called after every flush with its size and duration (metrics); must not throw.
  std::function<void(std::size_t items, std::chrono::nanoseconds took)> observe;
};

class Flusher {
 public:
  explicit Flusher(FlusherOptions options);
  ~Flusher();  // stop()
  Flusher(const Flusher&) = delete;
  Flusher& operator=(const Flusher&) = delete;

  // Opens the flush connections (`connection`, if given, is the first), so no
  // item waits for one, then starts the flush threads. Throws ConnectionLost.
  void start(std::unique_ptr<pqxx::connection> connection = nullptr);
  // Flushes what is queued, then joins the threads. Later calls throw ConnectionLost.
  void stop();

  // A step checkpoint: the stored value (for a step already stored: the first
  // value, which wins). Throws StaleFence, Cancelled, NotFound, Ambiguous, or
  // the server's typed error for this item.
  Json store_step(FlushRunPtr run, const std::string& step_name, Json value);
  Json store_step(const std::string& run_id, const std::string& claim_token,
                  const std::string& step_name, const Json& value) {
    return store_step(make_flush_run(run_id, claim_token), step_name, value);
  }
  // A task completion: returns once committed. Throws as store_step does.
  void complete_task(FlushRunPtr run, Json result);
  void complete_task(const std::string& run_id, const std::string& claim_token,
                     const Json& result) {
    complete_task(make_flush_run(run_id, claim_token), result);
  }

  // A task completion the caller does not wait for: `on_done` runs on the
  // flusher thread once the flush is decided, with null when the task was
  // completed, else the error complete_task would throw. Waits only while the
  // queue is full (backpressure); throws ConnectionLost once stopped.
  void complete_task_async(FlushRunPtr run, Json result,
                           std::function<void(std::exception_ptr)> on_done);
  void complete_task_async(const std::string& run_id, const std::string& claim_token,
                           const Json& result, std::function<void(std::exception_ptr)> on_done) {
    complete_task_async(make_flush_run(run_id, claim_token), result, std::move(on_done));
  }

  // Test hooks: transactions committed (or attempted), the largest batch, and
  // the items queued now (not yet in a flush).
  std::uint64_t flushes() const;
  std::size_t largest_batch() const;
  std::size_t queued() const;

 private:
  struct Item;
  using ItemPtr = std::shared_ptr<Item>;

  // Queues the item; with `wait`, returns once it is decided.
  void submit(const ItemPtr& item, bool wait = true);
  // The body of flush thread `index` (its connection: connections_[index]).
  void run(std::size_t index);
  // Whether a queued item may go in a flush now: its run is in no flush in
  // flight (lock held).
  bool takeable(const Item& item) const;
  // Whether the batch being taken has an item of the same key already.
  static bool same_key_in(const std::vector<ItemPtr>& batch, const Item& item);
  std::size_t count_takeable() const;  // O(1): queue_ less blocked_
  // blocked_ from scratch, after the runs in flight changed (lock held).
  void recount_blocked();
  // Whether a takeable item has a submitter waiting for it (lock held).
  bool any_waiting_takeable() const;
  // Takes up to max_batch takeable items, at most one per key, and marks their
  // runs in flight (lock held).
  std::vector<ItemPtr> take_batch();
  // Commits one batch on `connection` and fills in every item's outcome.
  void flush(std::unique_ptr<pqxx::connection>& connection, const std::vector<ItemPtr>& batch);
  void execute(std::unique_ptr<pqxx::connection>& connection, const std::vector<ItemPtr>& batch);
  std::unique_ptr<pqxx::connection> open();
  void configure(pqxx::connection& connection);

  const FlusherOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable work_;   // the flush threads: items queued or decided, or stop
  std::condition_variable space_;  // submitters: room in the queue
  std::deque<ItemPtr> queue_;
  // The runs of the flushes in flight, by run id (a view of the run id of one
  // of its items in flight, which all belong to one flush and live until it
  // is decided): how many of their items are in flight, and the batch that
  // took them (batches_ when taken).
  struct InFlight {
    std::size_t items = 0;
    std::uint64_t batch = 0;
  };
  std::unordered_map<std::string_view, InFlight> in_flight_runs_;
  std::uint64_t batches_ = 0;
  std::size_t blocked_ = 0;              // queued items whose run is in flight
  std::size_t waiting_queued_ = 0;       // queued items whose submitter waits
  std::size_t in_flight_waiting_ = 0;    // their items whose submitter waits
  std::size_t flushing_ = 0;             // flushes in flight
  std::size_t holding_completions_ = 0;  // threads waiting for a waited item
  std::size_t live_threads_ = 0;
  bool stopping_ = false;
  bool closed_ = false;
  std::uint64_t flushes_ = 0;
  std::size_t largest_batch_ = 0;
  std::vector<std::unique_ptr<pqxx::connection>> connections_;  // [i]: flush thread i only
  std::vector<std::thread> threads_;
};

}  // namespace docket::detail
