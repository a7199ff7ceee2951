// The dashboard's static files, compiled into the binary (embed_assets.cmake
// generates their definitions from client/tools/serve/assets and Debian's
// Chart.js at build time).
#pragma once

#include <cstddef>
#include <string>

namespace docket::serve {

struct Asset {
  const char* name;  // file name under /assets/ ("index.html" is served at /)
  const char* content_type;
  const char* data;
  std::size_t size;
};

// nullptr when there is no such asset.
const Asset* find_asset(const std::string& name);

}  // namespace docket::serve
