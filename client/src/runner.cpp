#include "runner.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <typeinfo>
#include <utility>

#include "docket/errors.hpp"

namespace docket::detail {

namespace {

constexpr std::size_t kMaxErrorMessage = 4000;

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : type.name();
  std::free(demangled);
  return name;
}

// A bounded failure document; invalid UTF-8 in what() is replaced, not fatal.
Json error_json(const std::string& message, const std::string& type) {
  const auto clean = [](const std::string& text) {
    const std::string dumped =
        Json(text.substr(0, kMaxErrorMessage)).dump(-1, ' ', false, Json::error_handler_t::replace);
    return Json::parse(dumped);
  };
  return Json{{"message", clean(message)}, {"type", clean(type)}};
}

// Times a handler call: observes the histogram and keeps the duration on exit.
class HandlerTimer {
 public:
  HandlerTimer(Histogram& histogram, std::uint64_t& nanos) noexcept
      : histogram_(histogram), nanos_(nanos), began_(Clock::now()) {}
  ~HandlerTimer() {
    nanos_ = nanos_since(began_);
    histogram_.observe(nanos_);
  }
  HandlerTimer(const HandlerTimer&) = delete;
  HandlerTimer& operator=(const HandlerTimer&) = delete;

 private:
  Histogram& histogram_;
  std::uint64_t& nanos_;
  const Clock::time_point began_;
};

}  // namespace

Runner::Runner(std::shared_ptr<PoolShared> pool, sql::ClaimedTask task,
               Clock::time_point claimed_at)
    : pool_(std::move(pool)),
      task_(std::move(task)),
      progress_at_(claimed_at.time_since_epoch().count()) {}

Runner::~Runner() = default;

std::string Runner::describe() const {
  return "task " + task_.task_name + " (run " + task_.run_id + ", attempt " +
         std::to_string(task_.attempt) + ")";
}

Clock::time_point Runner::last_progress() const noexcept {
  return Clock::time_point(Clock::duration(progress_at_.load()));
}

void Runner::progress() noexcept {
  progress_at_.store(Clock::now().time_since_epoch().count());
  warned_.store(false);
}

// The watchdog warns at one lease after last_progress and stops at two; the
// database keeps the claim until now + extend: both move by what the extension
// adds beyond one lease.
void Runner::extended(std::chrono::milliseconds extend) noexcept {
  const Clock::duration beyond =
      std::max<Clock::duration>(Clock::duration::zero(), extend - pool_->options.lease);
  progress_at_.store((Clock::now() + beyond).time_since_epoch().count());
  warned_.store(false);
}

bool Runner::release_slot() noexcept {
  if (!slot_held_.exchange(false)) return false;
  pool_->free_slot();
  return true;
}

bool Runner::stop() noexcept {
  {
    const std::lock_guard<std::mutex> lock(context_mutex_);
    invalidated_.store(true);
    if (context_) context_->invalidate();
  }
  // Taken while the run still holds its slot, once. The slot stays held until
  // give_back_slot() (or the run returns): the caller gives it back only once
  // the database no longer holds the claim for this run.
  if (!slot_held_.load() || stopped_.exchange(true)) return false;
  return true;
}

void Runner::give_back_slot() noexcept {
  release_slot();
}

FlushRunPtr Runner::flush_run() {
  // Shares this runner's ownership: its items keep it (and the strings) alive.
  return FlushRunPtr(shared_from_this(), &flush_run_);
}

Json Runner::store_step(const std::string& step_name, const Json& value) {
  return pool_->flusher.store_step(flush_run(), step_name, value);
}

void Runner::run() noexcept {
  try {
    execute();
  } catch (const std::exception& e) {
    pool_->log(LogLevel::error, describe() + ": runner failed: " + e.what());
  } catch (...) {
    pool_->log(LogLevel::error, describe() + ": runner failed with an unknown exception");
  }
  release_slot();
  finished_.store(true);
  pool_->runner_finished();
}

