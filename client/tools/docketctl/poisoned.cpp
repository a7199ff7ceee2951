// docketctl poisoned list|retry: runs poisoned by repeated crashes or abandons.
#include <iostream>

#include "docket/client.hpp"
#include "docket/sql.hpp"
#include "docketctl.hpp"

namespace docketctl {

void add_poisoned_commands(CLI::App& app, Context& context) {
  CLI::App* poisoned = app.add_subcommand("poisoned", "runs poisoned by repeated crashes");
  poisoned->require_subcommand(1);

  auto limit = std::make_shared<int>(20);
  CLI::App* list = poisoned->add_subcommand("list", "poisoned runs, oldest first");
  list->add_option("--limit", *limit, "at most this many (default 20)")
      ->check(CLI::Range(1, 10000));
  list->callback([&context, limit] {
    std::vector<docket::Json> rows = docket::sql::in_transaction(
        context.connection(), false,
        [&](pqxx::transaction_base& tx) { return docket::sql::poisoned_runs(tx, *limit); });
    context.emit(docket::Json(rows), [&] {
      print_table(rows,
                  {"run_id", "tenant_id", "queue", "graph_id", "poisoned_at", "poison_reason"});
    });
  });

  auto run_id = std::make_shared<std::string>();
  CLI::App* retry =
      poisoned->add_subcommand("retry", "makes a poisoned run due again (idempotent)");
  retry->add_option("RUN_ID", *run_id, "the run")->required();
  retry->callback([&context, run_id] {
    const std::string scope = context.scope_or("system");
    // Read just before the recovery, in its transaction, so the message says
    // whether there was anything to recover. --json prints the run document.
    bool was_poisoned = false;
    const docket::Json run =
        docket::sql::in_transaction(context.connection(), true, [&](pqxx::transaction_base& tx) {
          const auto before = docket::sql::inspect_run(tx, scope, *run_id);
          was_poisoned = before && !(*before)["poisoned_at"].is_null();
          return docket::sql::retry_poisoned_run(tx, scope, *run_id);
        });
    context.emit(run, [&] {
      if (was_poisoned) {
        std::cout << "recovered " << *run_id << ": due now\n";
      } else {
        std::cout << "not poisoned, unchanged: " << *run_id << "\n";
      }
    });
  });
}

}  // namespace docketctl
