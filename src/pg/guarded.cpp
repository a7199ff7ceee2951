// The guarded wrapper: the public face of a docket function written in
// plpgsql. docket.<name>(...) is this C function (SECURITY DEFINER); the body
// is docket._<name>_impl(...) with the same arguments, which nobody but
// docket's owner may call. The wrapper counts as a docket function (caller.hpp),
// so whatever the body calls is a nested, trusted call, and it is where the
// caller's checks happen before the body runs.
#include "pg/boundary.hpp"
#include "pg/caller.hpp"
#include "pg/datum.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "nodes/makefuncs.h"
#include "nodes/pg_list.h"
#include "parser/parse_func.h"
}

#include <cstring>
#include <optional>
#include <string>

namespace docket::pg {

namespace {

// What the wrapper checks before the body runs (docs/security.md).
enum class Check {
  scope,     // the docket.scope argument, if any: caller::require_scope
  schedule,  // that, and the owner scope of the schedule named by argument 0
  unbound,   // a system-wide operation: refused to a bound caller
};

// Kept in the wrapper's FmgrInfo (fn_extra) for the life of its plan.
struct Guard {
  FmgrInfo body;
  int nargs;
  int scope_arg;  // the first docket.scope argument, -1 if none
  Check check;
  char name[NAMEDATALEN];
};

// The owner scope of an existing schedule (a bound caller may not replace or
// delete another tenant's schedule by its name).
Statement schedule_scope_statement{
    "SELECT s.owner_scope::text FROM docket.schedules s WHERE s.schedule_name = $1",
    1,
    {TEXTOID},
    nullptr};

Guard* guard_of(FunctionCallInfo fcinfo) {
  if (fcinfo->flinfo->fn_extra != nullptr) return static_cast<Guard*>(fcinfo->flinfo->fn_extra);
  return call([&] {
    const Oid self = fcinfo->flinfo->fn_oid;
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(self));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for function %u", self);
    const Form_pg_proc proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
    char body_name[NAMEDATALEN + 8];
    snprintf(body_name, sizeof(body_name), "_%s_impl", NameStr(proc->proname));
    const int nargs = proc->pronargs;
    Oid types[FUNC_MAX_ARGS];
    for (int i = 0; i < nargs; ++i) types[i] = proc->proargtypes.values[i];
    char own_name[NAMEDATALEN];
    strlcpy(own_name, NameStr(proc->proname), sizeof(own_name));
    ReleaseSysCache(tuple);
    const Oid scope_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("scope"),
                                           ObjectIdGetDatum(get_namespace_oid("docket", false)));
    List* name = list_make2(makeString(pstrdup("docket")), makeString(pstrdup(body_name)));
    const Oid body = LookupFuncName(name, nargs, types, false);
    auto* guard =
        static_cast<Guard*>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(Guard)));
    fmgr_info_cxt(body, &guard->body, fcinfo->flinfo->fn_mcxt);
    guard->nargs = nargs;
    guard->scope_arg = -1;
    for (int i = nargs - 1; i >= 0; --i)
      if (types[i] == scope_type) guard->scope_arg = i;
    strlcpy(guard->name, own_name, sizeof(guard->name));
    if (strcmp(own_name, "schedule_task") == 0 || strcmp(own_name, "unschedule_task") == 0)
      guard->check = Check::schedule;
    else if (strcmp(own_name, "cleanup") == 0 || strcmp(own_name, "fire_schedules") == 0 ||
             strcmp(own_name, "bind_tenant") == 0 || strcmp(own_name, "unbind_tenant") == 0)
      guard->check = Check::unbound;
    else
      guard->check = Check::scope;
    fcinfo->flinfo->fn_extra = guard;
    return guard;
  });
}

// The caller's checks; only an outer call is checked (caller.hpp).
void check_caller(FunctionCallInfo fcinfo, const Guard& guard) {
  if (!caller::is_outer()) return;
  if (guard.check == Check::unbound) {
    caller::require_unbound(guard.name);
    return;
  }
  // A NULL or malformed scope is the body's to refuse (22023).
  if (guard.scope_arg >= 0 && !arg_is_null(fcinfo, guard.scope_arg))
    caller::require_scope(parse_scope(text_value(PG_GETARG_DATUM(guard.scope_arg))));
  if (guard.check == Check::schedule && !arg_is_null(fcinfo, 0) && caller::bound_tenants()) {
    spi_connect();
    const Datum values[1] = {PG_GETARG_DATUM(0)};
    std::optional<std::string> existing;
    if (spi_execute(schedule_scope_statement, values, nullptr) > 0) {
      bool isnull = false;
      existing = text_value(spi_value(0, 1, &isnull));
    }
    spi_finish();
    if (existing) caller::require_scope(parse_scope(*existing));
  }
}

Datum guarded(FunctionCallInfo fcinfo) {
  Guard* guard = guard_of(fcinfo);
  check_caller(fcinfo, *guard);
  return call([&] {
    // The body gets the caller's arguments and result set info as they are.
    LOCAL_FCINFO(inner, FUNC_MAX_ARGS);
    InitFunctionCallInfoData(*inner, &guard->body, fcinfo->nargs, fcinfo->fncollation,
                             fcinfo->context, fcinfo->resultinfo);
    for (int i = 0; i < fcinfo->nargs; ++i) inner->args[i] = fcinfo->args[i];
    const Datum result = FunctionCallInvoke(inner);
    fcinfo->isnull = inner->isnull;
    return result;
  });
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_guarded, docket::pg::guarded)
