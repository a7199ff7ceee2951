// Docket's own vacuum of docket.runs: when a claiming backend asks for one.
//
// Every claim leaves dead index entries at the head of the claim scans
// (runs_ready_queue, runs_claimed) until VACUUM removes them, and autovacuum
// visits a database only once per autovacuum_naptime (1 minute by default).
// So a claiming backend looks, at most once per docket.vacuum_naptime, at the
// table's dead rows and asks for a vacuum of docket.runs by the same rule as
// autovacuum (the table's own thresholds), without the naptime's wait.
#pragma once

#include <cstdint>

namespace docket {

// What the backend knows when it looks.
struct VacuumFacts {
  bool autovacuum_on = true;    // the server's autovacuum (and track_counts)
  bool table_enabled = true;    // the table's autovacuum_enabled
  std::int64_t naptime_ms = 0;  // docket.vacuum_naptime; 0 turns it off
  double dead_rows = 0;         // dead rows the statistics count
  double rows = 0;              // pg_class.reltuples (negative: never counted)
  double threshold = 0;         // the table's autovacuum_vacuum_threshold
  double scale_factor = 0;      // the table's autovacuum_vacuum_scale_factor
};

// Whether this backend looks now: not off, and naptime_ms + backoff_ms since it
// last looked (last_look_ms < 0: it never did).
bool vacuum_look_due(std::int64_t naptime_ms, std::int64_t now_ms, std::int64_t last_look_ms,
                     std::int64_t backoff_ms = 0);

// The longest a backend's looks are put off after workers that did not vacuum.
constexpr std::int64_t kMaxVacuumBackoffMs = 600000;  // 10 minutes

// The backoff after a backend's worker ended: 0 if the table was vacuumed
// since the worker started (by it, or by autovacuum: the worker then had
// nothing to do); else twice the previous one, at least one naptime, at most
// kMaxVacuumBackoffMs. A worker that cannot connect, or fails, is so started
// again only after 1, 2, 4 ... naptimes instead of every naptime.
std::int64_t vacuum_backoff_ms(std::int64_t previous_ms, std::int64_t naptime_ms, bool vacuumed);

// Whether the table needs a vacuum: both switches on and more dead rows than
// threshold + scale_factor * rows (autovacuum's rule; unknown rows count 0).
bool vacuum_needed(const VacuumFacts& facts);

}  // namespace docket
