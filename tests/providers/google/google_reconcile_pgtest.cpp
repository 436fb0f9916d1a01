// Google Data Manager status reconciliation: the engine in this process against
// a real PostgreSQL and fake_google's events:ingest and requestStatus:retrieve
// over HTTPS. Rows are `sent` once Google accepted the request; the reconciler
// then records in provider_request (one row per request) what Google made of it:
// PROCESSING until SUCCESS, PARTIAL_SUCCESS or FAILURE with Google's reasons,
// asking again after an unreadable answer, and surviving the loss of its
// database connection. Read counts are asserted, not timings.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dispatcher/engine/reconciler.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_google.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace google_reconcile_pgtest {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::engine_harness;
using outbox::test::fake_google;
using outbox::test::fake_google_options;
using outbox::test::status_answer;

namespace {

constexpr auto final_deadline = 20s;  // a few 1 s reconciler rounds, with room for a slow machine

// A Data Manager destination on the fake, checked 1 s after acceptance; due
// requests are looked for every second.
void reconciled_env(outbox::environment& env, const fake_google& g, const outbox::test::test_ca& ca,
                    const std::string& batch_size = "1000") {
  env["OUTBOX_EXTRA_CA_FILE"] = ca.cert_pem_file().string();
  env["OUTBOX_STATUS_POLL_SECONDS"] = "1";
  // These tests count requests: a handshake that times out (1 s under ASan on a
  // slow VM) resends rows alone and changes the count. Nothing here waits for
  // a timeout or a lease to expire, so both grow (the lease covers 3 x (4 s
  // connect + 4 s handshake + 4 s request) + 5 s: lease_budget.hpp).
  env["OUTBOX_CONNECT_TIMEOUT_MS"] = "4000";
  env["OUTBOX_REQUEST_TIMEOUT_MS"] = "4000";
  env["OUTBOX_LEASE_SECONDS"] = "42";
  for (auto& [k, v] : g.destination_settings("GOOGLE_DATA_MANAGER")) env[k] = v;
  const std::string p = "OUTBOX_DEST__GOOGLE_DATA_MANAGER__DEFAULT__";
  env[p + "STATUS_CHECK_DELAY_SECONDS"] = "1";
  env[p + "BATCH_SIZE"] = batch_size;
}

std::string payload(const std::string& gclid) {
  return json{{"event_time", "2026-09-20T14:03:00Z"}, {"gclid", gclid}}.dump();
}

std::int64_t enqueue(engine_harness& h, std::int64_t lead) {
  return h.enqueue(lead, "Purchase", payload("G-" + std::to_string(lead)), "google_data_manager");
}

struct request_row {
  std::string status;
  std::string detail;
  long long row_count = 0;
  long long checks = 0;
};

request_row request_of(const engine_harness& h, const std::string& request_id) {
  const auto r =
      h.db.query("SELECT status, coalesce(detail, ''), row_count, checks FROM provider_request WHERE request_id = $1",
                 {request_id});
  if (r.rows() != 1) return {};
  return {std::string(r.text(0, 0)), std::string(r.text(0, 1)), r.int64(0, 2), r.int64(0, 3)};
}

bool wait_status(const engine_harness& h, const std::string& request_id, const std::string& status) {
  return h.wait_for([&] { return request_of(h, request_id).status == status; }, final_deadline);
}

long long rows_of_request(const engine_harness& h, const std::string& request_id) {
  return h.db.scalar("SELECT count(DISTINCT delivery_id) FROM event_delivery_attempt WHERE provider_request_id = $1",
                     {request_id});
}

// Every request id Google issued has exactly one provider_request row, and nothing else has one.
void check_one_row_per_request(const engine_harness& h, fake_google& google) {
  const auto ids = google.statuses().request_ids();
  CHECK(h.db.scalar("SELECT count(*) FROM provider_request") == static_cast<long long>(ids.size()));
  CHECK(h.db.scalar("SELECT count(DISTINCT request_id) FROM provider_request") == static_cast<long long>(ids.size()));
  for (const auto& id : ids) CHECK(request_of(h, id).row_count == rows_of_request(h, id));
  for (const auto& r : google.status_requests()) {
    CHECK(r.method == "GET");
    CHECK(r.header("authorization").value_or("").starts_with("Bearer ya29.fake-"));
  }
  CHECK(google.statuses().unknown_reads() == 0);
}

long long terminate_reconciler_connection(const engine_harness& h) {
  return h.db.scalar(
      "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
      "WHERE datname = current_database() AND application_name = 'outbox-dispatcher reconciler'");
}

}  // namespace

