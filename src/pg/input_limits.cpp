#include "pg/input_limits.hpp"

#include "core/input_limits.hpp"
#include "pg/boundary.hpp"
#include "pg/datum.hpp"

namespace docket::pg {

Micros now_arg(FunctionCallInfo fcinfo, int index) {
  const Micros now = timestamp_arg(fcinfo, index, "now");
  check_clock_skew("now", now, store_now(), settings::max_clock_skew_ms());
  return now;
}

std::size_t jsonb_bytes(Datum jsonb) {
  const auto* value = reinterpret_cast<const varlena*>(DatumGetPointer(jsonb));
  if (value == nullptr) return 0;
  const std::size_t raw = call([&] { return toast_raw_datum_size(jsonb); });
  // A short (1-byte) header counts as the 4-byte one the same value has in memory.
  if (VARATT_IS_SHORT(value) && !VARATT_IS_EXTERNAL(value)) return raw - VARHDRSZ_SHORT + VARHDRSZ;
  return raw;
}

void check_size(settings::SizeCap cap, const std::string& what, std::size_t bytes) {
  docket::check_size(what, bytes, settings::max_bytes_name(cap), settings::max_bytes(cap));
}

void check_jsonb_size(settings::SizeCap cap, const std::string& what, Datum jsonb) {
  check_size(cap, what, jsonb_bytes(jsonb));
}

std::size_t jsonb_member_bytes(Datum object, const char* key) {
  return call([&]() -> std::size_t {
    Jsonb* jb = DatumGetJsonbP(object);
    if (!JB_ROOT_IS_OBJECT(jb)) return 0;
    JsonbValue k;
    k.type = jbvString;
    k.val.string.val = const_cast<char*>(key);
    k.val.string.len = static_cast<int>(strlen(key));
    const JsonbValue* v = findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &k);
    if (v == nullptr || v->type != jbvBinary) return 0;
    return static_cast<std::size_t>(v->val.binary.len) + VARHDRSZ;
  });
}

namespace {

// docket._limit_event_payload(): BEFORE INSERT OR UPDATE OF payload ON
// docket.task_events, so emit_event's payload meets docket.max_payload_bytes
// before the row is written (it refuses the call and nothing changes).
Datum limit_event_payload(FunctionCallInfo fcinfo) {
  struct Row {
    HeapTuple tuple;
    Datum payload;
    bool is_null;
  };
  const Row row = call([&] {
    if (!CALLED_AS_TRIGGER(fcinfo))
      ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                      errmsg("docket._limit_event_payload() is a trigger")));
    auto* trigger = reinterpret_cast<TriggerData*>(fcinfo->context);
    Row r{TRIGGER_FIRED_BY_UPDATE(trigger->tg_event) ? trigger->tg_newtuple : trigger->tg_trigtuple,
          Datum(0), true};
    const TupleDesc desc = trigger->tg_relation->rd_att;
    const int column = SPI_fnumber(desc, "payload");
    if (column <= 0)
      ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                      errmsg("docket._limit_event_payload(): no column payload")));
    r.payload = heap_getattr(r.tuple, column, desc, &r.is_null);
    return r;
  });
  if (!row.is_null) check_jsonb_size(settings::SizeCap::payload, "payload", row.payload);
  return PointerGetDatum(row.tuple);
}

}  // namespace

}  // namespace docket::pg

DOCKET_FUNCTION(docket_limit_event_payload, docket::pg::limit_event_payload)
