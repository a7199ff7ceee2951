// Test support: a real database on the cluster the PG* environment points at
// (PGHOST, PGPORT, PGUSER), created once per cluster with CREATE EXTENSION
// docket, and unique names so tests never share queues, events or tasks.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include <pqxx/pqxx>

namespace docket::test {

// Polls `condition` every 10 ms until it holds or `timeout` passes; whether it
// held at the end. Tests wait for what the database or the pool will do, never
// for a fixed time.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

// The test database's name: $DOCKET_TEST_DB or "docket_client_test".
inline std::string database_name() {
  const char* name = std::getenv("DOCKET_TEST_DB");
  return name != nullptr && name[0] != '\0' ? name : "docket_client_test";
}

// Connection string of the test database (the rest comes from PG* variables).
// The first call in a process creates the database and the extension when
// missing; concurrent test processes race safely (duplicates are ignored, the
// extension is created under an advisory lock).
inline const std::string& conninfo() {
  static const std::string info = [] {
    const std::string db = database_name();
    {
      pqxx::connection admin("dbname=postgres");
      pqxx::nontransaction tx(admin);
      if (tx.exec("SELECT 1 FROM pg_database WHERE datname = " + tx.quote(db)).empty()) {
        try {
          tx.exec("CREATE DATABASE " + tx.quote_name(db));
        } catch (const pqxx::sql_error& e) {
          // 42P04 duplicate_database, 23505: another test process won the race.
          if (e.sqlstate() != "42P04" && e.sqlstate() != "23505") throw;
        }
      }
    }
    const std::string result = "dbname=" + db;
    pqxx::connection connection(result);
    pqxx::nontransaction tx(connection);
    tx.exec("SET client_min_messages = warning");
    tx.exec("SELECT pg_advisory_lock(4242)");
    tx.exec("CREATE EXTENSION IF NOT EXISTS docket");
    tx.exec("SELECT pg_advisory_unlock(4242)");
    return result;
  }();
  return info;
}

// A name no other test (in this or another process) uses: prefix_pid_n_clock.
inline std::string unique_name(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(++counter) + "_" +
         std::to_string(ticks % 1000000007);
}

// Runs one statement in its own transaction and returns the first field as text
// ("" for no row or NULL).
inline std::string scalar(pqxx::connection_base& connection, const std::string& sql) {
  pqxx::nontransaction tx(connection);
  const pqxx::result r = tx.exec(sql);
  if (r.empty() || r[0][0].is_null()) return "";
  return r[0][0].as<std::string>();
}

}  // namespace docket::test