TEST_CASE("google_data_manager reconciliation: PROCESSING, then SUCCESS, one provider_request row per request") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  google.statuses().script_next({status_answer::processing()});  // until the test says otherwise
  engine_harness h([&](auto& env) { reconciled_env(env, google, ca); });
  // Enqueued before the engine starts, so one claim takes them all: one request.
  const std::vector<std::int64_t> rows{enqueue(h, 101), enqueue(h, 102), enqueue(h, 103)};
  h.start();
  for (const auto id : rows) REQUIRE(h.wait_state(id, "sent"));

  const auto ids = google.statuses().request_ids();
  REQUIRE(ids.size() == 1);
  const auto& id = ids.front();
  CHECK(request_of(h, id).row_count == 3);
  CHECK(rows_of_request(h, id) == 3);

  // Google is still processing: recorded, and asked again.
  REQUIRE(h.wait_for([&] { return request_of(h, id).checks >= 2; }, final_deadline));
  CHECK(request_of(h, id).status == "PROCESSING");

  (void)google.statuses().script(id, {status_answer::success()});
  REQUIRE(wait_status(h, id, "SUCCESS"));
  const auto done = request_of(h, id);
  CHECK(done.detail == "3 ingested");
  CHECK(done.checks == google.statuses().reads(id));  // every read recorded, none after the final one
  for (const auto row : rows) CHECK(h.state_of(row) == "sent");
  // Logged right after the status row is written: the engine's thread may not be there yet.
  CHECK(h.wait_for([&] { return h.logs().find("provider processed the request") != std::string::npos; }, 5s));

  // A final status is never asked again. A second request, processing for good,
  // is the clock: each of its reads is a later round of the reconciler.
  google.statuses().script_next({status_answer::processing()});
  const auto later = enqueue(h, 104);
  REQUIRE(h.wait_state(later, "sent"));
  REQUIRE(google.statuses().request_ids().size() == 2);
  const auto clock_id = google.statuses().request_ids()[1];
  REQUIRE(h.wait_for([&] { return google.statuses().reads(clock_id) >= 3; }, final_deadline));
  CHECK(google.statuses().reads(id) == done.checks);
  CHECK(request_of(h, id).status == "SUCCESS");
  CHECK(request_of(h, clock_id).row_count == 1);
  check_one_row_per_request(h, google);
  h.stop();
}

