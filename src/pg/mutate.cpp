// mutate_run: a pure decision function applied to a locked run. The function
// is judged from the catalog before the run is looked up, and invoked only
// while the row lock is held.
#include "core/mutation.hpp"
#include "pg/caller.hpp"
#include "pg/datum.hpp"
#include "pg/input_limits.hpp"
#include "pg/spi.hpp"
#include "pg/transition.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "utils/acl.h"
#include "utils/regproc.h"
}

namespace docket::pg {

namespace {

Statement result_statement{"SELECT jsonb_build_object('outcome', $1::text, 'value', $2::jsonb)",
                           2,
                           {TEXTOID, JSONBOID},
                           nullptr};

// What the catalog says about the mutation function (plain values only).
struct ProcFacts {
  bool found;
  char kind;
  int nargs;
  Oid arg_types[2];
  Oid return_type;
  bool returns_set;
  char volatility;
  Oid decision_type;  // docket.mutation_decision
};

ProcFacts proc_facts(Oid function) {
  return call([&] {
    ProcFacts facts{};
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(function));
    if (HeapTupleIsValid(tuple)) {
      const Form_pg_proc proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple));
      facts.found = true;
      facts.kind = proc->prokind;
      facts.nargs = proc->pronargs;
      for (int i = 0; i < proc->pronargs && i < 2; ++i)
        facts.arg_types[i] = proc->proargtypes.values[i];
      facts.return_type = proc->prorettype;
      facts.returns_set = proc->proretset;
      facts.volatility = proc->provolatile;
      ReleaseSysCache(tuple);
    }
    const Oid schema = get_namespace_oid("docket", false);
    facts.decision_type =
        GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("mutation_decision"),
                        ObjectIdGetDatum(schema));
    return facts;
  });
}

std::string procedure_name(Oid function) {
  return std::string(call([&] { return static_cast<const char*>(format_procedure(function)); }));
}

// Raises bad_argument unless `function` is a callable (jsonb, jsonb) ->
// docket.mutation_decision function declared IMMUTABLE or STABLE.
void validate_mutation_function(Oid function) {
  const ProcFacts f = proc_facts(function);
  if (!f.found)
    fail(Reason::bad_argument, "mutation function " + std::to_string(function) + " does not exist");
  // The name is looked up only for a message: a valid function costs no lookup.
  auto reject = [&](const char* why) {
    fail(Reason::bad_argument, "mutation function " + procedure_name(function) + why);
  };
  if (f.kind != PROKIND_FUNCTION) reject(" is not a plain function");
  if (f.nargs != 2 || f.arg_types[0] != JSONBOID || f.arg_types[1] != JSONBOID)
    reject(" must take exactly (jsonb, jsonb)");
  if (f.returns_set) reject(" must not return a set");
  if (f.decision_type == InvalidOid || f.return_type != f.decision_type)
    reject(" must return docket.mutation_decision");
  if (f.volatility != PROVOLATILE_IMMUTABLE && f.volatility != PROVOLATILE_STABLE)
    reject(" must be declared IMMUTABLE or STABLE");
  // The caller's EXECUTE, not docket's owner's (mutate_run is SECURITY DEFINER).
  const Oid role = caller::role();
  call([&] {
    const AclResult acl = pg_proc_aclcheck(function, role, ACL_EXECUTE);
    if (acl != ACLCHECK_OK) aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(function));
  });
}

struct Invocation {
  bool isnull;
  Datum result;
};

Invocation invoke_as_caller(Oid function, Datum run, bool arg_null, Datum arg) {
  return call([&] {
    Invocation out{true, Datum(0)};
    FmgrInfo flinfo;
    fmgr_info(function, &flinfo);
    if (flinfo.fn_strict && arg_null) return out;
    LOCAL_FCINFO(fc, 2);
    InitFunctionCallInfoData(*fc, &flinfo, 2, InvalidOid, nullptr, nullptr);
    fc->args[0].value = run;
    fc->args[0].isnull = false;
    fc->args[1].value = arg;
    fc->args[1].isnull = arg_null;
    out.result = FunctionCallInvoke(fc);
    out.isnull = fc->isnull;
    return out;
  });
}

