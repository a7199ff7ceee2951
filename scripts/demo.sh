#!/usr/bin/env bash
# make demo: a throwaway cluster, a narrated psql session through a run's life,
# then the C++ client at work: docket_producer spawns tasks and a docket_worker
# pool runs them (examples/cpp). Exits non-zero if a task does not reach its
# expected final state.
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
cleanup() {
  if [ -n "$worker_pid" ]; then
    kill "$worker_pid" 2>/dev/null || true
    wait "$worker_pid" 2>/dev/null || true
  fi
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
if [ $status -ne 0 ]; then
  echo "demo FAILED: a task did not reach its expected final state (see above)."
  exit 1
fi
echo "demo finished: the cluster is stopped and removed."