TEST_CASE(
    "google_data_manager reconciliation: PARTIAL_SUCCESS and FAILURE keep Google's reasons; 503 and 429 are "
    "asked again") {
  outbox::test::test_ca ca;
  fake_google_options opts;
  opts.processing_reads = 1000000;  // every request processing until scripted below
  fake_google google(ca, opts);
  engine_harness h([&](auto& env) { reconciled_env(env, google, ca, "2"); });
  std::vector<std::int64_t> rows;
  for (std::int64_t lead = 201; lead <= 206; ++lead) rows.push_back(enqueue(h, lead));
  h.start();
  for (const auto id : rows) REQUIRE(h.wait_state(id, "sent"));
  const auto ids = google.statuses().request_ids();
  if (ids.size() != 3) MESSAGE(h.logs());
  REQUIRE(ids.size() == 3);  // batches of two
  for (const auto& id : ids)
    REQUIRE(h.wait_for([&] { return request_of(h, id).status == "PROCESSING"; }, final_deadline));

  // Scripted once each request was read: what its following reads answer.
  const std::vector<int> reads_before{
      google.statuses().script(ids[0],
                               {status_answer::partial_success({{"PROCESSING_ERROR_REASON_INVALID_GCLID", 1}})}),
      google.statuses().script(ids[1], {status_answer::unavailable(),
                                        status_answer::failed({{"PROCESSING_ERROR_REASON_EVENT_TOO_OLD", 1},
                                                               {"PROCESSING_ERROR_REASON_CLICK_NOT_FOUND", 1}})}),
      google.statuses().script(
          ids[2], {status_answer::unavailable(), status_answer::quota_exceeded(), status_answer::success()})};

  REQUIRE(wait_status(h, ids[0], "PARTIAL_SUCCESS"));
  REQUIRE(wait_status(h, ids[1], "FAILURE"));
  REQUIRE(wait_status(h, ids[2], "SUCCESS"));
  const auto partial = request_of(h, ids[0]);
  const auto failed = request_of(h, ids[1]);
  CHECK(partial.detail.find("errors: 1 PROCESSING_ERROR_REASON_INVALID_GCLID") != std::string::npos);
  CHECK(partial.detail.find("ingested") != std::string::npos);
  CHECK(failed.detail == "errors: 1 PROCESSING_ERROR_REASON_EVENT_TOO_OLD, 1 PROCESSING_ERROR_REASON_CLICK_NOT_FOUND");
  // The unreadable answers were asked again: exactly one read per scripted answer.
  CHECK(google.statuses().reads(ids[0]) == reads_before[0] + 1);
  CHECK(google.statuses().reads(ids[1]) == reads_before[1] + 2);
  CHECK(google.statuses().reads(ids[2]) == reads_before[2] + 3);
  for (const auto& id : ids) CHECK(request_of(h, id).checks == google.statuses().reads(id));
  // Google's verdict is about processing; the rows stay `sent` (they were delivered).
  for (const auto id : rows) CHECK(h.state_of(id) == "sent");
  CHECK(h.db.scalar("SELECT sum(row_count) FROM provider_request") == 6);
  CHECK(h.logs().find("provider did not process every event of the request") != std::string::npos);
  check_one_row_per_request(h, google);
  h.stop();
}

TEST_CASE("google_data_manager reconciliation: the reconciler's connection is terminated, mid-check and idle") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  // Google answers the first read in 700 ms: the connection dies while the check is in flight.
  google.statuses().script_next({status_answer::success().after(700ms)});
  engine_harness h([&](auto& env) { reconciled_env(env, google, ca); });
  const auto first = enqueue(h, 301);
  h.start();
  REQUIRE(h.wait_state(first, "sent"));
  REQUIRE(google.statuses().request_ids().size() == 1);
  const auto id = google.statuses().request_ids()[0];
  REQUIRE(h.wait_for([&] { return google.statuses().reads(id) == 1; }, final_deadline));
  REQUIRE(terminate_reconciler_connection(h) == 1);

  // The status already read is recorded on a fresh connection, not read again.
  REQUIRE(wait_status(h, id, "SUCCESS"));
  CHECK(google.statuses().reads(id) == 1);
  CHECK(request_of(h, id).checks == 1);

  // Killed while idle between rounds: the next round reconnects.
  REQUIRE(terminate_reconciler_connection(h) >= 1);
  const auto second = enqueue(h, 302);  // default script: PROCESSING once, then SUCCESS
  REQUIRE(h.wait_state(second, "sent"));
  REQUIRE(google.statuses().request_ids().size() == 2);
  const auto id2 = google.statuses().request_ids()[1];
  REQUIRE(wait_status(h, id2, "SUCCESS"));
  CHECK(google.statuses().reads(id2) == 2);
  CHECK(request_of(h, id2).checks == 2);
  CHECK(h.logs().find("could not read requests due for a status check") != std::string::npos);
  check_one_row_per_request(h, google);
  h.stop();
}

