#!/usr/bin/env bash
# make tidy: clang-tidy (.clang-tidy, warnings are errors) over the extension's
# C++ (src/core, src/pg) and the client's (client/src, client/tools), TIDY_JOBS
# files at a time (default: the CPU count). The client's flags come from a
# compile_commands.json of its own CMake configuration (build/tidy-client).
# Exits non-zero on any finding.
set -uo pipefail
cd "$(dirname "$0")/.."

jobs=${TIDY_JOBS:-$(nproc)}
server_include=$(pg_config --includedir-server) || exit 1
cmake -S client -B build/tidy-client -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null || exit 1

# tidy_one <kind> <file>: one file, its noise ("N warnings generated.") dropped.
tidy_one() {
  local kind=$1 file=$2 status
  case "$kind" in
    core) clang-tidy --quiet "$file" -- -std=c++17 -Isrc ;;
    pg) clang-tidy --quiet "$file" -- -std=c++17 -Isrc -isystem "$SERVER_INCLUDE" ;;
    client) clang-tidy --quiet -p build/tidy-client "$file" ;;
  esac 2>&1 | grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$'
  status=${PIPESTATUS[0]}
  [ "$status" = 0 ] || echo "clang-tidy: $file: findings (exit $status)"
  return "$status"
}
export -f tidy_one
export SERVER_INCLUDE=$server_include

{
  for f in src/core/*.cpp; do echo "core $f"; done
  for f in src/pg/*.cpp; do echo "pg $f"; done
  for f in client/src/*.cpp client/tools/*.cpp client/tools/*/*.cpp; do
    [ -e "$f" ] && echo "client $f"
  done
} | xargs -P "$jobs" -L1 bash -c 'tidy_one "$0" "$1"'
status=$?
[ "$status" = 0 ] && echo "clang-tidy: no findings"
exit "$status"
