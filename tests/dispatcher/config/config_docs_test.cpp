// The table of global settings (dispatcher/config/config_parts.hpp) against what
// reads it: describe(), the documented defaults in docs/configuration.md, and
// the retired OUTBOX_NOTIFY_CHANNEL.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dispatcher/config/config.hpp"
#include "dispatcher/config/config_parts.hpp"

#ifndef OUTBOX_SOURCE_DIR
#error "OUTBOX_SOURCE_DIR must name the source tree"
#endif

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace config_docs_test {

using namespace outbox;
using config_detail::global_setting;
using config_detail::global_settings;
using config_detail::setting_kind;

namespace {

const environment webhook_env{{"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "https://example.com/hook"}};

std::string trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string{s};
}

// "`x`" -> "x"; anything else unchanged.
std::string unquoted(const std::string& cell) {
  return cell.size() >= 2 && cell.front() == '`' && cell.back() == '`' ? cell.substr(1, cell.size() - 2) : cell;
}

// The rows of the "## Global settings" table by variable: its cells, the name first.
std::map<std::string, std::vector<std::string>> documented_globals() {
  std::ifstream in{OUTBOX_SOURCE_DIR "/docs/configuration.md"};
  REQUIRE(in);
  std::map<std::string, std::vector<std::string>> rows;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("## ")) in_section = line == "## Global settings";
    if (!in_section || !line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::istringstream parts{line.substr(1)};
    for (std::string cell; std::getline(parts, cell, '|');) cells.push_back(trim(cell));
    rows.emplace(unquoted(cells.at(0)), cells);
  }
  return rows;
}

std::string expected_default_cell(const global_setting& s) {
  if (!s.documented_default.empty()) return std::string{s.documented_default};
  return s.fallback.empty() ? "empty" : "`" + std::string{s.fallback} + "`";
}

// NAME=value lines of describe() as a map.
std::map<std::string, std::string> described(const config& cfg) {
  std::map<std::string, std::string> out;
  std::istringstream lines{describe(cfg)};
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (!line.starts_with("#") && eq != std::string::npos) out.emplace(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

}  // namespace

TEST_CASE("config docs: every setting of the table is documented with its file key, default and range") {
  const auto rows = documented_globals();
  REQUIRE(rows.size() > 10);  // the section was found
  for (const auto& s : global_settings()) {
    CAPTURE(s.name);
    const auto row = rows.find(std::string{s.name});
    if (row == rows.end()) {
      FAIL_CHECK("docs/configuration.md, ## Global settings, has no row for " << s.name << " (" << s.meaning << ")");
      continue;
    }
    const auto& cells = row->second;
    REQUIRE(cells.size() >= 5);
    CHECK(cells[1] == "`" + config_detail::file_key(s.name) + "`");
    CHECK(cells[2] == expected_default_cell(s));
    if (s.kind == setting_kind::whole_number) {
      CHECK(cells[3].starts_with(std::to_string(s.min) + "-" + std::to_string(s.max)));
    }
  }
}

TEST_CASE("config docs: the global settings section documents no setting the table lacks") {
  for (const auto& [name, cells] : documented_globals()) {
    if (name == "OUTBOX_CONFIG_FILE") continue;  // names the file, not a setting in it
    CAPTURE(name);
    CHECK(config_detail::find_global_setting(name) != nullptr);
  }
}

TEST_CASE("config table: defaults agree with config{}, parse in range, and describe() shows every setting in order") {
  const auto from_defaults = described(config{});
  const auto from_load = described(load_config(webhook_env));
  std::vector<std::string> described_names;
  std::istringstream lines{describe(load_config(webhook_env))};
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("#") || line.starts_with("OUTBOX_DEST__")) continue;
    described_names.push_back(line.substr(0, line.find('=')));
  }
  std::vector<std::string> table_names;
  for (const auto& s : global_settings()) {
    CAPTURE(s.name);
    table_names.emplace_back(s.name);
    CHECK(from_defaults.at(std::string{s.name}) == s.fallback);
    CHECK(from_load.at(std::string{s.name}) == s.fallback);
    CHECK_FALSE(s.meaning.empty());
    if (s.kind == setting_kind::whole_number) {
      CHECK(s.min < s.max);
      CHECK((s.apply != nullptr && s.read == nullptr));
      const auto fallback = std::stoll(std::string{s.fallback});
      CHECK((fallback >= s.min && fallback <= s.max));
    } else {
      CHECK((s.read != nullptr && s.apply == nullptr));
    }
  }
  CHECK(described_names == table_names);
}

TEST_CASE("config: OUTBOX_NOTIFY_CHANNEL is refused, the channel being fixed") {
  try {
    (void)load_config({{"OUTBOX_NOTIFY_CHANNEL", "my_channel"}});
    FAIL("expected a config_error");
  } catch (const config_error& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0] ==
          "OUTBOX_NOTIFY_CHANNEL: no longer supported: the channel is fixed (outbox_event_delivery); the trigger in "
          "sql/ and the dispatcher's own signals always notify it, so another channel heard nothing; remove the "
          "setting (got \"my_channel\")");
  }
  const config c = load_config(webhook_env);
  CHECK(c.notify_channel == "outbox_event_delivery");
  CHECK(describe(c).find("NOTIFY_CHANNEL") == std::string::npos);
}

TEST_CASE("config: a config file's notify_channel is refused the same way") {
  const std::string path = std::filesystem::temp_directory_path() / "outbox_config_docs_test_notify.json";
  std::ofstream{path} << R"({"notify_channel": "other"})";
  try {
    (void)load_config({{"OUTBOX_CONFIG_FILE", path}});
    FAIL("expected a config_error");
  } catch (const config_error& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(
        e.problems()[0].starts_with("config file key \"notify_channel\": no longer supported: the channel is fixed "
                                    "(outbox_event_delivery)"));
  }
  std::filesystem::remove(path);
}

TEST_CASE("config: OUTBOX_NOTIFY_CHANNEL set to the fixed channel still starts, with a warning to remove it") {
  // Old `dispatcher config` output printed this line; an env file made from it must not stop a restart.
  const config c = load_config(
      {{"OUTBOX_NOTIFY_CHANNEL", "outbox_event_delivery"}, {"OUTBOX_DEST__WEBHOOK__DEFAULT__URL", "https://e.com/h"}});
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].starts_with("OUTBOX_NOTIFY_CHANNEL is ignored: no longer supported"));
}

}  // namespace config_docs_test
