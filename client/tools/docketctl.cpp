// docketctl: operate docket from the shell.
//
//   docketctl [--dsn DSN] [--json] [--scope SCOPE] <command> ...
//     runs list [--limit N] [--status S]... [--graph ID] [--before STARTED_AT RUN_ID]
//     runs show RUN_ID
//     tasks spawn NAME [PARAMS_JSON] [--queue Q] [--options OPTIONS_JSON]
//     tasks cancel RUN_ID [--reason TEXT]
//     tasks result RUN_ID
//     tasks wait RUN_ID [--timeout MS]
//     events emit NAME [PAYLOAD_JSON]
//     poisoned list [--limit N]
//     poisoned retry RUN_ID
//     stats
//
// The connection comes from the standard PG* environment variables, or --dsn.
// Human tables by default; --json prints one JSON document for scripts.
// Exit status: 0 done, 1 an error, 2 bad usage; tasks wait: 0 completed, 3
// settled otherwise (failed, cancelled, poisoned), 4 timed out.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "docket/client.hpp"
#include "docket/errors.hpp"
#include "docket/sql.hpp"

namespace {

struct Args {
  std::string dsn;
  bool json = false;
  std::string scope = "system";
  std::vector<std::string> positional;
  std::optional<std::string> queue;
  std::optional<std::string> options;
  std::optional<std::string> reason;
  std::optional<std::string> graph;
  std::optional<std::string> before_started_at;
  std::optional<std::string> before_run_id;
  std::vector<std::string> statuses;
  int limit = 20;
  long long timeout_ms = 60000;
};

constexpr const char* kUsage =
    "usage: docketctl [--dsn DSN] [--json] [--scope SCOPE] <command>\n"
    "  runs list [--limit N] [--status S]... [--graph ID] [--before STARTED_AT RUN_ID]\n"
    "  runs show RUN_ID\n"
    "  tasks spawn NAME [PARAMS_JSON] [--queue Q] [--options OPTIONS_JSON]\n"
    "  tasks cancel RUN_ID [--reason TEXT]\n"
    "  tasks result RUN_ID\n"
    "  tasks wait RUN_ID [--timeout MS]   (exit 0 completed, 3 failed/cancelled/poisoned, 4 "
    "timeout)\n"
    "  events emit NAME [PAYLOAD_JSON]\n"
    "  poisoned list [--limit N]\n"
    "  poisoned retry RUN_ID\n"
    "  stats\n"
    "The scope defaults to 'system' for reads and 'tenantless' for spawns and emits.\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Args parse(int argc, char** argv) {
  Args args;
  bool scope_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) throw UsageError(std::string(flag) + " needs a value");
      return argv[++i];
    };
    if (a == "--dsn") {
      args.dsn = value("--dsn");
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--scope") {
      args.scope = value("--scope");
      scope_given = true;
    } else if (a == "--queue") {
      args.queue = value("--queue");
    } else if (a == "--options") {
      args.options = value("--options");
    } else if (a == "--reason") {
      args.reason = value("--reason");
    } else if (a == "--graph") {
      args.graph = value("--graph");
    } else if (a == "--status") {
      args.statuses.push_back(value("--status"));
    } else if (a == "--limit") {
      args.limit = std::stoi(value("--limit"));
    } else if (a == "--timeout") {
      args.timeout_ms = std::stoll(value("--timeout"));
      if (args.timeout_ms < 0) throw UsageError("--timeout must be >= 0");
    } else if (a == "--before") {
      args.before_started_at = value("--before");
      args.before_run_id = value("--before");
    } else if (a == "-h" || a == "--help") {
      throw UsageError("");
    } else if (a.rfind("--", 0) == 0) {
      throw UsageError("unknown option " + a);
    } else {
      args.positional.push_back(a);
    }
  }
  if (!scope_given && !args.positional.empty() &&
      ((args.positional[0] == "tasks" && args.positional.size() > 1 &&
        args.positional[1] == "spawn") ||
       args.positional[0] == "events"))
    args.scope = "tenantless";
  return args;
}

