#pragma once
// The CRM's write path under load, for tests: several connections enqueueing
// rows concurrently through enqueue_event_delivery.
#include <string>
#include <vector>

namespace outbox::test {

// `writers` connections insert concurrently, `per_statement` rows per
// statement (one transaction, at most one NOTIFY), leads first_lead onwards;
// payload {"lead": n, "value": n % 97, "currency": "EUR"}. Returns the
// problems met (empty on success).
std::vector<std::string> insert_concurrently(const std::string& conninfo, int writers, int rows_per_writer,
                                             int per_statement, long long first_lead);

}  // namespace outbox::test
