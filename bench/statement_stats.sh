#!/usr/bin/env bash
# Runs one outbox_bench scenario with pg_stat_statements loaded and prints the
# most expensive statements per row (exec + plan time, WAL bytes, buffer hits):
# the evidence behind the PostgreSQL figures in docs/benchmarks.md.
#
#   usage: scripts/with_postgres.sh bench/statement_stats.sh <outbox_bench args...>
#   e.g.   scripts/with_postgres.sh bench/statement_stats.sh drain --rows 50000
#          scripts/with_postgres.sh bench/statement_stats.sh latency
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${OUTBOX_BENCH:-$root/build-bench/outbox_bench}
[ -n "${PG_TEST_CTL:-}" ] || { echo "statement_stats.sh: run me under scripts/with_postgres.sh" >&2; exit 2; }

$PG_TEST_CTL restart -o "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on" >/dev/null
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" postgres
psql -X -q -c "SELECT pg_stat_statements_reset()" postgres >/dev/null
"$bench" "$@"
psql -X -P pager=off -c "
SELECT calls, rows, round(total_exec_time::numeric) AS exec_ms, round(total_plan_time::numeric) AS plan_ms, plans,
       round(((total_exec_time + total_plan_time) * 1000 / greatest(rows, 1))::numeric, 1) AS us_per_row,
       round(wal_bytes / greatest(rows, 1)) AS wal_bytes_per_row,
       shared_blks_hit / greatest(rows, 1) AS buffer_hits_per_row,
       regexp_replace(left(query, 60), '\s+', ' ', 'g') AS query
FROM pg_stat_statements WHERE calls > 5
ORDER BY total_exec_time + total_plan_time DESC LIMIT 10" postgres
