// Who is calling docket, and from where.
//
// Every public function is SECURITY DEFINER: while it runs, current_user is
// docket's owner. docket therefore tells two kinds of calls apart:
//  - an outer call: the first docket function entered from outside docket.
//    Its caller is GetOuterUserId(), the role the session runs as outside every
//    SECURITY DEFINER function (the login role, or the role of SET ROLE). This
//    is the role whose grants and tenant binding apply.
//  - a nested call: a docket function called by docket's own code (emit_event
//    waking a parent with mutate_run('system', ...), a claim cancelling a task
//    past its deadline ...). Its caller is docket's owner and it is trusted:
//    the outer call has checked the caller already.
// The depth is counted by pg::entry (every C function) and by the guarded
// wrapper of the plpgsql functions, so nothing a caller sets can change it;
// mutate_run sets it back to 0 while the caller's mutation function runs, so
// whatever that function calls is an outer call again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/scope.hpp"
#include "pg/postgres.hpp"

namespace docket::pg::caller {

// Number of docket functions on the stack (0 outside docket).
int depth() noexcept;

// Counts one docket function for as long as it lives.
class Frame {
 public:
  Frame() noexcept;
  ~Frame();
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;
};

// Sets the depth to 0 for as long as it lives (a caller's code runs).
class Outside {
 public:
  Outside() noexcept;
  ~Outside();
  Outside(const Outside&) = delete;
  Outside& operator=(const Outside&) = delete;

 private:
  int saved_;
};

// True in the outermost docket function (the one a caller called).
bool is_outer() noexcept;

// The role whose privileges apply: GetOuterUserId() for an outer call,
// GetUserId() (docket's owner) for a nested one.
Oid role() noexcept;

// Tenant binding (docs/security.md). The tenants the caller of an outer call
// is bound to, directly or through a role it inherits (pg_has_role USAGE), in
// byte order; nullopt when it is not bound, for a superuser, and in a nested
// call (docket's own code). Reads docket.tenant_bindings (opens its own SPI
// connection, so it may run inside another).
std::optional<std::vector<std::string>> bound_tenants();

// Raises 42501 unless the caller may use `scope`: an unbound caller may use
// any scope, a bound one only tenant:<t> for a tenant bound to it.
void require_scope(const Scope& scope);

// Raises 42501 when the caller is bound: `what` is a system-wide operation.
void require_unbound(const char* what);

// Resets the depth at the end of every transaction (a safety net: entry()
// already balances it on every path).
void register_reset();

}  // namespace docket::pg::caller
