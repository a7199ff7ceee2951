# bench/lib.sh: what the bench drivers share. Source it from the repository
# root after setting PORT and OUT (and DB for q, BUILD for bench_worker_build):
#   bench_cluster_setup [database]  installs docket (unless BENCH_INSTALL=0) and
#       starts a throwaway cluster on $PORT with production durability
#       (BENCH_FSYNC=off for comparison), stopped on exit; PG* point at it
#       (PGDATABASE: database, default postgres);
#   bench_worker_build  builds bench_worker into $BUILD and sets BENCH;
#   spawn_tasks_range  pre-spawns tasks (untimed); raw_two_commit  the raw loop;
#   q, now, elapsed, say, field, mean, ratio, result  the drivers' small helpers.

bench_cluster_setup() {
  export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=${1:-postgres}
  PGBIN=$(pg_config --bindir)
  if [ "${BENCH_INSTALL:-1}" = 1 ]; then
    flock /tmp/docket-build.lock make -s install >/dev/null
  fi
  # Production durability (fsync, synchronous_commit, full_page_writes on)
  # unless BENCH_FSYNC=off.
  DOCKET_FSYNC=${BENCH_FSYNC:-on} DOCKET_PGPORT=$PORT bash scripts/cluster.sh start
  trap 'DOCKET_PGPORT=$PORT bash scripts/cluster.sh stop' EXIT
}

bench_worker_build() {
  cmake -S client -B "$BUILD" >/dev/null
  cmake --build "$BUILD" -j2 --target bench_worker >/dev/null
  BENCH=$BUILD/bench_worker
}

q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }
say() { echo "$*" | tee -a "$OUT"; }
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }  # field <line> <key>
result() { echo "$1=$2" >>"${RESULTS:-/dev/null}"; }  # result <key> <value>, for run_all
# spawn_tasks_range <queue> <task> <first> <last>: tasks first..last (params
# {"i": n}) by docket.spawn_tasks, 10,000 per statement, in one session; untimed.
spawn_tasks_range() {
  local b e
  for ((b = $3; b <= $4; b += 10000)); do
    e=$(((b + 9999) < $4 ? b + 9999 : $4))
    echo "SELECT count(*) FROM docket.spawn_tasks('$2',
            ARRAY(SELECT jsonb_build_object('i', g) FROM generate_series($b, $e) g),
            '$1', 'tenantless', '{}');"
  done | q >/dev/null
}
# raw_two_commit <clients> <batch> <jobs> [pgbench options...]: the raw
# two-commit loop (bench/worker/raw_two_commit.pgbench) in database $DB, each
# client running enough cycles for <clients> to cover <jobs> jobs; pgbench's
# output (stdout and stderr) on stdout.
raw_two_commit() {
  local c=$1 batch=$2 jobs=$3
  shift 3
  "$PGBIN/pgbench" -n -c "$c" -j 2 -t $(((jobs + c * batch - 1) / (c * batch))) \
    -D batch="$batch" "$@" -f bench/worker/raw_two_commit.pgbench "$DB" 2>&1
}
mean() { echo "($1 + $2) / 2" | bc; }  # mean <a> <b>, an integer
ratio() { if [ -z "${1:-}" ] || [ "${2:-0}" = 0 ]; then echo "-"; else printf "%.2f" "$(echo "scale=4; $1 / $2" | bc)"; fi; }  # ratio <a> <b>
