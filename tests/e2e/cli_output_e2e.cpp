// The on-call commands print CRM and provider text from the database; terminal
// escape sequences in it must reach the screen as visible text, never as
// commands ("\x1b[2J" would clear the on-call's screen). --json output keeps
// the text, escaped by JSON itself. Also: the conversion facts (dropped fields,
// match keys, the provider's processing results) in inspect and status.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace cli_output_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using outbox::test::response_plan;

namespace {

// No ESC, BEL or other C0 byte except the line breaks of the layout, no DEL and no C1 control.
bool inert(const std::string& output) {
  for (std::size_t i = 0; i < output.size(); ++i) {
    const auto b = static_cast<unsigned char>(output[i]);
    if ((b < 0x20 && b != '\n') || b == 0x7F) return false;
    if (b == 0xC2 && i + 1 < output.size() && static_cast<unsigned char>(output[i + 1]) <= 0x9F) return false;
  }
  return true;
}

}  // namespace

TEST_CASE(
    "status, inspect, requeue, discard, mark-sent, sweep and pause --list escape control characters from the "
    "database") {
  e2e_fixture fx;
  const std::string evil_provider = "evil\x1b[2Jprov";
  const auto dead = fx.enqueue(1, "Lead\x1b]0;pwned\x07", R"({"value": 1, "note": "\u009b2J"})", evil_provider);
  (void)fx.enqueue(2, "Lead", R"({"value": 2})", evil_provider);  // pending: the oldest due row
  fx.db.query("UPDATE event_delivery SET state = 'dead', attempts = 12, last_error = $2 WHERE id = $1",
              {std::to_string(dead),
               "HTTP 400: \x1b[2J\x1b[31mred\xc2\x9b"
               "1m\x7f"});
  fx.db.query(
      "INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) "
      "VALUES ('meta', 'default', $1, 'mallory')",
      {"maintenance\x1b[2J"});
  // A row stuck in sending, its lease expired: what `sweep` lists.
  const auto stuck = fx.enqueue(3, "Lead", R"({"value": 3})", evil_provider);
  fx.db.query(
      "UPDATE event_delivery SET state = 'sending', lease_owner = $2, lease_token = gen_random_uuid(), "
      "lease_expires_at = now() - interval '1 minute' WHERE id = $1",
      {std::to_string(stuck), "host\x1b[2J:1:ab"});

  const std::vector<std::vector<std::string>> commands{
      {"inspect", std::to_string(dead)},
      {"inspect", "--lead", "1"},
      {"status"},
      {"requeue", "--id", std::to_string(dead), "--dry-run"},
      {"discard", "--id", std::to_string(dead), "--reason", "r", "--dry-run"},
      {"mark-sent", "--id", std::to_string(dead), "--reason", "r", "--dry-run"},
      {"sweep", "--dry-run"},
      {"pause", "--list"}};
  for (const auto& args : commands) {
    CAPTURE(args.front());
    const auto r = fx.cli(args);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(inert(r.output));
    CHECK(r.output.find("\\x1b[2J") != std::string::npos);  // shown, visibly
  }
  const auto inspect = fx.cli({"inspect", std::to_string(dead)});
  CHECK(inspect.output.find("last_error  HTTP 400: \\x1b[2J\\x1b[31mred\\u009b1m\\x7f") != std::string::npos);
  CHECK(inspect.output.find("event_name  Lead\\x1b]0;pwned\\x07") != std::string::npos);
  CHECK(inspect.output.find("\\u009b2J") != std::string::npos);  // inside the payload

  // --json is for programs: the exact text, in JSON's own escapes.
  const auto json = fx.cli({"inspect", std::to_string(dead), "--json"});
  const auto doc = nlohmann::json::parse(json.output, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc["row"]["provider"] == evil_provider);
  CHECK(doc["row"]["last_error"] ==
        "HTTP 400: \x1b[2J\x1b[31mred\xc2\x9b"
        "1m\x7f");
}

