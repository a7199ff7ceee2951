// TaskCatalog: the immutable map from durable task names to handlers. Built
// once, validated, then shared read-only by every runner.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "docket/json.hpp"

namespace docket {

class Context;

// A task handler: runs the task from its beginning on every attempt and wake-up,
// returns the task's result. Throwing (any exception other than the context's
// control signals) fails the attempt; the database decides about a retry.
using Handler = std::function<Json(Context& context, const Json& params)>;

class TaskCatalog {
 public:
  class Builder {
   public:
    // Throws std::invalid_argument for an empty, oversized (> 255 bytes) or
    // duplicate name, or an empty handler.
    Builder& add(const std::string& task_name, Handler handler);
    TaskCatalog build();

   private:
    std::map<std::string, Handler> handlers_;
  };

  // nullptr when the name is unknown.
  const Handler* find(const std::string& task_name) const;
  std::vector<std::string> names() const;
  bool empty() const;

 private:
  explicit TaskCatalog(std::map<std::string, Handler> handlers);
  std::shared_ptr<const std::map<std::string, Handler>> handlers_;
};

}  // namespace docket
