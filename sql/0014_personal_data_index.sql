-- outbox:no-transaction
-- The final rows whose personal data is still there, by the time their
-- retention counts from (issue 51): the maintenance loop erases the oldest in
-- small batches (db/personal_data_store.cpp), reading only those. An erased
-- row leaves the index. Built CONCURRENTLY, so CRM inserts go on while it
-- builds; a build that failed half-way leaves an invalid index, dropped first
-- when the migration runs again.
-- Statements of a no-transaction migration run one at a time, each ending with
-- a semicolon at the end of a line.
DROP INDEX CONCURRENTLY IF EXISTS event_delivery_personal_data_idx;
CREATE INDEX CONCURRENTLY event_delivery_personal_data_idx
    ON event_delivery ((coalesce(sent_at, updated_at))) WHERE personal_data_erased_at IS NULL AND final_state IS NOT NULL;
