// A task's history: the events its transitions append to the run's event log
// (docket.run_events), in the same transaction. Each run numbers its events
// with its own counter, docket.runs.event_seq, which the transition's own
// UPDATE advances by the number of events it records, under the row's lock:
// concurrent writers of one run take turns and never reuse a number, and
// append_events (the run store's own appends) advances the same counter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "pg/boundary.hpp"

namespace docket::pg {

// One event of one run: its number, type and payload (a jsonb datum), and
// when it happened if not now (an event the run's row stated until now).
struct HistoryEvent {
  Datum run_id;
  std::int64_t seq;
  const char* type;
  Datum payload;
  std::optional<Micros> recorded_at = std::nullopt;
};

// Appends `events` to the log in one INSERT, recorded at `now` (or their own
// recorded_at). Needs an open
// SPI connection; the caller holds each run's lock and has advanced its
// counter past the events' numbers.
void append_history(const std::vector<HistoryEvent>& events, Micros now);

// An event type and payload, numbered when a transition places it.
struct TaskEvent {
  const char* type;
  Datum payload;
};

// The events of one run whose counter is now `last_seq`: numbered
// last_seq - n + 1 .. last_seq, in order.
void append_history(Datum run_id, std::int64_t last_seq, const std::vector<TaskEvent>& events,
                    Micros now);

// One event of a run whose transition did not advance its counter (a run
// store call made it, such as abandon): advances the counter by one and
// appends the event. The caller holds the run's lock.
void record_task_event(Datum run_id, const TaskEvent& event, Micros now);

// A timestamp as JSON text, as to_jsonb writes it ("2026-12-02T01:17:01.5+00:00").
std::string json_timestamp(Micros t);

// A failed attempt's error as the history keeps it: itself, or, past
// kMaxHistoryErrorBytes of JSON text, {"truncated": true, "bytes", "prefix"}.
std::string history_error(const std::string& error_json);

}  // namespace docket::pg
