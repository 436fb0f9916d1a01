// On-call decisions from the command line: durations with units everywhere,
// relative --since and --limit for requeue, discard and mark-sent (a reason,
// a dry run, the operator in the audit trail), inspect by lead or key, and
// retention for dead and archived rows.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace cli_decisions_e2e {

using outbox::test::e2e_fixture;

namespace {

std::string text(const e2e_fixture& fx, const std::string& sql, outbox::db::params args = {}) {
  const auto r = fx.db.query(sql, std::move(args));
  return r.rows() == 0 || r.is_null(0, 0) ? "" : std::string(r.text(0, 0));
}

void make_dead(const e2e_fixture& fx, std::int64_t id, const std::string& age = "0 seconds") {
  fx.db.query(
      "UPDATE event_delivery SET state = 'dead', attempts = 12, last_error = 'HTTP 400: bad', "
      "updated_at = now() - $2::interval WHERE id = $1",
      {std::to_string(id), age});
}

}  // namespace

TEST_CASE("stumble 4: durations need a unit everywhere and prune refuses 0") {
  e2e_fixture fx;
  const auto id = fx.enqueue(1);
  fx.db.query("UPDATE event_delivery SET state = 'sent', sent_at = now() - interval '1 minute'");
  for (const auto& args :
       {std::vector<std::string>{"prune", "--older-than", "30"},
        std::vector<std::string>{"sweep", "--older-than", "30"}, std::vector<std::string>{"requeue", "--since", "30"},
        std::vector<std::string>{"prune", "--archive-older-than", "30"}}) {
    CAPTURE(args);
    const auto r = fx.cli(args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("'30' needs a unit: 30s, 30m, 30h, 30d\n") != std::string::npos);
  }
  const auto zero = fx.cli({"prune", "--older-than", "0s"});
  INFO(zero.output);
  CHECK(zero.exit_code == 2);
  CHECK(zero.output.find("'0s' is zero") != std::string::npos);
  CHECK(fx.count("id = " + std::to_string(id)) == 1);  // nothing pruned by either
}

TEST_CASE("stumble 4: requeue --since takes an age by the database's clock, and --limit") {
  e2e_fixture fx;
  std::vector<std::int64_t> ids;
  for (int lead = 1; lead <= 4; ++lead) ids.push_back(fx.enqueue(lead));
  make_dead(fx, ids[0], "3 hours");
  for (int i = 1; i < 4; ++i) make_dead(fx, ids[i]);

  const auto recent = fx.cli({"requeue", "--since", "1h", "--dry-run", "--json"});
  INFO(recent.output);
  REQUIRE(recent.exit_code == 0);
  const auto listed = nlohmann::json::parse(recent.output, nullptr, false);
  REQUIRE(listed.is_array());
  CHECK(listed.size() == 3);  // not the row that died 3 hours ago
  CHECK(listed[0]["id"] == ids[1]);

  const auto one = fx.cli({"requeue", "--since", "1h", "--limit", "1"});
  INFO(one.output);
  CHECK(one.exit_code == 0);
  CHECK(one.output.find("requeued 1 row(s)\n") != std::string::npos);
  CHECK(fx.count("state = 'pending'") == 1);
  CHECK(fx.count("state = 'pending' AND id = " + std::to_string(ids[1])) == 1);

  const auto until = fx.cli({"requeue", "--until", "2h", "--dry-run"});
  INFO(until.output);
  CHECK(until.output.find("would requeue 1 row(s)") != std::string::npos);

  const auto bad = fx.cli({"requeue", "--since", "last tuesday-ish"});
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--since: PostgreSQL cannot read 'last tuesday-ish' as a time") != std::string::npos);
  CHECK(bad.output.find("portal") == std::string::npos);
}

