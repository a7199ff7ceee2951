#include "pg/settings.hpp"

#include "pg/postgres.hpp"

namespace docket::pg::settings {

namespace {
char* fake_now_value = nullptr;
bool notify_value = true;
int notify_interval_value = 100;
}  // namespace

const char* fake_now() noexcept {
  return fake_now_value;
}
bool notify() noexcept {
  return notify_value;
}
int notify_interval_ms() noexcept {
  return notify_interval_value;
}

void define() {
  DefineCustomStringVariable(
      "docket.fake_now", "Timestamp docket.now() returns instead of the real clock ('' = real).",
      "Tests travel in time with SET docket.fake_now = '2030-01-01 00:00:00+00'. Superusers "
      "only: a role that could move docket's clock could expire other workers' claims or "
      "schedule work at infinity. docket.now() refuses a value that is not a finite timestamp.",
      &fake_now_value, "", PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable("docket.notify",
                           "Send NOTIFY docket_due (payload: queue) when a run becomes due now.",
                           nullptr, &notify_value, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "docket.notify_interval_ms",
      "At most one docket_due notification per queue per this interval per backend (0: every "
      "transaction).",
      nullptr, &notify_interval_value, 100, 0, 3600000, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr,
      nullptr);
  MarkGUCPrefixReserved("docket");
}

}  // namespace docket::pg::settings
