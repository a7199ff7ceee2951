// Shared builders for the unit tests: a well-formed run document as the
// PostgreSQL layer would extract it, and an error-expectation helper.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/run.hpp"

namespace docket::test {

inline Field<std::string> text(std::string v) {
  return Field<std::string>::present_value(std::move(v));
}

// A valid running run at sequence `seq`, as extracted from jsonb.
inline RunFields run_fields(std::string id = "r-1", std::int64_t seq = 1,
                            std::string status = "running") {
  RunFields f;
  f.is_object = true;
  f.id = text(std::move(id));
  f.graph_id = text("g");
  f.graph_hash = text("h1");
  f.status = text(std::move(status));
  f.checkpoint_seq = Field<std::int64_t>::present_value(seq);
  f.started_at = text("2024-05-01T10:00:00Z");
  return f;
}

// Runs `body`, expecting a docket::Error of `reason` whose message starts with
// the reason word and contains `fragment`.
inline void expect_error(const std::function<void()>& body, Reason reason,
                         const std::string& fragment = "") {
  try {
    body();
    ADD_FAILURE() << "expected " << reason_word(reason) << " containing \"" << fragment << "\"";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.reason(), reason) << what;
    EXPECT_EQ(what.rfind(std::string(reason_word(reason)) + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

}  // namespace docket::test