TEST_CASE("inspect and status show dropped fields, match keys and the provider's processing results") {
  e2e_fixture fx;
  const auto first = fx.enqueue(1, "Lead", R"({"value": 1})", "google_data_manager");
  const auto second = fx.enqueue(2, "Lead", R"({"value": 2})", "google_data_manager");
  fx.db.query("UPDATE event_delivery SET state = 'sent', sent_at = now()");
  fx.db.query(
      "INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, http_status, "
      "dropped_fields, match_keys, provider_request_id) VALUES "
      "($1, 1, now(), 5, 'delivered', 200, ARRAY['date_of_birth: invalid_date (impossible date (no such day "
      "in that month))', 'phone: invalid_phone (too short)'], ARRAY['email', 'phone'], 'req-1'), "
      "($2, 1, now(), 5, 'delivered', 200, NULL, ARRAY['email'], 'req-1')",
      {std::to_string(first), std::to_string(second)});
  // Google's detail is provider text: shown escaped like every other.
  fx.db.query(
      "INSERT INTO provider_request (provider, destination, request_id, row_count, status, detail, checks, "
      "checked_at, next_check_at) VALUES ('google_data_manager', 'default', 'req-1', 2, 'FAILURE', $1, 1, "
      "now(), now())",
      {"errors: 2 PROCESSING_ERROR_REASON_INVALID_GCLID\x1b[2J"});

  const auto inspect = fx.cli({"inspect", std::to_string(first)});
  INFO(inspect.output);
  CHECK(inspect.exit_code == 0);
  CHECK(inert(inspect.output));
  CHECK(inspect.output.find("\n      dropped: date_of_birth: invalid_date (impossible date (no such day in that "
                            "month))\n      dropped: phone: invalid_phone (too short)\n") != std::string::npos);
  CHECK(inspect.output.find("\n      match keys: email, phone\n") != std::string::npos);
  CHECK(inspect.output.find("\n      provider request: req-1 FAILURE (checked ") != std::string::npos);
  CHECK(inspect.output.find(", errors: 2 PROCESSING_ERROR_REASON_INVALID_GCLID\\x1b[2J)\n") != std::string::npos);

  const auto status = fx.cli({"status"});
  INFO(status.output);
  CHECK(status.exit_code == 0);
  CHECK(inert(status.output));
  CHECK(status.output.find("\n  google_data_manager/default: 2 delivered\n    match keys: email 100%, phone 50%, "
                           "external_id 0%, click_id 0%, browser_id 0%, ip_user_agent 0%, address 0%, lead_id 0%, "
                           "date_of_birth 0%\n") != std::string::npos);
  CHECK(status.output.find("\n    dropped fields: 2 in all; date_of_birth:invalid_date 1, phone:invalid_phone 1\n") !=
        std::string::npos);
  CHECK(status.output.find("\n    provider requests, last 7 days (rows): PENDING 0, PROCESSING 0, SUCCESS 0, "
                           "PARTIAL_SUCCESS 0, FAILURE 2, UNKNOWN 0\n      latest FAILURE: request req-1, 2 rows, "
                           "checked ") != std::string::npos);
  CHECK(status.output.find(": errors: 2 PROCESSING_ERROR_REASON_INVALID_GCLID\\x1b[2J\n") != std::string::npos);

  // --json carries the same facts, unescaped.
  const auto status_json = nlohmann::json::parse(fx.cli({"status", "--json"}).output, nullptr, false);
  REQUIRE_FALSE(status_json.is_discarded());
  REQUIRE(status_json["conversions"].size() == 1);
  CHECK(status_json["conversions"][0]["match_keys"][1] == nlohmann::json({{"key", "phone"}, {"attempts", 1}}));
  CHECK(status_json["conversions"][0]["provider_requests"]["last_problem"]["detail"] ==
        "errors: 2 PROCESSING_ERROR_REASON_INVALID_GCLID\x1b[2J");
  const auto inspect_json =
      nlohmann::json::parse(fx.cli({"inspect", std::to_string(first), "--json"}).output, nullptr, false);
  REQUIRE_FALSE(inspect_json.is_discarded());
  CHECK(inspect_json["attempts"][0]["match_keys"] == nlohmann::json::array({"email", "phone"}));
  CHECK(inspect_json["attempts"][0]["provider_request"]["status"] == "FAILURE");
}

