// refresh_claim and release_claim: keeping or handing back a claim under its
// exact token.
#include "core/fence.hpp"
#include "pg/catalog.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/notify.hpp"
#include "pg/spi.hpp"

namespace docket::pg {

namespace {

// Only forward: a delayed refresh cannot regress a fresher retain_claim commit.
// A refresh renews the claim: claim_renewed_at, the key of runs_claimed, moves
// to the new claimed_at, so a claim kept alive leaves the range the expired
// class reads (an index insertion per refresh, where a HOT update left the
// claim in that range for every claim to read once it outlived the TTL).
Statement refresh_statement{
    "UPDATE docket.runs SET claimed_at = greatest(claimed_at, $3),"
    " claim_renewed_at = greatest(claimed_at, $3)"
    " WHERE run_id = $1 AND claim_token = $2",
    3,
    {TEXTOID, UUIDOID, TIMESTAMPTZOID},
    nullptr};

// The same for a schema not yet updated to 0.3.0, which has no
// claim_renewed_at: between installing this library and ALTER EXTENSION
// UPDATE, the previous version's complete_step calls refresh_claim.
Statement refresh_unrenewed_statement{
    "UPDATE docket.runs SET claimed_at = greatest(claimed_at, $3)"
    " WHERE run_id = $1 AND claim_token = $2",
    3,
    {TEXTOID, UUIDOID, TIMESTAMPTZOID},
    nullptr};

// Whether docket.runs has claim_renewed_at. Once it has, it keeps it (the
// answer is then kept for the session); before, each call looks again, so an
// update in the same session is seen.
bool runs_renewable() {
  static bool renewable = false;
  if (!renewable) {
    renewable = call([] {
      const Oid runs = docket_table("runs", true);
      return OidIsValid(runs) && get_attnum(runs, "claim_renewed_at") != InvalidAttrNumber;
    });
  }
  return renewable;
}

Statement release_statement{
    "UPDATE docket.runs SET claim_token = NULL, claimed_at = NULL, wake_at = $3"
    " WHERE run_id = $1 AND claim_token = $2 RETURNING queue",
    3,
    {TEXTOID, UUIDOID, TIMESTAMPTZOID},
    nullptr};

struct ClaimArgs {
  Datum values[3];
};

ClaimArgs claim_args(FunctionCallInfo fcinfo) {
  require(fcinfo, 0, "run_id");
  require(fcinfo, 1, "claim_token");
  now_arg(fcinfo, 2);
  return ClaimArgs{{PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2)}};
}

Datum refresh_claim(FunctionCallInfo fcinfo) {
  const ClaimArgs args = claim_args(fcinfo);
  spi_connect();
  Statement& statement = runs_renewable() ? refresh_statement : refresh_unrenewed_statement;
  const bool refreshed = spi_execute(statement, args.values, nullptr) == 1;
  spi_finish();
  return BoolGetDatum(refreshed);
}

Datum release_claim(FunctionCallInfo fcinfo) {
  const ClaimArgs args = claim_args(fcinfo);
  spi_connect();
  if (spi_execute(release_statement, args.values, nullptr) == 1) {
    bool isnull = false;
    notify_due(text_value(spi_value(0, 1, &isnull)));
  }
  spi_finish();
  PG_RETURN_VOID();
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_refresh_claim, docket::pg::refresh_claim)
DOCKET_FUNCTION(docket_release_claim, docket::pg::release_claim)
