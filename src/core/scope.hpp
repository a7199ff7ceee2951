// Scopes: 'system' (every tenant), 'tenantless' (rows without a tenant) and
// 'tenant:<id>' (one tenant). Owner scopes are the last two.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace docket {

struct Scope {
  enum class Kind { system, tenantless, tenant };
  Kind kind = Kind::system;
  std::string tenant;  // set only for Kind::tenant

  bool is_system() const noexcept { return kind == Kind::system; }
  // The tenant a row must carry to be visible, nullopt for "no tenant".
  // Meaningless for the system scope, which sees every row.
  std::optional<std::string> tenant_id() const {
    return kind == Kind::tenant ? std::optional<std::string>(tenant) : std::nullopt;
  }
};

// Parses any scope; bad_argument when the text is not a scope.
Scope parse_scope(std::string_view text);

// Parses an owner scope; 'system' is a bad_argument here, and so is a tenant id
// over kMaxTenantBytes.
Scope parse_owner_scope(std::string_view text);

}  // namespace docket
