#include "pg/datum.hpp"

#include "core/limits.hpp"

#include <cstring>

#include "core/json_number.hpp"
#include "pg/caller.hpp"
#include "pg/settings.hpp"

namespace docket::pg {

bool arg_is_null(FunctionCallInfo fcinfo, int index) noexcept {
  return index >= PG_NARGS() || PG_ARGISNULL(index);
}

void require(FunctionCallInfo fcinfo, int index, const char* name) {
  if (arg_is_null(fcinfo, index))
    fail(Reason::bad_argument, std::string(name) + " must not be NULL");
}

std::string text_value(Datum value) {
  const char* s = call([&] { return static_cast<const char*>(TextDatumGetCString(value)); });
  return std::string(s);
}

std::string_view text_view(Datum value) {
  return call([&] {
    const text* t = DatumGetTextPP(value);
    return std::string_view(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
  });
}

Datum text_datum(std::string_view text) {
  return call([&] {
    return PointerGetDatum(cstring_to_text_with_len(text.data(), static_cast<int>(text.size())));
  });
}

std::string text_arg(FunctionCallInfo fcinfo, int index, const char* name) {
  require(fcinfo, index, name);
  return text_value(PG_GETARG_DATUM(index));
}

std::optional<std::string> optional_text_arg(FunctionCallInfo fcinfo, int index) {
  if (arg_is_null(fcinfo, index)) return std::nullopt;
  return text_value(PG_GETARG_DATUM(index));
}

std::int64_t int64_arg(FunctionCallInfo fcinfo, int index, const char* name) {
  require(fcinfo, index, name);
  return PG_GETARG_INT64(index);
}

int int32_arg(FunctionCallInfo fcinfo, int index, const char* name) {
  require(fcinfo, index, name);
  return PG_GETARG_INT32(index);
}

Micros timestamp_arg(FunctionCallInfo fcinfo, int index, const char* name) {
  require(fcinfo, index, name);
  const Micros t = PG_GETARG_TIMESTAMPTZ(index);
  if (TIMESTAMP_NOT_FINITE(t)) fail(Reason::bad_argument, std::string(name) + " must be finite");
  return t;
}

std::optional<Micros> optional_timestamp_arg(FunctionCallInfo fcinfo, int index) {
  if (arg_is_null(fcinfo, index)) return std::nullopt;
  const Micros t = PG_GETARG_TIMESTAMPTZ(index);
  if (TIMESTAMP_NOT_FINITE(t)) fail(Reason::bad_argument, "timestamps must be finite");
  return t;
}

Token token_value(Datum uuid) {
  const pg_uuid_t* u = DatumGetUUIDP(uuid);
  Token token;
  std::memcpy(token.data(), u->data, token.size());
  return token;
}

Token uuid_arg(FunctionCallInfo fcinfo, int index, const char* name) {
  require(fcinfo, index, name);
  return token_value(PG_GETARG_DATUM(index));
}

std::optional<Token> optional_uuid_arg(FunctionCallInfo fcinfo, int index) {
  if (arg_is_null(fcinfo, index)) return std::nullopt;
  return token_value(PG_GETARG_DATUM(index));
}

// Every scope a caller passes is checked against its tenant binding here
// (caller::require_scope: 42501 before anything is read or changed).
Scope scope_arg(FunctionCallInfo fcinfo, int index) {
  Scope scope = parse_scope(text_arg(fcinfo, index, "scope"));
  caller::require_scope(scope);
  return scope;
}

Scope owner_scope_arg(FunctionCallInfo fcinfo, int index) {
  Scope scope = parse_owner_scope(text_arg(fcinfo, index, "owner_scope"));
  caller::require_scope(scope);
  return scope;
}

// docket._tenant_key(owner_scope): the task tables' tenant key of an owner
// scope ('' for tenantless), for the plpgsql side (emit_event). The rules are
// owner_scope_arg's (core parse_owner_scope); the tenant binding was checked by
// the guarded function that calls it.
static Datum tenant_key(FunctionCallInfo fcinfo) {
  return text_datum(parse_owner_scope(text_arg(fcinfo, 0, "owner_scope")).tenant);
}

void validate_queue(const std::string& queue) {
  if (queue.empty() || queue.size() > kMaxQueueBytes)
    fail(Reason::bad_argument,
         "queue must be a non-empty name of at most " + std::to_string(kMaxQueueBytes) + " bytes");
}

std::string enum_label(Datum value) {
  const char* s = call([&] {
    return static_cast<const char*>(DatumGetCString(DirectFunctionCall1(enum_out, value)));
  });
  return std::string(s);
}

namespace {

// A JSON value found under a key, in plain fields (trivially copyable).
struct JsonLookup {
  bool found;
  enum jbvType type;
  const char* text;  // jbvString: not terminated, `length` bytes; jbvNumeric: numeric_out
  int length;
};

JsonLookup lookup(Jsonb* jsonb, const char* key) {
  return call([&] {
    JsonLookup out{false, jbvNull, nullptr, 0};
    JsonbValue* v =
        getKeyJsonValueFromContainer(&jsonb->root, key, static_cast<int>(strlen(key)), nullptr);
    if (v == nullptr) return out;
    out.found = true;
    out.type = v->type;
    if (v->type == jbvString) {
      out.text = v->val.string.val;
      out.length = v->val.string.len;
    } else if (v->type == jbvNumeric) {
      out.text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
      out.length = static_cast<int>(strlen(out.text));
    }
    return out;
  });
}

Field<std::string> string_field(Jsonb* jsonb, const char* key, bool null_is_missing) {
  const JsonLookup v = lookup(jsonb, key);
  if (!v.found || (null_is_missing && v.type == jbvNull)) return {};
  if (v.type != jbvString) return Field<std::string>::wrong();
  return Field<std::string>::present_value(std::string(v.text, static_cast<std::size_t>(v.length)));
}

Field<std::int64_t> integer_field(Jsonb* jsonb, const char* key) {
  const JsonLookup v = lookup(jsonb, key);
  if (!v.found) return {};
  if (v.type != jbvNumeric) return Field<std::int64_t>::wrong();
  const std::optional<std::int64_t> n =
      parse_json_integer(std::string_view(v.text, static_cast<std::size_t>(v.length)));
  if (!n) return Field<std::int64_t>::wrong();
  return Field<std::int64_t>::present_value(*n);
}

}  // namespace

RunFields run_fields(Datum value) {
  Jsonb* jsonb = call([&] { return DatumGetJsonbP(value); });
  RunFields fields;
  fields.is_object = JB_ROOT_IS_OBJECT(jsonb) && !JB_ROOT_IS_SCALAR(jsonb);
  if (!fields.is_object) return fields;
  fields.id = string_field(jsonb, "id", false);
  fields.graph_id = string_field(jsonb, "graph_id", false);
  fields.graph_hash = string_field(jsonb, "graph_hash", false);
  fields.status = string_field(jsonb, "status", false);
  fields.checkpoint_seq = integer_field(jsonb, "checkpoint_seq");
  fields.started_at = string_field(jsonb, "started_at", false);
  fields.updated_at = string_field(jsonb, "updated_at", true);
  return fields;
}

Micros store_now() {
  const char* fake = settings::fake_now();
  if (fake == nullptr || fake[0] == '\0') return call([] { return GetCurrentTimestamp(); });
  const Micros now = call([&] {
    return DatumGetTimestampTz(DirectFunctionCall3(
        timestamptz_in, CStringGetDatum(fake), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
  });
  if (TIMESTAMP_NOT_FINITE(now))
    fail(Reason::bad_argument,
         std::string("docket.fake_now must be a finite timestamp, got '") + fake + "'");
  return now;
}

ScopeParams scope_params(const Scope& scope) {
  ScopeParams p{BoolGetDatum(scope.is_system()), Datum(0), 'n'};
  if (scope.kind == Scope::Kind::tenant) {
    p.tenant = text_datum(scope.tenant);
    p.tenant_null = ' ';
  }
  return p;
}

}  // namespace docket::pg

DOCKET_FUNCTION(docket_tenant_key, docket::pg::tenant_key)
