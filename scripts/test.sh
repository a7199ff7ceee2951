#!/usr/bin/env bash
# make test: every suite of docket on a throwaway cluster. Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
bash scripts/deps.sh || exit 1
echo "=== dependencies (scripts/deps.sh): done ($((SECONDS - started))s)"

export DOCKET_PGPORT=${DOCKET_PGPORT:-54329}
export PGHOST=127.0.0.1 PGPORT=$DOCKET_PGPORT PGUSER=postgres
failed=()
# Each phase ends with its wall time ("=== name: ok (42s)"), the run with a total.
suite() {  # suite <name> <command...>
  local name=$1 t0=$SECONDS; shift
  echo
  echo "=== $name"
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - t0))s)"
  else
    echo "=== $name: FAILED ($((SECONDS - t0))s)"
    failed+=("$name")
  fi
}
step() {  # step <name> <command...>: a phase that is not a suite; its failure ends the run
  local name=$1 t0=$SECONDS; shift
  "$@" || { echo "=== $name: FAILED ($((SECONDS - t0))s)"; exit 1; }
  echo "=== $name: done ($((SECONDS - t0))s)"
}
quiet() { "$@" >/dev/null; }

# Static checks: clang-format must leave every file as it is, clang-tidy must
# find nothing in src/ or client/ (CI runs them through make test).
suite "clang-format (make format-check)" make -s format-check
# clang-tidy needs minutes of CPU and no server: it starts now in the background
# at the lowest priority (nice 19), so it takes the cores the builds and suites
# leave idle while they wait for the server, and it is a suite at the end, its
# output printed there. Its own session, so that an early exit stops all of it;
# a new session is a new scheduler autogroup where the kernel has them (Debian),
# in which nice alone would rank it only against itself: the autogroup gets nice
# 19 too.
tidy_log=$(mktemp)
setsid bash -c 'echo 19 2>/dev/null >/proc/self/autogroup
  t0=$(date +%s); nice -n 19 make -s tidy; s=$?
  echo "--- make tidy took $(( $(date +%s) - t0 ))s in the background"; exit $s' \
  >"$tidy_log" 2>&1 &
tidy_pid=$!
cluster_up=no
tidy_done=no
cleanup() {
  [ "$tidy_done" = yes ] || kill -- -"$tidy_pid" 2>/dev/null
  rm -f "$tidy_log"
  [ "$cluster_up" = no ] || bash scripts/cluster.sh stop
}
trap cleanup EXIT
wait_tidy() {
  local status=0
  wait "$tidy_pid" || status=$?
  tidy_done=yes
  cat "$tidy_log"
  return "$status"
}

# Builds use every core (CI: 2).
jobs=$(nproc)
suite "unit (GoogleTest, pure C++ core)" make -s -j"$jobs" unit || true
step "build the extension (make)" make -s -j"$jobs"
step "make install" quiet make -s install

cluster_up=yes
step "cluster start" bash scripts/cluster.sh start

suite "pg_regress (walkthrough, EXPLAIN plans)" make -s installcheck ISOLATION=
suite "isolation specs" make -s installcheck REGRESS=

run_pgtap() {
  psql -q -X -d postgres -c "DROP DATABASE IF EXISTS docket_tap" -c "CREATE DATABASE docket_tap" &&
    psql -q -X -d docket_tap -c "CREATE EXTENSION pgtap" -c "CREATE EXTENSION docket" &&
    pg_prove --ext .sql -d docket_tap test/pgtap/
}
suite "pgTAP" run_pgtap

# The client suites run under AddressSanitizer (leaks included) here; `make
# test-sanitize` adds ThreadSanitizer, so CI covers both without building twice.
run_client() {
  local t0=$SECONDS
  cmake -S client -B client/build-address -DCMAKE_BUILD_TYPE=Debug -DDOCKET_SANITIZE=address \
      >/dev/null &&
    cmake --build client/build-address -j2 --target client_tests crash_worker docketctl &&
    echo "--- client built ($((SECONDS - t0))s)" &&
    (cd client/build-address && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j1)
}
suite "client (C++ library, worker pool, docketctl; ctest under AddressSanitizer)" run_client

for extra in test/suites/*.sh; do
  [ -e "$extra" ] || continue
  suite "$(basename "$extra" .sh)" bash "$extra"
done

suite "clang-tidy (make tidy: src/ and client/; the wait for the background run)" wait_tidy

echo
if [ ${#failed[@]} -gt 0 ]; then
  for f in "${failed[@]}"; do echo "FAILED: $f"; done
  for d in test/regress_output test/isolation/output; do
    [ -f "$d/regression.diffs" ] && head -200 "$d/regression.diffs"
  done
  echo "make test: $((SECONDS - started))s"
  exit 1
fi
echo "all suites passed ($((SECONDS - started))s)"
