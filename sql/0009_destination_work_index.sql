-- outbox:no-transaction
-- The work of each destination in schedule order (issue 30): with a
-- destination paused or its circuit open, the claim walks this index once per
-- active destination (db/delivery_sql.hpp, claim_by_destination) instead of
-- reading the paused backlog row by row in event_delivery_work_idx. Built
-- CONCURRENTLY, so CRM inserts go on while it builds; a build that failed
-- half-way leaves an invalid index, dropped first when the migration runs again.
-- Its predicate means what event_delivery_work_idx's means (work not finished)
-- but is written differently, so that a query can choose it by name: the
-- claim's scans by destination state this predicate, which the work index
-- cannot serve. It reads final_state only, as the other indexes do, so a
-- claim stays a HOT update.
-- Statements of a no-transaction migration run one at a time, each ending with
-- a semicolon at the end of a line.
DROP INDEX CONCURRENTLY IF EXISTS event_delivery_destination_work_idx;
CREATE INDEX CONCURRENTLY event_delivery_destination_work_idx
    ON event_delivery (provider, destination, next_attempt_at) WHERE coalesce(final_state, 'open') = 'open';
