#!/usr/bin/env bash
# The demo's body; scripts/demo.sh runs it inside a throwaway PostgreSQL (the
# libpq environment points at it). Starts local HTTPS stand-ins for Meta, TikTok,
# Google and a webhook (examples/demo_sink.cpp, throwaway CA), the dispatcher with
# its metrics endpoint, enqueues a mix of lead events the way the CRM does, waits
# until every row is settled and prints what happened. Stops and removes
# everything it started, whatever happens.
#   usage: scripts/demo_inside.sh [build-dir]   (where dispatcher and demo_sink are; default build)
set -euo pipefail
bin=${1:-build}
dispatcher=$bin/dispatcher
work=$(mktemp -d /tmp/outbox-demo.XXXXXX)
cleanup() {  # stops this script's own background processes that still run
  local pid
  for pid in $(jobs -p); do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
indent() { sed 's/^/  /'; }
fail() {
  echo "demo: $*" >&2
  [ -s "$work/dispatcher.log" ] && { echo "demo: last dispatcher log lines:" >&2; tail -n 20 "$work/dispatcher.log" >&2; }
  exit 1
}
http_get() {  # curl when present, else python3
  if command -v curl >/dev/null; then
    curl -sf --max-time 5 "$1"
  else
    python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"
  fi
}

step "dispatcher migrate"
"$dispatcher" migrate

step "start local HTTPS stand-ins for Meta, TikTok, Google and a webhook (throwaway CA)"
webhook_secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
"$bin/demo_sink" "$work" "$webhook_secret" > "$work/sink.log" 2>&1 &
sink_pid=$!
for _ in $(seq 100); do
  [ -s "$work/endpoints.env" ] && break
  kill -0 "$sink_pid" 2>/dev/null || { cat "$work/sink.log" >&2; fail "demo_sink exited"; }
  sleep 0.05
done
[ -s "$work/endpoints.env" ] || fail "demo_sink did not start"
. "$work/endpoints.env"
indent < "$work/endpoints.env"
echo "  (TikTok answers HTTP 503 to its first 2 requests: an outage that recovers)"

step "start the dispatcher: four destinations, metrics on 127.0.0.1"
metrics_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export OUTBOX_EXTRA_CA_FILE="$work/ca.pem"              # trust the throwaway CA besides the system store
export OUTBOX_METRICS_ADDRESS="127.0.0.1:$metrics_port"  # /metrics, /healthz, /readyz
export OUTBOX_BACKOFF_BASE_SECONDS=1                    # retry after ~1 s, ~2 s, ... (default 2)
# Credentials below are the local fakes' (tests/support/fake_*.hpp); BASE_URL points at them.
export OUTBOX_DEST__META__DEFAULT__BASE_URL="$META_URL"
export OUTBOX_DEST__META__DEFAULT__PIXEL_ID=1234567890
export OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN=meta-good-token
export OUTBOX_DEST__META__DEFAULT__APP_SECRET=demo-meta-app-secret
export OUTBOX_DEST__META__DEFAULT__LEAD_EVENT_SOURCE="Acme CRM"
export OUTBOX_DEST__TIKTOK__DEFAULT__BASE_URL="$TIKTOK_URL"
export OUTBOX_DEST__TIKTOK__DEFAULT__ACCESS_TOKEN=tiktok-good-token
export OUTBOX_DEST__TIKTOK__DEFAULT__EVENT_SOURCE_ID=CRMEVENTSET1
# Google through the Data Manager API: since 2026-06-15 the Google Ads API refuses
# click-conversion uploads from new integrations (CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE);
# an account still allowlisted there would configure OUTBOX_DEST__GOOGLE_ADS__... instead.
export OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__BASE_URL="$GOOGLE_URL"
export OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__TOKEN_URL="$GOOGLE_URL/token"
export OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__ACCOUNT_ID=123-456-7890
export OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__CONVERSION_ACTION_ID=987654
export OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__CLIENT_ID=fake-client.apps.googleusercontent.com
export OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__CLIENT_SECRET=fake-client-secret
export OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__REFRESH_TOKEN=1//fake-refresh-token
export OUTBOX_DEST__WEBHOOK__DEFAULT__URL="$WEBHOOK_URL"
export OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET="$webhook_secret"
echo "  \$ dispatcher config   (secrets masked; defaults left out here)"
"$dispatcher" config | grep -E '^OUTBOX_(DEST__|EXTRA_CA|METRICS_ADDRESS|BACKOFF_BASE)' |
  grep -vE '__(CONCURRENCY|RATE_PER_SECOND|BURST|PAUSED)=' | indent
"$dispatcher" run > "$work/dispatcher.log" 2>&1 &
dispatcher_pid=$!
for _ in $(seq 200); do
  http_get "http://127.0.0.1:$metrics_port/readyz" >/dev/null 2>&1 && break
  kill -0 "$dispatcher_pid" 2>/dev/null || fail "the dispatcher exited at start"
  sleep 0.05
done
http_get "http://127.0.0.1:$metrics_port/readyz" >/dev/null || fail "the dispatcher is not ready after 10 s"
echo "  ready: http://127.0.0.1:$metrics_port/readyz answers 200"

step "the CRM enqueues lead events (one SQL call per row, in its own transaction)"
q <<'SQL'
\echo '-- lead 1001 fills in the contact form after an ad click: fan-out to every provider'
SELECT 1001 AS lead, provider, event_name,
       enqueue_event_delivery(1001, provider, event_name, jsonb_build_object(
         'event_time', extract(epoch FROM now() - interval '5 minutes')::bigint,
         'email', ' Mary.Smith@Example.com ', 'phone', '+1 (650) 555-1212',
         'first_name', 'Mary', 'last_name', 'Smith', 'city', 'San Francisco', 'country', 'US',
         'external_id', 'crm-lead-1001',
         'fbc', 'fb.1.1767225600000.IwAR2demo1001', 'ttclid', 'E.C.P.demo1001', 'gclid', 'Cj0KCQiA-demo-1001',
         'consent', jsonb_build_object('ad_user_data', 'GRANTED', 'ad_personalization', 'GRANTED'),
         'value', 120.5, 'currency', 'EUR')) AS new_row
FROM (VALUES ('meta', 'Lead'), ('tiktok', 'SubmitForm'), ('google_data_manager', 'Lead'), ('webhook', 'Lead'))
     AS v(provider, event_name);

\echo '-- lead 1002 comes from a TikTok ad (no Google click): Meta, TikTok and the webhook'
SELECT 1002 AS lead, provider, event_name,
       enqueue_event_delivery(1002, provider, event_name, jsonb_build_object(
         'event_time', extract(epoch FROM now() - interval '3 minutes')::bigint,
         'email', 'elodie.durand@example.fr', 'phone', '+33 6 12 34 56 78',
         'first_name', 'Élodie', 'last_name', 'Durand', 'country', 'FR',
         'ttclid', 'E.C.P.demo1002', 'client_ip', '203.0.113.7')) AS new_row
FROM (VALUES ('meta', 'Lead'), ('tiktok', 'SubmitForm'), ('webhook', 'Lead')) AS v(provider, event_name);

\echo '-- lead 1001 buys: a purchase with value, currency and order id'
SELECT 1001 AS lead, provider, event_name,
       enqueue_event_delivery(1001, provider, event_name, jsonb_build_object(
         'event_time', extract(epoch FROM now() - interval '1 minute')::bigint,
         'email', 'mary.smith@example.com', 'phone', '+16505551212', 'external_id', 'crm-lead-1001',
         'gclid', 'Cj0KCQiA-demo-1001', 'ttclid', 'E.C.P.demo1001',
         'value', '129.90', 'currency', 'eur', 'order_id', 'SO-2026-0042')) AS new_row
FROM (VALUES ('meta', 'Purchase'), ('tiktok', 'CompletePayment'), ('google_data_manager', 'Purchase'),
             ('webhook', 'Purchase'))
     AS v(provider, event_name);

\echo '-- the CRM saves lead 1001 again and re-enqueues its Meta Lead: false, no second row (an id is used up)'
SELECT 1001 AS lead, 'meta' AS provider, 'Lead' AS event_name,
       enqueue_event_delivery(1001, 'meta', 'Lead', '{"event_time": 1767225600}'::jsonb) AS new_row;

\echo '-- a bad row: an import script forgot event_time, which Meta requires'
SELECT 1003 AS lead, 'meta' AS provider, 'Lead' AS event_name,
       enqueue_event_delivery(1003, 'meta', 'Lead', '{"email": "noah@example.com", "phone": "+4915123456789"}'::jsonb)
       AS new_row;
SQL

step "wait until no row is pending or sending (TikTok's outage costs a backoff of about a second)"
started=$(date +%s%N)
left=
for _ in $(seq 300); do
  left=$(psql -XAtc "SELECT count(*) FROM event_delivery WHERE state IN ('pending', 'sending')")
  [ "$left" = 0 ] && break
  sleep 0.1
done
[ "$left" = 0 ] || fail "$left row(s) still pending or sending after 30 s"
echo "  all rows settled after $(( ($(date +%s%N) - started) / 1000000 )) ms"

step "what each provider received (the stand-ins check tokens, hashing and required fields as the real APIs do)"
kill -TERM "$sink_pid"
wait "$sink_pid" || true
indent < "$work/sink.log"

step "row states"
q -c "SELECT id, lead_project_id AS lead, provider, event_name AS event, state, attempts,
              last_http_status AS http, left(idempotency_key, 13) || '…' AS key,
              coalesce(left(last_error, 70), '') AS last_error
       FROM event_delivery ORDER BY id"

step "Google processes what Data Manager accepted later: one provider_request row per request"
q -c "SELECT provider, destination, request_id, row_count AS rows, status, checks,
              to_char(next_check_at - accepted_at, 'HH24:MI:SS') AS first_check_after
       FROM provider_request ORDER BY accepted_at, request_id"
echo "  (the dispatcher asks Google's requestStatus:retrieve for each from then on and records the result)"

dead_id=$(psql -XAtc "SELECT id FROM event_delivery WHERE state = 'dead' AND last_http_status IS NULL ORDER BY id LIMIT 1")
recovered_id=$(psql -XAtc "SELECT d.id FROM event_delivery d WHERE d.state = 'sent' AND EXISTS (
  SELECT 1 FROM event_delivery_attempt a WHERE a.delivery_id = d.id AND a.outcome = 'retry')
  ORDER BY d.attempts DESC, d.id LIMIT 1")
q -c "ANALYZE event_delivery"  # so the `sent ~N` estimate of `status` is current

step "\$ dispatcher status"
"$dispatcher" status | indent

step "\$ dispatcher inspect $dead_id     (the bad row: dead before any request)"
"$dispatcher" inspect "$dead_id" | indent

if [ -n "$recovered_id" ]; then
  step "\$ dispatcher inspect $recovered_id     (retried through TikTok's outage, then sent)"
  "$dispatcher" inspect "$recovered_id" | indent
fi

step "\$ curl -s http://127.0.0.1:$metrics_port/metrics | grep -E '^outbox_(deliveries|requests)_total'"
http_get "http://127.0.0.1:$metrics_port/metrics" | grep -E '^outbox_(deliveries|requests)_total' | indent

step "stop the dispatcher (SIGTERM: graceful)"
kill -TERM "$dispatcher_pid"
wait "$dispatcher_pid" || fail "the dispatcher exited $?"
echo "  dispatcher exited 0; its log (JSON lines on stderr), warnings and the last line:"
grep -E '"level":"(warn|error)"|"msg":"dispatcher stopped"' "$work/dispatcher.log" | cut -c1-220 | indent

cat <<TXT

Where to look next (every command reads the database the way \`dispatcher run\` does):
  dispatcher status            counts by state and destination, oldest due row, pauses
  dispatcher inspect ID        one row and its attempts log: what the provider answered
  dispatcher requeue --id ID   send a dead row again once its data is fixed
  GET /metrics                 Prometheus metrics on OUTBOX_METRICS_ADDRESS (default 127.0.0.1:9464)
  docs/operations.md           the on-call runbook; docs/providers.md for each provider's mapping
(dispatcher here is $dispatcher. The throwaway database, the stand-ins and $work are removed as the demo exits.)
TXT
