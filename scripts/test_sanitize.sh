#!/usr/bin/env bash
# make test-sanitize: the client suites built with each sanitizer of $SANITIZERS
# (default: address thread), against a throwaway cluster.
set -uo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
bash scripts/deps.sh || exit 1
make -s -j"$(nproc)" || exit 1
make -s install >/dev/null || exit 1

export DOCKET_PGPORT=${DOCKET_PGPORT:-54328}
export PGHOST=127.0.0.1 PGPORT=$DOCKET_PGPORT PGUSER=postgres
bash scripts/cluster.sh start || exit 1
trap 'bash scripts/cluster.sh stop' EXIT

status=0
for sanitizer in ${SANITIZERS:-address thread}; do
  dir=client/build-$sanitizer
  echo "=== client suites under ${sanitizer} sanitizer"
  t0=$SECONDS
  if cmake -S client -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DDOCKET_SANITIZE=$sanitizer >/dev/null &&
     cmake --build "$dir" -j2 --target client_tests crash_worker docketctl &&
     echo "--- client built ($((SECONDS - t0))s)" &&
     (cd "$dir" && ASAN_OPTIONS=detect_leaks=1 TSAN_OPTIONS=halt_on_error=1 \
        ctest --output-on-failure -j1); then
    echo "=== ${sanitizer}: ok ($((SECONDS - t0))s)"
  else
    echo "=== ${sanitizer}: FAILED ($((SECONDS - t0))s)"
    status=1
  fi
done
echo "make test-sanitize: $((SECONDS - started))s"
exit $status
