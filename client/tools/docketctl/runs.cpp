// docketctl runs list|show: the run store's runs (tasks included).
#include <iostream>

#include "docket/client.hpp"
#include "docketctl.hpp"

namespace docketctl {

void add_runs_commands(CLI::App& app, Context& context) {
  CLI::App* runs = app.add_subcommand("runs", "the run store's runs (every task is a run)");
  runs->require_subcommand(1);

  struct ListArgs {
    int limit = 20;
    std::vector<std::string> statuses;
    std::optional<std::string> graph;
    std::vector<std::string> before;
  };
  auto list_args = std::make_shared<ListArgs>();
  CLI::App* list = runs->add_subcommand("list", "runs newest first, a page at a time");
  list->add_option("--limit", list_args->limit, "page size (default 20)")
      ->check(CLI::Range(1, 10000));
  list->add_option("--status", list_args->statuses,
                   "only runs of this status (repeatable): running, waiting, completed, failed, "
                   "cancelled");
  list->add_option("--graph", list_args->graph, "only runs of this graph (a task name for tasks)");
  list->add_option("--before", list_args->before,
                   "the next page: the STARTED_AT RUN_ID printed after the previous one")
      ->expected(2);
  list->callback([&context, list_args] {
    docket::sql::ListQuery query;
    query.page_limit = list_args->limit;
    if (!list_args->before.empty()) {
      query.before_started_at = list_args->before[0];
      query.before_run_id = list_args->before[1];
    }
    query.graph_id = list_args->graph;
    query.statuses = list_args->statuses;
    docket::Client client(context.connection());
    const docket::Json page = client.list_runs(context.scope_or("system"), query);
    context.emit(page, [&] {
      print_table(page["entries"].get<std::vector<docket::Json>>(),
                  {"run_id", "tenant_id", "graph_id", "status", "checkpoint_seq", "started_at",
                   "updated_at"});
      if (page.value("has_more", false))
        std::cout << "more: --before " << cell(page["next_before"]["started_at"]) << " "
                  << cell(page["next_before"]["run_id"]) << "\n";
    });
  });

  auto run_id = std::make_shared<std::string>();
  CLI::App* show = runs->add_subcommand("show", "a run: its document, claim and poison facts");
  show->add_option("RUN_ID", *run_id, "the run")->required();
  show->callback([&context, run_id] {
    const std::string scope = context.scope_or("system");
    docket::Client client(context.connection());
    const auto info = client.inspect_run(scope, *run_id);
    if (!info) throw CommandError("no run " + *run_id + " in scope " + scope);
    context.emit(*info, [&] { print_object(*info); });
  });
}

}  // namespace docketctl
