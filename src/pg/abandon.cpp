// abandon_claim: handing a claim back before the holder's first commit,
// fenced on the exact token and the lease's checkpoint sequence.
#include <string>

#include "pg/abandon.hpp"

#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/notify.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

Statement lookup_statement{
    "SELECT claim_token, checkpoint_seq, claim_attempts, claim_abandons, queue"
    " FROM docket.runs WHERE run_id = $1 FOR UPDATE",
    1,
    {TEXTOID},
    nullptr};

// Never touches the document, checkpoint_seq or updated_at.
Statement reschedule_statement{
    "UPDATE docket.runs SET claim_token = NULL, claimed_at = NULL,"
    " claim_attempts = $2, claim_abandons = $3, wake_at = $4"
    " WHERE run_id = $1",
    4,
    {TEXTOID, INT4OID, INT4OID, TIMESTAMPTZOID},
    nullptr};

Statement poison_statement{
    "UPDATE docket.runs SET claim_token = NULL, claimed_at = NULL,"
    " claim_attempts = $2, claim_abandons = $3, wake_at = NULL,"
    " poisoned_at = $4, poison_reason = 'max_claim_abandons_exceeded'"
    " WHERE run_id = $1",
    4,
    {TEXTOID, INT4OID, INT4OID, TIMESTAMPTZOID},
    nullptr};

std::optional<int> optional_int32_arg(FunctionCallInfo fcinfo, int index) {
  if (arg_is_null(fcinfo, index)) return std::nullopt;
  return PG_GETARG_INT32(index);
}

AbandonPolicy abandon_policy(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  AbandonPolicy policy;
  policy.expected_checkpoint_seq = int64_arg(fcinfo, 2, "expected_checkpoint_seq");
  policy.now = now_arg(fcinfo, 3);
  policy.retry_at = timestamp_arg(fcinfo, 4, "retry_at");
  policy.max_claim_abandons = int32_arg(fcinfo, 5, "max_claim_abandons");
  require(fcinfo, 6, "non_poisoning");
  policy.non_poisoning = PG_GETARG_BOOL(6);
  policy.backoff_base_ms = optional_int32_arg(fcinfo, 7);
  policy.backoff_cap_ms = optional_int32_arg(fcinfo, 8);
  validate_abandon_policy(policy);
  return policy;
}

}  // namespace

const char* abandon_run(Datum run_id, const Token& token, const AbandonPolicy& policy) {
  if (spi_execute(lookup_statement, &run_id, nullptr) != 1) return "stale";
  bool token_null = false;
  const Datum stored_token = spi_value(0, 1, &token_null);
  if (token_null || token_value(stored_token) != token) return "stale";
  bool isnull = false;
  if (DatumGetInt64(spi_value(0, 2, &isnull)) != policy.expected_checkpoint_seq) return "stale";
  const int attempts = DatumGetInt32(spi_value(0, 3, &isnull));
  const int abandons = DatumGetInt32(spi_value(0, 4, &isnull));
  const std::string queue = text_value(spi_value(0, 5, &isnull));

  const AbandonDecision d = decide_abandon(attempts, abandons, policy);
  const bool rescheduled = d.kind == AbandonDecision::Kind::rescheduled;
  const Datum values[4] = {run_id, Int32GetDatum(d.claim_attempts), Int32GetDatum(d.claim_abandons),
                           TimestampTzGetDatum(rescheduled ? *d.wake_at : policy.now)};
  spi_execute(rescheduled ? reschedule_statement : poison_statement, values, nullptr);
  if (!rescheduled) return "poisoned";
  if (d.due_now) notify_due(queue);
  return "rescheduled";
}

namespace {

Datum abandon_claim(FunctionCallInfo fcinfo) {
  const AbandonPolicy policy = abandon_policy(fcinfo);
  spi_connect();
  const char* disposition =
      abandon_run(PG_GETARG_DATUM(0), token_value(PG_GETARG_DATUM(1)), policy);
  spi_finish();
  return text_datum(disposition);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_abandon_claim, docket::pg::abandon_claim)
