// docketctl tasks spawn|cancel|result|wait|list|show.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>

#include "docket/client.hpp"
#include "docket/sql.hpp"
#include "docketctl.hpp"

namespace docketctl {

namespace {

void add_spawn(CLI::App& tasks, Context& context) {
  struct Args {
    std::string name;
    std::optional<std::string> params;
    std::string queue = "default";
    std::optional<std::string> options;
  };
  auto args = std::make_shared<Args>();
  CLI::App* spawn = tasks.add_subcommand("spawn", "spawns a task");
  spawn->add_option("NAME", args->name, "the task name")->required();
  spawn->add_option("PARAMS_JSON", args->params, "its params (default: {})");
  spawn->add_option("--queue", args->queue, "its queue (default: default)");
  spawn->add_option("--options", args->options,
                    "spawn_task's options as JSON (max_attempts, retry, idempotency_key, "
                    "delay_ms, ...)");
  spawn->callback([&context, args] {
    const docket::Json params =
        args->params ? parse_json_argument("PARAMS_JSON", *args->params) : docket::Json::object();
    const docket::Json options =
        args->options ? parse_json_argument("--options", *args->options) : docket::Json::object();
    // Options given as JSON go straight to spawn_task, so every option is reachable.
    const docket::sql::SpawnResult r =
        docket::sql::in_transaction(context.connection(), true, [&](pqxx::transaction_base& tx) {
          return docket::sql::spawn_task(tx, args->name, params, args->queue,
                                         context.scope_or("tenantless"), options);
        });
    const docket::Json out = {{"run_id", r.run_id}, {"attempt", r.attempt}, {"created", r.created}};
    context.emit(out, [&] { print_object(out); });
  });
}

void add_cancel(CLI::App& tasks, Context& context) {
  struct Args {
    std::string run_id;
    std::optional<std::string> reason;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cancel = tasks.add_subcommand(
      "cancel", "cancels a task durably (a worker running it stops at its next call)");
  cancel->add_option("RUN_ID", args->run_id, "the task")->required();
  cancel->add_option("--reason", args->reason, "recorded with the cancellation");
  cancel->callback([&context, args] {
    docket::Client client(context.connection());
    const bool cancelled = client.cancel(context.scope_or("system"), args->run_id, args->reason);
    const docket::Json out = {{"run_id", args->run_id}, {"cancelled", cancelled}};
    context.emit(out, [&] {
      std::cout << (cancelled ? "cancelled " : "already finished: ") << args->run_id << "\n";
    });
  });
}

void add_result(CLI::App& tasks, Context& context) {
  auto run_id = std::make_shared<std::string>();
  CLI::App* result =
      tasks.add_subcommand("result", "a task's state, result and error (task_result)");
  result->add_option("RUN_ID", *run_id, "the task")->required();
  result->callback([&context, run_id] {
    const std::string scope = context.scope_or("system");
    docket::Client client(context.connection());
    const auto outcome = client.task_result(scope, *run_id);
    if (!outcome) throw CommandError("no task " + *run_id + " in scope " + scope);
    context.emit(*outcome, [&] { print_object(*outcome); });
  });
}

void add_wait(CLI::App& tasks, Context& context) {
  struct Args {
    std::string run_id;
    long long timeout_ms = 60000;
  };
  auto args = std::make_shared<Args>();
  CLI::App* wait = tasks.add_subcommand(
      "wait",
      "waits until a task settles; exit 0 completed, 3 failed/cancelled/poisoned, 4 timed out");
  wait->add_option("RUN_ID", args->run_id, "the task")->required();
  wait->add_option("--timeout", args->timeout_ms, "give up after this many ms (default 60000)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  wait->callback([&context, args] {
    docket::WaitOptions options;
    options.scope = context.scope_or("system");
    docket::Client client(context.connection());
    const auto result =
        client.wait(args->run_id, std::chrono::milliseconds(args->timeout_ms), options);
    if (!result) {
      const docket::Json out = {{"run_id", args->run_id}, {"state", "timeout"}};
      context.emit(out, [&] {
        std::cout << "timed out after " << args->timeout_ms << " ms: " << args->run_id << "\n";
      });
      context.exit_code = kExitTimeout;
      return;
    }
    context.emit(*result, [&] { print_object(*result); });
    context.exit_code =
        result->value("state", std::string()) == "completed" ? kExitOk : kExitNotCompleted;
  });
}

void add_list(CLI::App& tasks, Context& context) {
  auto query = std::make_shared<docket::sql::TaskListQuery>();
  query->page_limit = 20;
  CLI::App* list = tasks.add_subcommand("list", "tasks newest first, a page at a time");
  list->add_option("--queue", query->queue, "only this queue's tasks");
  list->add_option("--state", query->state, "only tasks in this state")
      ->check(CLI::IsMember({"pending", "running", "sleeping", "waiting", "poisoned", "completed",
                             "failed", "cancelled"}));
  list->add_option("--task-name", query->task_name, "only tasks of this name");
  list->add_option("--after", query->after_run_id,
                   "the next page: the RUN_ID printed after the previous one");
  list->add_option("--limit", query->page_limit, "page size (default 20)")
      ->check(CLI::Range(1, 9999));
  list->callback([&context, query] {
    // One more row than the page tells whether there is a next page.
    docket::sql::TaskListQuery probe = *query;
    probe.page_limit = query->page_limit + 1;
    std::vector<docket::Json> rows =
        docket::sql::in_transaction(context.connection(), false, [&](pqxx::transaction_base& tx) {
          return docket::sql::list_tasks(tx, context.scope_or("system"), probe);
        });
    const bool has_more = rows.size() > static_cast<std::size_t>(query->page_limit);
    if (has_more) rows.pop_back();
    const docket::Json next = has_more ? docket::Json(rows.back()["run_id"]) : docket::Json();
    const docket::Json page = {{"entries", rows}, {"has_more", has_more}, {"next_after", next}};
    context.emit(page, [&] {
      print_table(rows, {"run_id", "task_name", "queue", "tenant_id", "state", "attempt",
                         "started_at", "updated_at"});
      if (has_more) std::cout << "more: --after " << cell(next) << "\n";
    });
  });
}

// "key=value key=value" of a history event's payload.
std::string describe_payload(const docket::Json& payload) {
  if (payload.is_null()) return "";
  if (!payload.is_object()) return payload.dump();
  std::string out;
  for (const auto& [key, value] : payload.items()) {
    if (!out.empty()) out += ' ';
    out += key + '=' + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

// "+1.234s" from a microsecond difference.
std::string offset(std::int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "+%.3fs", static_cast<double>(us) / 1e6);
  return text;
}

void add_show(CLI::App& tasks, Context& context) {
  auto run_id = std::make_shared<std::string>();
  CLI::App* show = tasks.add_subcommand(
      "show", "a task's state, result and error, and its history as a timeline");
  show->add_option("RUN_ID", *run_id, "the task")->required();
  show->callback([&context, run_id] {
    const std::string scope = context.scope_or("system");
    constexpr int kPage = 500;
    std::optional<docket::Json> outcome;
    std::vector<docket::sql::HistoryEvent> history;
    // The outcome and the whole log, read in one snapshot.
    docket::sql::in_transaction(context.connection(), false, [&](pqxx::transaction_base& tx) {
      outcome = docket::sql::task_result(tx, scope, *run_id);
      if (!outcome) return 0;
      for (std::int64_t after = 0;;) {
        auto page = docket::sql::task_history(tx, scope, *run_id, after, kPage);
        const bool last = page.size() < static_cast<std::size_t>(kPage);
        if (!page.empty()) after = page.back().seq;
        for (auto& event : page) history.push_back(std::move(event));
        if (last) break;
      }
      return 0;
    });
    if (!outcome) throw CommandError("no task " + *run_id + " in scope " + scope);

    docket::Json out = {{"run_id", *run_id}};
    out.update(*outcome);
    docket::Json events = docket::Json::array();
    for (const auto& event : history)
      events.push_back({{"seq", event.seq},
                        {"type", event.type},
                        {"payload", event.payload},
                        {"recorded_at", event.recorded_at}});
    out["history"] = events;
    context.emit(out, [&] {
      for (const auto& [key, value] : out.items())
        if (key != "history") std::cout << key << ": " << cell(value) << "\n";
      std::cout << "history (" << history.size() << (history.size() == 1 ? " event" : " events")
                << "):\n";
      std::size_t type_width = 0;
      for (const auto& event : history) type_width = std::max(type_width, event.type.size());
      for (const auto& event : history) {
        std::string type = event.type;
        type.resize(type_width, ' ');
        std::string line = "  " + std::to_string(event.seq) + "  " + event.recorded_at + "  " +
                           offset(event.recorded_at_us - history.front().recorded_at_us) + "  " +
                           type + "  " + describe_payload(event.payload);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        std::cout << line << "\n";
      }
    });
  });
}

}  // namespace

void add_tasks_commands(CLI::App& app, Context& context) {
  CLI::App* tasks = app.add_subcommand("tasks", "durable tasks: spawn, inspect, wait, cancel");
  tasks->require_subcommand(1);
  add_spawn(*tasks, context);
  add_cancel(*tasks, context);
  add_result(*tasks, context);
  add_wait(*tasks, context);
  add_list(*tasks, context);
  add_show(*tasks, context);
}

}  // namespace docketctl