// Issue 12, stumble 9: a 401 that paused the destination read `paused http - 0 ms`,
// and the attempt it refunded had the same number as the next one.
TEST_CASE("inspect shows what the API answered when it paused the destination, and marks that attempt not counted") {
  e2e_fixture fx;
  fx.server.script({response_plan::reply(401, R"({"error":"bad token"})").after(150ms)});  // then 2xx
  auto& d = fx.start_dispatcher({{"OUTBOX_SWEEP_INTERVAL_SECONDS", "1"}});  // heartbeats (its pause) every second
  const auto id = fx.enqueue(1201);
  REQUIRE(d.wait_for_log("destination paused after a destination-wide failure", 15s));
  REQUIRE(eventually([&] { return fx.count("attempts = 0 AND last_error <> '' AND id = " + std::to_string(id)) == 1; },
                     10s));
  CHECK(fx.count("last_error LIKE 'destination paused: HTTP 401 from destination%' AND id = " + std::to_string(id)) ==
        1);  // the prefix the runbook's "Rows stay in pending" table shows
  // Retry now, once the heartbeat shows the automatic pause (`resume` says "was not paused" until then).
  REQUIRE(eventually(
      [&] {
        const auto s = nlohmann::json::parse(fx.cli({"status", "--json"}).output, nullptr, false);
        return !s.is_discarded() && s.contains("dispatchers") && !s["dispatchers"].empty() &&
               !s["dispatchers"][0]["automatic_pauses"].empty();
      },
      10s));
  REQUIRE(fx.cli({"resume", "webhook", "default"}).exit_code == 0);
  REQUIRE(eventually([&] { return fx.count("state = 'sent' AND id = " + std::to_string(id)) == 1; }, 15s));

  const auto doc = nlohmann::json::parse(fx.cli({"inspect", std::to_string(id), "--json"}).output, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  REQUIRE(doc["attempts"].size() == 2);
  const auto& paused = doc["attempts"][0];
  CHECK(paused["outcome"] == "paused");
  CHECK(paused["http_status"] == 401);
  CHECK(paused["duration_ms"].get<int>() >= 150);
  CHECK(paused["response_excerpt"] == R"({"error":"bad token"})");

  const auto text = fx.cli({"inspect", std::to_string(id)});
  INFO(text.output);
  CHECK(text.output.find("\n  #1 (not counted)  ") != std::string::npos);
  CHECK(text.output.find("  paused  http 401  " + std::to_string(paused["duration_ms"].get<int>()) + " ms  by ") !=
        std::string::npos);
  CHECK(text.output.find("      error: destination paused: HTTP 401 from destination") != std::string::npos);
  CHECK(text.output.find("\n  #1  ") != std::string::npos);  // the delivery: the first attempt that counted
  CHECK(text.output.find("  delivered  http 200  ") != std::string::npos);
  CHECK(text.output.find("attempts  1\n") != std::string::npos);
}

TEST_CASE("inspect shows the payload as the exact bytes the webhook received and signed, not a re-serialization") {
  e2e_fixture fx;
  fx.start_dispatcher({});
  const auto id = fx.enqueue(1601, "Lead", R"({"zeta": 1, "alpha": {"b": [1, 2.50]}, "note": "a\u0007b"})");
  REQUIRE(eventually([&] { return fx.count("state = 'sent' AND id = " + std::to_string(id)) == 1; }, 15s));
  REQUIRE(fx.server.requests().size() == 1);
  const std::string body = fx.server.requests().at(0).body;
  CHECK(body.find("2.50") != std::string::npos);  // the stored number text, not a double re-printed
  const auto json_out = fx.cli({"inspect", std::to_string(id), "--json"});
  CHECK(nlohmann::json::parse(json_out.output)["row"]["payload_text"] == body);
  const auto text_out = fx.cli({"inspect", std::to_string(id)});
  INFO(text_out.output);
  CHECK(text_out.output.find("payload  " + body + "\n") != std::string::npos);
}

}  // namespace cli_output_e2e
