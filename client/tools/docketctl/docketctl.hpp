// docketctl: what its commands share. Each group of commands lives in its own
// file and adds itself to the CLI11 application through one add_* function
// called from main.cpp: a new command is a new file here (CMakeLists.txt globs
// this directory), its add_* declaration below and one line in main.cpp.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <pqxx/pqxx>

#include "docket/json.hpp"

namespace docketctl {

// Exit codes (documented in README.md, "Operating docket").
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotCompleted = 3;  // tasks wait: settled otherwise
constexpr int kExitTimeout = 4;       // tasks wait: still unsettled

// The options every command accepts (before or after the command's name), the
// connection they open, and the exit code the command sets.
class Context {
 public:
  std::string dsn;
  bool json = false;
  std::optional<std::string> scope;
  int exit_code = kExitOk;

  // The connection from --dsn or the PG* environment, opened on first use.
  pqxx::connection& connection();
  // --scope, or the command's default: "system" for reads, "tenantless" for
  // what a command creates (spawns, emits).
  std::string scope_or(const std::string& fallback) const { return scope.value_or(fallback); }
  // --json: `value` on one line; otherwise human().
  void emit(const docket::Json& value, const std::function<void()>& human) const;

 private:
  std::unique_ptr<pqxx::connection> connection_;
};

// A command failed in a way the user should read (exit code 1): printed as
// "docketctl: <message>".
struct CommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Human output helpers.
std::string cell(const docket::Json& value);
// Rows of JSON objects as an aligned table with the given columns, then "(n rows)".
void print_table(const std::vector<docket::Json>& rows, const std::vector<std::string>& columns);
// "key: value" lines.
void print_object(const docket::Json& object);
// Parses a JSON command-line argument (CommandError when malformed).
docket::Json parse_json_argument(const std::string& what, const std::string& text);

// The command groups (one file each).
void add_runs_commands(CLI::App& app, Context& context);
void add_tasks_commands(CLI::App& app, Context& context);
void add_events_commands(CLI::App& app, Context& context);
void add_poisoned_commands(CLI::App& app, Context& context);
void add_queues_commands(CLI::App& app, Context& context);  // queues (stats), top
void add_cleanup_command(CLI::App& app, Context& context);
void add_serve_command(CLI::App& app, Context& context);  // the web dashboard

}  // namespace docketctl
