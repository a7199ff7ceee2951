// Bounds on hostile input: how far a caller's clock may stray from docket's,
// and how large a value a caller may hand over. Plain numbers in, a refusal
// (docket::Error) out; the settings that supply the bounds live in src/pg.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/time.hpp"

namespace docket {

// Refuses (bad_argument, 22023) a caller-supplied time `name` further than
// `max_skew_ms` from `reference` (docket's clock), in either direction. The
// difference is taken without overflow, so the infinities are refused too.
void check_clock_skew(const char* name, Micros value, Micros reference, double max_skew_ms);

// Refuses (limit_exceeded, 54000) a value of `bytes` bytes when it is over
// `cap` bytes; `what` names the value ("params", "results[3]"), `setting` the
// setting that holds the cap.
void check_size(const std::string& what, std::size_t bytes, const char* setting, std::int64_t cap);

}  // namespace docket
