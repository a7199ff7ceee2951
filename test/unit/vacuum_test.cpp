// Docket's own vacuum of docket.runs: when a claiming backend asks for one.
#include <gtest/gtest.h>

#include "core/vacuum.hpp"

namespace docket {
namespace {

TEST(VacuumLookDue, OffWhenNaptimeIsZero) {
  EXPECT_FALSE(vacuum_look_due(0, 10'000, -1));
  EXPECT_FALSE(vacuum_look_due(0, 10'000, 0));
}

TEST(VacuumLookDue, FirstLookIsDue) {
  EXPECT_TRUE(vacuum_look_due(5'000, 0, -1));
}

TEST(VacuumLookDue, OncePerNaptime) {
  EXPECT_FALSE(vacuum_look_due(5'000, 14'999, 10'000));
  EXPECT_TRUE(vacuum_look_due(5'000, 15'000, 10'000));
  EXPECT_TRUE(vacuum_look_due(5'000, 99'000, 10'000));
}

TEST(VacuumLookDue, ClockSteppedBackLooks) {
  EXPECT_TRUE(vacuum_look_due(5'000, 9'000, 10'000));
}

TEST(VacuumLookDue, BackoffPutsTheLookOff) {
  EXPECT_FALSE(vacuum_look_due(5'000, 24'999, 10'000, 10'000));
  EXPECT_TRUE(vacuum_look_due(5'000, 25'000, 10'000, 10'000));
}

TEST(VacuumBackoff, NoneOnceTheTableWasVacuumed) {
  EXPECT_EQ(vacuum_backoff_ms(0, 5'000, true), 0);
  EXPECT_EQ(vacuum_backoff_ms(80'000, 5'000, true), 0);
}

TEST(VacuumBackoff, DoublesFromOneNaptimeToTenMinutes) {
  EXPECT_EQ(vacuum_backoff_ms(0, 5'000, false), 5'000);
  EXPECT_EQ(vacuum_backoff_ms(5'000, 5'000, false), 10'000);
  EXPECT_EQ(vacuum_backoff_ms(10'000, 5'000, false), 20'000);
  EXPECT_EQ(vacuum_backoff_ms(400'000, 5'000, false), kMaxVacuumBackoffMs);
  EXPECT_EQ(vacuum_backoff_ms(kMaxVacuumBackoffMs, 5'000, false), kMaxVacuumBackoffMs);
  EXPECT_EQ(vacuum_backoff_ms(std::int64_t{1} << 62, 5'000, false), kMaxVacuumBackoffMs);
  EXPECT_EQ(vacuum_backoff_ms(0, 3'600'000, false), kMaxVacuumBackoffMs);
}

VacuumFacts facts(double dead, double rows) {
  VacuumFacts f;
  f.naptime_ms = 5'000;
  f.dead_rows = dead;
  f.rows = rows;
  f.threshold = 1'000;
  f.scale_factor = 0.02;
  return f;
}

TEST(VacuumNeeded, AutovacuumRule) {
  // 1,000 + 0.02 * 100,000 = 3,000: more than that, not equal.
  EXPECT_FALSE(vacuum_needed(facts(3'000, 100'000)));
  EXPECT_TRUE(vacuum_needed(facts(3'001, 100'000)));
  EXPECT_FALSE(vacuum_needed(facts(0, 100'000)));
}

TEST(VacuumNeeded, UnknownRowCountCountsZero) {
  EXPECT_FALSE(vacuum_needed(facts(1'000, -1)));
  EXPECT_TRUE(vacuum_needed(facts(1'001, -1)));
}

TEST(VacuumNeeded, SwitchesTurnItOff) {
  VacuumFacts f = facts(1'000'000, 10);
  ASSERT_TRUE(vacuum_needed(f));
  f.autovacuum_on = false;
  EXPECT_FALSE(vacuum_needed(f));
  f = facts(1'000'000, 10);
  f.table_enabled = false;
  EXPECT_FALSE(vacuum_needed(f));
  f = facts(1'000'000, 10);
  f.naptime_ms = 0;
  EXPECT_FALSE(vacuum_needed(f));
}

}  // namespace
}  // namespace docket