void Runner::execute() {
  const Handler* handler = pool_->catalog.find(task_.task_name);
  if (handler == nullptr) {
    defer();
    return;
  }

  // claim_tasks returned the completed steps under this claim: no round trip.
  // The context keeps them from here on (nothing else reads task_.steps).
  std::map<std::string, Json> steps = std::move(task_.steps);
  {
    const std::lock_guard<std::mutex> lock(context_mutex_);
    context_ = std::make_unique<Context>(*this, task_, std::move(steps));
    if (invalidated_.load()) context_->invalidate();
  }
  Context& context = *context_;
  if (invalidated_.load()) {  // stopped before the handler even started
    on_signal(ControlSignal::Kind::invalidated);
    return;
  }

  const TaskEvent event{pool_->options.queue, task_.task_name, task_.run_id,
                        task_.attempt,        task_.params,    task_.headers};
  const WorkerPoolHooks& hooks = pool_->options.hooks;
  if (hooks.on_task_start) call_hook("on_task_start", [&] { hooks.on_task_start(event); });
  AtomicCounters::add(pool_->counters.started);
  TaskEnd::Outcome outcome = TaskEnd::Outcome::lost;
  try {
    outcome = run_handler(*handler, context);
  } catch (...) {
    end_task(event, outcome);
    throw;
  }
  end_task(event, outcome);
}

void Runner::end_task(const TaskEvent& event, TaskEnd::Outcome outcome) noexcept {
  const WorkerPoolHooks& hooks = pool_->options.hooks;
  if (!hooks.on_task_end) return;
  const TaskEnd end{event, outcome, std::chrono::nanoseconds(handler_nanos_),
                    outcome == TaskEnd::Outcome::failed && retry_scheduled_, end_error_};
  call_hook("on_task_end", [&] { hooks.on_task_end(end); });
}

template <typename Fn>
void Runner::call_hook(const char* name, Fn&& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    pool_->log(LogLevel::warning, describe() + ": the " + name + " hook threw: " + e.what());
  } catch (...) {
    pool_->log(LogLevel::warning, describe() + ": the " + name + " hook threw");
  }
}

TaskEnd::Outcome Runner::run_handler(const Handler& handler, Context& context) {
  Json result;
  std::optional<Json> failure;
  bool retry = true;
  try {
    // Observes the handler's duration when it returns or throws (before the catch).
    const HandlerTimer timer(pool_->counters.handler_seconds, handler_nanos_);
    result = handler(context, task_.params);
  } catch (const ControlSignal& signal) {
    if (signal.context() == &context) return on_signal(signal.kind());
    // Only our own context's signals mean anything; another one is a bug in the task.
    failure = error_json("a control signal of another task's context escaped the handler",
                         "docket::ControlSignal");
  } catch (const Ambiguous& e) {
    pool_->counters.lost.fetch_add(1);
    pool_->log(LogLevel::warning,
               describe() + ": outcome of a database call unknown, not finalized: " + e.what());
    return TaskEnd::Outcome::lost;
  } catch (const PermanentError& e) {
    failure = error_json(e.what(), type_name(typeid(e)));
    retry = false;
  } catch (const std::exception& e) {
    failure = error_json(e.what(), type_name(typeid(e)));
  } catch (...) {
    failure = error_json("unknown exception", "unknown");
  }

  // A handler that swallowed its context's signal still must not finalize.
  if (const std::optional<ControlSignal::Kind> signalled = context.signalled())
    return on_signal(*signalled);
  if (invalidated_.load()) return on_signal(ControlSignal::Kind::invalidated);
  if (failure) return finalize_failure(*failure, retry);
  return finalize_success(std::move(result));
}

TaskEnd::Outcome Runner::on_signal(ControlSignal::Kind kind) {
  switch (kind) {
    case ControlSignal::Kind::suspended:
      pool_->counters.suspended.fetch_add(1);
      pool_->log(LogLevel::debug, describe() + ": suspended");
      return TaskEnd::Outcome::suspended;
    case ControlSignal::Kind::cancelled:
      pool_->counters.cancelled.fetch_add(1);
      pool_->log(LogLevel::info, describe() + ": cancelled, unwound without finalizing");
      return TaskEnd::Outcome::cancelled;
    case ControlSignal::Kind::lost:
      pool_->counters.lost.fetch_add(1);
      pool_->log(LogLevel::warning, describe() + ": its claim was lost (stale fence)");
      return TaskEnd::Outcome::lost;
    case ControlSignal::Kind::invalidated:
      // Already counted when the watchdog or the shutdown stopped it.
      pool_->log(LogLevel::info, describe() + ": a stopped runner returned; nothing finalized");
      return TaskEnd::Outcome::stopped;
  }
  return TaskEnd::Outcome::lost;
}

