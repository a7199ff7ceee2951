// docket's settings (GUCs), defined when the library loads.
#pragma once

namespace docket::pg::settings {

// docket.fake_now: '' (the real clock) or a timestamptz the store uses as now.
const char* fake_now() noexcept;
// docket.notify: send NOTIFY docket_due when a run becomes due now.
bool notify() noexcept;
// docket.notify_interval_ms: at most one NOTIFY per queue per this many ms per backend.
int notify_interval_ms() noexcept;

// docket.direct_writes: claims, commits, step checkpoints and task
// completions write run rows (pg/run_write.hpp), step checkpoints read stored
// steps (pg/step_lookup.hpp), and a task's finish looks for waiter rows
// (pg/wait_probe.hpp), through the access methods where they can; off:
// always their statements.
bool direct_writes() noexcept;

// docket.max_clock_skew: how far (ms) a caller's `now` argument may be from docket.now().
double max_clock_skew_ms() noexcept;

// docket.vacuum_naptime: how often (ms) a claiming backend looks whether
// docket.runs needs its own vacuum (pg/vacuum.hpp); 0 turns that off.
int vacuum_naptime_ms() noexcept;

// The size caps (bytes), one setting each: docket.max_<name>_bytes.
enum class SizeCap { document, params, result, payload, error, headers };
int max_bytes(SizeCap cap) noexcept;
// The setting's name, "docket.max_params_bytes".
const char* max_bytes_name(SizeCap cap) noexcept;

void define();

}  // namespace docket::pg::settings
