#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL 15 cluster that lives in a temp
# directory and is removed afterwards. Exports the libpq environment (PGHOST,
# PGPORT, PGUSER, PGDATABASE) plus PG_TEST_CTL, a command that controls the
# cluster (e.g. "$PG_TEST_CTL restart") for tests that restart the server.
#   usage: scripts/with_postgres.sh <command> [args...]
# WITH_POSTGRES_CONF adds server settings (postgresql.conf lines).
set -euo pipefail

pg_bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[ -x "$pg_bin/initdb" ] || { echo "with_postgres: no PostgreSQL server binaries found (run scripts/setup.sh)" >&2; exit 1; }

root=$(mktemp -d /tmp/outbox-pg.XXXXXX)
chmod 755 "$root"
run_as=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres:postgres "$root"
  run_as=(runuser -u postgres --)
fi
random_port() { echo $((20000 + RANDOM % 20000)); }
port=${PG_TEST_PORT:-$(random_port)}

cleanup() {
  "${run_as[@]}" "$pg_bin/pg_ctl" -D "$root/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$root"
}
trap cleanup EXIT

"${run_as[@]}" "$pg_bin/initdb" -D "$root/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
cat >> "$root/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
include_if_exists = 'port.conf'
unix_socket_directories = '$root'
max_connections = 200
shared_buffers = 256MB
fsync = on
log_min_messages = warning
CONF
# Extra server settings, one per line (e.g. "huge_pages = on" for bench runs).
[ -z "${WITH_POSTGRES_CONF:-}" ] || printf '%s\n' "$WITH_POSTGRES_CONF" >> "$root/data/postgresql.conf"
# A random port may be taken (by another throwaway server: a test that restarts
# its server runs on one of its own beside the shared one): try a few.
for attempt in 1 2 3 4 5; do
  echo "port = $port" > "$root/data/port.conf"
  if "${run_as[@]}" "$pg_bin/pg_ctl" -D "$root/data" -l "$root/server.log" -w start >/dev/null; then
    break
  fi
  if [ -n "${PG_TEST_PORT:-}" ] || [ $attempt -eq 5 ]; then
    echo "with_postgres: the server did not start; last log lines:" >&2
    tail -n 5 "$root/server.log" >&2 || true
    exit 1
  fi
  port=$(random_port)
done

export PGHOST=$root PGPORT=$port PGUSER=postgres PGDATABASE=postgres
export PG_TEST_CTL="${run_as[*]} $pg_bin/pg_ctl -D $root/data -l $root/server.log -w"
export PG_TEST_BIN=$pg_bin
echo "with_postgres: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on port $port (socket $root)"
set +e
"$@"
status=$?
set -e
if [ $status -ne 0 ] && [ -f "$root/server.log" ]; then
  echo "with_postgres: command failed ($status); last server log lines:" >&2
  tail -n 20 "$root/server.log" >&2 || true
fi
exit $status
