#!/usr/bin/env bash
# How long the retention's erasure holds its rows locked: 200,000 sent rows of a
# CRM's lead event (email, phone, names, city, click id, IP, user agent, extra),
# then five erasure statements of the maintenance loop's batch size, timed.
# An enqueue of a key whose row a batch is erasing waits at most that long.
# The evidence behind the figure in docs/personal_data.md.
#
#   usage: scripts/with_postgres.sh bench/personal_data_erase.sh [BATCH]   (default 200)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dispatcher=${OUTBOX_DISPATCHER:-$root/build/dispatcher}
batch=${1:-200}
[ -n "${PG_TEST_CTL:-}" ] || { echo "personal_data_erase.sh: run me under scripts/with_postgres.sh" >&2; exit 2; }
"$dispatcher" migrate >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT enqueue_event_delivery(g, 'meta', 'Lead', jsonb_build_object('event_time', 1767225600, 'value', 19.99,
  'currency', 'EUR', 'email', 'lead' || g || '@example.com', 'phone', '+84 912 ' || g, 'first_name', 'Mary',
  'last_name', 'Nguyen', 'city', 'Hanoi', 'fbc', 'fb.1.1.abc' || g, 'client_ip', '203.0.113.7',
  'user_agent', 'Mozilla/5.0', 'extra', jsonb_build_object('meta', jsonb_build_object('custom_data',
  jsonb_build_object('content_name', 'Plan A')))))
FROM generate_series(1, 200000) g;
UPDATE event_delivery SET state = 'sent', sent_at = now() - interval '2 days';
VACUUM ANALYZE event_delivery;
SQL
# The statement of db/personal_data_store.cpp (erase_expired_sql), its retentions as the defaults.
statement="WITH victims AS (
    SELECT id FROM event_delivery
    WHERE personal_data_erased_at IS NULL AND final_state IS NOT NULL
      AND coalesce(sent_at, updated_at) < now() - interval '1 day'
    ORDER BY coalesce(sent_at, updated_at) LIMIT $batch FOR UPDATE SKIP LOCKED)
UPDATE event_delivery d SET payload = outbox_erase_personal_data(d.payload), provider_response = NULL,
    personal_data_erased_at = now(), personal_data_erased_why = 'retention'
FROM victims WHERE d.id = victims.id"
for _ in 1 2 3 4 5; do
  psql -X -q -c '\timing on' -c "$statement" | sed -n 's/^Time: /batch of '"$batch"' rows: /p'
done
