#!/usr/bin/env bash
# The demo's body; scripts/demo.sh runs it inside a throwaway PostgreSQL.
set -euo pipefail
work=$(mktemp -d /tmp/outbox-demo.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

step "dispatcher migrate"
build/dispatcher migrate

step "start a local HTTPS endpoint (throwaway CA)"
build/demo_sink "$work/ca.pem" "$work/port" > "$work/sink.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
port=$(cat "$work/port")
echo "listening on https://localhost:$port"

step "start the dispatcher"
export OUTBOX_EXTRA_CA_FILE="$work/ca.pem"
export OUTBOX_DEST__WEBHOOK__DEFAULT__URL="https://localhost:$port/crm-hook"
export OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
export OUTBOX_DEST__WEBHOOK__FLAKY__URL="https://localhost:$port/flaky"
export OUTBOX_BACKOFF_BASE_SECONDS=1
export OUTBOX_METRICS_ADDRESS=
build/dispatcher config | sed 's/^/  /'
build/dispatcher run > "$work/dispatcher.log" 2>&1 &
dispatcher_pid=$!
pids+=($dispatcher_pid)

step "enqueue lead events from 'Django' (one SQL call each)"
q -At <<'SQL'
SELECT 'lead 1001 Lead -> new row: ' || enqueue_event_delivery(1001, 'webhook', 'Lead', '{"event_time": 1764460800, "value": 0}'::jsonb);
SELECT 'lead 1001 Purchase -> new row: ' || enqueue_event_delivery(1001, 'webhook', 'Purchase', '{"event_time": 1764464400, "value": 129.90, "currency": "EUR"}'::jsonb);
SELECT 'lead 1002 Lead -> new row: ' || enqueue_event_delivery(1002, 'webhook', 'Lead', '{"event_time": 1764468000}'::jsonb);
-- the same event again: no new row, same idempotency key
SELECT 'lead 1002 Lead (again) -> new row: ' || enqueue_event_delivery(1002, 'webhook', 'Lead', '{"event_time": 1764468000}'::jsonb);
-- an endpoint that answers 503 once: retried with backoff and the same key
SELECT 'lead 1003 Lead to flaky -> new row: ' || enqueue_event_delivery(1003, 'webhook', 'Lead', '{"event_time": 1764471600}'::jsonb, 'flaky');
-- a malformed row (payload is not an object): dead at once with a clear error
SELECT 'lead 1004 Lead -> new row: ' || enqueue_event_delivery(1004, 'webhook', 'Lead', '[1, 2, 3]'::jsonb);
SQL

step "wait until nothing is pending or sending"
for _ in $(seq 200); do
  left=$(psql -XAtc "SELECT count(*) FROM event_delivery WHERE state IN ('pending', 'sending')")
  [ "$left" = 0 ] && break
  sleep 0.1
done

step "stop the dispatcher (SIGTERM: graceful)"
kill -TERM "$dispatcher_pid"
wait "$dispatcher_pid" && echo "dispatcher exited 0"

step "what the endpoint received"
sed 's/^/  /' "$work/sink.log"

step "row states"
q -c "SELECT id, lead_project_id AS lead, destination, event_name, state, attempts, last_http_status AS http,
              left(idempotency_key, 13) || '…' AS key, coalesce(last_error, '') AS last_error
       FROM event_delivery ORDER BY id"

step "attempts log"
q -c "SELECT delivery_id AS row, attempt, outcome, http_status AS http, duration_ms AS ms, coalesce(error, '') AS error
       FROM event_delivery_attempt ORDER BY id"

step "dispatcher log (JSON lines, first 12)"
head -n 12 "$work/dispatcher.log" | sed 's/^/  /'

cat <<'TXT'

Where to look next:
  dispatcher sweep --dry-run      rows stuck in `sending` with an expired lease
  dispatcher config               the effective configuration, secrets masked
  docs/operations.md              the on-call runbook
TXT
