#include "pg/notify.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "pg/boundary.hpp"
#include "pg/settings.hpp"
#include "pg/wake.hpp"

namespace docket::pg {

namespace {

// Per backend: when each queue was last notified by a committed transaction,
// and the queues notified by the transaction in progress.
std::unordered_map<std::string, TimestampTz>& last_sent() {
  static std::unordered_map<std::string, TimestampTz> map;
  return map;
}
std::vector<std::string>& pending() {
  static std::vector<std::string> queues;
  return queues;
}

void on_xact(XactEvent event, void*) noexcept {
  try {
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT) {
      const TimestampTz now = GetCurrentTimestamp();
      for (const std::string& queue : pending()) last_sent()[queue] = now;
      pending().clear();
    } else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) {
      pending().clear();
    }
  } catch (...) {
    // Losing debounce bookkeeping only costs an extra notification.
    pending().clear();
  }
}

}  // namespace

void notify_due(const std::string& queue) {
  wake_on_commit(queue);
  if (!settings::notify()) return;
  if (std::find(pending().begin(), pending().end(), queue) != pending().end()) return;
  const int interval_ms = settings::notify_interval_ms();
  if (interval_ms > 0) {
    auto it = last_sent().find(queue);
    const TimestampTz now = call([] { return GetCurrentTimestamp(); });
    if (it != last_sent().end() && now - it->second < static_cast<TimestampTz>(interval_ms) * 1000)
      return;
  }
  pending().push_back(queue);
  call([&] { Async_Notify(kNotifyChannel, queue.c_str()); });
}

void register_notify_callback() {
  RegisterXactCallback(on_xact, nullptr);
}

}  // namespace docket::pg
