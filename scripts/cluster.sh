#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster on loopback, run as the postgres user.
#   scripts/cluster.sh start|stop|status      (DOCKET_PGPORT, DOCKET_PGDATA override)
# DOCKET_FSYNC=on|off (default off): durability. off (tests) sets fsync,
# synchronous_commit and full_page_writes off for speed; on (benchmarks) keeps
# production durability: all three on.
# Clients then use: PGHOST=127.0.0.1 PGPORT=$DOCKET_PGPORT PGUSER=postgres
set -euo pipefail

PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
[ -x "$PGBIN/initdb" ] || PGBIN=/usr/lib/postgresql/15/bin
PORT=${DOCKET_PGPORT:-54329}
DATA=${DOCKET_PGDATA:-/tmp/docket-cluster-$PORT}
LOG="$DATA.log"
FSYNC=${DOCKET_FSYNC:-off}
case "$FSYNC" in
  on | off) ;;
  *)
    echo "DOCKET_FSYNC must be on or off, not '$FSYNC'" >&2
    exit 2
    ;;
esac

as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "${1:-}" in
  start)
    if [ -f "$DATA/postmaster.pid" ]; then
      as_postgres "$PGBIN/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DATA" "$LOG"
    mkdir -p "$DATA"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$DATA"
    touch "$LOG"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$LOG"
    as_postgres "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    cat >> "$DATA/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '/tmp'
fsync = $FSYNC
synchronous_commit = $FSYNC
full_page_writes = $FSYNC
max_connections = 120
shared_buffers = 512MB
max_prepared_transactions = 10
log_min_messages = warning
CONF
    # The port lies in the kernel's ephemeral range: a client socket can hold it
    # for a moment. Only that bind failure is retried (3 attempts).
    for attempt in 1 2 3; do
      if as_postgres "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null; then
        break
      fi
      if [ $attempt = 3 ] || ! grep -q 'could not bind' "$LOG"; then
        exit 1
      fi
      echo "port $PORT busy, retrying" >&2
      sleep 2
    done
    echo "cluster up on 127.0.0.1:$PORT ($DATA, fsync $FSYNC)"
    ;;
  stop)
    if [ -f "$DATA/postmaster.pid" ]; then
      as_postgres "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$DATA"
    ;;
  status)
    as_postgres "$PGBIN/pg_ctl" -D "$DATA" status
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