TEST_CASE("discard and mark-sent: a reason is required, --dry-run changes nothing, the operator is recorded") {
  e2e_fixture fx;
  const auto test_lead = fx.enqueue(1);  // pending
  const auto uploaded = fx.enqueue(2);
  make_dead(fx, uploaded);
  const auto in_flight = fx.enqueue(3);
  fx.db.query(
      "UPDATE event_delivery SET state = 'sending', lease_owner = 'x', lease_token = gen_random_uuid(), "
      "lease_expires_at = now() + interval '1 minute' WHERE id = $1",
      {std::to_string(in_flight)});
  const std::string id = std::to_string(test_lead);

  const auto no_reason = fx.cli({"discard", "--id", id});
  CHECK(no_reason.exit_code == 2);
  CHECK(no_reason.output.find("--reason TEXT is required") != std::string::npos);
  const auto dry = fx.cli({"discard", "--id", id, "--reason", "QA test lead", "--dry-run"});
  INFO(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(dry.output.find("would discard 1 row(s) (dry run: nothing changed)\n") != std::string::npos);
  CHECK(fx.count("state = 'pending' AND id = " + id) == 1);

  // Inside docker exec / kubectl exec USER is unset: OUTBOX_OPERATOR names the person.
  const auto discarded =
      fx.cli({"discard", "--id", id, "--reason", "QA test lead"}, {{"OUTBOX_OPERATOR", "alice"}, {"USER", ""}});
  INFO(discarded.output);
  CHECK(discarded.exit_code == 0);
  CHECK(discarded.output.find("discarded 1 row(s)\n") != std::string::npos);
  CHECK(text(fx, "SELECT state || ' ' || last_error FROM event_delivery WHERE id = $1", {id})
            .starts_with("dead discarded by alice@"));
  CHECK(text(fx, "SELECT error FROM event_delivery_attempt WHERE outcome = 'discarded'").ends_with(": QA test lead"));

  const auto marked = fx.cli({"mark-sent", "--operator", "bob@ops-laptop", "--id", std::to_string(uploaded), "--id",
                              std::to_string(in_flight), "--reason", "uploaded by hand (CHG-7)"});
  INFO(marked.output);
  CHECK(marked.exit_code == 0);
  CHECK(marked.output.find("marked sent 1 row(s)\n") != std::string::npos);
  CHECK(marked.output.find("1 --id row(s) did not match") != std::string::npos);  // the sending row
  CHECK(fx.count("state = 'sent' AND sent_at IS NOT NULL AND id = " + std::to_string(uploaded)) == 1);
  CHECK(fx.count("state = 'sending' AND id = " + std::to_string(in_flight)) == 1);
  CHECK(text(fx, "SELECT lease_owner || ' ' || error FROM event_delivery_attempt WHERE outcome = 'marked_sent'") ==
        "bob@ops-laptop marked sent from dead by bob@ops-laptop: uploaded by hand (CHG-7)");

  // --operator on every audited command: requeue and pause too.
  const auto requeued = fx.cli({"requeue", "--id", id, "--operator", "carol"});
  CHECK(requeued.exit_code == 0);
  CHECK(text(fx, "SELECT error FROM event_delivery_attempt WHERE outcome = 'requeued'")
            .starts_with("requeued from dead by carol@"));
  const auto paused = fx.cli({"pause", "webhook", "default", "--reason", "maintenance", "--operator=dave"});
  INFO(paused.output);
  CHECK(text(fx, "SELECT paused_by FROM outbox_destination_pause").starts_with("dave@"));
  CHECK(fx.cli({"status", "--operator", "erin"}).exit_code == 2);  // status records nothing: not an option there
}

TEST_CASE("inspect --lead shows every row of a lead, --key the row with that idempotency key") {
  e2e_fixture fx;
  const auto first = fx.enqueue(7, "Lead");
  const auto second = fx.enqueue(7, "Purchase");
  (void)fx.enqueue(8, "Lead");
  const auto by_lead = fx.cli({"inspect", "--lead", "7"});
  INFO(by_lead.output);
  CHECK(by_lead.exit_code == 0);
  CHECK(by_lead.output.find("== row 1 of 2\n") != std::string::npos);
  CHECK(by_lead.output.find("== row 2 of 2\n") != std::string::npos);
  CHECK(by_lead.output.find("event_name  Purchase\n") != std::string::npos);

  const std::string key =
      text(fx, "SELECT idempotency_key FROM event_delivery WHERE id = $1", {std::to_string(second)});
  const auto by_key = nlohmann::json::parse(fx.cli({"inspect", "--key", key, "--json"}).output, nullptr, false);
  REQUIRE(by_key.is_array());
  REQUIRE(by_key.size() == 1);
  CHECK(by_key[0]["row"]["id"] == second);
  const auto lead_json = nlohmann::json::parse(fx.cli({"inspect", "--lead", "7", "--json"}).output, nullptr, false);
  REQUIRE(lead_json.is_array());
  CHECK(lead_json[0]["row"]["id"] == first);

  const auto none = fx.cli({"inspect", "--lead", "999"});
  CHECK(none.exit_code == 1);
  CHECK(none.output == "dispatcher inspect: no row for lead 999\n");
  CHECK(fx.cli({"inspect", "1", "--lead", "7"}).exit_code == 2);
}

TEST_CASE("prune --state dead keeps dead rows for their own retention; --archive-older-than trims the archive") {
  e2e_fixture fx;
  const auto old_dead = fx.enqueue(1);
  const auto new_dead = fx.enqueue(2);
  make_dead(fx, old_dead, "100 days");
  make_dead(fx, new_dead);
  const auto dry = fx.cli({"prune", "--older-than", "90d", "--state", "dead", "--dry-run"});
  INFO(dry.output);
  CHECK(dry.output == "would prune 1 dead row(s) (dry run: nothing changed)\n");
  const auto run = fx.cli({"prune", "--older-than", "90d", "--state", "dead", "--archive"});
  INFO(run.output);
  CHECK(run.output == "archived and pruned 1 dead row(s)\n");
  CHECK(fx.count("state = 'dead'") == 1);
  fx.db.query("UPDATE event_delivery_archive SET archived_at = now() - interval '2 years'");
  const auto archive = fx.cli({"prune", "--archive-older-than", "1y"});
  INFO(archive.output);
  CHECK(archive.output == "deleted 1 archived row(s)\n");
  CHECK(fx.db.scalar("SELECT count(*) FROM event_delivery_archive") == 0);
  CHECK(fx.cli({"prune", "--older-than", "90d", "--state", "held"}).exit_code == 2);
}

}  // namespace cli_decisions_e2e
