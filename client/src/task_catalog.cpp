#include "docket/task_catalog.hpp"

#include <stdexcept>
#include <utility>

namespace docket {

TaskCatalog::Builder& TaskCatalog::Builder::add(const std::string& task_name, Handler handler) {
  if (task_name.empty() || task_name.size() > 255)
    throw std::invalid_argument("task name must be non-empty and at most 255 bytes");
  if (!handler) throw std::invalid_argument("task \"" + task_name + "\" has no handler");
  if (!handlers_.emplace(task_name, std::move(handler)).second)
    throw std::invalid_argument("task \"" + task_name + "\" is registered twice");
  return *this;
}

TaskCatalog TaskCatalog::Builder::build() {
  return TaskCatalog(std::move(handlers_));
}

TaskCatalog::TaskCatalog(std::map<std::string, Handler> handlers)
    : handlers_(std::make_shared<const std::map<std::string, Handler>>(std::move(handlers))) {}

const Handler* TaskCatalog::find(const std::string& task_name) const {
  auto it = handlers_->find(task_name);
  return it == handlers_->end() ? nullptr : &it->second;
}

std::vector<std::string> TaskCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& entry : *handlers_) out.push_back(entry.first);
  return out;
}

bool TaskCatalog::empty() const {
  return handlers_->empty();
}

}  // namespace docket
