#include "docket/context.hpp"

#include <type_traits>
#include <utility>

#include "context_backend.hpp"
#include "pool_shared.hpp"
#include "docket/errors.hpp"

namespace docket {

Context::Context(ContextBackend& backend, const sql::ClaimedTask& task,
                 std::map<std::string, Json> steps)
    : backend_(backend), task_(task), steps_(std::move(steps)) {}

std::string Context::occurrence(const std::string& name) {
  const int n = ++occurrences_[name];
  return n == 1 ? name : name + "#" + std::to_string(n);
}

void Context::check_usable() const {
  if (invalidated_.load()) throw ControlSignal(this, ControlSignal::Kind::invalidated);
  if (signalled_) throw ControlSignal(this, *signalled_);
}

void Context::unwind(ControlSignal::Kind kind) {
  signalled_ = kind;
  throw ControlSignal(this, kind);
}

template <typename Call>
auto Context::guarded(Call&& call) {
  check_usable();
  using Result = decltype(call());
  try {
    if constexpr (std::is_void_v<Result>) {
      call();
      // Stopped meanwhile: the handler must not go on (the released claim fenced the call).
      check_usable();
    } else {
      Result result = call();
      check_usable();
      return result;
    }
  } catch (const Cancelled&) {
    unwind(ControlSignal::Kind::cancelled);
  } catch (const StaleFence&) {
    unwind(ControlSignal::Kind::lost);
  }
}

template <typename Fn>
auto Context::fenced(bool mutating, Statements statements, Fn&& fn) {
  return guarded([&] {
    const detail::ConnectionLease lease = backend_.connection();
    if (statements == Statements::one) return detail::autocommit(*lease, mutating, fn);
    return sql::in_transaction(*lease, mutating, fn);
  });
}

const std::string& Context::owner_scope() {
  if (!owner_scope_) {
    const std::optional<Json> info = fenced(
        false, Statements::one,
        [&](pqxx::transaction_base& tx) { return sql::inspect_run(tx, "system", task_.run_id); });
    if (!info) throw NotFound("DK003", "not_found: task " + task_.run_id + " does not exist");
    const Json& tenant = info->contains("tenant_id") ? (*info)["tenant_id"] : Json();
    owner_scope_ = tenant.is_string() ? "tenant:" + tenant.get<std::string>() : "tenantless";
  }
  return *owner_scope_;
}

Json Context::step(const std::string& name, const std::function<Json()>& fn) {
  const StepHandle handle = begin_step(name);
  if (handle.completed) return handle.value;
  return complete_step(handle, fn());
}

Context::StepHandle Context::begin_step(const std::string& name) {
  check_usable();
  StepHandle handle;
  handle.name = occurrence(name);
  handle.idempotency_key = task_.run_id + ":" + handle.name;
  const auto stored = steps_.find(handle.name);
  if (stored != steps_.end()) {
    handle.completed = true;
    handle.value = stored->second;
  }
  return handle;
}

Json Context::complete_step(const StepHandle& handle, const Json& value) {
  check_usable();
  if (handle.completed) return handle.value;
  // Group-committed with other runners' steps; the cache is updated only once
  // the database confirmed (a kept step: the first stored value wins).
  Json stored = guarded([&] { return backend_.store_step(handle.name, value); });
  steps_[handle.name] = stored;
  backend_.progress();
  return stored;
}

void Context::sleep_for(std::chrono::milliseconds duration, const std::string& name) {
  check_usable();
  const std::string step_name = occurrence(name);
  const sql::Suspension outcome = fenced(true, Statements::one, [&](pqxx::transaction_base& tx) {
    return sql::sleep_for(tx, task_.run_id, task_.claim_token, step_name, duration.count());
  });
  if (outcome.suspended) unwind(ControlSignal::Kind::suspended);
  backend_.progress();
}

void Context::sleep_until(const std::string& iso_timestamp, const std::string& name) {
  check_usable();
  const std::string step_name = occurrence(name);
  const sql::Suspension outcome = fenced(true, Statements::one, [&](pqxx::transaction_base& tx) {
    return sql::sleep_until(tx, task_.run_id, task_.claim_token, step_name, iso_timestamp);
  });
  if (outcome.suspended) unwind(ControlSignal::Kind::suspended);
  backend_.progress();
}

std::optional<Json> Context::await_event(const std::string& event_name,
                                         std::optional<std::chrono::milliseconds> timeout,
                                         const std::string& name) {
  check_usable();
  const std::string step_name = occurrence(name.empty() ? "event:" + event_name : name);
  const std::optional<std::int64_t> timeout_ms =
      timeout ? std::optional<std::int64_t>(timeout->count()) : std::nullopt;
  const sql::Suspension outcome = fenced(true, Statements::one, [&](pqxx::transaction_base& tx) {
    return sql::await_event(tx, task_.run_id, task_.claim_token, step_name, event_name, timeout_ms);
  });
  if (outcome.suspended) unwind(ControlSignal::Kind::suspended);
  backend_.progress();
  if (outcome.status == "timeout") return std::nullopt;
  return outcome.payload;
}

bool Context::emit_event(const std::string& event_name, const Json& payload) {
  check_usable();
  const std::string step_name = occurrence("emit:" + event_name);
  const auto stored = steps_.find(step_name);
  if (stored != steps_.end()) return stored->second.get<bool>();
  const std::string scope = owner_scope();
  // The emit and its step commit together, fenced by complete_step (a runner that
  // lost its claim emits nothing); a replay returns the first outcome. The event
  // slot is locked before the run, as the SQL lock order requires.
  Json value = fenced(true, Statements::several, [&](pqxx::transaction_base& tx) {
    const bool first = sql::emit_event(tx, event_name, payload, scope);
    return sql::complete_step(tx, task_.run_id, task_.claim_token, step_name, Json(first));
  });
  steps_[step_name] = value;
  backend_.progress();
  return value.get<bool>();
}

std::string Context::spawn_child(const std::string& task_name, const Json& params,
                                 const Json& options, const std::string& name) {
  check_usable();
  const std::string step_name = occurrence(name.empty() ? "spawn:" + task_name : name);
  const auto stored = steps_.find(step_name);
  if (stored != steps_.end()) return stored->second.at("run_id").get<std::string>();

  std::string queue = backend_.queue();
  Json spawn_options = options.is_null() ? Json::object() : options;
  if (spawn_options.is_object() && spawn_options.contains("queue")) {
    queue = spawn_options["queue"].get<std::string>();
    spawn_options.erase("queue");
  }
  const std::string scope = owner_scope();
  // The spawn and its step commit together: a replay finds the step, never spawns twice.
  Json value = fenced(true, Statements::several, [&](pqxx::transaction_base& tx) {
    sql::heartbeat(tx, task_.run_id, task_.claim_token);
    const sql::SpawnResult child =
        sql::spawn_task(tx, task_name, params, queue, scope, spawn_options);
    return sql::complete_step(tx, task_.run_id, task_.claim_token, step_name,
                              Json{{"run_id", child.run_id}});
  });
  steps_[step_name] = value;
  backend_.progress();
  return value.at("run_id").get<std::string>();
}

TaskOutcome Context::await_task(const std::string& child_run_id, const std::string& name) {
  check_usable();
  const std::string step_name = occurrence(name.empty() ? "task:" + child_run_id : name);
  const sql::Suspension outcome = fenced(true, Statements::one, [&](pqxx::transaction_base& tx) {
    return sql::await_task(tx, task_.run_id, task_.claim_token, step_name, child_run_id);
  });
  if (outcome.suspended) unwind(ControlSignal::Kind::suspended);
  backend_.progress();
  TaskOutcome result;
  result.state = outcome.status;
  if (outcome.payload.is_object()) {
    result.result = outcome.payload.value("result", Json());
    result.error = outcome.payload.value("error", Json());
  }
  return result;
}

void Context::heartbeat() {
  fenced(true, Statements::one,
         [&](pqxx::transaction_base& tx) { sql::heartbeat(tx, task_.run_id, task_.claim_token); });
  backend_.progress();
}

void Context::heartbeat(std::chrono::milliseconds extend) {
  fenced(true, Statements::one, [&](pqxx::transaction_base& tx) {
    sql::heartbeat(tx, task_.run_id, task_.claim_token, extend);
  });
  backend_.extended(extend);
}

}  // namespace docket
