// Runner: executes one claimed task on one of the pool's runner threads. It
// resolves the task name in the catalog (an unknown name is deferred without
// using an attempt), seeds a Context with the steps claim_tasks returned, runs
// the handler and finalizes: complete on a result (group-committed by the
// pool's Flusher), fail on an exception (for good on a PermanentError),
// nothing on a control signal of its own context (the database already holds
// the outcome). Its calls borrow one of the pool's shared connections for their
// duration. Whatever the thread touches it co-owns, so a thread that returns
// after the watchdog or a shutdown gave up on it is harmless.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <pqxx/pqxx>

#include "context_backend.hpp"
#include "docket/context.hpp"
#include "docket/sql.hpp"
#include "docket/task_catalog.hpp"
#include "docket/worker_pool.hpp"
#include "pool_shared.hpp"

namespace docket::detail {

class Runner final : public ContextBackend, public std::enable_shared_from_this<Runner> {
 public:
  // claimed_at: when the claim was made (the watchdog's clock starts there).
  Runner(std::shared_ptr<PoolShared> pool, sql::ClaimedTask task, Clock::time_point claimed_at);
  ~Runner() override;

  // The thread body; never throws.
  void run() noexcept;

  // Stops the runner from outside (watchdog, shutdown): its context is
  // invalidated, so every further call throws and it will not finalize. True
  // for the first stop of a run still holding its slot: the caller then
  // releases the claim and gives the slot back (give_back_slot), in that order,
  // so that no other claim runs in its place while the database still holds
  // this run's claim. The slot is also given back when the run returns.
  bool stop() noexcept;
  void give_back_slot() noexcept;
  // True once stop() took the run: the thread, when it returns, retires.
  bool stopped() const noexcept { return stopped_.load(); }
  // Counts the runner as stuck once; true for the first call.
  bool mark_stuck() noexcept { return !stuck_.exchange(true); }

  const sql::ClaimedTask& task() const noexcept { return task_; }
  bool holds_slot() const noexcept { return slot_held_.load(); }
  bool finished() const noexcept { return finished_.load(); }
  // Time of the last confirmed lease extension (the claim counts as one).
  Clock::time_point last_progress() const noexcept;
  // The watchdog warns once per quiet lease.
  bool mark_warned() noexcept { return !warned_.exchange(true); }

  // ContextBackend
  ConnectionLease connection() override { return ConnectionLease(pool_->connections); }
  Json store_step(const std::string& step_name, const Json& value) override;
  void progress() noexcept override;
  void extended(std::chrono::milliseconds extend) noexcept override;
  const std::string& queue() const noexcept override { return pool_->options.queue; }

 private:
  void execute();
  // Invokes the handler and carries its outcome out; returns the outcome.
  TaskEnd::Outcome run_handler(const Handler& handler, Context& context);
  // The on_task_end hook, if any, for a started task.
  void end_task(const TaskEvent& event, TaskEnd::Outcome outcome) noexcept;
  // Runs a hook; what it throws is logged.
  template <typename Fn>
  void call_hook(const char* name, Fn&& fn) noexcept;
  void defer();
  TaskEnd::Outcome finalize_success(Json result);
  // The flusher decided this runner's completion (null error: completed).
  void on_completed(const std::exception_ptr& error) noexcept;
  // retry = false (the handler threw PermanentError): failed for good.
  TaskEnd::Outcome finalize_failure(const Json& error, bool retry);
  // Runs the finalizing call: the database refusing it (cancelled, claim lost)
  // ends the attempt with no competing outcome; a lost connection is not
  // guessed. Returns `completed` when the call went through, else what the
  // refusal means (cancelled, lost).
  TaskEnd::Outcome finalize(const char* outcome, const std::function<void()>& call);
  TaskEnd::Outcome on_signal(ControlSignal::Kind kind);
  // Gives the slot back if this runner still holds it; true when it did.
  bool release_slot() noexcept;
  // flush_run_, as the flusher's items hold it.
  FlushRunPtr flush_run();
  std::string describe() const;

  const std::shared_ptr<PoolShared> pool_;
  // Not const only for its steps, which execute() moves into the context;
  // other threads read the rest (task()).
  sql::ClaimedTask task_;
  const FlushRun flush_run_{task_.run_id, task_.claim_token};  // this run, for the flusher

  std::mutex context_mutex_;          // publishes context_ to stop()
  std::unique_ptr<Context> context_;  // written by the runner thread under the mutex
  std::atomic<bool> invalidated_{false};

  std::atomic<bool> slot_held_{true};
  std::atomic<bool> finished_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> stuck_{false};
  std::atomic<bool> warned_{false};
  std::atomic<Clock::rep> progress_at_;
  // Runner thread only: for the on_task_end hook.
  std::uint64_t handler_nanos_ = 0;  // the handler's duration
  bool retry_scheduled_ = false;
  Json end_error_;  // the failure document, when it failed
};

}  // namespace docket::detail
