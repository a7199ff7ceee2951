// Hostile input at the PostgreSQL boundary: a caller's `now` within
// docket.max_clock_skew of docket's clock, and jsonb values within their
// docket.max_*_bytes caps. The decisions are the core's (core/input_limits).
#pragma once

#include <cstddef>
#include <string>

#include "core/time.hpp"
#include "pg/postgres.hpp"
#include "pg/settings.hpp"

namespace docket::pg {

// A caller-supplied `now` argument: not NULL, finite, and no further than
// docket.max_clock_skew from docket.now(); bad_argument (22023) otherwise.
Micros now_arg(FunctionCallInfo fcinfo, int index);

// The size a cap measures: the bytes of the value's uncompressed jsonb form
// with a 4-byte header, what pg_column_size() reports for a computed value.
// O(1): nothing is detoasted.
std::size_t jsonb_bytes(Datum jsonb);

// Refuses (limit_exceeded, 54000) a jsonb value over the cap.
void check_jsonb_size(settings::SizeCap cap, const std::string& what, Datum jsonb);
// The same for a size already measured.
void check_size(settings::SizeCap cap, const std::string& what, std::size_t bytes);

// The size of member `key` of a jsonb object as a value of its own (what
// pg_column_size(object -> key) reports), or 0 when it is absent or not a
// container.
std::size_t jsonb_member_bytes(Datum object, const char* key);

}  // namespace docket::pg
