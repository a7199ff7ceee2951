// docket's settings (GUCs), defined when the library loads.
#pragma once

namespace docket::pg::settings {

// docket.fake_now: '' (the real clock) or a timestamptz the store uses as now.
const char* fake_now() noexcept;
// docket.notify: send NOTIFY docket_due when a run becomes due now.
bool notify() noexcept;
// docket.notify_interval_ms: at most one NOTIFY per queue per this many ms per backend.
int notify_interval_ms() noexcept;

void define();

}  // namespace docket::pg::settings
