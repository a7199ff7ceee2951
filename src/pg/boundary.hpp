// The boundary between PostgreSQL and C++, both ways:
//  - pg::call(f) runs PostgreSQL code; an ereport inside it is caught with
//    PG_TRY, copied, and thrown on as a C++ PgError, so it never longjmps over
//    C++ frames. Inside f: PostgreSQL calls only, no C++ objects with
//    destructors.
//  - pg::entry(fcinfo, body) is what every SQL-callable function is made of:
//    it runs body, catches every C++ exception, lets all C++ objects die, and
//    only then raises: a PgError is re-thrown intact (its SQLSTATE kept), a
//    docket::Error becomes its documented SQLSTATE, anything else XX000.
#pragma once

#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "pg/caller.hpp"
#include "pg/postgres.hpp"

namespace docket::pg {

struct PgError {
  ErrorData* data;
};

template <typename F>
void call_void(F&& f) {
  MemoryContext context = CurrentMemoryContext;
  ErrorData* volatile error = nullptr;  // written after setjmp
  PG_TRY();
  { f(); }
  PG_CATCH();
  {
    MemoryContextSwitchTo(context);
    error = CopyErrorData();
    FlushErrorState();
  }
  PG_END_TRY();
  if (error != nullptr) throw PgError{error};
}

// Runs PostgreSQL code and returns its (trivially copyable) result.
template <typename F>
auto call(F&& f) {
  using R = decltype(f());
  if constexpr (std::is_void_v<R>) {
    call_void(std::forward<F>(f));
  } else {
    static_assert(std::is_trivially_copyable_v<R>, "pg::call returns plain values only");
    R result{};
    call_void([&] { result = f(); });
    return result;
  }
}

// Raises the error recorded by entry(); never returns.
[[noreturn]] void raise_pending(ErrorData* pg_error, const char* sqlstate, const char* message);

template <typename Body>
Datum entry(FunctionCallInfo fcinfo, Body&& body) noexcept {
  ErrorData* pg_error = nullptr;
  const char* state = "XX000";
  static thread_local char message[2048];
  message[0] = '\0';
  auto keep = [](const char* text) {  // appends, truncating at the buffer's end
    std::size_t i = 0;
    while (message[i] != '\0') ++i;
    for (; *text != '\0' && i + 1 < sizeof(message); ++i, ++text) message[i] = *text;
    message[i] = '\0';
  };
  {
    // Counts this function as docket's for its whole body (see caller.hpp); it
    // is uncounted before an error is raised.
    const caller::Frame frame;
    try {
      return body(fcinfo);
    } catch (const PgError& e) {
      pg_error = e.data;
    } catch (const docket::Error& e) {
      state = sqlstate(e.reason());
      keep(e.what());
    } catch (const std::bad_alloc&) {
      state = "53200";
      keep("out of memory");
    } catch (const std::exception& e) {
      keep("internal error: ");
      keep(e.what());
    } catch (...) {
      keep("internal error: unknown C++ exception");
    }
  }
  raise_pending(pg_error, state, message);
}

}  // namespace docket::pg

// Declares an SQL-callable function whose body is `docket::pg::name(fcinfo)`.
#define DOCKET_FUNCTION(sql_name, body)     \
  extern "C" {                              \
  PG_FUNCTION_INFO_V1(sql_name);            \
  Datum sql_name(PG_FUNCTION_ARGS) {        \
    return docket::pg::entry(fcinfo, body); \
  }                                         \
  }
