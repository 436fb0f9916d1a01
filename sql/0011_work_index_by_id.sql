-- outbox:no-transaction
-- The work index in schedule order with the id as tie-breaker (issue 50): the
-- claim starts its scan at the first row the last claim picked (next_attempt_at,
-- id), past the due rows of skipped destinations (paused, circuit open), which
-- gather at the head of the schedule (db/delivery_sql.hpp, claim). Rows enqueued
-- by one transaction share their next_attempt_at: without the id a scan could
-- only start at the first of them. Same predicate as the index it replaces
-- (sql/0007_hot_claim.sql), so a claim stays a HOT update. Built CONCURRENTLY,
-- so CRM inserts go on while it builds; a build that failed half-way leaves an
-- invalid index, dropped first when the migration runs again.
-- Statements of a no-transaction migration run one at a time, each ending with
-- a semicolon at the end of a line.
DROP INDEX CONCURRENTLY IF EXISTS event_delivery_work_order_idx;
CREATE INDEX CONCURRENTLY event_delivery_work_order_idx
    ON event_delivery (next_attempt_at, id) WHERE final_state IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS event_delivery_work_idx;
