#include "pg/spi.hpp"

#include <stdexcept>
#include <string>

#include "pg/planning.hpp"

namespace docket::pg {

void spi_connect() {
  call([] {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "docket: SPI_connect failed");
  });
}

void spi_finish() {
  call([] {
    if (SPI_finish() != SPI_OK_FINISH) elog(ERROR, "docket: SPI_finish failed");
  });
}

static SPIPlanPtr prepare_kept(Statement& statement, int cursor_options) {
  return call([&] {
    SPIPlanPtr plan =
        SPI_prepare_cursor(statement.sql, statement.nargs, statement.types, cursor_options);
    if (plan == nullptr)
      elog(ERROR, "docket: SPI_prepare failed (%s): %s", SPI_result_code_string(SPI_result),
           statement.sql);
    if (SPI_keepplan(plan) != 0) elog(ERROR, "docket: SPI_keepplan failed");
    return plan;
  });
}

static SPIPlanPtr prepared(Statement& statement) {
  if (statement.plan == nullptr) statement.plan = prepare_kept(statement, 0);
  return statement.plan;
}

void spi_prepare_generic(Statement& statement) {
  if (statement.plan == nullptr) statement.plan = prepare_kept(statement, CURSOR_OPT_GENERIC_PLAN);
}

std::uint64_t spi_execute(Statement& statement, const Datum* values, const char* nulls,
                          long row_limit) {
  SPIPlanPtr plan = prepared(statement);
  const IndexPlanning planning(statement.nested_loops);  // if the plan is (re)made now
  return call([&] {
    int rc = SPI_execute_plan(plan, const_cast<Datum*>(values), nulls, false, row_limit);
    if (rc < 0)
      elog(ERROR, "docket: statement failed (%s): %s", SPI_result_code_string(rc), statement.sql);
    return static_cast<std::uint64_t>(SPI_processed);
  });
}

// Every read is checked against the result it reads: a statement that
// returned fewer rows than the caller expected (a row deleted under it, a
// hostile mutation) raises an error instead of reading past the array.
static void check_row(std::uint64_t row) {
  if (SPI_tuptable == nullptr || row >= SPI_tuptable->numvals)
    throw std::logic_error("docket: read row " + std::to_string(row) + " of a result with " +
                           std::to_string(SPI_tuptable == nullptr ? 0 : SPI_tuptable->numvals) +
                           " rows");
}

Datum spi_value(std::uint64_t row, int column, bool* isnull) {
  check_row(row);
  if (column < 1 || column > SPI_tuptable->tupdesc->natts)
    throw std::logic_error("docket: read column " + std::to_string(column) + " of a result with " +
                           std::to_string(SPI_tuptable->tupdesc->natts) + " columns");
  return call([&] {
    return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, column, isnull);
  });
}

void spi_row(std::uint64_t row, Datum* values, bool* nulls, int capacity, bool copy) {
  check_row(row);
  const int width = SPI_tuptable->tupdesc->natts;
  if (width > capacity)
    throw std::logic_error("docket: read a row of " + std::to_string(width) +
                           " columns into room for " + std::to_string(capacity));
  call([&] {
    HeapTuple tuple = SPI_tuptable->vals[row];
    if (copy) tuple = SPI_copytuple(tuple);  // into the context SPI_connect was called in
    heap_deform_tuple(tuple, SPI_tuptable->tupdesc, values, nulls);
  });
}

Datum spi_transfer(Datum value, bool by_value, int length) {
  return call([&] { return SPI_datumTransfer(value, by_value, length); });
}

}  // namespace docket::pg
