-- What on-call sees of the running dispatchers (issue 12): each one records a
-- heartbeat at every sweep (one small upsert per OUTBOX_SWEEP_INTERVAL_SECONDS),
-- with the destinations it paused by itself (a destination-wide failure or an
-- open circuit), so `dispatcher status` shows a destination that stopped even
-- when no row is due.
CREATE TABLE outbox_dispatcher_heartbeat (
    instance               text        PRIMARY KEY,
    version                text        NOT NULL,
    host                   text        NOT NULL,
    pid                    integer     NOT NULL,
    started_at             timestamptz NOT NULL,
    last_seen              timestamptz NOT NULL DEFAULT now(),
    sweep_interval_seconds integer     NOT NULL CHECK (sweep_interval_seconds > 0),
    -- [{"provider", "destination", "reason", "until"}]: automatic pauses and open circuits
    automatic_pauses       jsonb       NOT NULL DEFAULT '[]'
);

-- `dispatcher resume` of a destination a dispatcher paused by itself ("retry
-- now"): every dispatcher lifts its automatic pause when it sees a request newer
-- than the last one it acted on.
CREATE TABLE outbox_destination_resume (
    provider     text        NOT NULL,
    destination  text        NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now(),
    requested_by text,
    PRIMARY KEY (provider, destination)
);
