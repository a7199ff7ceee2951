// The contract's constants, in one place: every check of a limit names one of
// these rather than repeating a literal.
#pragma once

#include <cstddef>
#include <cstdint>

namespace docket {

// Queue names: non-empty, at most this many bytes.
constexpr std::size_t kMaxQueueBytes = 128;
// Task names, step names, event names, idempotency keys: non-empty, at most
// this many bytes.
constexpr std::size_t kMaxNameBytes = 255;
// Run ids, graph ids and graph hashes: non-empty, at most this many bytes.
// docket.run_heads' listing indexes hold all three in one entry, beside the
// tenant id: this keeps an id from being refused by an index (54000) instead
// of with its own error.
constexpr std::size_t kMaxIdBytes = 255;
// Tenant ids: a bound tenant (bind_tenant) and the tenant of an owner scope
// (the scope a run, task or event is created in) are at most this many bytes.
// A read scope is not capped: a run stored before 0.3.0 may have a longer one.
constexpr std::size_t kMaxTenantBytes = 1000;
// Longest delay, timeout or duration an option may ask for: ten years.
constexpr std::int64_t kMaxDurationMs = 86400000LL * 3650;
// Retry delays saturate here instead of overflowing.
constexpr std::int64_t kMaxRetryDelayMs = 86400000LL * 365;
// Attempts a task may be given.
constexpr int kMaxTaskAttempts = 1000;

// A failed attempt's error kept in a task's history: at most this many bytes
// of its JSON text; a longer one is kept as {"truncated": true, "bytes": n,
// "prefix": its first bytes}.
constexpr std::size_t kMaxHistoryErrorBytes = 8192;

// A task's run: graph_hash of every task run.
constexpr const char* kTaskGraphHash = "task";

}  // namespace docket
