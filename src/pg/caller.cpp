#include "pg/caller.hpp"

#include <algorithm>
#include <stdexcept>

#include "pg/datum.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/xact.h"
}

namespace docket::pg::caller {

namespace {
int depth_value = 0;

void reset_at_end(XactEvent event, void*) {
  if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT ||
      event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PARALLEL_COMMIT ||
      event == XACT_EVENT_PREPARE)
    depth_value = 0;
}
}  // namespace

int depth() noexcept {
  return depth_value;
}

Frame::Frame() noexcept {
  ++depth_value;
}
Frame::~Frame() {
  if (depth_value > 0) --depth_value;
}

Outside::Outside() noexcept : saved_(depth_value) {
  depth_value = 0;
}
Outside::~Outside() {
  depth_value = saved_;
}

bool is_outer() noexcept {
  return depth_value <= 1;
}

Oid role() noexcept {
  return is_outer() ? GetOuterUserId() : GetUserId();
}

namespace {

Statement bindings_statement{
    "SELECT DISTINCT b.tenant COLLATE \"C\" FROM docket.tenant_bindings b"
    " WHERE pg_catalog.pg_has_role($1, b.role::oid, 'USAGE') ORDER BY 1",
    1,
    {OIDOID},
    nullptr};

[[noreturn]] void deny(const std::string& message) {
  call([&] {
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE), errmsg_internal("%s", message.c_str()),
                    errhint("The calling role is bound to tenants (docket.bind_tenant): it may "
                            "only use tenant:<t> scopes of its tenants.")));
  });
  throw std::logic_error("unreachable");
}

std::string role_name(Oid role) {
  const char* name = call([&] { return static_cast<const char*>(GetUserNameFromId(role, true)); });
  return name != nullptr ? std::string(name) : std::to_string(role);
}

}  // namespace

std::optional<std::vector<std::string>> bound_tenants() {
  if (!is_outer()) return std::nullopt;
  const Oid role = GetOuterUserId();
  if (call([&] { return superuser_arg(role); })) return std::nullopt;
  spi_connect();
  const Datum values[1] = {ObjectIdGetDatum(role)};
  const std::uint64_t rows = spi_execute(bindings_statement, values, nullptr);
  std::optional<std::vector<std::string>> out;
  if (rows > 0) {
    out.emplace();
    for (std::uint64_t row = 0; row < rows; ++row) {
      bool isnull = false;
      out->push_back(text_value(spi_value(row, 1, &isnull)));
    }
  }
  spi_finish();
  return out;
}

void require_scope(const Scope& scope) {
  const std::optional<std::vector<std::string>> tenants = bound_tenants();
  if (!tenants) return;
  if (scope.kind == Scope::Kind::tenant &&
      std::binary_search(tenants->begin(), tenants->end(), scope.tenant))
    return;
  const std::string text = scope.kind == Scope::Kind::system       ? "system"
                           : scope.kind == Scope::Kind::tenantless ? "tenantless"
                                                                   : "tenant:" + scope.tenant;
  deny("permission denied: role " + role_name(GetOuterUserId()) +
       " is bound to tenants and may not use scope " + text);
}

void require_unbound(const char* what) {
  if (!bound_tenants()) return;
  deny("permission denied: role " + role_name(GetOuterUserId()) +
       " is bound to tenants and may not call " + what + " (system-wide)");
}

void register_reset() {
  RegisterXactCallback(reset_at_end, nullptr);
}

}  // namespace docket::pg::caller
