// Typed errors of the docket client. Every SQLSTATE the extension documents has
// its own type; the sql boundary (sql.hpp) is the only place that maps them.
#pragma once

#include <stdexcept>
#include <string>

namespace docket {

// Base of every error the client raises. sqlstate() is empty for errors that did
// not come from the server.
class Error : public std::runtime_error {
 public:
  Error(std::string sqlstate, const std::string& message);
  const std::string& sqlstate() const noexcept { return sqlstate_; }

 private:
  std::string sqlstate_;
};

class StaleFence : public Error {
  using Error::Error;
};  // DK001
class InvalidCommit : public Error {
  using Error::Error;
};  // DK002
class NotFound : public Error {
  using Error::Error;
};  // DK003
class InactiveRun : public Error {
  using Error::Error;
};  // DK004
class InvalidMutation : public Error {
  using Error::Error;
};  // DK005
class GraphConflict : public Error {
  using Error::Error;
};  // DK006
class InvalidRun : public Error {
  using Error::Error;
};  // DK007
class Cancelled : public Error {
  using Error::Error;
};  // DK010
class BadArgument : public Error {
  using Error::Error;
};  // 22023
class DuplicateRun : public Error {
  using Error::Error;
};  // 23505

// The connection was lost while a mutating call was in flight: it may or may not
// have committed. The client never guesses; callers re-read the state.
class Ambiguous : public Error {
  using Error::Error;
};

// The connection was lost during a read, or could not be opened: nothing changed.
class ConnectionLost : public Error {
  using Error::Error;
};

// The installed extension's version is not one this client supports.
class SchemaMismatch : public Error {
  using Error::Error;
};

// Any other server error, with its SQLSTATE.
class ServerError : public Error {
  using Error::Error;
};

// Thrown by a task handler (directly or as a base class) to say the task will
// never succeed: the attempt fails for good, whatever attempts remain
// (fail_task(..., retry => false)). Any other exception fails the attempt and
// the task's retry policy decides. The client itself never throws it.
class PermanentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace docket
