#include "pg/caller.hpp"

#include <algorithm>
#include <stdexcept>

#include "pg/boundary.hpp"
#include "pg/catalog.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "utils/acl.h"
#include "utils/snapmgr.h"
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

// The tenants of the bindings that apply to a role, in PostgreSQL memory
// (copied into C++ after the scan).
struct Found {
  char** tenants;
  int count;
};

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
  // This runs on every outer call of a non-superuser: a scan of the (small)
  // bindings table, not an SPI statement. The latest snapshot: a binding or an
  // unbinding counts from its commit on, whatever the caller's isolation level.
  const Found found = call([&] {
    Found f{nullptr, 0};
    const Oid relid = docket_table("tenant_bindings");
    Relation rel = table_open(relid, AccessShareLock);
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
    TupleDesc desc = RelationGetDescr(rel);
    int capacity = 0;
    HeapTuple tuple = nullptr;
    while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
      bool role_null = false;
      bool tenant_null = false;
      const Datum bound = heap_getattr(tuple, 1, desc, &role_null);
      const Datum tenant = heap_getattr(tuple, 2, desc, &tenant_null);
      // pg_has_role(role, bound, 'USAGE'): the role is, or inherits, the bound role.
      if (role_null || tenant_null || !has_privs_of_role(role, DatumGetObjectId(bound))) continue;
      if (f.count == capacity) {
        capacity = capacity == 0 ? 8 : capacity * 2;
        const Size bytes = sizeof(char*) * static_cast<Size>(capacity);
        f.tenants =
            static_cast<char**>(f.tenants == nullptr ? palloc(bytes) : repalloc(f.tenants, bytes));
      }
      f.tenants[f.count++] = TextDatumGetCString(tenant);
    }
    table_endscan(scan);
    UnregisterSnapshot(snapshot);
    table_close(rel, AccessShareLock);
    return f;
  });
  if (found.count == 0) return std::nullopt;
  std::vector<std::string> tenants(found.tenants, found.tenants + found.count);
  std::sort(tenants.begin(), tenants.end());  // byte order, for binary_search
  tenants.erase(std::unique(tenants.begin(), tenants.end()), tenants.end());
  return tenants;
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
