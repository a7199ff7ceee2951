// Waking workers: NOTIFY docket_due with the queue as payload when a run
// becomes due now, debounced per queue per backend.
#pragma once

#include <string>

namespace docket::pg {

constexpr const char* kNotifyChannel = "docket_due";

// Wakes the backends waiting for `queue` in docket.await_due when the
// transaction commits (pg/wake.hpp, never debounced), and, unless docket.notify
// is off, notifies `queue` once when the transaction commits, unless this
// backend committed a notification for it less than docket.notify_interval_ms
// before. A prepared transaction notifies nobody (PREPARE TRANSACTION refuses
// one that executed NOTIFY).
void notify_due(const std::string& queue);

// Registers the transaction callback that records sent notifications.
void register_notify_callback();

}  // namespace docket::pg
