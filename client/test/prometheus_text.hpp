// Test support: a strict reader of the Prometheus text exposition format
// (version 0.0.4) for what docket writes: every line is a comment (# HELP,
// # TYPE) or a sample `name{labels} value`; anything else fails the test.
#pragma once

#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace docket::test {

// "name{labels}" (exactly as written) -> value.
using Samples = std::map<std::string, double>;

inline Samples parse_prometheus(const std::string& text) {
  Samples out;
  std::istringstream lines(text);
  std::string line;
  std::map<std::string, std::string> types;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      if (type != "counter" && type != "gauge" && type != "histogram")
        throw std::runtime_error("bad TYPE line: " + line);
      if (!types.emplace(name, type).second) throw std::runtime_error("TYPE twice: " + line);
      continue;
    }
    if (line[0] == '#') throw std::runtime_error("unexpected comment: " + line);
    // The value follows the last space (label values here contain no space).
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos) throw std::runtime_error("no value: " + line);
    const std::string key = line.substr(0, space);
    const std::string value = line.substr(space + 1);
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') throw std::runtime_error("bad value: " + line);
    const std::size_t brace = key.find('{');
    if (brace == std::string::npos || key.back() != '}')
      throw std::runtime_error("sample without labels: " + line);
    std::string family = key.substr(0, brace);
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (types.count(family) == 0 && family.size() > s.size() &&
          family.compare(family.size() - s.size(), s.size(), s) == 0)
        family.resize(family.size() - s.size());
    }
    if (types.count(family) == 0) throw std::runtime_error("sample before its TYPE: " + line);
    if (!out.emplace(key, number).second) throw std::runtime_error("duplicate sample: " + line);
  }
  return out;
}

}  // namespace docket::test
