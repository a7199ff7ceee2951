// docketctl events emit.
#include <iostream>

#include "docket/client.hpp"
#include "docketctl.hpp"

namespace docketctl {

void add_events_commands(CLI::App& app, Context& context) {
  CLI::App* events = app.add_subcommand("events", "events tasks wait for");
  events->require_subcommand(1);

  struct EmitArgs {
    std::string name;
    std::optional<std::string> payload;
  };
  auto args = std::make_shared<EmitArgs>();
  CLI::App* emit = events->add_subcommand(
      "emit", "emits an event (first emit of a name in a scope wins) and wakes its waiters");
  emit->add_option("NAME", args->name, "the event name")->required();
  emit->add_option("PAYLOAD_JSON", args->payload, "its payload (default: null)");
  emit->callback([&context, args] {
    const docket::Json payload =
        args->payload ? parse_json_argument("PAYLOAD_JSON", *args->payload) : docket::Json();
    docket::Client client(context.connection());
    const bool first = client.emit_event(args->name, payload, context.scope_or("tenantless"));
    const docket::Json out = {{"event", args->name}, {"emitted", first}};
    context.emit(out, [&] {
      std::cout << (first ? "emitted " : "already emitted (unchanged): ") << args->name << "\n";
    });
  });
}

}  // namespace docketctl
