// What on-call sees when the database is not what a command expects: one line
// naming the database and the fix for a missing or old schema, one line for a
// lock another session holds (instead of raw SQL errors or a minute of
// silence); `migrate --status` tells pending migrations by its exit code; and
// the build's version and configuration for programs (--version, config --json).
#include <doctest/doctest.h>
#include <libpq-fe.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "db/migrations.hpp"
#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace cli_errors_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::scratch_database;

namespace {

// The on-call commands that read or change rows, each against the outbox tables.
const std::vector<std::vector<std::string>> oncall_commands{
    {"status"},
    {"inspect", "1"},
    {"inspect", "--lead", "1"},
    {"requeue", "--all", "--dry-run"},
    {"discard", "--id", "1", "--reason", "test"},
    {"mark-sent", "--id", "1", "--reason", "test"},
    {"prune", "--older-than", "30d"},
    {"pause", "--list"},
    {"sweep", "--dry-run"},
};

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The version project() declares in CMakeLists.txt.
std::string project_version() {
  std::ifstream in(std::string(OUTBOX_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string s = text.str();
  REQUIRE(std::regex_search(s, m, std::regex(R"(project\(outbox_dispatcher VERSION ([0-9.]+))")));
  return m[1];
}

// A session that holds an ACCESS EXCLUSIVE lock on event_delivery (as a
// migration's ALTER TABLE does) until destroyed.
class table_lock {
 public:
  explicit table_lock(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str()), &PQfinish) {
    REQUIRE(PQstatus(conn_.get()) == CONNECTION_OK);
    const std::unique_ptr<PGresult, decltype(&PQclear)> r(
        PQexec(conn_.get(), "BEGIN; LOCK TABLE event_delivery IN ACCESS EXCLUSIVE MODE"), &PQclear);
    REQUIRE(PQresultStatus(r.get()) == PGRES_COMMAND_OK);
  }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

}  // namespace

TEST_CASE("stumble 6: every on-call command against an unmigrated or old database prints one line: run migrate") {
  e2e_fixture fx;
  scratch_database empty(false);
  scratch_database old(false);
  outbox::test::sql_script(old.conninfo(), outbox::db::embedded_migrations().front().sql);  // 0001 only
  for (const auto* target : {&empty, &old}) {
    for (const auto& args : oncall_commands) {
      CAPTURE(target->name());
      CAPTURE(args);
      const auto r = fx.cli(args, {{"DATABASE_URL", target->conninfo()}});
      INFO(r.output);
      CHECK(r.exit_code == 1);
      CHECK(r.output.find("the outbox schema is missing or old in database \"" + target->name() + "\" on ") !=
            std::string::npos);
      CHECK(r.output.find(": run `dispatcher migrate`\n") != std::string::npos);
      CHECK(lines(r.output) == 1);
      CHECK(r.output.find("does not exist") == std::string::npos);  // no raw SQL error
    }
  }
}

TEST_CASE("migrate --status exits 3 while migrations are pending, 0 when up to date, 1 for a newer database") {
  e2e_fixture fx;
  scratch_database empty(false);
  const outbox::environment on_empty{{"DATABASE_URL", empty.conninfo()}};
  const auto pending = fx.cli({"migrate", "--status"}, on_empty);
  INFO(pending.output);
  CHECK(pending.exit_code == 3);
  CHECK(pending.output.find("pending  0001_event_delivery.sql\n") != std::string::npos);
  CHECK(pending.output.find(": run `dispatcher migrate`\n") != std::string::npos);

  REQUIRE(fx.cli({"migrate"}, on_empty).exit_code == 0);
  const auto current = fx.cli({"migrate", "--status"}, on_empty);
  INFO(current.output);
  CHECK(current.exit_code == 0);
  CHECK(current.output.find("applied  0001_event_delivery.sql\n") != std::string::npos);
  CHECK(current.output.find(" 0 pending: up to date\n") != std::string::npos);

  empty.query("INSERT INTO outbox_schema_migrations (name, checksum) VALUES ('9999_future.sql', 'x')");
  const auto newer = fx.cli({"migrate", "--status"}, on_empty);
  INFO(newer.output);
  CHECK(newer.exit_code == 1);
  CHECK(newer.output.find("unknown  9999_future.sql (applied by a newer dispatcher)\n") != std::string::npos);
}

TEST_CASE("stumble 6: a command stuck behind another session's lock gives up after 5 s with one line") {
  e2e_fixture fx;
  const auto id = fx.enqueue(1);
  const table_lock lock(fx.db.conninfo());
  auto& status = fx.spawn({"status"}, {}, "status");
  // It waits for the lock under its own application_name (pg_stat_activity shows who waits).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  long long waiting = 0;
  while (waiting == 0 && std::chrono::steady_clock::now() < deadline) {
    waiting = fx.db.scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'outbox-dispatcher status' "
        "AND wait_event_type = 'Lock'");
    if (waiting == 0) std::this_thread::sleep_for(20ms);  // nothing to await: pg_stat_activity is polled
  }
  CHECK(waiting == 1);
  const auto code = status.wait_exit(15s);
  INFO(status.logs());
  CHECK(code == 1);
  CHECK(status.logs().find("dispatcher status: error: gave up after 5 s waiting for a lock held by another session in "
                           "database \"" +
                           fx.db.name() + "\"") != std::string::npos);
  CHECK(lines(status.logs()) == 1);

  const auto discard = fx.cli({"discard", "--id", std::to_string(id), "--reason", "test"}, {}, 15s);
  INFO(discard.output);
  CHECK(discard.exit_code == 1);
  CHECK(discard.output.find("gave up after 5 s waiting for a lock") != std::string::npos);
}

TEST_CASE("wake-mode behind another session's lock says its own --lock-timeout-ms; --reason=x and --batch 10abc") {
  e2e_fixture fx;
  {
    const table_lock lock(fx.db.conninfo());
    const auto r = fx.cli({"wake-mode", "off", "--lock-timeout-ms=300"}, {}, 15s);  // off: the trigger changes
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("gave up after 300 ms (--lock-timeout-ms)") != std::string::npos);
    CHECK(r.output.find("after 5 s") == std::string::npos);
  }
  const auto id = fx.enqueue(1);
  const auto discard = fx.cli({"discard", "--id=" + std::to_string(id), "--reason=duplicate lead", "--dry-run"});
  INFO(discard.output);
  CHECK(discard.exit_code == 0);
  for (const std::vector<std::string>& by_lead :
       {std::vector<std::string>{"discard", "--reason", "test lead"},
        std::vector<std::string>{"mark-sent", "--reason", "test lead"}, std::vector<std::string>{"requeue"}}) {
    CAPTURE(by_lead.front());
    auto args = by_lead;
    args.insert(args.end(), {"--lead=1", "--dry-run"});
    const auto r = fx.cli(args);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("(dry run: nothing changed)") != std::string::npos);
    args = by_lead;
    args.insert(args.end(), {"--lead", "one"});
    CHECK(fx.cli(args).output.find("--lead: not a lead id") != std::string::npos);
  }
  const auto prune = fx.cli({"prune", "--older-than", "30d", "--batch", "10abc"});
  CHECK(prune.exit_code == 2);
  CHECK(prune.output.find("--batch must be a whole number from 1 to 100000 (got '10abc')") != std::string::npos);
}

