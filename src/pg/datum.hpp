// Conversions between PostgreSQL datums and the core's plain values, and the
// argument checks every entry point shares.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/fence.hpp"
#include "core/run.hpp"
#include "core/scope.hpp"
#include "pg/boundary.hpp"

namespace docket::pg {

bool arg_is_null(FunctionCallInfo fcinfo, int index) noexcept;

// Raises bad_argument "<name> must not be NULL" when the argument is NULL.
void require(FunctionCallInfo fcinfo, int index, const char* name);

std::string text_arg(FunctionCallInfo fcinfo, int index, const char* name);
std::optional<std::string> optional_text_arg(FunctionCallInfo fcinfo, int index);
std::int64_t int64_arg(FunctionCallInfo fcinfo, int index, const char* name);
int int32_arg(FunctionCallInfo fcinfo, int index, const char* name);
Micros timestamp_arg(FunctionCallInfo fcinfo, int index, const char* name);
std::optional<Micros> optional_timestamp_arg(FunctionCallInfo fcinfo, int index);
Token uuid_arg(FunctionCallInfo fcinfo, int index, const char* name);
std::optional<Token> optional_uuid_arg(FunctionCallInfo fcinfo, int index);
Scope scope_arg(FunctionCallInfo fcinfo, int index);        // any scope, "scope"
Scope owner_scope_arg(FunctionCallInfo fcinfo, int index);  // not system, "owner_scope"

// A queue name: non-empty, at most 128 bytes; bad_argument otherwise.
void validate_queue(const std::string& queue);

std::string text_value(Datum text);
// The bytes of a text datum, without a copy unless it is toasted (then
// detoasted into the current memory context): valid while that context and
// the datum live.
std::string_view text_view(Datum text);
Datum text_datum(std::string_view text);
Token token_value(Datum uuid);
// The label of a docket.checkpoint_type value.
std::string enum_label(Datum value);

// The fields of a run document, extracted without judging them.
RunFields run_fields(Datum jsonb);

// docket.now(): docket.fake_now when set, else clock_timestamp().
Micros store_now();

// Parameters for statements that filter by scope: (is_system, tenant_id).
// Rows match when is_system OR tenant_id IS NOT DISTINCT FROM the tenant.
struct ScopeParams {
  Datum is_system;
  Datum tenant;
  char tenant_null;  // 'n' for tenantless (and system)
};
ScopeParams scope_params(const Scope& scope);

}  // namespace docket::pg
