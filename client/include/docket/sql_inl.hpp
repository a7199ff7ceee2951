// Template definitions of sql.hpp.
#pragma once

#include <type_traits>
#include <utility>

namespace docket::sql {

template <typename Fn>
auto in_transaction(pqxx::connection_base& connection, bool mutating, Fn&& fn) {
  using Result = decltype(fn(std::declval<pqxx::transaction_base&>()));
  try {
    pqxx::work tx(connection);
    if constexpr (std::is_void_v<Result>) {
      fn(static_cast<pqxx::transaction_base&>(tx));
      tx.commit();
    } else {
      Result result = fn(static_cast<pqxx::transaction_base&>(tx));
      tx.commit();
      return result;
    }
  } catch (...) {
    rethrow_mapped(mutating);
  }
}

}  // namespace docket::sql
