// JSON values in the client are nlohmann::json (Debian's nlohmann-json3-dev).
#pragma once

#include <nlohmann/json.hpp>

namespace docket {
using Json = nlohmann::json;
}  // namespace docket
