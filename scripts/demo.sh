#!/usr/bin/env bash
# The main job on a throwaway database: installs, builds the dispatcher, starts
# a temporary PostgreSQL, applies the migrations and shows the schema.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)" --target dispatcher
scripts/with_postgres.sh bash -c '
  set -e
  echo "== dispatcher migrate"; build/dispatcher migrate
  echo "== again (a no-op)";    build/dispatcher migrate
  echo "== enqueue one event twice (one row, one key)"
  psql -qAt -c "SELECT enqueue_event_delivery(1001, '\''webhook'\'', '\''Lead'\'', '\''{\"event_time\": 1764460800}'\''::jsonb)"
  psql -qAt -c "SELECT enqueue_event_delivery(1001, '\''webhook'\'', '\''Lead'\'', '\''{\"event_time\": 1764460800}'\''::jsonb)"
  psql -c "SELECT id, lead_project_id, provider, event_name, idempotency_key, state FROM event_delivery"
'
