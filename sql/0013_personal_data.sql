-- Personal data kept no longer than needed and erased on request (issue 51).
--
-- What counts as personal data is the list of outbox_personal_fields() (the
-- same as providers/personal_data.hpp, which a test holds equal): the
-- canonical event's user fields, click and browser ids and the platforms' lead
-- ids, and, under `extra`, those names and the platforms' own names for them.
-- Erasing a payload replaces each such value with "[erased]" wherever it sits,
-- so the row still shows which fields it had; ids, states, times, event name,
-- value and currency stay.
--
-- A row whose data was erased says when and why (`retention` or
-- `forgotten on request`); requeue and mark-sent refuse it.
ALTER TABLE event_delivery
    ADD COLUMN personal_data_erased_at timestamptz,
    ADD COLUMN personal_data_erased_why text;
ALTER TABLE event_delivery_archive
    ADD COLUMN personal_data_erased_at timestamptz,
    ADD COLUMN personal_data_erased_why text;

-- Who asked to forget which lead, when, and how many rows that changed; never the data.
CREATE TABLE outbox_erasure (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL DEFAULT now(),
    lead_project_id bigint      NOT NULL,
    requested_by    text        NOT NULL,
    rows_erased     integer     NOT NULL,
    rows_closed     integer     NOT NULL
);

CREATE FUNCTION outbox_personal_fields() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY[
        -- the canonical event (docs/providers.md)
        'email', 'phone', 'first_name', 'last_name', 'date_of_birth', 'gender',
        'city', 'state', 'zip', 'country', 'external_id', 'client_ip', 'user_agent',
        'fbc', 'fbp', 'ttclid', 'ttp', 'gclid', 'gbraid', 'wbraid', 'lead_id',
        -- the platforms' own names, as `extra` may carry them
        'user_data', 'userData', 'user', 'userIdentifiers', 'user_identifiers', 'addressInfo', 'address',
        'em', 'ph', 'fn', 'ln', 'db', 'ge', 'ct', 'st', 'zp', 'client_ip_address', 'client_user_agent',
        'ip', 'emailAddress', 'phoneNumber', 'hashedEmail', 'hashedPhoneNumber', 'givenName', 'familyName',
        'postalCode', 'regionCode', 'callback']
$$;

-- `doc` with every value under a personal key replaced by "[erased]", at any depth.
CREATE FUNCTION outbox_erase_personal_data(doc jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(doc)
        WHEN 'object' THEN coalesce(
            (SELECT jsonb_object_agg(k, CASE WHEN k = ANY(outbox_personal_fields()) THEN '"[erased]"'::jsonb
                                             ELSE outbox_erase_personal_data(v) END)
             FROM jsonb_each(doc) AS e(k, v)),
            '{}'::jsonb)
        WHEN 'array' THEN coalesce(
            (SELECT jsonb_agg(outbox_erase_personal_data(v) ORDER BY i)
             FROM jsonb_array_elements(doc) WITH ORDINALITY AS a(v, i)),
            '[]'::jsonb)
        ELSE doc END
$$;

-- Erases the personal data of every row of one lead, in every state, its
-- attempts log and the archive; closes the rows not sent yet (dead, "forgotten
-- on request"), so that nothing more is sent. A row in flight loses its lease:
-- its settle then changes nothing. Records who asked. With dry_run, changes
-- nothing and returns the same counts. Usable inside the CRM's own transaction.
CREATE FUNCTION outbox_forget_lead(p_lead_project_id bigint, p_requested_by text, p_dry_run boolean DEFAULT false)
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
    END IF;
    RETURN QUERY SELECT v_rows, v_open, v_in_flight;
END;
$$;

-- Pinned as sql/0008_function_search_path.sql pins the others.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION outbox_erase_personal_data(jsonb) SET search_path = %s',
                   format('pg_catalog, %I, pg_temp', current_schema()));
    EXECUTE format('ALTER FUNCTION outbox_forget_lead(bigint, text, boolean) SET search_path = %s',
                   format('pg_catalog, %I, pg_temp', current_schema()));
END
$$;
