// docs/commands.md shows every command's --help word for word
// (scripts/gen_command_reference.py writes the blocks from the binary).
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/dispatcher_process.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace command_reference_e2e {

using outbox::test::run_cli;

std::string read_page() {
  std::ifstream in(std::string(OUTBOX_SOURCE_DIR) + "/docs/commands.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string without_trailing_newlines(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The command names `dispatcher --help` lists under "commands:".
std::set<std::string> listed_commands(const std::string& help) {
  std::set<std::string> names;
  const std::regex line(R"(\n  ([a-z][a-z-]+)  +)");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), line); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1].str());
  return names;
}

TEST_CASE("docs/commands.md holds each command's --help exactly as the binary prints it") {
  const std::string page = read_page();
  REQUIRE_FALSE(page.empty());
  const std::regex block(R"(<!-- help: (\S+) -->\n```text\n([\s\S]*?)\n```\n<!-- /help -->)");
  std::set<std::string> documented;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), block); it != std::sregex_iterator(); ++it) {
    const std::string command = (*it)[1].str();
    documented.insert(command);
    const auto r = command == "--help" ? run_cli({"--help"}, {}) : run_cli({command, "--help"}, {});
    INFO("dispatcher " << command << " --help differs from docs/commands.md: run "
                       << "scripts/gen_command_reference.py build/dispatcher");
    CHECK(r.exit_code == 0);
    CHECK(without_trailing_newlines(r.output) == (*it)[2].str());
  }
  const auto top = run_cli({"--help"}, {});
  const auto commands = listed_commands(top.output);
  CHECK(commands.size() >= 14);
  for (const auto& c : commands) {
    INFO("dispatcher " << c << " has no --help block in docs/commands.md");
    CHECK(documented.contains(c));
  }
  CHECK(documented.contains("--help"));
}

TEST_CASE("dispatcher help <command> prints that command's --help; an unknown one is a usage error") {
  const auto commands = listed_commands(run_cli({"--help"}, {}).output);
  REQUIRE(commands.contains("status"));
  for (const auto& c : commands) {
    CAPTURE(c);
    const auto help = run_cli({"help", c}, {});
    CHECK(help.exit_code == 0);
    CHECK(help.output == run_cli({c, "--help"}, {}).output);
  }
  const auto unknown = run_cli({"help", "stauts"}, {});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("unknown command 'stauts'") != std::string::npos);
}

}  // namespace command_reference_e2e
