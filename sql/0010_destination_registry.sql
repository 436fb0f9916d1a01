-- Destinations the CRM manages at run time (issue 50, docs/destinations.md):
-- one row per (provider, name) with the same keys a destination takes from
-- the environment (OUTBOX_DEST__<PROVIDER>__<NAME>__<KEY>, lower-case here:
-- "url", "pixel_id", "concurrency", "header__x_foo"). Secrets are kept apart,
-- sealed for the dispatcher's key ("sealed:v1:<key id>:<base64>"), so a dump,
-- a backup or a replica of this table reveals none. Every running dispatcher
-- hears a change on the outbox_event_delivery channel (payload
-- "outbox:destinations") and re-reads the registry; it also re-reads it
-- periodically, since a notification is only a hint.
CREATE TABLE outbox_destination (
    provider   text        NOT NULL CHECK (provider ~ '^[a-z0-9]+(_[a-z0-9]+)*$'),
    name       text        NOT NULL CHECK (name ~ '^[a-z0-9]+(_[a-z0-9]+)*$'),
    -- {"url": "https://...", "concurrency": "4"}: every value a string, as in the environment
    settings   jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    -- {"access_token": "sealed:v1:..."}: only sealed values
    secrets    jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(secrets) = 'object'),
    enabled    boolean     NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text        NOT NULL DEFAULT current_user,
    PRIMARY KEY (provider, name)
);

-- The dispatcher's public sealing keys: whoever seals a secret (the CLI, the
-- Django app) reads the current one here; the private keys never leave the
-- dispatcher (OUTBOX_SEALING_KEY_FILE). Published by `dispatcher keys publish`.
CREATE TABLE outbox_sealing_key (
    key_id       text        PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
    public_key   bytea       NOT NULL CHECK (length(public_key) = 32),
    is_current   boolean     NOT NULL DEFAULT false,
    published_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX outbox_sealing_key_one_current ON outbox_sealing_key (is_current) WHERE is_current;

-- One notification per statement (a thousand destinations set in one
-- statement cost one re-read), as the dispatcher's own pause signal does.
CREATE FUNCTION outbox_destination_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_event_delivery', 'outbox:destinations');
    RETURN NULL;
END;
$$;
-- Pinned as sql/0008_function_search_path.sql pins the others.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION outbox_destination_changed() SET search_path = %s',
                   format('pg_catalog, %I, pg_temp', current_schema()));
END
$$;

CREATE TRIGGER outbox_destination_notify
    AFTER INSERT OR UPDATE OR DELETE ON outbox_destination
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_destination_changed();
