#include "docket/logger.hpp"

#include <cstdio>
#include <mutex>
#include <string>

namespace docket {

namespace {

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
  }
  return "?";
}

class StderrLogger final : public Logger {
 public:
  explicit StderrLogger(LogLevel min) : min_(min) {}
  void log(LogLevel level, std::string_view message) override {
    if (level < min_) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(stderr, "docket %s: %.*s\n", level_name(level), static_cast<int>(message.size()),
                 message.data());
  }

 private:
  LogLevel min_;
  std::mutex mutex_;
};

class NullLogger final : public Logger {
 public:
  void log(LogLevel, std::string_view) override {}
};

}  // namespace

std::shared_ptr<Logger> stderr_logger(LogLevel min) {
  return std::make_shared<StderrLogger>(min);
}
std::shared_ptr<Logger> null_logger() {
  return std::make_shared<NullLogger>();
}

}  // namespace docket
