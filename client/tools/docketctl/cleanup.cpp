// docketctl cleanup: retention (docket.cleanup) until nothing is left to delete.
#include <iostream>

#include "docket/sql.hpp"
#include "docketctl.hpp"

namespace docketctl {

void add_cleanup_command(CLI::App& app, Context& context) {
  struct Args {
    std::string older_than = "7 days";
    int batch = 1000;
    bool once = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cleanup = app.add_subcommand(
      "cleanup",
      "deletes finished tasks (completed, failed, cancelled) last written before now - "
      "--older-than, with their steps, waits and history, in batches until none is left");
  cleanup->add_option("--older-than", args->older_than, "a PostgreSQL interval (default '7 days')");
  cleanup->add_option("--batch", args->batch, "runs deleted per transaction (default 1000)")
      ->check(CLI::Range(1, 1000000));
  cleanup->add_flag("--once", args->once, "one batch only");
  cleanup->callback([&context, args] {
    std::int64_t deleted = 0;
    int batches = 0;
    for (;;) {
      // Each batch commits on its own, so locks are held briefly.
      const std::int64_t n =
          docket::sql::in_transaction(context.connection(), true, [&](pqxx::transaction_base& tx) {
            return docket::sql::cleanup(tx, args->older_than, args->batch);
          });
      deleted += n;
      ++batches;
      if (n == 0 || args->once) break;
    }
    const docket::Json out = {
        {"deleted", deleted}, {"batches", batches}, {"older_than", args->older_than}};
    context.emit(out, [&] {
      std::cout << "deleted " << deleted << (deleted == 1 ? " finished run" : " finished runs")
                << " older than " << args->older_than << " (" << batches
                << (batches == 1 ? " batch)\n" : " batches)\n");
    });
  });
}

}  // namespace docketctl
