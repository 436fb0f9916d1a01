// `dispatcher forget` against a running dispatcher: a lead with rows sent, dead,
// held, pending and one whose request is out loses its personal data everywhere
// a backup would show it; nothing more of it is sent, the request that was out
// is not sent again, and who asked is recorded.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "providers/crypto.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"
#include "tests/support/pg_dump.hpp"

namespace forget_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::response_plan;

namespace {

constexpr const char* mary = R"({"event_time": 1767225600, "value": 1, "email": "mary@example.com",
                                 "phone": "+84 912 345 678", "first_name": "Mary"})";

// Mary's event, marked with `event` in a field the sink can see (a webhook's body is the payload).
std::string marked(const std::string& event) {
  return R"({"event_time": 1767225600, "value": 1, "email": "mary@example.com", "phone": "+84 912 345 678", )"
         R"("first_name": "Mary", "note": ")" +
         event + "\"}";
}

// Requests the sink received for the row marked `event`.
std::size_t requests_for(const e2e_fixture& fx, const std::string& event) {
  std::size_t n = 0;
  for (const auto& r : fx.server.requests()) n += r.body.find("\"" + event + "\"") != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("forget: every row of the lead loses its data, nothing more is sent, the request out is not resent") {
  e2e_fixture fx;
  const outbox::test::scratch_dir dir;
  // "Refused" is answered 400 (dead); "Slow" 200 after 3 s (out while the lead is forgotten); the rest 200.
  fx.server.set_fallback([](const outbox::test::recorded_request& r) {
    if (r.body.find("\"Refused\"") != std::string::npos) return response_plan::reply(400, R"({"error":"bad"})");
    if (r.body.find("\"Slow\"") != std::string::npos) return response_plan::reply(200).after(3000ms);
    return response_plan::reply(200);
  });
  auto& d = fx.start_dispatcher({{"OUTBOX_LEASE_SECONDS", "60"}});
  const auto sent = fx.enqueue(7, "Delivered", marked("Delivered"));
  const auto dead = fx.enqueue(7, "Refused", marked("Refused"));
  REQUIRE(eventually([&] { return fx.count("id = " + std::to_string(sent) + " AND state = 'sent'") == 1; }, 20s));
  REQUIRE(eventually([&] { return fx.count("id = " + std::to_string(dead) + " AND state = 'dead'") == 1; }, 20s));
  // Held for on-call, and pending (due in an hour), each so from its insert on: one transaction each.
  for (const auto& [event, change] :
       {std::pair{"Held", "state = 'held'"}, std::pair{"Later", "next_attempt_at = now() + interval '1 hour'"}}) {
    fx.db.query(std::string("DO $$ BEGIN PERFORM enqueue_event_delivery(7, 'webhook', '") + event + "', '" +
                marked(event) + "'::jsonb); UPDATE event_delivery SET " + change +
                " WHERE lead_project_id = 7 AND event_name = '" + event + "'; END $$");
  }
  const auto pending = fx.db.scalar("SELECT id FROM event_delivery WHERE event_name = 'Later'");
  // And one whose request is out when the lead is forgotten.
  const auto slow = fx.enqueue(7, "Slow", marked("Slow"));
  REQUIRE(eventually([&] { return requests_for(fx, "Slow") == 1; }, 20s));

  const auto dry = fx.cli({"forget", "--lead", "7", "--dry-run", "--json"});
  INFO(dry.output);
  REQUIRE(dry.exit_code == 0);
  const auto dry_counts = nlohmann::json::parse(dry.output.substr(dry.output.find('{')));
  CHECK(dry_counts.at("rows_erased") == 5);
  CHECK(dry_counts.at("rows_closed") == 2);
  CHECK(dry_counts.at("rows_in_flight") == 1);
  CHECK(fx.count("personal_data_erased_at IS NOT NULL") == 0);  // a dry run changes nothing

  const auto done = fx.cli({"forget", "--lead", "7", "--json", "--operator", "dpo@crm"});
  INFO(done.output);
  REQUIRE(done.exit_code == 0);
  const auto counts = nlohmann::json::parse(done.output.substr(done.output.find('{')));
  CHECK(counts.at("rows_erased") == dry_counts.at("rows_erased"));
  CHECK(counts.at("rows_closed") == dry_counts.at("rows_closed"));

  // The slow request's answer comes back and is settled: it restores nothing.
  REQUIRE(eventually([&] { return fx.count("id = " + std::to_string(slow) + " AND state = 'dead'") == 1; }, 5s));
  REQUIRE(eventually(
      [&] {
        return fx.db.scalar(
                   "SELECT count(*) FROM event_delivery_attempt WHERE delivery_id = $1 AND outcome = "
                   "'lease_lost'",
                   {std::to_string(slow)}) == 1;
      },
      20s));
  // The pending row is due now, but closed; a later row of another lead goes, it never does.
  fx.db.query("UPDATE event_delivery SET next_attempt_at = now() WHERE id = $1", {std::to_string(pending)});
  const auto other = fx.enqueue(8, "Lead", R"({"event_time": 1767225600, "value": 1})");
  REQUIRE(eventually([&] { return fx.count("id = " + std::to_string(other) + " AND state = 'sent'") == 1; }, 20s));
  CHECK(requests_for(fx, "Later") == 0);
  CHECK(requests_for(fx, "Slow") == 1);  // not sent again
  CHECK(fx.count("lead_project_id = 7 AND personal_data_erased_why = 'forgotten on request'") == 5);
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_erasure WHERE lead_project_id = 7 AND requested_by LIKE "
                     "'dpo@crm%' AND rows_erased = 5") == 1);

  const auto dump = outbox::test::pg_dump_of(fx.db, dir);
  CHECK(dump.find("event_delivery") != std::string::npos);  // the dump has the rows
  for (const auto& secret : {std::string("mary@example.com"), outbox::providers::sha256_hex("mary@example.com"),
                             std::string("912 345 678"), std::string("84912345678")})
    CHECK_MESSAGE(dump.find(secret) == std::string::npos, secret);
  const auto inspect = fx.cli({"inspect", std::to_string(dead)});
  CHECK(inspect.output.find("personal data  erased ") != std::string::npos);
  CHECK(inspect.output.find("(forgotten on request)") != std::string::npos);
  CHECK(inspect.output.find("mary@example.com") == std::string::npos);
  // Requeue refuses the erased rows and says so.
  const auto requeue = fx.cli({"requeue", "--lead", "7"});
  CHECK(requeue.output.find("refused 4 row(s) whose personal data was erased") != std::string::npos);
  CHECK(fx.count("lead_project_id = 7 AND state = 'pending'") == 0);
  (void)d;
}

