// Issue 11 through `dispatcher run` and the protocol fakes: a conversion with
// unusable fields is sent without them, exactly once, the attempts log and
// /metrics say what was dropped, and a SIGKILL mid-request changes none of it
// (the frozen payload gives the same request, under the same dedup id).
#include <doctest/doctest.h>

#include "providers/crypto.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_meta.hpp"
#include "tests/support/fake_tiktok.hpp"
#include "tests/support/metrics_probe.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace conversions_e2e {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::providers::sha256_hex;
using outbox::test::e2e_fixture;
using outbox::test::eventually;

namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Meta and TikTok destinations on the fixture's HTTPS server.
outbox::environment destinations(const e2e_fixture& fx) {
  const std::string url = fx.env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__URL");
  const std::string base = url.substr(0, url.rfind('/'));
  return {{"OUTBOX_DEST__META__DEFAULT__PIXEL_ID", "1234567890"},
          {"OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN", "meta-good-token"},
          {"OUTBOX_DEST__META__DEFAULT__BASE_URL", base},
          {"OUTBOX_DEST__TIKTOK__DEFAULT__ACCESS_TOKEN", "tiktok-good-token"},
          {"OUTBOX_DEST__TIKTOK__DEFAULT__EVENT_SOURCE_ID", "CRMEVENTSET1"},
          {"OUTBOX_DEST__TIKTOK__DEFAULT__BASE_URL", base}};
}

// A CRM lead as it comes: Vietnamese names, a list of emails with a repeat, a
// date of birth that does not exist, a phone that is not one, a bad currency.
std::string messy_lead() {
  return json{{"event_time", unix_now() - 60},
              {"email", {"NGUYEN.Van@Example.vn", "nguyen.van@example.vn", "second@example.vn"}},
              {"phone", "not a phone"},
              {"first_name", "NGUYỄN"},
              {"last_name", "ĐẶNG"},
              {"country", "Viet Nam"},
              {"date_of_birth", "1990-02-30"},
              {"currency", "dong"},
              {"value", 5}}
      .dump();
}

std::string attempt_column(const e2e_fixture& fx, std::int64_t id, const std::string& expression) {
  auto r = fx.db.query("SELECT coalesce(" + expression +
                           ", '') FROM event_delivery_attempt WHERE delivery_id = $1 "
                           "ORDER BY attempt DESC LIMIT 1",
                       {std::to_string(id)});
  return r.rows() == 0 ? std::string{"<no attempt>"} : std::string(r.text(0, 0));
}

}  // namespace

TEST_CASE(
    "conversions: a lead with unusable fields is sent without them, once per provider, and the drops are recorded") {
  e2e_fixture fx;
  const outbox::test::fake_meta meta;
  const outbox::test::fake_tiktok tiktok;
  // Both fakes on the one server, each on its API's paths.
  fx.server.set_fallback([m = meta.make_responder(), t = tiktok.make_responder()](const auto& request) {
    return request.target.starts_with("/open_api/") ? t(request) : m(request);
  });
  const auto port = outbox::test::free_local_port();
  auto extra = destinations(fx);
  extra["OUTBOX_METRICS_ADDRESS"] = "127.0.0.1:" + std::to_string(port);
  auto& d = fx.start_dispatcher(extra);
  const auto to_meta = fx.enqueue(1101, "Lead", messy_lead(), "meta");
  const auto to_tiktok = fx.enqueue(1101, "Lead", messy_lead(), "tiktok");
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == 2; }, 20s));

  const auto meta_key = std::string(
      fx.db.query("SELECT idempotency_key FROM event_delivery WHERE id = $1", {std::to_string(to_meta)}).text(0, 0));
  CHECK(meta.times_accepted(meta_key) == 1);
  const auto e = meta.accepted_events().at(0);
  CHECK(e["user_data"]["em"] == json::array({sha256_hex("nguyen.van@example.vn"), sha256_hex("second@example.vn")}));
  CHECK(e["user_data"]["fn"] == json::array({sha256_hex("nguyễn")}));
  CHECK(e["user_data"]["ln"] == json::array({sha256_hex("đặng")}));
  CHECK(e["user_data"]["country"] == json::array({sha256_hex("vn")}));
  CHECK_FALSE(e["user_data"].contains("ph"));
  CHECK_FALSE(e["user_data"].contains("db"));
  CHECK_FALSE(e["custom_data"].contains("currency"));
  CHECK(attempt_column(fx, to_meta, "array_to_string(dropped_fields, '|')") ==
        "currency: invalid_currency (must be a 3-letter ISO 4217 code, got 'dong')|phone: invalid_phone (not a phone "
        "number)|date_of_birth: invalid_date (impossible date (no such day in that month))");
  CHECK(attempt_column(fx, to_meta, "array_to_string(match_keys, ',')") == "email,address");
  // TikTok never sends a date of birth: nothing to drop there but the phone and the currency.
  CHECK(attempt_column(fx, to_tiktok, "array_to_string(dropped_fields, '|')") ==
        "currency: invalid_currency (must be a 3-letter ISO 4217 code, got 'dong')|phone: invalid_phone (not a phone "
        "number)");
  CHECK(tiktok.accepted_events().at(0)["user"]["email"].size() == 2);

  const auto text = outbox::test::scrape_metrics(port);
  CHECK(text.find("outbox_fields_dropped_total{provider=\"meta\",destination=\"default\",field=\"date_of_birth\","
                  "reason=\"invalid_date\"} 1") != std::string::npos);
  CHECK(text.find("outbox_match_key_events_total{provider=\"meta\",destination=\"default\",key=\"email\"} 1") !=
        std::string::npos);
  CHECK(d.logs().find("fields dropped from a conversion") != std::string::npos);
  CHECK(d.logs().find("not a phone\"") == std::string::npos);  // the log names the field, never the value
}

TEST_CASE("conversions: SIGKILL mid-request; the restarted dispatcher resends the same conversion under the same id") {
  e2e_fixture fx;
  const outbox::test::fake_meta meta;
  meta.install(fx.server);
  outbox::test::response_plan hang;
  hang.action = outbox::test::response_plan::kind::hang;
  fx.server.script({hang});  // the first request reaches "Meta" and never gets its answer
  auto extra = destinations(fx);
  // The shortest lease the budget allows: 2 x (1 s connect + 1 s TLS + 2 s request) + 5 s.
  extra["OUTBOX_LEASE_SECONDS"] = "13";
  extra["OUTBOX_CONNECT_TIMEOUT_MS"] = "1000";
  extra["OUTBOX_REQUEST_TIMEOUT_MS"] = "2000";
  extra["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "1";
  auto& first = fx.start_dispatcher(extra, "first");
  const auto id = fx.enqueue(1201, "Lead", messy_lead(), "meta");
  REQUIRE(eventually([&] { return fx.server.request_count() == 1; }, 15s));
  const std::string body_before = fx.server.requests().at(0).body;
  first.kill();

  fx.start_dispatcher(extra, "second");
  REQUIRE(eventually([&] { return fx.count("state = 'sent'") == 1; }, 30s));
  const auto key = std::string(
      fx.db.query("SELECT idempotency_key FROM event_delivery WHERE id = $1", {std::to_string(id)}).text(0, 0));
  CHECK(meta.times_accepted(key) == 1);
  REQUIRE(fx.server.request_count() == 2);
  CHECK(fx.server.requests().at(1).body == body_before);  // frozen payload: the same bytes, the same event_id
  CHECK(attempt_column(fx, id, "array_to_string(dropped_fields, '|')").find("date_of_birth: invalid_date") !=
        std::string::npos);
}

}  // namespace conversions_e2e
