// `dispatcher status`'s conversion report: match-key coverage and dropped
// fields over the delivered attempts of the last 24 h, provider_request rows of
// the last 7 days by status. Rows and attempts are written with SQL, as the
// settle statement leaves them (db/delivery_sql.hpp).
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "db/conversion_report_store.hpp"
#include "db/params.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace conversion_report_store_pgtest {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;

namespace {

const std::vector<std::string> known_keys{"email", "phone", "external_id", "click_id"};

nlohmann::json report(const outbox::test::scratch_database& db) {
  return outbox::test::run_async([&](auto ex) -> asio::awaitable<nlohmann::json> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    co_return co_await outbox::db::async_conversion_report(c, known_keys);
  });
}

using texts = std::vector<std::string>;

// As the settle stores a list: NULL when empty.
outbox::db::param array_or_null(const texts& v) {
  if (v.empty()) return std::nullopt;
  return outbox::db::text_array(v);
}

// One row of `destination`, sent `age` ago, with one attempt of `outcome` carrying `keys` and `dropped`.
void sent_row(const outbox::test::scratch_database& db, int lead, const std::string& destination, const texts& keys,
              const texts& dropped, const std::string& outcome = "delivered", const std::string& age = "1 minute") {
  db.query("SELECT enqueue_event_delivery($1, 'google_data_manager', 'Lead', '{}'::jsonb, $2)",
           {std::to_string(lead), destination});
  db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() - $2::interval WHERE lead_project_id = $1",
           {std::to_string(lead), age});
  db.query(
      "INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, match_keys, "
      "dropped_fields) SELECT id, 1, now() - $2::interval, 5, $3, $4::text[], $5::text[] "
      "FROM event_delivery WHERE lead_project_id = $1",
      {std::to_string(lead), age, outcome, array_or_null(keys), array_or_null(dropped)});
}

void request_row(const outbox::test::scratch_database& db, const std::string& destination, const std::string& id,
                 int rows, const std::string& status, const std::string& age, const std::string& detail = "") {
  db.query(
      "INSERT INTO provider_request (provider, destination, request_id, row_count, accepted_at, status, detail, "
      "checked_at, next_check_at) VALUES ('google_data_manager', $1, $2, $3::int, now() - $4::interval, $5, "
      "NULLIF($6, ''), now() - $4::interval + interval '30 minutes', now())",
      {destination, id, std::to_string(rows), age, status, detail});
}

const nlohmann::json& find(const nlohmann::json& list, const std::string& destination) {
  for (const auto& d : list) {
    if (d["destination"] == destination) return d;
  }
  FAIL("no entry for destination " << destination);
  return list;
}

}  // namespace

TEST_CASE("conversion report: match-key coverage over the delivered attempts of the last 24 hours") {
  outbox::test::scratch_database db;
  CHECK(report(db) == nlohmann::json::array());
  sent_row(db, 1, "default", {"email", "phone"}, {});
  sent_row(db, 2, "default", {"email", "address"}, {});
  sent_row(db, 3, "default", {"email"}, {});
  sent_row(db, 4, "default", {}, {});
  sent_row(db, 5, "default", {"email", "phone"}, {}, "delivered", "30 hours");  // outside the window
  sent_row(db, 6, "default", {"email", "phone"}, {}, "retry");                  // not delivered
  const auto r = report(db);
  REQUIRE(r.size() == 1);
  const auto& d = r[0];
  CHECK(d["provider"] == "google_data_manager");
  CHECK(d["delivered"] == 4);
  // The names asked for, in that order, 0 included; then any other key found.
  CHECK(d["match_keys"] == nlohmann::json::parse(R"([{"key":"email","attempts":3},{"key":"phone","attempts":1},
      {"key":"external_id","attempts":0},{"key":"click_id","attempts":0},{"key":"address","attempts":1}])"));
  CHECK(d["dropped_total"] == 0);
  CHECK(d["dropped"] == nlohmann::json::array());
  CHECK(d.at("provider_requests").is_null());
}

