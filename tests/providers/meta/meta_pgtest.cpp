// The engine against a real PostgreSQL and a local HTTPS server speaking Meta's
// Conversions API (tests/support/fake_meta): batch splitting on code 100, events
// too old to send, token errors pausing the destination, throttling, and the
// hold-for-review policy after an expired lease.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "providers/crypto.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/fake_meta.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace meta_pgtest {

using namespace std::chrono_literals;
using nlohmann::json;
using outbox::test::engine_harness;
using outbox::test::fake_meta;
using outbox::test::fake_meta_options;
using outbox::test::response_plan;

namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The test server's "https://localhost:<port>", read from the webhook URL the harness configured.
std::string server_base(const outbox::environment& env) {
  const std::string url = env.at("OUTBOX_DEST__WEBHOOK__DEFAULT__URL");
  return url.substr(0, url.rfind('/'));
}

void add_meta_destination(outbox::environment& env, const std::string& name,
                          const std::map<std::string, std::string>& overrides = {}) {
  const std::string prefix = "OUTBOX_DEST__META__" + name + "__";
  env[prefix + "PIXEL_ID"] = "1234567890";
  env[prefix + "ACCESS_TOKEN"] = "meta-good-token";
  env[prefix + "BASE_URL"] = server_base(env);
  for (const auto& [key, value] : overrides) env[prefix + key] = value;
}

// A Meta destination named `default` on the harness's server, with extra settings.
std::function<void(outbox::environment&)> meta_env(std::map<std::string, std::string> overrides = {}) {
  return
      [overrides = std::move(overrides)](outbox::environment& env) { add_meta_destination(env, "DEFAULT", overrides); };
}

std::string lead_payload(std::int64_t event_time, const std::string& order_id) {
  return json{{"event_time", event_time},   {"email", "Lead." + order_id + "@Example.com"},
              {"phone", "+1 650 555 1212"}, {"value", 10},
              {"currency", "EUR"},          {"order_id", order_id},
              {"lead_id", "1234567890123"}}
      .dump();
}