void Runner::defer() {
  try {
    const ConnectionLease lease = connection();
    const std::string disposition = autocommit(*lease, true, [&](pqxx::transaction_base& tx) {
      return sql::defer_task(tx, task_.run_id, task_.claim_token);
    });
    pool_->counters.abandoned.fetch_add(1);
    pool_->log(
        disposition == "poisoned" ? LogLevel::error : LogLevel::warning,
        describe() + ": unknown task name, handed back without an attempt (" + disposition + ")");
  } catch (const Cancelled&) {
    on_signal(ControlSignal::Kind::cancelled);
  } catch (const StaleFence&) {
    on_signal(ControlSignal::Kind::lost);
  } catch (const std::exception& e) {
    pool_->counters.lost.fetch_add(1);
    pool_->log(LogLevel::error,
               describe() + ": could not defer the unknown task name: " + e.what());
  }
}

TaskEnd::Outcome Runner::finalize(const char* outcome, const std::function<void()>& call) {
  try {
    call();
    return TaskEnd::Outcome::completed;  // the caller's outcome: the call went through
  } catch (const Cancelled&) {
    return on_signal(ControlSignal::Kind::cancelled);
  } catch (const StaleFence&) {
    return on_signal(ControlSignal::Kind::lost);
  } catch (const NotFound& e) {
    pool_->counters.lost.fetch_add(1);
    pool_->log(LogLevel::error, describe() + ": " + outcome + " refused: " + e.what());
  } catch (const Ambiguous& e) {
    pool_->counters.lost.fetch_add(1);
    pool_->log(LogLevel::warning, describe() + ": " + outcome + " outcome unknown: " + e.what());
  } catch (const std::exception& e) {
    pool_->counters.lost.fetch_add(1);
    pool_->log(LogLevel::error, describe() + ": could not record its " + outcome + ": " + e.what());
  }
  return TaskEnd::Outcome::lost;
}

TaskEnd::Outcome Runner::finalize_success(Json result) {
  // Group-committed with other runners' completions. The runner thread does not
  // wait for the flush: it goes on with the next claim, and the outcome comes
  // back to this runner (kept alive by the callback) on the flusher thread.
  std::shared_ptr<Runner> self = shared_from_this();
  return finalize("completion", [&] {
    pool_->flusher.complete_task_async(
        flush_run(), std::move(result),
        [self](const std::exception_ptr& error) { self->on_completed(error); });
  });
}

void Runner::on_completed(const std::exception_ptr& error) noexcept {
  try {
    finalize("completion", [&] {
      if (error) std::rethrow_exception(error);
      pool_->counters.completed.fetch_add(1);
      pool_->log(LogLevel::debug, describe() + ": completed");
    });
  } catch (...) {
    pool_->counters.lost.fetch_add(1);
  }
}

TaskEnd::Outcome Runner::finalize_failure(const Json& error, bool retry) {
  end_error_ = error;
  TaskEnd::Outcome recorded = TaskEnd::Outcome::failed;
  const TaskEnd::Outcome refused = finalize("failure", [&] {
    const ConnectionLease lease = connection();
    const sql::FailOutcome outcome = autocommit(*lease, true, [&](pqxx::transaction_base& tx) {
      return sql::fail_task(tx, task_.run_id, task_.claim_token, error, retry);
    });
    if (outcome.disposition == "cancelled") {
      pool_->counters.cancelled.fetch_add(1);
      recorded = TaskEnd::Outcome::cancelled;
    } else {
      pool_->counters.failed.fetch_add(1);
      if (outcome.disposition == "retry_scheduled") {
        pool_->counters.retried.fetch_add(1);
        retry_scheduled_ = true;
      }
    }
    pool_->log(LogLevel::info, describe() + ": failed (" + outcome.disposition +
                                   (retry ? "" : ", permanent") +
                                   "): " + error.value("message", std::string()));
  });
  return refused == TaskEnd::Outcome::completed ? recorded : refused;
}

}  // namespace docket::detail