TEST_CASE("conversion report: dropped fields by field and reason, the top five and the total") {
  outbox::test::scratch_database db;
  // The detail may itself hold ": " and " (": only the field and the reason count.
  sent_row(db, 1, "default", {"email"},
           {"phone: invalid_phone (no country code (+ or 00) and no region: none)",
            "date_of_birth: invalid_date (impossible date (no such month))", "gender: invalid_gender"});
  sent_row(db, 2, "default", {"email"},
           {"phone: invalid_phone (too short)", "currency: invalid_currency (not ISO 4217)",
            "extra.meta: wrong_type (expected an object)", "value: wrong_type (expected a number)"});
  sent_row(db, 3, "default", {"email"}, {"phone: invalid_phone (too long)", "gender: invalid_gender"});
  sent_row(db, 4, "default", {"email"}, {"phone: invalid_phone (too long)"}, "rejected");  // not delivered
  const auto d = report(db)[0];
  CHECK(d["dropped_total"] == 9);
  CHECK(d["dropped"] == nlohmann::json::parse(R"([{"field":"phone","reason":"invalid_phone","count":3},
      {"field":"gender","reason":"invalid_gender","count":2},{"field":"currency","reason":"invalid_currency","count":1},
      {"field":"date_of_birth","reason":"invalid_date","count":1},{"field":"extra.meta","reason":"wrong_type","count":1}])"));
}

TEST_CASE("conversion report: provider requests of the last 7 days by status, with the latest problem") {
  outbox::test::scratch_database db;
  sent_row(db, 1, "default", {"email"}, {});
  request_row(db, "default", "r-1", 400, "SUCCESS", "3 hours", "400 ingested");
  request_row(db, "default", "r-2", 100, "SUCCESS", "2 hours", "100 ingested");
  request_row(db, "default", "r-3", 10, "FAILURE", "5 hours", "errors: 10 PROCESSING_ERROR_REASON_EVENT_TOO_OLD");
  request_row(db, "default", "r-4", 7, "PARTIAL_SUCCESS", "1 hour", "errors: 2 PROCESSING_ERROR_REASON_INVALID_GCLID");
  request_row(db, "default", "r-5", 5, "PENDING", "10 minutes");
  request_row(db, "default", "r-old", 900, "FAILURE", "8 days", "too old to count");
  request_row(db, "other", "r-6", 3, "PROCESSING", "1 hour");  // a destination with nothing delivered today
  const auto r = report(db);
  REQUIRE(r.size() == 2);
  const auto& d = find(r, "default");
  const auto& by_status = d["provider_requests"]["by_status"];
  CHECK(by_status["SUCCESS"] == nlohmann::json({{"requests", 2}, {"rows", 500}}));
  CHECK(by_status["FAILURE"] == nlohmann::json({{"requests", 1}, {"rows", 10}}));
  CHECK(by_status["PARTIAL_SUCCESS"]["rows"] == 7);
  CHECK(by_status["PENDING"]["rows"] == 5);
  CHECK(by_status["PROCESSING"]["rows"] == 0);
  CHECK(by_status["UNKNOWN"]["rows"] == 0);
  const auto& problem = d["provider_requests"]["last_problem"];
  CHECK(problem["request_id"] == "r-4");  // checked most recently
  CHECK(problem["status"] == "PARTIAL_SUCCESS");
  CHECK(problem["detail"] == "errors: 2 PROCESSING_ERROR_REASON_INVALID_GCLID");
  CHECK(problem["row_count"] == 7);
  const auto& other = find(r, "other");
  CHECK(other["delivered"] == 0);
  CHECK(other["provider_requests"]["by_status"]["PROCESSING"]["rows"] == 3);
  CHECK(other.at("provider_requests").at("last_problem").is_null());
}

}  // namespace conversion_report_store_pgtest