TEST_CASE("--version prints the project version from CMakeLists.txt and the commit") {
  const auto r = outbox::test::run_cli({"--version"}, {});
  CHECK(r.exit_code == 0);
  CHECK(r.output.starts_with("dispatcher " + project_version() + " (commit "));
  CHECK(r.output.ends_with(")\n"));
}

TEST_CASE("config --json: the masked settings, the destinations and the version for programs") {
  e2e_fixture fx;
  // OUTBOX_OPERATOR is for the audit trail of on-call commands, not a setting to refuse.
  const auto r = fx.cli({"config", "--json"}, {{"OUTBOX_OPERATOR", "alice"}});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.output, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc["valid"] == true);
  CHECK(doc["version"] == project_version());
  CHECK(doc["settings"]["OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET"] == "***");
  CHECK(doc["settings"]["OUTBOX_MAX_ATTEMPTS"].is_string());
  CHECK(doc["destinations"] == nlohmann::json::parse(R"([{"provider": "webhook", "destination": "default"}])"));

  const auto bad = fx.cli({"config", "--json"}, {{"OUTBOX_MAX_ATTEMPTS", "many"}});
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  const auto problems = nlohmann::json::parse(bad.output, nullptr, false);
  REQUIRE_FALSE(problems.is_discarded());
  CHECK(problems["valid"] == false);
  REQUIRE(problems["problems"].size() == 1);
  CHECK(problems["problems"][0].get<std::string>().find("OUTBOX_MAX_ATTEMPTS") != std::string::npos);
}

}  // namespace cli_errors_e2e
