// What a Context needs from its runner: the runner's own connection and a way
// to report confirmed progress to the LeaseWatchdog. Internal to the client.
#pragma once

#include <string>

#include <pqxx/pqxx>

namespace docket {

class ContextBackend {
 public:
  virtual ~ContextBackend() = default;
  // The runner's connection; only the runner thread uses it.
  virtual pqxx::connection_base& connection() = 0;
  // A database call confirmed the lease (step, heartbeat): the watchdog restarts.
  virtual void progress() noexcept = 0;
  // The queue the task was claimed from (children are spawned there by default).
  virtual const std::string& queue() const noexcept = 0;
};

}  // namespace docket
