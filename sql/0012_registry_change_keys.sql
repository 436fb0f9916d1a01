-- The registry's notification names the destination that changed (issue 50):
-- 'outbox:destinations:<provider>/<name>', one per row changed (a renamed
-- entry names both), so that a running dispatcher reads that entry alone
-- rather than the whole registry (db/destination_registry_store.hpp). A
-- TRUNCATE, which changes no row one by one, still sends the plain
-- 'outbox:destinations': read everything. A statement that changes many rows
-- sends one notification each; the dispatcher reads the whole registry when
-- more than a few arrive together. Dispatchers older than this migration
-- apply such a change at their next periodic re-read (each sweep).
CREATE OR REPLACE FUNCTION outbox_destination_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_LEVEL = 'STATEMENT' THEN
        PERFORM pg_notify('outbox_event_delivery', 'outbox:destinations');
        RETURN NULL;
    END IF;
    -- A name too long for a notification (8000 bytes) asks for everything instead.
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('outbox_event_delivery', CASE WHEN octet_length(OLD.provider || OLD.name) < 7000
            THEN 'outbox:destinations:' || OLD.provider || '/' || OLD.name ELSE 'outbox:destinations' END);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('outbox_event_delivery', CASE WHEN octet_length(NEW.provider || NEW.name) < 7000
            THEN 'outbox:destinations:' || NEW.provider || '/' || NEW.name ELSE 'outbox:destinations' END);
    END IF;
    RETURN NULL;
END;
$$;
-- Pinned as sql/0008_function_search_path.sql pins the others (CREATE OR
-- REPLACE drops the setting with the old definition).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION outbox_destination_changed() SET search_path = %s',
                   format('pg_catalog, %I, pg_temp', current_schema()));
END
$$;

DROP TRIGGER outbox_destination_notify ON outbox_destination;
CREATE TRIGGER outbox_destination_notify
    AFTER INSERT OR UPDATE OR DELETE ON outbox_destination
    FOR EACH ROW EXECUTE FUNCTION outbox_destination_changed();
CREATE TRIGGER outbox_destination_notify_truncate
    AFTER TRUNCATE ON outbox_destination
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_destination_changed();
