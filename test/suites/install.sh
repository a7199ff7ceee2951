#!/usr/bin/env bash
# Packaging: client/ installs with `cmake --install` (headers, the static
# library, docketConfig.cmake, docket.pc, docketctl) into a throwaway prefix;
# examples/cpp then builds against the installed copy with find_package(docket)
# and with pkg-config, and the installed docketctl talks to the test cluster.
# Run by scripts/test.sh with PGHOST/PGPORT/PGUSER set; exits non-zero on any
# failed check.
set -euo pipefail
cd "$(dirname "$0")/../.."

WORKDIR=$(mktemp -d)
trap 'rm -rf "$WORKDIR"' EXIT
PREFIX=$WORKDIR/prefix
DB=docket_install

fail() {
  echo "install: $*" >&2
  exit 1
}

echo "--- build and install client/ into $PREFIX"
# Debug (-O0): the quickest build; no sanitizer, as a user would build it.
cmake -S client -B "$WORKDIR/build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  >/dev/null
cmake --build "$WORKDIR/build" -j2 --target docket_client docketctl >/dev/null
cmake --install "$WORKDIR/build" >/dev/null

libdir=$(sed -n 's/^libdir=\${prefix}\///p' "$WORKDIR/build/docket.pc")
for f in include/docket/client.hpp include/docket/worker_pool.hpp include/docket/sql.hpp \
  "$libdir/libdocket_client.a" "$libdir/cmake/docket/docketConfig.cmake" \
  "$libdir/cmake/docket/docketConfigVersion.cmake" "$libdir/cmake/docket/docketTargets.cmake" \
  "$libdir/pkgconfig/docket.pc" bin/docketctl; do
  [ -e "$PREFIX/$f" ] || fail "missing after cmake --install: $f"
done
# Nothing of the build tree leaks into the installed package.
if grep -rq "$PWD/client" "$PREFIX/$libdir/cmake/docket" "$PREFIX/$libdir/pkgconfig"; then
  fail "the installed CMake or pkg-config files name the source tree"
fi
echo "installed: $(cd "$PREFIX" && find . -type f | sort | tr '\n' ' ')"

echo "--- examples/cpp with find_package(docket)"
# A copy outside the source tree, so nothing but the prefix can be found.
cp -r examples/cpp "$WORKDIR/examples"
cmake -S "$WORKDIR/examples" -B "$WORKDIR/examples-build" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$WORKDIR/examples-build" -j2 >/dev/null
for example in examples/cpp/*.cpp; do
  name=$(basename "$example" .cpp)
  [ -x "$WORKDIR/examples-build/$name" ] || fail "$name was not built (find_package)"
done

echo "--- examples/cpp with pkg-config"
export PKG_CONFIG_PATH=$PREFIX/$libdir/pkgconfig
[ "$(pkg-config --modversion docket)" = "0.3.0" ] || fail "pkg-config --modversion docket"
# shellcheck disable=SC2046 # word splitting of the flags is intended
for name in docket_producer docket_worker; do
  g++ -std=c++17 -Wall -Wextra -Werror "$WORKDIR/examples/$name.cpp" \
    -o "$WORKDIR/$name-pc" $(pkg-config --cflags --libs docket)
  [ -x "$WORKDIR/$name-pc" ] || fail "$name (pkg-config) was not built"
done

echo "--- the installed docketctl"
"$PREFIX/bin/docketctl" --help | grep -q "Usage: docketctl" || fail "docketctl --help"
PGOPTIONS=--client-min-messages=warning psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "CREATE EXTENSION docket"
run_id=$("$PREFIX/bin/docketctl" --dsn "dbname=$DB" --json tasks spawn installed '{}' --queue inst |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["run_id"])')
"$PREFIX/bin/docketctl" --dsn "dbname=$DB" tasks list --queue inst | grep -q "$run_id" ||
  fail "the installed docketctl does not list the task it spawned"
psql -X -q -d postgres -c "DROP DATABASE $DB"
echo "install: ok"
