// `dispatcher sweep`, on-call's reset for rows stuck in `sending`: the dry run
// changes nothing, the filters select, a real run resets exactly the expired
// leases (dead when out of attempts), logs each, and never touches a live lease.
#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace sweep_e2e {

using outbox::environment;
using outbox::test::cli_result;
using outbox::test::e2e_fixture;

namespace {

using id_set = std::set<long long>;

// Puts a row in `sending` under `owner`, its lease expiring `offset_seconds`
// from now (negative: expired that long ago).
void lease_row(const e2e_fixture& fx, long long id, const std::string& owner, int offset_seconds, int attempts) {
  fx.db.query(
      "UPDATE event_delivery SET state = 'sending', lease_owner = $2, lease_token = gen_random_uuid(), "
      "lease_expires_at = now() + $3::int * interval '1 second', attempts = $4, updated_at = now() "
      "WHERE id = $1",
      {std::to_string(id), owner, std::to_string(offset_seconds), std::to_string(attempts)});
}

// Every column that the sweep could change, for every row, as text.
std::string snapshot(const e2e_fixture& fx, const std::string& where = "true") {
  const auto r = fx.db.query(
      "SELECT id, state, attempts, lease_owner, lease_token, lease_expires_at, next_attempt_at, last_error, "
      "updated_at FROM event_delivery WHERE " +
      where + " ORDER BY id");
  std::string out;
  for (int i = 0; i < r.rows(); ++i) {
    for (int c = 0; c < r.columns(); ++c) out += (r.is_null(i, c) ? "NULL" : std::string(r.text(i, c))) + "|";
    out += "\n";
  }
  return out;
}

long long attempt_log_rows(const e2e_fixture& fx) {
  return fx.db.scalar("SELECT count(*) FROM event_delivery_attempt");
}

// Ids from `--json` output; fails the test when it does not parse.
id_set json_ids(const cli_result& r, nlohmann::json* parsed = nullptr) {
  const auto doc = nlohmann::json::parse(r.output, nullptr, false);
  INFO(r.output);
  REQUIRE_FALSE(doc.is_discarded());
  REQUIRE(doc.is_array());
  id_set ids;
  for (const auto& row : doc) ids.insert(row.at("id").get<long long>());
  if (parsed) *parsed = doc;
  return ids;
}

// Ids from the table output: the lines that start with a number.
id_set table_ids(const std::string& output) {
  id_set ids;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    long long id = 0;
    if (words >> id) ids.insert(id);
  }
  return ids;
}

const nlohmann::json& row_of(const nlohmann::json& doc, long long id) {
  for (const auto& row : doc) {
    if (row.at("id").get<long long>() == id) return row;
  }
  static const nlohmann::json none;
  return none;
}

}  // namespace