TEST_CASE(
    "google_data_manager reconciliation: an id Google does not know is UNKNOWN at once; a refused token is "
    "replaced") {
  outbox::test::test_ca ca;
  fake_google google(ca);
  google.statuses().script_next({status_answer::processing()});
  engine_harness h([&](auto& env) { reconciled_env(env, google, ca); });
  // As if accepted long ago by a Google that no longer knows the id.
  h.db.query(
      "INSERT INTO provider_request (provider, destination, request_id, row_count, next_check_at) "
      "VALUES ('google_data_manager', 'default', 'forgotten-1', 5, now())");
  const auto row = enqueue(h, 401);
  h.start();
  REQUIRE(h.wait_state(row, "sent"));
  const auto id = google.statuses().request_ids().at(0);

  REQUIRE(wait_status(h, "forgotten-1", "UNKNOWN"));
  const auto forgotten = request_of(h, "forgotten-1");
  CHECK(forgotten.detail.starts_with("HTTP 404: "));
  CHECK(forgotten.detail.find("NOT_FOUND") != std::string::npos);
  CHECK(forgotten.checks == 1);

  // Google refuses the current access token early: the status read gets 401, the
  // token is dropped, and the next read goes out with a fresh one.
  REQUIRE(h.wait_for([&] { return request_of(h, id).checks >= 1; }, final_deadline));
  const int refreshes = google.refreshes();
  google.expire_access_tokens();
  const int reads = google.statuses().script(id, {status_answer::success()});
  REQUIRE(wait_status(h, id, "SUCCESS"));
  CHECK(google.unauthorized_answers() >= 1);
  CHECK(google.refreshes() > refreshes);
  CHECK(google.statuses().reads(id) == reads + 1);  // the 401s never reached the status
  // Final answers are never asked again, the 404 included.
  CHECK(google.statuses().unknown_reads() == 1);
  CHECK(request_of(h, "forgotten-1").checks == 1);
  h.stop();
}

TEST_CASE(
    "google_data_manager reconciliation: RESOURCE_EXHAUSTED pauses the status reads of the whole project, not one "
    "request") {
  outbox::test::test_ca ca;
  fake_google_options opts;
  opts.processing_reads = 0;  // SUCCESS at the first read that gets through
  fake_google google(ca, opts);
  // Two destinations of one Google Cloud project (the same OAuth client), one event per request.
  engine_harness h([&](auto& env) {
    reconciled_env(env, google, ca, "1");
    for (auto& [k, v] : google.destination_settings("GOOGLE_DATA_MANAGER", "OTHER")) env[k] = v;
    env["OUTBOX_DEST__GOOGLE_DATA_MANAGER__OTHER__STATUS_CHECK_DELAY_SECONDS"] = "1";
    env["OUTBOX_DEST__GOOGLE_DATA_MANAGER__OTHER__BATCH_SIZE"] = "1";
  });
  // The project's quota is spent; Google says to come back in 4 s.
  google.statuses().exhaust_quota("4s");
  std::vector<std::int64_t> rows;
  for (std::int64_t lead = 301; lead <= 306; ++lead) {
    rows.push_back(h.enqueue(lead, "Purchase", payload("G-" + std::to_string(lead)), "google_data_manager",
                             lead % 2 == 0 ? "default" : "other"));
  }
  h.start();
  for (const auto id : rows) REQUIRE(h.wait_state(id, "sent"));
  // The first refusal pauses the project's reads for 4 s: the quota is back long before.
  REQUIRE(h.wait_for([&] { return google.statuses().refused_reads() >= 1; }, final_deadline));
  google.statuses().restore_quota();
  const auto ids = google.statuses().request_ids();
  REQUIRE(ids.size() == 6);
  for (const auto& id : ids) REQUIRE(h.wait_for([&] { return request_of(h, id).status == "SUCCESS"; }, 30s));
  // One refused read paused them all: no read per due request while the quota was spent.
  CHECK(google.statuses().refused_reads() == 1);
  CHECK(google.statuses().total_reads() == 7);
  CHECK(h.logs().find("status reads paused: the provider's quota is exhausted") != std::string::npos);
  CHECK(h.logs().find("\"retry_delay_seconds\":4") != std::string::npos);
  // Postponed requests were not counted as reads.
  CHECK(h.db.scalar("SELECT sum(checks) FROM provider_request") == 7);
  h.stop();
}

}  // namespace google_reconcile_pgtest
