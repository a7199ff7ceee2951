// docket._run_row_valid: the one CHECK constraint of docket.runs.
//
// A CHECK constraint's expression is read back from the catalog and planned
// for every statement that writes the table: six constraints cost a
// single-run commit about a quarter of its time (3.4 kB of expression text
// parsed and six expressions planned per UPDATE). This function states the
// same six rules in one call of eight columns, each rule failing only when it
// is false, as a CHECK does (a NULL passes): the status is one of the five, the
// counters are not negative, a claim token and its claimed_at come together,
// and so do a poison time and its reason. The rules themselves are the core's
// run_row_rules_hold, which the direct writes of pg/run_write.cpp check too.
// It names no object, so it runs without a search_path switch (as docket.now()
// does).
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/run.hpp"
#include "pg/boundary.hpp"
#include "pg/postgres.hpp"

namespace docket::pg {

namespace {

// One of the five statuses the core knows (core/run.hpp).
bool known_status(const text* status) {
  return parse_status(std::string_view(VARDATA_ANY(status), VARSIZE_ANY_EXHDR(status))).has_value();
}

Datum run_row_valid(FunctionCallInfo fcinfo) {
  enum {
    status,
    checkpoint_seq,
    claim_attempts,
    claim_abandons,
    claim_token,
    claimed_at,
    poisoned_at,
    poison_reason
  };
  auto null = [&](int arg) { return PG_ARGISNULL(arg); };
  auto count = [&](int arg, bool wide) -> std::optional<std::int64_t> {
    if (null(arg)) return std::nullopt;
    return wide ? PG_GETARG_INT64(arg) : PG_GETARG_INT32(arg);
  };
  RunRowFacts row;
  row.status_known = null(status) || call([&] { return known_status(PG_GETARG_TEXT_PP(status)); });
  row.checkpoint_seq = count(checkpoint_seq, true);
  row.claim_attempts = count(claim_attempts, false);
  row.claim_abandons = count(claim_abandons, false);
  row.has_claim_token = !null(claim_token);
  row.has_claimed_at = !null(claimed_at);
  row.has_poisoned_at = !null(poisoned_at);
  row.has_poison_reason = !null(poison_reason);
  const bool valid = run_row_rules_hold(row);
  PG_RETURN_BOOL(valid);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_run_row_valid, docket::pg::run_row_valid)
