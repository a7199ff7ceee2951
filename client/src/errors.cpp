#include "docket/errors.hpp"

#include <utility>

namespace docket {

Error::Error(std::string sqlstate, const std::string& message)
    : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}

}  // namespace docket
