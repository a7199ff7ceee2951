// docketctl: operate docket from the shell.
//
//   docketctl [--dsn DSN] [--json] [--scope SCOPE] <command> ...   (--help on every command)
//     runs list|show          tasks spawn|cancel|result|wait|list|show
//     events emit             poisoned list|retry
//     queues (alias stats)    top     cleanup
//     serve                   (the web dashboard, docs/dashboard.md)
//
// The connection comes from the standard PG* environment variables, or --dsn.
// Human tables by default; --json prints JSON for scripts. Exit status: 0 done,
// 1 an error, 2 bad usage; tasks wait: 0 completed, 3 settled otherwise
// (failed, cancelled, poisoned), 4 timed out.
#include <iostream>

#include "docket/errors.hpp"
#include "docketctl.hpp"

namespace {

int run(int argc, char** argv) {
  docketctl::Context context;
  CLI::App app("docketctl: operate docket (durable tasks in PostgreSQL) from the shell.",
               "docketctl");
  app.footer(
      "The connection comes from the PG* environment variables, or --dsn. The scope defaults to "
      "'system' for reads and 'tenantless' for spawns and emits.\nExit status: 0 done, 1 an "
      "error, 2 bad usage; tasks wait: 0 completed, 3 failed/cancelled/poisoned, 4 timed out.");
  // Global options may come before or after the command: a subcommand hands the
  // options it does not know to its parent.
  app.fallthrough();
  app.require_subcommand(1);
  app.add_option("--dsn", context.dsn, "libpq connection string (default: PG* environment)");
  app.add_flag("--json", context.json, "print JSON instead of human tables");
  app.add_option("--scope", context.scope,
                 "system | tenantless | tenant:<id> (default: system; tenantless for spawns and "
                 "emits)");

  docketctl::add_runs_commands(app, context);
  docketctl::add_tasks_commands(app, context);
  docketctl::add_events_commands(app, context);
  docketctl::add_poisoned_commands(app, context);
  docketctl::add_queues_commands(app, context);
  docketctl::add_cleanup_command(app, context);
  docketctl::add_serve_command(app, context);

  try {
    app.parse(argc, argv);
    return context.exit_code;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "docketctl: " << e.what() << "\n";
    // The help of the command that was being parsed.
    const CLI::App* failed = &app;
    std::string path;
    while (!failed->get_subcommands().empty()) {
      path += (path.empty() ? "" : " ") + failed->get_name();
      failed = failed->get_subcommands().front();
    }
    std::cerr << failed->help(path);
    return docketctl::kExitUsage;
  } catch (const docketctl::CommandError& e) {
    std::cerr << "docketctl: " << e.what() << "\n";
    return docketctl::kExitError;
  } catch (const docket::Error& e) {
    std::cerr << "docketctl: " << e.what();
    if (!e.sqlstate().empty()) std::cerr << " (SQLSTATE " << e.sqlstate() << ")";
    std::cerr << "\n";
    return docketctl::kExitError;
  } catch (const std::exception& e) {
    std::cerr << "docketctl: " << e.what() << "\n";
    return docketctl::kExitError;
  }
}

}  // namespace

// Building the command line can throw too (CLI::ConstructionError, bad_alloc):
// exit 1 with the message, never std::terminate.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "docketctl: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "docketctl: unknown error\n";
  }
  return docketctl::kExitError;
}
