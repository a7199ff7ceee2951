#!/usr/bin/env bash
# Installs the Debian packages docket builds and tests with, when missing.
set -euo pipefail
PACKAGES=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
          libtap-parser-sourcehandler-pgtap-perl libpqxx-dev cmake g++ make
          googletest libgtest-dev clang-format clang-tidy python3-psycopg2 nlohmann-json3-dev
          libcli11-dev libcpp-httplib-dev libjs-chart.js)
# Wanted but not required: the dashboard's browser test skips, saying so,
# when chromium is missing and cannot be installed.
OPTIONAL=(chromium)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing packages: ${missing[*]} (run as root to install them)" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
missing=()
for p in "${OPTIONAL[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  echo "installing (optional): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
    echo "could not install ${missing[*]}: the tests that need it will say they skipped" >&2
fi
