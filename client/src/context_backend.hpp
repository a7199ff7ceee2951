// What a Context needs from its runner: a connection for its calls, the
// group-committed step checkpoint, and a way to report confirmed progress to the
// LeaseWatchdog. Internal to the client.
#pragma once

#include <chrono>
#include <string>

#include <pqxx/pqxx>

#include "docket/json.hpp"
#include "pool_shared.hpp"

namespace docket {

class ContextBackend {
 public:
  virtual ~ContextBackend() = default;
  // A connection lent for one call (or one transaction); given back when the
  // lease is destroyed.
  virtual detail::ConnectionLease connection() = 0;
  // Stores a step checkpoint (group commit); returns the stored value once the
  // database confirmed it (kept: the first stored value). Throws StaleFence,
  // Cancelled, NotFound, Ambiguous or the server's typed error.
  virtual Json store_step(const std::string& step_name, const Json& value) = 0;
  // A database call confirmed the lease (step, heartbeat): the watchdog restarts.
  virtual void progress() noexcept = 0;
  // A heartbeat extended the claim by `extend` from now: the watchdog counts it
  // as progress until the extension ends.
  virtual void extended(std::chrono::milliseconds extend) noexcept = 0;
  // The queue the task was claimed from (children are spawned there by default).
  virtual const std::string& queue() const noexcept = 0;
};

}  // namespace docket
