// The on-call commands print CRM and provider text from the database; terminal
// escape sequences in it must reach the screen as visible text, never as
// commands ("\x1b[2J" would clear the on-call's screen). --json output keeps
// the text, escaped by JSON itself.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"

using outbox::test::e2e_fixture;

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

TEST_CASE("status, inspect, requeue --dry-run and pause --list escape control characters from the database") {
  e2e_fixture fx;
  const std::string evil_provider = "evil\x1b[2Jprov";
  const auto dead = fx.enqueue(1, "Lead\x1b]0;pwned\x07", R"({"value": 1, "note": "\u009b2J"})", evil_provider);
  (void)fx.enqueue(2, "Lead", R"({"value": 2})", evil_provider);  // pending: the oldest due row
  fx.db.query("UPDATE event_delivery SET state = 'dead', attempts = 12, last_error = $2 WHERE id = $1",
              {std::to_string(dead), "HTTP 400: \x1b[2J\x1b[31mred\xc2\x9b" "1m\x7f"});
  fx.db.query("INSERT INTO outbox_destination_pause (provider, destination, reason, paused_by) "
              "VALUES ('meta', 'default', $1, 'mallory')",
              {"maintenance\x1b[2J"});

  const std::vector<std::vector<std::string>> commands{
      {"inspect", std::to_string(dead)}, {"status"}, {"requeue", "--id", std::to_string(dead), "--dry-run"},
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
  CHECK(doc["row"]["last_error"] == "HTTP 400: \x1b[2J\x1b[31mred\xc2\x9b" "1m\x7f");
}
