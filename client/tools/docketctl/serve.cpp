// docketctl serve: the web dashboard (client/tools/serve, docs/dashboard.md),
// until SIGINT or SIGTERM (exit status 0).
#include <memory>

#include "docketctl.hpp"
#include "serve.hpp"

namespace docketctl {

void add_serve_command(CLI::App& app, Context& context) {
  auto options = std::make_shared<docket::serve::Options>();
  CLI::App* serve = app.add_subcommand(
      "serve",
      "serves the web dashboard (queues, tasks, history, poisoned runs, schedules) and its JSON "
      "API under /api/, in --scope (default system), until SIGINT or SIGTERM");
  serve->add_option("--listen", options->listen,
                    "HOST:PORT to listen on (default 127.0.0.1:8080, loopback only; port 0: any)");
  serve->add_flag("--allow-actions", options->allow_actions,
                  "enable the actions: retry a poisoned run, cancel a task, emit an event");
  serve
      ->add_option("--token-file", options->token_file,
                   "require the bearer token in this file for every page and API request")
      ->check(CLI::ExistingFile);
  serve
      ->add_option("--connections", options->connections,
                   "database connections the server holds, whatever the viewers (default 3)")
      ->check(CLI::Range(1, 64));
  serve->callback([&context, options] {
    options->dsn = context.dsn;
    options->scope = context.scope_or("system");
    context.exit_code = docket::serve::run(*options);
  });
}

}  // namespace docketctl
