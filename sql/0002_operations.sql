-- On-call controls: paused destinations (persisted, shared by every dispatcher)
-- and an archive for pruned rows.
CREATE TABLE outbox_destination_pause (
    provider    text        NOT NULL,
    destination text        NOT NULL,
    reason      text        NOT NULL,
    paused_at   timestamptz NOT NULL DEFAULT now(),
    paused_by   text,
    PRIMARY KEY (provider, destination)
);

-- Same shape as event_delivery, without its constraints or indexes: cold storage for `prune --archive`.
CREATE TABLE event_delivery_archive (LIKE event_delivery INCLUDING DEFAULTS);
ALTER TABLE event_delivery_archive ALTER COLUMN id DROP DEFAULT;
ALTER TABLE event_delivery_archive ADD COLUMN archived_at timestamptz NOT NULL DEFAULT now();

-- What prune reads: sent rows by age.
CREATE INDEX event_delivery_sent_idx ON event_delivery (sent_at) WHERE state = 'sent';
