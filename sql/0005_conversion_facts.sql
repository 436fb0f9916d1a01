-- What an attempt knew about the conversion besides its outcome (issue 11):
--  dropped_fields  fields the provider left out, "field: reason (detail)"; the
--                  conversion was sent without them (never the field's value);
--  match_keys      the match keys the request carried (email, phone, click_id...),
--                  read by `dispatcher status` for match-key coverage;
--  provider_request_id  the provider's id for an accepted request it processes
--                  later (Google Data Manager); its result is in provider_request.
ALTER TABLE event_delivery_attempt
    ADD COLUMN dropped_fields text[],
    ADD COLUMN match_keys text[],
    ADD COLUMN provider_request_id text;

-- Accepted requests whose processing result the provider reports later. The
-- dispatcher asks the provider's status endpoint from next_check_at on, until a
-- final status (SUCCESS, PARTIAL_SUCCESS, FAILURE) or until it gives up (UNKNOWN).
-- One row per request, not per event: a batch of 1,000 costs one status check.
CREATE TABLE provider_request (
    provider      text        NOT NULL,
    destination   text        NOT NULL,
    request_id    text        NOT NULL,
    row_count     integer     NOT NULL,
    accepted_at   timestamptz NOT NULL DEFAULT now(),
    status        text        NOT NULL DEFAULT 'PENDING'
                  CHECK (status IN ('PENDING', 'PROCESSING', 'SUCCESS', 'PARTIAL_SUCCESS', 'FAILURE', 'UNKNOWN')),
    detail        text,
    checks        integer     NOT NULL DEFAULT 0,
    checked_at    timestamptz,
    next_check_at timestamptz NOT NULL,
    PRIMARY KEY (provider, destination, request_id)
);

CREATE INDEX provider_request_due ON provider_request (next_check_at)
    WHERE status IN ('PENDING', 'PROCESSING');

-- inspect and status find a row's request through its attempts.
CREATE INDEX event_delivery_attempt_request ON event_delivery_attempt (provider_request_id)
    WHERE provider_request_id IS NOT NULL;