// Calls function(run, arg) through fmgr so a NULL result is seen, not raised.
// A strict function given a NULL arg is not called and yields NULL, as in SQL.
// It runs as the caller (caller::role()), never as docket's owner, and outside
// docket: what it calls into docket is an outer call, checked again.
Invocation invoke(Oid function, Datum run, bool arg_null, Datum arg) {
  const Oid role = caller::role();
  Oid owner = InvalidOid;
  int context = 0;
  GetUserIdAndSecContext(&owner, &context);
  const caller::Outside outside;
  SetUserIdAndSecContext(role, context | SECURITY_LOCAL_USERID_CHANGE);
  try {
    const Invocation out = invoke_as_caller(function, run, arg_null, arg);
    SetUserIdAndSecContext(owner, context);
    return out;
  } catch (...) {
    SetUserIdAndSecContext(owner, context);
    throw;
  }
}

// The attributes of a docket.mutation_decision value, in declaration order:
// decision, run, checkpoint_type, schedule, wake_at, value.
struct DecisionDatums {
  Datum values[6];
  bool nulls[6];
};

DecisionDatums decision_datums(Datum composite) {
  return call([&] {
    DecisionDatums out{};
    HeapTupleHeader tuple = DatumGetHeapTupleHeader(composite);
    for (int i = 0; i < 6; ++i)
      out.values[i] = GetAttributeByNum(tuple, static_cast<AttrNumber>(i + 1), &out.nulls[i]);
    return out;
  });
}

MutationDecision read_decision(const DecisionDatums& d) {
  MutationDecision out;
  if (!d.nulls[0]) out.decision = text_value(d.values[0]);
  out.has_run = !d.nulls[1];
  if (out.has_run) out.run = run_fields(d.values[1]);
  out.has_checkpoint_type = !d.nulls[2];
  if (!d.nulls[3]) out.schedule = text_value(d.values[3]);
  out.has_wake_at = !d.nulls[4];
  return out;
}

const char* outcome_word(MutationKind kind) {
  switch (kind) {
    case MutationKind::commit:
      return "committed";
    case MutationKind::no_change:
      return "unchanged";
    case MutationKind::error:
      return "error";
  }
  return "error";
}

Datum mutate_run(FunctionCallInfo fcinfo) {
  const Scope scope = scope_arg(fcinfo, 0);
  const std::string run_id = text_arg(fcinfo, 1, "run_id");
  require(fcinfo, 2, "mutation");
  const Oid function = PG_GETARG_OID(2);
  validate_mutation_function(function);

  spi_connect();
  const LockedRun locked = lock_run(scope, run_id);
  const Invocation result =
      invoke(function, locked.document, arg_is_null(fcinfo, 3), PG_GETARG_DATUM(3));
  require_unchanged(locked);
  if (result.isnull) fail(Reason::invalid_mutation, "the mutation returned NULL for run " + run_id);
  const DecisionDatums datums = decision_datums(result.result);
  const MutationDecision decision = read_decision(datums);
  const MutationKind kind = parse_mutation_kind(decision);

  if (kind == MutationKind::commit) {
    const ValidProposal valid = validate_mutation_commit(decision, locked.run);
    check_jsonb_size(settings::SizeCap::document, "the mutation's run", datums.values[1]);
    const Micros wake_at = DatumGetTimestampTz(datums.values[4]);
    if (decision.has_wake_at && TIMESTAMP_NOT_FINITE(wake_at))
      fail(Reason::invalid_mutation, "a commit decision's wake_at must be finite");
    const Micros now = store_now();
    const ScheduleEffect effect = schedule_effect(
        valid.schedule, now, decision.has_wake_at ? std::optional<Micros>(wake_at) : std::nullopt,
        locked.run.claimed_at);
    apply_transition(locked, datums.values[1], valid, enum_label(datums.values[2]), now, effect);
  }

  const Datum values[2] = {text_datum(outcome_word(kind)), datums.values[5]};
  const char nulls[3] = {' ', datums.nulls[5] ? 'n' : ' ', '\0'};
  spi_execute(result_statement, values, nulls);
  bool isnull = false;
  const Datum out = spi_transfer(spi_value(0, 1, &isnull), false, -1);
  spi_finish();
  PG_RETURN_DATUM(out);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_mutate_run, docket::pg::mutate_run)
