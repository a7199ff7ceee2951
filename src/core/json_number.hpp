// Reading a JSON number's text as an exact 64-bit integer.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace docket {

// "42", "-7", "3.000" -> the integer; "3.5", "1e3", overflow, garbage -> nullopt.
std::optional<std::int64_t> parse_json_integer(std::string_view text) noexcept;

}  // namespace docket
