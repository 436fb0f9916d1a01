-- The outbox: one row per (lead, provider, event). Django inserts and forgets;
-- the dispatcher owns every column below `payload`.
CREATE TABLE event_delivery (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lead_project_id  bigint      NOT NULL,
    provider         text        NOT NULL,
    destination      text        NOT NULL DEFAULT 'default',
    event_name       text        NOT NULL,
    -- Fixed at insert and sent as the provider's dedup id on every attempt.
    idempotency_key  text        NOT NULL,
    -- The canonical event, frozen at insert (including event_time): a retry sends the same content.
    payload          jsonb       NOT NULL,
    state            text        NOT NULL DEFAULT 'pending',
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    lease_owner      text,
    lease_token      uuid,
    lease_expires_at timestamptz,
    sent_at          timestamptz,
    last_error       text,
    last_http_status integer,
    provider_response text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT event_delivery_one_per_event UNIQUE (lead_project_id, provider, event_name),
    CONSTRAINT event_delivery_state_known
        CHECK (state IN ('pending', 'sending', 'sent', 'dead', 'held')),
    -- A row is in `sending` exactly when it carries a lease.
    CONSTRAINT event_delivery_lease_matches_state
        CHECK ((state = 'sending') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT event_delivery_attempts_non_negative CHECK (attempts >= 0)
);

-- What the claim reads: due pending rows. Sent rows never enter this index.
CREATE INDEX event_delivery_due_idx ON event_delivery (next_attempt_at) WHERE state = 'pending';
-- What the claim and the sweeper read for crash recovery: leases by expiry.
CREATE INDEX event_delivery_lease_idx ON event_delivery (lease_expires_at) WHERE state = 'sending';
-- On-call looks up dead rows by time; keeps `status` and `requeue` cheap.
CREATE INDEX event_delivery_dead_idx ON event_delivery (updated_at) WHERE state IN ('dead', 'held');

-- Hot queue table: vacuum early so dead tuples from state changes do not pile up.
ALTER TABLE event_delivery SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.05);

-- One row per attempt, so on-call can see what each provider said.
CREATE TABLE event_delivery_attempt (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id      bigint      NOT NULL,
    attempt          integer     NOT NULL,
    started_at       timestamptz NOT NULL,
    duration_ms      integer     NOT NULL,
    outcome          text        NOT NULL,
    http_status      integer,
    error            text,
    response_excerpt text,
    lease_owner      text
);
CREATE INDEX event_delivery_attempt_delivery_idx ON event_delivery_attempt (delivery_id, id);

-- Deterministic idempotency key: an RFC 9562 version-8 UUID built from SHA-256 of
-- the unique triple. Needs no extension, so the CRM database needs nothing installed.
CREATE FUNCTION outbox_idempotency_key(p_lead_project_id bigint, p_provider text, p_event_name text)
RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    WITH h AS (
        SELECT encode(sha256(convert_to(
            'outbox-dispatcher/v1:' || p_lead_project_id::text || ':' || p_provider || ':' || p_event_name,
            'UTF8')), 'hex') AS x
    )
    SELECT substr(x, 1, 8) || '-' || substr(x, 9, 4) || '-8' || substr(x, 14, 3) || '-'
        || to_hex((('x' || substr(x, 17, 1))::bit(4)::int & 3) | 8) || substr(x, 18, 3) || '-'
        || substr(x, 21, 12)
    FROM h
$$;

-- Django's side in one call: insert once, returns true when the row is new.
CREATE FUNCTION enqueue_event_delivery(
    p_lead_project_id bigint,
    p_provider text,
    p_event_name text,
    p_payload jsonb,
    p_destination text DEFAULT 'default',
    p_idempotency_key text DEFAULT NULL
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    inserted integer;
BEGIN
    INSERT INTO event_delivery (lead_project_id, provider, destination, event_name, idempotency_key, payload)
    VALUES (p_lead_project_id, p_provider, coalesce(p_destination, 'default'), p_event_name,
            coalesce(p_idempotency_key, outbox_idempotency_key(p_lead_project_id, p_provider, p_event_name)),
            p_payload)
    ON CONFLICT ON CONSTRAINT event_delivery_one_per_event DO NOTHING;
    GET DIAGNOSTICS inserted = ROW_COUNT;
    RETURN inserted > 0;
END
$$;

-- Wake the dispatcher. Statement-level with a constant payload so a bulk insert
-- costs one notification; statements that inserted nothing (ON CONFLICT DO
-- NOTHING hit) do not notify at all.
CREATE FUNCTION event_delivery_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted_rows) THEN
        PERFORM pg_notify('outbox_event_delivery', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER event_delivery_notify_insert
    AFTER INSERT ON event_delivery
    REFERENCING NEW TABLE AS inserted_rows
    FOR EACH STATEMENT EXECUTE FUNCTION event_delivery_notify();
