// docketctl: the context and output helpers the commands share.
#include <algorithm>
#include <iostream>

#include "docket/sql.hpp"
#include "docketctl.hpp"

namespace docketctl {

pqxx::connection& Context::connection() {
  if (!connection_) {
    connection_ = std::make_unique<pqxx::connection>(dsn);
    docket::sql::prepare(*connection_);
  }
  return *connection_;
}

void Context::emit(const docket::Json& value, const std::function<void()>& human) const {
  if (json) {
    std::cout << value.dump() << "\n";
  } else {
    human();
  }
}

std::string cell(const docket::Json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

void print_table(const std::vector<docket::Json>& rows, const std::vector<std::string>& columns) {
  std::vector<std::size_t> width(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) width[c] = columns[c].size();
  for (const auto& row : rows)
    for (std::size_t c = 0; c < columns.size(); ++c)
      width[c] = std::max(width[c], cell(row.value(columns[c], docket::Json())).size());
  auto line = [&](auto get) {
    std::string out;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      std::string text = get(c);
      text.resize(width[c], ' ');
      out += (c ? "  " : "") + text;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::cout << out << "\n";
  };
  line([&](std::size_t c) { return columns[c]; });
  line([&](std::size_t c) { return std::string(width[c], '-'); });
  for (const auto& row : rows)
    line([&](std::size_t c) { return cell(row.value(columns[c], docket::Json())); });
  std::cout << "(" << rows.size() << (rows.size() == 1 ? " row)\n" : " rows)\n");
}

void print_object(const docket::Json& object) {
  for (const auto& [key, value] : object.items()) std::cout << key << ": " << cell(value) << "\n";
}

docket::Json parse_json_argument(const std::string& what, const std::string& text) {
  try {
    return docket::Json::parse(text);
  } catch (const docket::Json::parse_error& e) {
    throw CommandError(what + " is not JSON: " + e.what());
  }
}

}  // namespace docketctl
