-- Wake modes: how the CRM's inserts wake the dispatcher.
--   always    every inserting statement notifies (plain LISTEN/NOTIFY).
--   adaptive  statements notify only while no dispatcher says it is awake.
--   off       no trigger at all; dispatchers find rows by polling.
-- A committing transaction that issued NOTIFY takes one instance-wide lock held
-- through its WAL flush, so at high insert rates `always` serializes the CRM's
-- commits. While a dispatcher is draining it claims again within milliseconds
-- anyway; a notification then adds nothing but that lock.

-- The chosen mode, shared by every dispatcher. Change it with
-- `dispatcher wake-mode MODE` (outbox_set_wake_mode below), never by hand.
CREATE TABLE outbox_wake_config (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    mode       text        NOT NULL CHECK (mode IN ('always', 'adaptive', 'off')),
    changed_at timestamptz NOT NULL DEFAULT now(),
    changed_by text
);
-- Safe on a live system: a dispatcher too old to publish that it is awake never
-- appears in outbox_dispatcher_awake, so every statement keeps notifying.
INSERT INTO outbox_wake_config (mode, changed_by) VALUES ('adaptive', 'migration 0003');

-- Dispatchers that are draining and will claim again without a notification.
-- Written only on transitions (and refreshed every few seconds while awake).
-- Unlogged: no WAL, and after a crash or a failover it starts empty, which
-- means "notify", the safe side. An entry expires by itself, so a dispatcher
-- that dies while awake silences notifications for at most its TTL.
CREATE UNLOGGED TABLE outbox_dispatcher_awake (
    instance    text        PRIMARY KEY,
    awake_until timestamptz NOT NULL
);

-- Statement-level, skips statements that inserted nothing (ON CONFLICT DO
-- NOTHING hits). clock_timestamp(), not now(): a long CRM transaction must not
-- judge expiry by its own start time.
CREATE OR REPLACE FUNCTION event_delivery_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM inserted_rows) THEN
        RETURN NULL;
    END IF;
    IF (SELECT mode FROM outbox_wake_config) = 'adaptive'
       AND EXISTS (SELECT 1 FROM outbox_dispatcher_awake WHERE awake_until > clock_timestamp()) THEN
        RETURN NULL;  -- a dispatcher is draining: it will claim this row without a hint
    END IF;
    PERFORM pg_notify('outbox_event_delivery', '');
    RETURN NULL;
END
$$;

-- Switches the mode on a live system; returns the previous mode. `off`
-- disables the trigger (ALTER TABLE takes a brief lock that waits for open
-- inserting transactions; callers set lock_timeout so the CRM is never queued
-- behind it for long). Every switch also notifies, so sleeping dispatchers
-- claim once; they re-read the mode on their next sweep.
CREATE FUNCTION outbox_set_wake_mode(p_mode text, p_changed_by text DEFAULT current_user)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    previous text;
    trigger_enabled boolean;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('always', 'adaptive', 'off') THEN
        RAISE EXCEPTION 'unknown wake mode "%"', p_mode USING HINT = 'use always, adaptive or off';
    END IF;
    SELECT mode INTO previous FROM outbox_wake_config FOR UPDATE;
    UPDATE outbox_wake_config SET mode = p_mode, changed_at = now(), changed_by = p_changed_by;
    -- Compare with the trigger's real state, not the previous mode: someone may
    -- have disabled it by hand. No ALTER (and no lock) when nothing changes.
    SELECT tgenabled <> 'D' INTO trigger_enabled FROM pg_trigger
    WHERE tgrelid = 'event_delivery'::regclass AND tgname = 'event_delivery_notify_insert';
    IF p_mode = 'off' AND trigger_enabled THEN
        ALTER TABLE event_delivery DISABLE TRIGGER event_delivery_notify_insert;
    ELSIF p_mode <> 'off' AND NOT trigger_enabled THEN
        ALTER TABLE event_delivery ENABLE TRIGGER event_delivery_notify_insert;
    END IF;
    PERFORM pg_notify('outbox_event_delivery', '');
    RETURN previous;
END
$$;
