-- outbox_forget_lead() (sql/0013_personal_data.sql) now also notifies
-- 'outbox:forgotten:<lead>' on the wake channel: a running dispatcher that
-- claimed a row of the lead before the forget, and holds it waiting for its
-- destination's concurrency slot or rate limit, drops it instead of sending
-- it (dispatcher/engine/sender.cpp, drop_forgotten). The notification leaves
-- at commit, with the erasure; a rolled-back forget sends nothing.
CREATE OR REPLACE FUNCTION outbox_forget_lead(p_lead_project_id bigint, p_requested_by text, p_dry_run boolean DEFAULT false)
RETURNS TABLE (rows_erased integer, rows_closed integer, rows_in_flight integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_rows integer;
    v_open integer;
    v_in_flight integer;
BEGIN
    SELECT count(*), count(*) FILTER (WHERE final_state IS NULL), count(*) FILTER (WHERE state = 'sending')
      INTO v_rows, v_open, v_in_flight
      FROM event_delivery WHERE lead_project_id = p_lead_project_id;
    IF NOT p_dry_run THEN
        UPDATE event_delivery_attempt a
           SET error = CASE WHEN a.error IS NULL THEN NULL ELSE '[erased]' END, response_excerpt = NULL,
               note = NULL, dropped_fields = NULL
          FROM event_delivery d
         WHERE d.lead_project_id = p_lead_project_id AND a.delivery_id = d.id;
        UPDATE event_delivery
           SET payload = outbox_erase_personal_data(payload),
               provider_response = NULL,
               personal_data_erased_at = now(),
               personal_data_erased_why = 'forgotten on request',
               state = CASE WHEN final_state IS NULL THEN 'dead' ELSE state END,
               last_error = CASE WHEN final_state IS NULL THEN 'forgotten on request' ELSE last_error END,
               lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
               updated_at = now()
         WHERE lead_project_id = p_lead_project_id;
        UPDATE event_delivery_archive
           SET payload = outbox_erase_personal_data(payload), provider_response = NULL,
               personal_data_erased_at = now(), personal_data_erased_why = 'forgotten on request'
         WHERE lead_project_id = p_lead_project_id;
        INSERT INTO outbox_erasure (lead_project_id, requested_by, rows_erased, rows_closed)
        VALUES (p_lead_project_id, p_requested_by, v_rows, v_open);
        IF v_open > 0 THEN
            PERFORM pg_notify('outbox_event_delivery', 'outbox:forgotten:' || p_lead_project_id);
        END IF;
    END IF;
    RETURN QUERY SELECT v_rows, v_open, v_in_flight;
END;
$$;
-- Pinned again (CREATE OR REPLACE drops the setting with the old definition).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION outbox_forget_lead(bigint, text, boolean) SET search_path = %s',
                   format('pg_catalog, %I, pg_temp', current_schema()));
END
$$;
