// Waking idle workers without NOTIFY: a worker's connection waits in
// docket.await_due on its own latch and shows the queue it waits for in its
// wait event (class Extension: a marker with the queue's hash); a transaction
// that made work of that queue due now sets the latches of the backends of
// its database waiting with that marker, once it has committed. No lock is
// taken and no shared memory is needed (shared_preload_libraries is not), so
// committing producers never wait for one another, as they do for NOTIFY's
// queue lock, which is held through each one's WAL flush.
#pragma once

#include <string>

#include "pg/postgres.hpp"

namespace docket::pg {

// Remembers that the transaction in progress makes work of `queue` due now:
// backends waiting for it in docket.await_due are woken when it commits.
void wake_on_commit(const std::string& queue);

// The longest wait docket.await_due and docket.await_tasks accept (1 hour).
constexpr int kMaxAwaitMs = 3600 * 1000;

// Raises bad_argument unless 0 <= timeout_ms <= kMaxAwaitMs.
void validate_timeout(int timeout_ms);

// docket.await_due's wait: true as soon as ready work of `queue` (the text
// datum `queue_text`) is due (for a caller bound to tenants: of theirs), at
// once or when a transaction that makes some due commits; false when none is
// within timeout_ms. Each wake-up looks again: a latch set for another reason,
// or work another claimer took first, does not end the wait.
bool await_due_work(Datum queue_text, const std::string& queue, int timeout_ms);

// Registers the transaction callback that wakes them.
void register_wake_callback();

}  // namespace docket::pg
