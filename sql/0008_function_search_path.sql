-- The dispatcher's SQL functions find their tables in the schema they were
-- created in, whatever the caller's search_path: a Django connection whose
-- options set another search_path, a role with a default of its own, a trigger
-- fired by a session that never heard of this schema. Each is pinned to the
-- schema this migration runs in (current_schema(): where 0001 created the
-- tables), after pg_catalog so no other schema can shadow a built-in, with
-- pg_temp last.
DO $$
DECLARE
    pinned text := format('pg_catalog, %I, pg_temp', current_schema());
BEGIN
    EXECUTE format('ALTER FUNCTION outbox_idempotency_key(bigint, text, text) SET search_path = %s', pinned);
    EXECUTE format('ALTER FUNCTION enqueue_event_delivery(bigint, text, text, jsonb, text, text) SET search_path = %s',
                   pinned);
    EXECUTE format('ALTER FUNCTION event_delivery_notify() SET search_path = %s', pinned);
    EXECUTE format('ALTER FUNCTION outbox_set_wake_mode(text, text) SET search_path = %s', pinned);
END
$$;