TEST_CASE("dispatcher sweep: dry run, filters, reset of expired leases only, attempts log, bad arguments") {
  e2e_fixture fx;
  const environment max3{{"OUTBOX_MAX_ATTEMPTS", "3"}};

  const long long old_webhook = fx.enqueue(1);                                  // expired an hour ago
  const long long recent_webhook = fx.enqueue(2);                               // expired 10 s ago
  const long long old_meta = fx.enqueue(3, "Lead", R"({"value": 1})", "meta");  // another provider
  const long long live = fx.enqueue(4);                                         // lease valid for another hour
  const long long exhausted = fx.enqueue(5);                                    // expired 30 min ago, no attempts left
  const long long pending = fx.enqueue(6);
  const long long sent = fx.enqueue(7);
  lease_row(fx, old_webhook, "host-a:11:aaaa", -3600, 1);
  lease_row(fx, recent_webhook, "host-b:12:bbbb", -10, 2);
  lease_row(fx, old_meta, "host-c:13:cccc", -7200, 1);
  lease_row(fx, live, "host-d:14:dddd", 3600, 1);
  lease_row(fx, exhausted, "host-e:15:eeee", -1800, 3);
  fx.db.query("UPDATE event_delivery SET state = 'sent', sent_at = now(), attempts = 1 WHERE id = $1",
              {std::to_string(sent)});
  const std::string initial = snapshot(fx);

  SUBCASE("a dry run lists every expired lease and changes nothing") {
    const auto table = fx.cli({"sweep", "--dry-run"}, max3);
    INFO(table.output);
    CHECK(table.exit_code == 0);
    CHECK(table_ids(table.output) == id_set{old_webhook, recent_webhook, old_meta, exhausted});
    CHECK(table.output.find("would reset 4 row(s)") != std::string::npos);
    CHECK(table.output.find("dry run: nothing changed") != std::string::npos);
    CHECK(table.output.find("host-a:11:aaaa") != std::string::npos);  // the previous owner, for on-call

    nlohmann::json doc;
    const auto json = fx.cli({"sweep", "--dry-run", "--json"}, max3);
    CHECK(json.exit_code == 0);
    CHECK(json_ids(json, &doc) == id_set{old_webhook, recent_webhook, old_meta, exhausted});
    CHECK(row_of(doc, old_webhook).value("new_state", "") == "pending");
    CHECK(row_of(doc, exhausted).value("new_state", "") == "dead");
    CHECK(row_of(doc, old_meta).value("provider", "") == "meta");
    CHECK(row_of(doc, old_webhook).value("previous_owner", "") == "host-a:11:aaaa");
    CHECK(row_of(doc, old_webhook).value("expired_seconds_ago", 0.0) >= 3599.0);
    CHECK(row_of(doc, recent_webhook).value("expired_seconds_ago", 0.0) < 60.0);

    CHECK(snapshot(fx) == initial);
    CHECK(attempt_log_rows(fx) == 0);
  }

  SUBCASE("--provider and --older-than filter, alone and together") {
    const auto meta = fx.cli({"sweep", "--dry-run", "--json", "--provider", "meta"}, max3);
    CHECK(json_ids(meta) == id_set{old_meta});
    const auto older = fx.cli({"sweep", "--dry-run", "--json", "--older-than", "5m"}, max3);
    CHECK(json_ids(older) == id_set{old_webhook, old_meta, exhausted});
    const auto both = fx.cli({"sweep", "--dry-run", "--json", "--provider", "webhook", "--older-than", "45m"}, max3);
    CHECK(json_ids(both) == id_set{old_webhook});
    const auto seconds = fx.cli({"sweep", "--dry-run", "--json", "--older-than", "5400s"}, max3);  // 90 min
    CHECK(json_ids(seconds) == id_set{old_meta});
    const auto none = fx.cli({"sweep", "--dry-run", "--json", "--provider", "tiktok"}, max3);
    CHECK(json_ids(none).empty());
    CHECK(snapshot(fx) == initial);
    CHECK(attempt_log_rows(fx) == 0);
  }

  SUBCASE("a real run resets exactly the expired leases, logs each, and leaves the live lease alone") {
    const std::string untouched_before = snapshot(
        fx, "id IN (" + std::to_string(live) + ", " + std::to_string(pending) + ", " + std::to_string(sent) + ")");
    // Filtered first: only old webhook rows.
    const auto filtered = fx.cli({"sweep", "--provider", "webhook", "--older-than", "5m", "--json"}, max3);
    CHECK(filtered.exit_code == 0);
    CHECK(json_ids(filtered) == id_set{old_webhook, exhausted});
    CHECK(fx.count("state = 'pending' AND lease_token IS NULL AND lease_owner IS NULL AND lease_expires_at IS NULL "
                   "AND attempts = 1 AND next_attempt_at <= now() AND id = " +
                   std::to_string(old_webhook)) == 1);
    CHECK(fx.count("state = 'dead' AND lease_token IS NULL AND attempts = 3 AND last_error LIKE "
                   "'%no attempts are left%' AND id = " +
                   std::to_string(exhausted)) == 1);
    CHECK(fx.count("state = 'sending' AND id IN (" + std::to_string(recent_webhook) + ", " + std::to_string(old_meta) +
                   ")") == 2);

    // Then everything else that expired.
    const auto plain = fx.cli({"sweep"}, max3);
    INFO(plain.output);
    CHECK(plain.exit_code == 0);
    CHECK(table_ids(plain.output) == id_set{recent_webhook, old_meta});
    CHECK(plain.output.find("reset 2 row(s) with an expired lease") != std::string::npos);
    CHECK(fx.count("state = 'pending' AND lease_token IS NULL AND id IN (" + std::to_string(recent_webhook) + ", " +
                   std::to_string(old_meta) + ")") == 2);
    CHECK(fx.count("attempts = 2 AND id = " + std::to_string(recent_webhook)) == 1);

    // The live lease, the pending row and the sent row are exactly as they were.
    CHECK(snapshot(fx, "id IN (" + std::to_string(live) + ", " + std::to_string(pending) + ", " + std::to_string(sent) +
                           ")") == untouched_before);

    // One 'lease_expired' entry per reset row, naming the owner that lost it.
    const auto log = fx.db.query(
        "SELECT delivery_id, outcome, lease_owner, attempt FROM event_delivery_attempt ORDER BY delivery_id");
    REQUIRE(log.rows() == 4);
    const std::vector<std::pair<long long, std::string>> expected{{old_webhook, "host-a:11:aaaa"},
                                                                  {recent_webhook, "host-b:12:bbbb"},
                                                                  {old_meta, "host-c:13:cccc"},
                                                                  {exhausted, "host-e:15:eeee"}};
    for (int i = 0; i < 4; ++i) {
      CHECK(log.int64(i, 0) == expected[static_cast<std::size_t>(i)].first);
      CHECK(log.text(i, 1) == "lease_expired");
      CHECK(log.text(i, 2) == expected[static_cast<std::size_t>(i)].second);
    }

    // Nothing left to do.
    const auto again = fx.cli({"sweep"}, max3);
    CHECK(again.exit_code == 0);
    CHECK(again.output.find("reset 0 row(s)") != std::string::npos);
    CHECK(attempt_log_rows(fx) == 4);
  }

  SUBCASE("a bad --older-than or option is a usage error (exit 2) and changes nothing") {
    for (const auto& args :
         {std::vector<std::string>{"sweep", "--older-than", "banana"},
          std::vector<std::string>{"sweep", "--older-than", "5x"},
          std::vector<std::string>{"sweep", "--older-than", "-5m"}, std::vector<std::string>{"sweep", "--older-than"},
          std::vector<std::string>{"sweep", "--no-such-flag"}}) {
      const auto r = fx.cli(args, max3);
      INFO(args.back() << ": " << r.output);
      CHECK(r.exit_code == 2);
      CHECK_FALSE(r.output.empty());
    }
    const auto banana = fx.cli({"sweep", "--older-than", "banana"}, max3);
    CHECK(banana.output.find("--older-than") != std::string::npos);
    CHECK(banana.output.find("banana") != std::string::npos);
    CHECK(snapshot(fx) == initial);
    CHECK(attempt_log_rows(fx) == 0);
  }
}

}  // namespace sweep_e2e
