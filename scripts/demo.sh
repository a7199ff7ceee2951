#!/usr/bin/env bash
# make demo: a throwaway cluster, a narrated psql session through a run's life,
# then the C++ client at work: docket_producer spawns tasks and a docket_worker
# pool runs them (examples/cpp); docketctl shows the queue stats and a task's
# history, and the dashboard's API answers. Ends by printing the dashboard's URL
# and how to start it (DEMO_SERVE=1: on the demo's data, until Ctrl-C). Exits
# non-zero if a task does not reach its expected final state.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
make -s
make -s install >/dev/null
echo "building the C++ client (client/build)..."
cmake -S client -B client/build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build client/build -j2 --target docket_producer docket_worker docketctl >/dev/null

export DOCKET_PGPORT=${DOCKET_PGPORT:-54330}
export PGHOST=127.0.0.1 PGPORT=$DOCKET_PGPORT PGUSER=postgres
worker_pid=
serve_pid=
cleanup() {
  for pid in $worker_pid $serve_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  bash scripts/cluster.sh stop
}
bash scripts/cluster.sh start
trap cleanup EXIT

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE docket_demo"
psql -X -v ON_ERROR_STOP=1 --echo-queries -P pager=off -d docket_demo -f demo/run_life.sql

echo
echo "=== The C++ client: docket_producer spawns tasks, a docket_worker pool runs them."
echo "    Producer lines carry a time; worker lines start with 'worker |'."
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE docket_demo_tasks"
psql -X -q -v ON_ERROR_STOP=1 -d docket_demo_tasks -c "CREATE EXTENSION docket"
dsn="dbname=docket_demo_tasks"
client/build/docket_worker --dsn "$dsn" --queue demo --concurrency 4 &
worker_pid=$!

status=0
timeout 90 client/build/docket_producer --dsn "$dsn" --queue demo --timeout-s 60 || status=1

kill -TERM "$worker_pid"
wait "$worker_pid" || status=1
worker_pid=

echo
echo "=== docketctl queues: what is piling up, per queue (docket.queue_stats)"
client/build/docketctl --dsn "$dsn" queues
echo
echo "=== docketctl tasks list: the tasks, newest first (docket.list_tasks)"
client/build/docketctl --dsn "$dsn" tasks list --limit 10
echo
echo "=== docketctl tasks show: what happened to charge_order (its first attempt failed)"
charge=$(client/build/docketctl --dsn "$dsn" --json tasks list --task-name charge_order --limit 1 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["entries"][0]["run_id"])')
client/build/docketctl --dsn "$dsn" tasks show "$charge"

echo
echo "=== The web dashboard (docketctl serve): a look at its API while the cluster runs"
# Its first line, printed once it listens, carries the address (port 0: any free one).
exec {serve_out}< <(exec client/build/docketctl --dsn "$dsn" serve --listen 127.0.0.1:0 2>&1)
serve_pid=$!
line=
read -r line <&"$serve_out" || true
url=$(sed -n 's/^docket dashboard on \(http[^ ]*\) .*/\1/p' <<<"$line")
if [ -n "$url" ]; then
  echo "GET ${url}api/overview:"
  python3 -c 'import json, sys, urllib.request
print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1])), indent=2))' "${url}api/overview" |
    head -30
else
  echo "docketctl serve did not start: $line"
  status=1
fi
kill -TERM "$serve_pid" 2>/dev/null || true
wait "$serve_pid" 2>/dev/null || true
serve_pid=
exec {serve_out}<&-

echo
if [ $status -ne 0 ]; then
  echo "demo FAILED: a task did not reach its expected final state (see above)."
  exit 1
fi
if [ "${DEMO_SERVE:-0}" = 1 ]; then
  echo "=== The dashboard on this demo's data: open http://127.0.0.1:${DEMO_PORT:-8080}/ (Ctrl-C stops it and the cluster)"
  client/build/docketctl --dsn "$dsn" serve --listen "127.0.0.1:${DEMO_PORT:-8080}" --allow-actions || true
fi
echo "demo finished: the cluster is stopped and removed."
echo
echo "The web dashboard: http://127.0.0.1:8080/ once started with"
echo "    client/build/docketctl --dsn \"dbname=<a database with docket>\" serve [--allow-actions]"
echo "or on this demo's data: DEMO_SERVE=1 make demo (docs/dashboard.md)."
