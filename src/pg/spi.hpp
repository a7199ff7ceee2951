// SPI with statements prepared once per backend (SPI_prepare + SPI_keepplan).
#pragma once

#include <cstdint>

#include "pg/boundary.hpp"

namespace docket::pg {

// A statement of the run store. Declare it `static Statement s{sql, n, {types}}`:
// a trivially constructible aggregate, prepared on first use and kept.
struct Statement {
  const char* sql;
  int nargs;
  Oid types[16];
  SPIPlanPtr plan;
  // Planned with hash and merge joins off too (pg/planning.hpp): a batch
  // call's join of its arrays to the rows they name stays a nested loop of
  // index probes in the arrays' order, its lock order.
  bool nested_loops = false;
};

// SPI_connect / SPI_finish. Only the success path finishes: after an error
// the transaction (or subtransaction) abort cleans the SPI stack up.
void spi_connect();
void spi_finish();

// Prepares a statement (if not yet) to always run its generic plan: for hot
// statements whose custom plan would be made again on every call (with LIMIT
// unknown, the generic plan's estimate looks dearer) at about the cost of
// running them. Needs an open SPI connection.
void spi_prepare_generic(Statement& statement);

// Executes a statement; `nulls` is SPI's ' '/'n' array (nullptr: no NULLs).
// Returns the number of rows processed; rows are read with spi_value. A plan
// made now is made on indexes (pg/planning.hpp).
std::uint64_t spi_execute(Statement& statement, const Datum* values, const char* nulls,
                          long row_limit = 0);

// Column `column` (1-based) of row `row` of the last result; a row or column
// past the result raises an error (std::logic_error, converted at the boundary)
// instead of reading past it.
Datum spi_value(std::uint64_t row, int column, bool* isnull);

// Every column of row `row` of the last result at once, into `values` and
// `nulls` (room for `capacity` columns; a wider result, or a row past the
// result, raises an error as spi_value does). One pass over the row, where
// spi_value walks it again from its start for each column after a
// variable-width one. With `copy`, the row is first copied into the caller's
// context, once (where spi_transfer copies one value at a time), so its
// by-reference values survive spi_finish.
void spi_row(std::uint64_t row, Datum* values, bool* nulls, int capacity, bool copy = false);

// Copies a by-reference datum out of SPI memory into the caller's context, so
// it survives spi_finish.
Datum spi_transfer(Datum value, bool by_value, int length);

}  // namespace docket::pg
