// Waking workers: NOTIFY docket_due with the queue as payload when a run
// becomes due now, debounced per queue per backend.
#pragma once

#include <string>

namespace docket::pg {

constexpr const char* kNotifyChannel = "docket_due";

// Wakes the backends waiting for `queue` in docket.await_due when the
// transaction commits (pg/wake.hpp, never debounced), and queues a
// notification for `queue` unless docket.notify is off or one for this queue
// was committed less than docket.notify_interval_ms ago by this backend.
// PostgreSQL folds duplicates within a transaction into one.
void notify_due(const std::string& queue);

// Registers the transaction callback that records sent notifications.
void register_notify_callback();

}  // namespace docket::pg
