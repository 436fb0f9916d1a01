-- What every running dispatcher knows about its destinations, recorded in the
-- database so `dispatcher sweep` run from any shell (with only DATABASE_URL)
-- treats expired leases exactly as the dispatchers would: rows of a `hold`
-- destination go to `held`, and each destination's own attempt budget decides
-- when a row is dead. Written by each dispatcher at start-up (last writer wins).
CREATE TABLE outbox_destination_policy (
    provider       text        NOT NULL,
    destination    text        NOT NULL,
    -- The destination does not rely on provider dedup: an uncertain attempt is held for review.
    hold_reclaimed boolean     NOT NULL,
    max_attempts   integer     NOT NULL CHECK (max_attempts > 0),
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    recorded_by    text        NOT NULL,
    PRIMARY KEY (provider, destination)
);

-- A settle now keeps the lease token of the attempt it recorded (lease_expires_at
-- is cleared), so a settle replayed after a lost connection can tell "already
-- recorded by me" from "another worker owns the row now". The CHECK still holds:
-- a row is in `sending` exactly when it has a token and an expiry.
COMMENT ON COLUMN event_delivery.lease_token IS
    'Lease of the current attempt while sending; afterwards the token of the attempt that settled the row';

-- What the attempts log should also say about an attempt, e.g. that the request
-- was fully written on a pooled connection that died and was sent again on a
-- fresh one (the provider may have received it twice; its dedup id covers that).
ALTER TABLE event_delivery_attempt ADD COLUMN note text;