TEST_CASE("inspect hides personal data unless asked, and records who asked") {
  e2e_fixture fx;
  fx.start_dispatcher({});
  const auto id = fx.enqueue(9, "Lead", mary);
  REQUIRE(eventually([&] { return fx.count("id = " + std::to_string(id) + " AND state = 'sent'") == 1; }, 20s));
  const auto masked = fx.cli({"inspect", std::to_string(id)});
  INFO(masked.output);
  CHECK(masked.exit_code == 0);
  CHECK(masked.output.find("mary@example.com") == std::string::npos);
  CHECK(masked.output.find(R"("email":"[hidden]")") != std::string::npos);  // the field name stays
  CHECK(masked.output.find(R"("value":1)") != std::string::npos);
  const auto json = nlohmann::json::parse(fx.cli({"inspect", "--lead", "9", "--json"}).output);
  CHECK(json.at(0).at("row").at("payload").at("phone") == "[hidden]");
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_personal_data_access") == 0);
  const auto shown = fx.cli({"inspect", std::to_string(id), "--show-personal-data", "--operator", "alice@ops"});
  CHECK(shown.output.find("mary@example.com") != std::string::npos);
  CHECK(fx.db.scalar("SELECT count(*) FROM outbox_personal_data_access WHERE accessed_by LIKE 'alice@ops%' AND what = "
                     "'inspect row " +
                     std::to_string(id) + "'") == 1);
}

}  // namespace forget_e2e
