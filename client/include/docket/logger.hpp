// A pluggable logger for the worker pool.
#pragma once

#include <memory>
#include <string_view>

namespace docket {

enum class LogLevel { debug, info, warning, error };

class Logger {
 public:
  virtual ~Logger() = default;
  virtual void log(LogLevel level, std::string_view message) = 0;
};

// Writes "docket <level>: <message>" lines to stderr; drops levels below `min`.
std::shared_ptr<Logger> stderr_logger(LogLevel min = LogLevel::info);
// Discards everything.
std::shared_ptr<Logger> null_logger();

}  // namespace docket
