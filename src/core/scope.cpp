#include "core/scope.hpp"

#include <string>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace docket {

Scope parse_scope(std::string_view text) {
  constexpr std::string_view kTenantPrefix = "tenant:";
  if (text == "system") return Scope{Scope::Kind::system, {}};
  if (text == "tenantless") return Scope{Scope::Kind::tenantless, {}};
  if (text.size() > kTenantPrefix.size() && text.substr(0, kTenantPrefix.size()) == kTenantPrefix)
    return Scope{Scope::Kind::tenant, std::string(text.substr(kTenantPrefix.size()))};
  fail(Reason::bad_argument,
       "scope \"" + std::string(text) + "\" is not 'system', 'tenantless' or 'tenant:<id>'");
}

Scope parse_owner_scope(std::string_view text) {
  Scope scope = parse_scope(text);
  if (scope.is_system())
    fail(Reason::bad_argument, "owner_scope must be 'tenantless' or 'tenant:<id>', not 'system'");
  if (scope.tenant.size() > kMaxTenantBytes)
    fail(Reason::bad_argument, "owner_scope's tenant id is " + std::to_string(scope.tenant.size()) +
                                   " bytes, over " + std::to_string(kMaxTenantBytes));
  return scope;
}

}  // namespace docket
