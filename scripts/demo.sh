#!/usr/bin/env bash
# make demo: a throwaway cluster and a narrated psql session through a run's life.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
make -s
make -s install >/dev/null

export DOCKET_PGPORT=${DOCKET_PGPORT:-54330}
export PGHOST=127.0.0.1 PGPORT=$DOCKET_PGPORT PGUSER=postgres
bash scripts/cluster.sh start
trap 'bash scripts/cluster.sh stop' EXIT

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE docket_demo"
psql -X -v ON_ERROR_STOP=1 --echo-queries -P pager=off -d docket_demo -f demo/run_life.sql
echo
echo "demo finished: the cluster is stopped and removed."