const std::string& arg(const Args& args, std::size_t index, const char* what) {
  if (args.positional.size() <= index) throw UsageError(std::string("missing ") + what);
  return args.positional[index];
}

std::string cell(const docket::Json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// Prints rows of JSON objects as an aligned table with the given columns.
void table(const std::vector<docket::Json>& rows, const std::vector<std::string>& columns) {
  std::vector<std::size_t> width(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) width[c] = columns[c].size();
  for (const auto& row : rows)
    for (std::size_t c = 0; c < columns.size(); ++c)
      width[c] = std::max(width[c], cell(row.value(columns[c], docket::Json())).size());
  auto line = [&](auto get) {
    std::string out;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      std::string text = get(c);
      text.resize(width[c], ' ');
      out += (c ? "  " : "") + text;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::cout << out << "\n";
  };
  line([&](std::size_t c) { return columns[c]; });
  line([&](std::size_t c) { return std::string(width[c], '-'); });
  for (const auto& row : rows)
    line([&](std::size_t c) { return cell(row.value(columns[c], docket::Json())); });
  std::cout << "(" << rows.size() << (rows.size() == 1 ? " row)\n" : " rows)\n");
}

void print_object(const docket::Json& object) {
  for (const auto& [key, value] : object.items()) std::cout << key << ": " << cell(value) << "\n";
}

int run(const Args& args) {
  const std::string& group = arg(args, 0, "command");
  pqxx::connection connection(args.dsn);
  docket::Client client(connection);

  auto emit = [&](const docket::Json& value, auto human) {
    if (args.json) {
      std::cout << value.dump() << "\n";
    } else {
      human();
    }
  };

  if (group == "runs") {
    const std::string& verb = arg(args, 1, "runs list|show");
    if (verb == "list") {
      docket::sql::ListQuery query;
      query.page_limit = args.limit;
      query.before_started_at = args.before_started_at;
      query.before_run_id = args.before_run_id;
      query.graph_id = args.graph;
      query.statuses = args.statuses;
      const docket::Json page = client.list_runs(args.scope, query);
      emit(page, [&] {
        table(page["entries"].get<std::vector<docket::Json>>(),
              {"run_id", "tenant_id", "graph_id", "status", "checkpoint_seq", "started_at",
               "updated_at"});
        if (page.value("has_more", false))
          std::cout << "more: --before " << cell(page["next_before"]["started_at"]) << " "
                    << cell(page["next_before"]["run_id"]) << "\n";
      });
      return 0;
    }
    if (verb == "show") {
      const auto info = client.inspect_run(args.scope, arg(args, 2, "RUN_ID"));
      if (!info) {
        std::cerr << "docketctl: no run " << args.positional[2] << " in scope " << args.scope
                  << "\n";
        return 1;
      }
      emit(*info, [&] { print_object(*info); });
      return 0;
    }
  } else if (group == "tasks") {
    const std::string& verb = arg(args, 1, "tasks spawn|cancel|result|wait");
    if (verb == "spawn") {
      docket::SpawnOptions options;
      options.owner_scope = args.scope;
      if (args.queue) options.queue = *args.queue;
      const docket::Json params = args.positional.size() > 3
                                      ? docket::Json::parse(args.positional[3])
                                      : docket::Json::object();
      const std::string& name = arg(args, 2, "NAME");
      docket::Json extra =
          args.options ? docket::Json::parse(*args.options) : docket::Json::object();
      // Options given as JSON go straight to spawn_task, so every option is reachable.
      pqxx::work tx(connection);
      const docket::SpawnResult r = [&] {
        try {
          return docket::sql::spawn_task(tx, name, params, options.queue, options.owner_scope,
                                         extra);
        } catch (...) {
          docket::sql::rethrow_mapped(true);
        }
      }();
      tx.commit();
      const docket::Json out = {
          {"run_id", r.run_id}, {"attempt", r.attempt}, {"created", r.created}};
      emit(out, [&] { print_object(out); });
      return 0;
    }
    if (verb == "cancel") {
      const bool cancelled = client.cancel(args.scope, arg(args, 2, "RUN_ID"), args.reason);
      const docket::Json out = {{"run_id", args.positional[2]}, {"cancelled", cancelled}};
      emit(out, [&] {
        std::cout << (cancelled ? "cancelled " : "already finished: ") << args.positional[2]
                  << "\n";
      });
      return 0;
    }
    if (verb == "result") {
      const auto result = client.task_result(args.scope, arg(args, 2, "RUN_ID"));
      if (!result) {
        std::cerr << "docketctl: no task " << args.positional[2] << " in scope " << args.scope
                  << "\n";
        return 1;
      }
      emit(*result, [&] { print_object(*result); });
      return 0;
    }
    if (verb == "wait") {
      const std::string& run_id = arg(args, 2, "RUN_ID");
      docket::WaitOptions options;
      options.scope = args.scope;
      const auto result = client.wait(run_id, std::chrono::milliseconds(args.timeout_ms), options);
      if (!result) {
        const docket::Json out = {{"run_id", run_id}, {"state", "timeout"}};
        emit(out, [&] {
          std::cout << "timed out after " << args.timeout_ms << " ms: " << run_id << "\n";
        });
        return 4;
      }
      emit(*result, [&] { print_object(*result); });
      return result->value("state", std::string()) == "completed" ? 0 : 3;
    }
  } else if (group == "events") {
    if (arg(args, 1, "events emit") == "emit") {
      const docket::Json payload =
          args.positional.size() > 3 ? docket::Json::parse(args.positional[3]) : docket::Json();
      const bool first = client.emit_event(arg(args, 2, "NAME"), payload, args.scope);
      const docket::Json out = {{"event", args.positional[2]}, {"emitted", first}};
      emit(out, [&] {
        std::cout << (first ? "emitted " : "already emitted (unchanged): ") << args.positional[2]
                  << "\n";
      });
      return 0;
    }
  } else if (group == "poisoned") {
    const std::string& verb = arg(args, 1, "poisoned list|retry");
    if (verb == "list") {
      std::vector<docket::Json> rows = docket::sql::in_transaction(
          connection, false,
          [&](pqxx::transaction_base& tx) { return docket::sql::poisoned_runs(tx, args.limit); });
      emit(docket::Json(rows), [&] {
        table(rows, {"run_id", "tenant_id", "queue", "graph_id", "poisoned_at", "poison_reason"});
      });
      return 0;
    }
    if (verb == "retry") {
      const std::string& run_id = arg(args, 2, "RUN_ID");
      // Read just before the recovery, in its transaction, so the message says
      // whether there was anything to recover. --json prints the run document.
      bool was_poisoned = false;
      const docket::Json run =
          docket::sql::in_transaction(connection, true, [&](pqxx::transaction_base& tx) {
            const auto before = docket::sql::inspect_run(tx, args.scope, run_id);
            was_poisoned = before && !(*before)["poisoned_at"].is_null();
            return docket::sql::retry_poisoned_run(tx, args.scope, run_id);
          });
      emit(run, [&] {
        if (was_poisoned) {
          std::cout << "recovered " << run_id << ": due now\n";
        } else {
          std::cout << "not poisoned, unchanged: " << run_id << "\n";
        }
      });
      return 0;
    }
  } else if (group == "stats") {
    std::vector<docket::Json> rows = docket::sql::in_transaction(
        connection, false,
        [&](pqxx::transaction_base& tx) { return docket::sql::queue_stats(tx); });
    emit(docket::Json(rows), [&] {
      table(rows, {"queue", "due", "scheduled", "running", "waiting", "poisoned",
                   "oldest_due_age_ms", "completed_last_minute", "failed_last_minute"});
    });
    return 0;
  }
  throw UsageError("unknown command");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UsageError& e) {
    if (e.what()[0] != '\0') std::cerr << "docketctl: " << e.what() << "\n";
    std::cerr << kUsage;
    return 2;
  } catch (const docket::Error& e) {
    std::cerr << "docketctl: " << e.what();
    if (!e.sqlstate().empty()) std::cerr << " (SQLSTATE " << e.sqlstate() << ")";
    std::cerr << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "docketctl: " << e.what() << "\n";
    return 1;
  }
}