// A second engine on its own thread, for "restart with a corrected configuration".
class standalone_engine {
 public:
  explicit standalone_engine(outbox::config cfg)
      : cfg_(std::move(cfg)), log_(cfg_.min_log_level, &out_), engine_(io_.get_executor(), cfg_, log_) {
    boost::asio::co_spawn(io_, engine_.async_run(), [this](std::exception_ptr) { io_.stop(); });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~standalone_engine() {
    boost::asio::post(io_, [this] { engine_.request_stop(); });
    thread_.join();
  }
  standalone_engine(const standalone_engine&) = delete;
  standalone_engine& operator=(const standalone_engine&) = delete;

 private:
  outbox::config cfg_;
  std::ostringstream out_;
  outbox::logger log_;
  boost::asio::io_context io_;
  outbox::engine engine_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("meta: a batch with one bad row is split; the good rows are delivered, the bad one is dead") {
  engine_harness h(meta_env({{"APP_SECRET", "meta-app-secret"}, {"TEST_EVENT_CODE", "TEST123"}}));
  fake_meta_options options;
  options.app_secret = "meta-app-secret";
  const fake_meta meta(options);
  meta.install(h.server);
  const auto now = unix_now();
  // Enqueued before the engine starts, so one claim takes all three into one request.
  const auto good1 = h.enqueue(101, "Lead", lead_payload(now - 60, "order-1"), "meta");
  const auto bad = h.enqueue(102, "Lead", lead_payload(now - 60, "poison"), "meta");
  const auto good2 = h.enqueue(103, "Lead", lead_payload(now - 60, "order-3"), "meta");
  h.start();
  CHECK(h.wait_state(good1, "sent"));
  CHECK(h.wait_state(good2, "sent"));
  REQUIRE(h.wait_state(bad, "dead"));

  const auto requests = meta.requests();
  REQUIRE(requests.size() == 4);
  CHECK(requests[0].event_ids.size() == 3);  // the whole batch, refused all-or-nothing
  CHECK(requests[0].error_code == 100);
  for (std::size_t i = 1; i < requests.size(); ++i) CHECK(requests[i].event_ids.size() == 1);
  for (const auto& r : requests) {
    CHECK(r.test_event_code == "TEST123");
    CHECK(r.token_in_url);  // where Meta's reference puts it
  }
  CHECK(h.server.requests().front().target.starts_with("/v27.0/1234567890/events?access_token="));

  CHECK(meta.times_accepted(h.column_of(good1, "idempotency_key")) == 1);
  CHECK(meta.times_accepted(h.column_of(good2, "idempotency_key")) == 1);
  CHECK(meta.times_accepted(h.column_of(bad, "idempotency_key")) == 0);
  CHECK(meta.accepted_events().size() == 2);

  const auto error = h.column_of(bad, "last_error");
  CHECK(error.find("Meta error 100 (subcode 2804019)") != std::string::npos);
  CHECK(error.find("Event at index 0: custom_data.order_id 'poison' was rejected") != std::string::npos);
  CHECK(h.column_of(bad, "last_http_status") == "400");
  // Resending alone does not count as another attempt.
  CHECK(h.attempts_of(good1) == 1);
  CHECK(h.attempts_of(bad) == 1);

  // What Meta received is hashed and shaped per the Conversions API.
  const auto e = meta.accepted_events().front();
  CHECK(e["event_name"] == "Lead");
  CHECK(e["action_source"] == "system_generated");
  CHECK(e["user_data"]["ph"] == json::array({"e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176"}));
  CHECK(e["user_data"]["lead_id"] == 1234567890123LL);
  CHECK(e["custom_data"]["event_source"] == "crm");
  h.stop();
}

TEST_CASE("meta: an event older than 7 days is dead without any request") {
  engine_harness h(meta_env());
  const fake_meta meta;
  meta.install(h.server);
  h.start();
  const auto old = h.enqueue(201, "Lead", lead_payload(unix_now() - 8 * 86400 - 60, "order-old"), "meta");
  REQUIRE(h.wait_state(old, "dead"));
  CHECK(h.column_of(old, "last_error") == "event_time is 8 days old; Meta rejects events older than 7 days");
  CHECK(h.server.request_count() == 0);
  h.stop();
}

TEST_CASE("meta: a row with unusable fields is sent without them; the attempts log says which and why") {
  engine_harness h(meta_env());
  const fake_meta meta;
  meta.install(h.server);
  h.start();
  const json payload{{"event_time", unix_now() - 60},
                     {"currency", "euro"},
                     {"value", 10},
                     {"email", {"Ana@Example.com", "ana@example.com ", "second@example.com"}},
                     {"phone", "call me"},
                     {"date_of_birth", "1990-02-30"},
                     {"first_name", "NGUYỄN"}};
  const auto id = h.enqueue(202, "Lead", payload.dump(), "meta");
  REQUIRE(h.wait_state(id, "sent"));
  const auto e = meta.accepted_events().front();
  CHECK_FALSE(e["custom_data"].contains("currency"));
  CHECK(e["custom_data"]["value"] == 10);
  CHECK(e["user_data"]["em"].size() == 2);  // "Ana@Example.com" and "ana@example.com " are one email
  CHECK_FALSE(e["user_data"].contains("ph"));
  CHECK_FALSE(e["user_data"].contains("db"));
  CHECK(e["user_data"]["fn"] == json::array({outbox::providers::sha256_hex("nguyễn")}));
  auto r = h.db.query(
      "SELECT array_to_string(dropped_fields, '|'), array_to_string(match_keys, ',') "
      "FROM event_delivery_attempt WHERE delivery_id = $1",
      {std::to_string(id)});
  REQUIRE(r.rows() == 1);
  CHECK(std::string(r.text(0, 0)) ==
        "currency: invalid_currency (must be a 3-letter ISO 4217 code, got 'euro')|"
        "phone: invalid_phone (not a phone number)|date_of_birth: invalid_date (impossible date (no such day in that "
        "month))");
  CHECK(std::string(r.text(0, 1)) == "email");
  h.stop();
}

TEST_CASE("meta: a wrong token pauses the destination without burning rows; a corrected config delivers them") {
  engine_harness h(meta_env({{"ACCESS_TOKEN", "meta-wrong-token"}}));
  const fake_meta meta;  // accepts only meta-good-token
  meta.install(h.server);
  const auto now = unix_now();
  const auto first = h.enqueue(301, "Lead", lead_payload(now - 60, "order-301"), "meta");
  const auto second = h.enqueue(302, "Lead", lead_payload(now - 60, "order-302"), "meta");
  h.start();
  REQUIRE(h.wait_for(
      [&] {
        return h.state_of(first) == "pending" && h.state_of(second) == "pending" &&
               h.column_of(first, "last_error") != "" && h.column_of(second, "last_error") != "";
      },
      10s));
  CHECK(h.attempts_of(first) == 0);  // refunded: the rows are not at fault
  CHECK(h.attempts_of(second) == 0);
  CHECK(h.column_of(first, "last_error").find("Meta refused the access token") != std::string::npos);
  CHECK(h.column_of(first, "last_error").find("Meta error 190") != std::string::npos);
  CHECK(h.logs().find("destination paused") != std::string::npos);
  CHECK(meta.requests().size() == 1);  // one request, not one per row
  CHECK(meta.requests().front().error_code == 190);

  // A row enqueued while paused is put back without a request.
  const auto skipped = h.skipped_claims();
  const auto third = h.enqueue(303, "Lead", lead_payload(now - 60, "order-303"), "meta");
  REQUIRE(h.claims_skipped_paused_since(skipped));
  CHECK(meta.requests().size() == 1);
  CHECK(meta.accepted_events().empty());
  h.stop();

  // On-call fixes the token and restarts; the paused rows are released at once
  // (they would otherwise wait out the 60 s pause).
  auto fixed = h.cfg;
  for (auto& d : fixed.destinations) {
    if (d.provider == "meta") d.settings["access_token"] = "meta-good-token";
  }
  h.db.query("UPDATE event_delivery SET next_attempt_at = now() WHERE state = 'pending'");
  {
    standalone_engine restarted(fixed);
    CHECK(h.wait_state(first, "sent"));
    CHECK(h.wait_state(second, "sent"));
    CHECK(h.wait_state(third, "sent"));
  }
  for (const auto id : {first, second, third}) {
    CHECK(meta.times_accepted(h.column_of(id, "idempotency_key")) == 1);
    CHECK(h.attempts_of(id) == 1);
  }
}

TEST_CASE("meta: throttling (code 613) is retried with the same event_id and delivered once") {
  engine_harness h(meta_env());
  const fake_meta meta;
  meta.install(h.server);
  h.server.script({response_plan::reply(
      400, R"({"error":{"message":"Calls to this api have exceeded the rate limit.","type":"OAuthException",)"
           R"("code":613,"is_transient":true,"fbtrace_id":"T1"}})")});
  h.start();
  const auto id = h.enqueue(401, "Lead", lead_payload(unix_now() - 60, "order-401"), "meta");
  REQUIRE(h.wait_state(id, "sent", 20s));
  CHECK(h.attempts_of(id) == 2);
  const auto key = h.column_of(id, "idempotency_key");
  CHECK(meta.times_accepted(key) == 1);
  const auto reqs = h.server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(json::parse(reqs[0].body)["data"][0]["event_id"] == key);
  CHECK(reqs[0].body == reqs[1].body);
  auto log = h.db.query("SELECT outcome, error FROM event_delivery_attempt WHERE delivery_id = $1 ORDER BY id",
                        {std::to_string(id)});
  REQUIRE(log.rows() == 2);
  CHECK(log.text(0, 0) == "retry");
  CHECK(std::string(log.text(0, 1)).find("Meta error 613") != std::string::npos);
  CHECK(log.text(1, 0) == "delivered");
  h.stop();
}

TEST_CASE("meta: with on_expired_lease=hold a row whose lease expired is held, never sent") {
  engine_harness h([](outbox::environment& env) {
    env["OUTBOX_SWEEP_INTERVAL_SECONDS"] = "3600";  // the claim, not the sweeper, takes the expired leases
    add_meta_destination(env, "DEFAULT", {{"ON_EXPIRED_LEASE", "hold"}});
    add_meta_destination(env, "RESENDING");  // on_expired_lease=resend (the default), for contrast
  });
  const fake_meta meta;
  meta.install(h.server);
  const auto now = unix_now();
  const auto held = h.enqueue(501, "Lead", lead_payload(now - 60, "order-501"), "meta", "default");
  const auto resent = h.enqueue(502, "Lead", lead_payload(now - 60, "order-502"), "meta", "resending");
  // A dispatcher crashed mid-request: its rows are `sending` with an expired lease.
  h.db.query(
      "UPDATE event_delivery SET state = 'sending', attempts = 1, lease_owner = 'crashed-dispatcher', "
      "lease_token = gen_random_uuid(), lease_expires_at = now() - interval '1 minute' WHERE id IN ($1, $2)",
      {std::to_string(held), std::to_string(resent)});
  h.start();
  REQUIRE(h.wait_state(held, "held"));
  REQUIRE(h.wait_state(resent, "sent"));
  CHECK(meta.times_accepted(h.column_of(held, "idempotency_key")) == 0);
  CHECK(meta.times_accepted(h.column_of(resent, "idempotency_key")) == 1);
  CHECK(h.column_of(held, "last_error").find("held for review") != std::string::npos);
  CHECK(h.attempts_of(held) == 1);  // the hold itself is not an attempt
  CHECK(h.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE delivery_id = $1 AND outcome = 'held'",
                    {std::to_string(held)}) == 1);
  // Still held a moment later: nothing resends it automatically.
  std::this_thread::sleep_for(1500ms);
  CHECK(h.state_of(held) == "held");
  CHECK(meta.times_accepted(h.column_of(held, "idempotency_key")) == 0);
  h.stop();
}

TEST_CASE("finding 8: a request still running at shutdown on a hold destination is held, never silently pending") {
  engine_harness h([](outbox::environment& env) {
    env["OUTBOX_SHUTDOWN_GRACE_SECONDS"] = "1";
    add_meta_destination(env, "DEFAULT", {{"ON_EXPIRED_LEASE", "hold"}});
  });
  const fake_meta meta;
  meta.install(h.server);
  h.server.script({response_plan::hang()});
  h.start();
  const auto id = h.enqueue(601, "Lead", lead_payload(unix_now() - 60, "order-601"), "meta", "default");
  REQUIRE(h.server.wait_for_requests(1, 10s));
  h.stop();  // the grace period ends with the request still hanging
  CHECK(h.state_of(id) == "held");
  CHECK(h.column_of(id, "last_error").find("stopped while a request was in flight") != std::string::npos);
  CHECK(h.db.scalar("SELECT count(*) FROM event_delivery_attempt WHERE delivery_id = $1 AND outcome = 'held'",
                    {std::to_string(id)}) == 1);
}

}  // namespace meta_pgtest
