// Context: what a running task sees. Steps are checkpointed and replay; sleeps,
// event waits and child joins suspend the task by unwinding the handler with a
// control signal bound to this context; cancellation unwinds the same way.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "docket/json.hpp"
#include "docket/sql.hpp"

namespace docket {

// Thrown through the handler to unwind it; never derived from std::exception so
// a handler's `catch (const std::exception&)` cannot swallow it. Runners act only
// on signals whose context() is their own.
class ControlSignal {
 public:
  enum class Kind { suspended, cancelled, lost, invalidated };
  ControlSignal(const void* context, Kind kind) : context_(context), kind_(kind) {}
  const void* context() const noexcept { return context_; }
  Kind kind() const noexcept { return kind_; }

 private:
  const void* context_;
  Kind kind_;
};

// Outcome of a joined child task.
struct TaskOutcome {
  std::string state;  // completed | failed | cancelled
  Json result;
  Json error;
};

class ContextBackend;  // the runner's connection and watchdog hooks (internal)

class Context {
 public:
  // `task` is the runner's claim, which outlives the context (not copied).
  Context(ContextBackend& backend, const sql::ClaimedTask& task, std::map<std::string, Json> steps);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const std::string& run_id() const noexcept { return task_.run_id; }
  const std::string& task_name() const noexcept { return task_.task_name; }
  int attempt() const noexcept { return task_.attempt; }
  const Json& headers() const noexcept { return task_.headers; }
  const std::string& wake_reason() const noexcept { return task_.wake_reason; }

  // A checkpointed step: returns the stored value when this occurrence already
  // completed (on an earlier attempt or before a suspension), else runs fn and
  // stores its result. Occurrence names are deterministic: the second step named
  // "charge" in one execution is "charge#2".
  Json step(const std::string& name, const std::function<Json()>& fn);

  // The decomposed form: begin_step allocates the occurrence name; a completed
  // handle carries the stored value. idempotency_key is stable across attempts
  // (run id + occurrence name), for services that deduplicate.
  struct StepHandle {
    std::string name;
    bool completed = false;
    Json value;
    std::string idempotency_key;
  };
  StepHandle begin_step(const std::string& name);
  Json complete_step(const StepHandle& handle, const Json& value);

  // Durable sleeps on the database clock. Return when the time has come;
  // otherwise suspend the task (unwinding the handler).
  void sleep_for(std::chrono::milliseconds duration, const std::string& name = "sleep");
  void sleep_until(const std::string& iso_timestamp, const std::string& name = "sleep");

  // The event's payload, or nullopt on timeout; suspends while waiting. The
  // event is looked up in this task's scope; the step is named "event:<name>"
  // unless `name` is given.
  std::optional<Json> await_event(const std::string& event_name,
                                  std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                                  const std::string& name = "");
  // Emits an event in this task's scope, under its claim (a stale runner emits
  // nothing); true when this emit was the first. A checkpointed step
  // ("emit:<event>"): a replay does not emit again and returns the same answer.
  bool emit_event(const std::string& event_name, const Json& payload = nullptr);

  // Spawns a child task in this task's scope (a checkpointed step, "spawn:<task>"
  // unless `name` is given, so a replay does not spawn twice) and returns its run
  // id. options are spawn_task's, plus "queue" (default: this task's queue).
  std::string spawn_child(const std::string& task_name, const Json& params = Json::object(),
                          const Json& options = Json::object(), const std::string& name = "");
  // Joins a child: its outcome once finished; suspends until then. The step is
  // named "task:<child run id>" unless `name` is given.
  TaskOutcome await_task(const std::string& child_run_id, const std::string& name = "");

  // Extends the claim (the lease) without a step.
  void heartbeat();
  // Extends the claim until now + extend at least, whatever lease another
  // claimer passes (docket.heartbeat's extend_ms: 0 to ten years, else
  // docket::BadArgument): for a step known to take longer than the lease. The
  // pool's lease watchdog counts it as progress until the extension ends.
  void heartbeat(std::chrono::milliseconds extend);

  // After the watchdog (or a shutdown) stopped this runner, every call throws
  // ControlSignal invalidated. Safe to call from any thread.
  bool invalidated() const noexcept { return invalidated_.load(); }
  void invalidate() noexcept { invalidated_.store(true); }

  // The control signal this context raised, if any. Once raised, every further
  // call raises it again, and the runner acts on it even if a handler caught it.
  std::optional<ControlSignal::Kind> signalled() const noexcept { return signalled_; }

 private:
  std::string occurrence(const std::string& name);
  void check_usable() const;
  [[noreturn]] void unwind(ControlSignal::Kind kind);
  // Runs fn(tx) on the runner's connection: one statement in autocommit, or
  // several in one transaction; DK010 and DK001 unwind the handler (cancelled,
  // lost). Defined in context.cpp.
  enum class Statements { one, several };
  template <typename Call>
  auto guarded(Call&& call);
  template <typename Fn>
  auto fenced(bool mutating, Statements statements, Fn&& fn);
  // "tenantless" or "tenant:<id>": the scope of this task's run (read once).
  const std::string& owner_scope();

  ContextBackend& backend_;
  const sql::ClaimedTask& task_;
  std::map<std::string, Json> steps_;
  std::map<std::string, int> occurrences_;
  std::optional<std::string> owner_scope_;
  std::optional<ControlSignal::Kind> signalled_;
  std::atomic<bool> invalidated_{false};
};

}  // namespace docket
