#include "pg/notify.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "pg/boundary.hpp"
#include "pg/settings.hpp"
#include "pg/wake.hpp"

namespace docket::pg {

namespace {

// Per backend: when each queue was last notified by a committed transaction;
// the queues the transaction in progress made due (each once), notified when
// it commits; and those its commit notified, recorded once it committed.
std::unordered_map<std::string, TimestampTz>& last_sent() {
  static std::unordered_map<std::string, TimestampTz> map;
  return map;
}
std::vector<std::string>& pending() {
  static std::vector<std::string> queues;
  return queues;
}
std::vector<std::string>& sent() {
  static std::vector<std::string> queues;
  return queues;
}

// Before the commit: one NOTIFY per pending queue that this backend's
// committed transactions did not notify within docket.notify_interval_ms.
// Deciding here, not when a run became due, keeps two things right: a
// savepoint rolled back after a run of a queue became due (PostgreSQL drops
// the NOTIFYs of an aborted subtransaction) does not silence that queue for
// the rest of the transaction, and a transaction that made work due can still
// be prepared (PREPARE TRANSACTION refuses one that has executed NOTIFY).
void send_pending() {
  const int interval_ms = settings::notify_interval_ms();
  const TimestampTz now = call([] { return GetCurrentTimestamp(); });
  for (const std::string& queue : pending()) {
    const auto it = last_sent().find(queue);
    if (interval_ms > 0 && it != last_sent().end() &&
        now - it->second < static_cast<TimestampTz>(interval_ms) * 1000)
      continue;
    call([&] { Async_Notify(kNotifyChannel, queue.c_str()); });
    sent().push_back(queue);
  }
  pending().clear();
}

void on_xact(XactEvent event, void*) noexcept {
  switch (event) {
    case XACT_EVENT_PRE_COMMIT:
      // An error here (out of memory) aborts the commit, raised by entry()
      // after its C++ objects are gone.
      if (!pending().empty())
        entry(nullptr, [](FunctionCallInfo) {
          send_pending();
          return Datum(0);
        });
      return;
    case XACT_EVENT_COMMIT:
    case XACT_EVENT_PARALLEL_COMMIT:
      try {
        const TimestampTz now = GetCurrentTimestamp();
        for (const std::string& queue : sent()) last_sent()[queue] = now;
      } catch (...) {
        // Losing debounce bookkeeping only costs an extra notification.
      }
      break;
    case XACT_EVENT_ABORT:
    case XACT_EVENT_PARALLEL_ABORT:
    case XACT_EVENT_PRE_PREPARE:
    case XACT_EVENT_PREPARE:
      // A prepared transaction notifies nobody: it commits later, maybe
      // elsewhere, and the workers' polls find its work.
      break;
    default:
      return;
  }
  pending().clear();
  sent().clear();
}

}  // namespace

void notify_due(const std::string& queue) {
  wake_on_commit(queue);
  if (!settings::notify()) return;
  if (std::find(pending().begin(), pending().end(), queue) == pending().end())
    pending().push_back(queue);
}

void register_notify_callback() {
  RegisterXactCallback(on_xact, nullptr);
}

}  // namespace docket::pg
