// examples/monitoring: the alert rules pass `promtool check rules` and their
// unit tests (`promtool test rules`), the scrape configuration passes `promtool
// check config`, the Grafana dashboard is valid JSON, and every metric the
// rules and the dashboard name is one the dispatcher exports. Also `promtool
// check metrics` on a fully populated rendering (the e2e test checks a real run).
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dispatcher/ops/metrics.hpp"
#include "tests/support/external_tool.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace monitoring_test {

using namespace std::chrono_literals;
using outbox::test::promtool_exe;
using outbox::test::run_tool;

namespace {

const std::string monitoring_dir = std::string(OUTBOX_SOURCE_DIR) + "/examples/monitoring";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Everything the dispatcher can export: one destination of each kind of series.
outbox::metrics populated() {
  outbox::metrics m;
  m.destinations[{"webhook", "default"}] = {"delivering", "", std::nullopt};
  m.destinations[{"google_data_manager", "default"}] = {"circuit open", "circuit open after 5 consecutive failures",
                                                        std::nullopt};
  m.paused.insert({"google_data_manager", "default"});
  m.destinations[{"meta", "default"}] = {"delivering", "", std::nullopt, 3.5e6, "API version v25.0 is retired soon"};
  m.field_warnings[{"google_data_manager", "default", "consent", "INVALID_FORMAT"}] = 1;
  m.deliveries[{"webhook", "default", "delivered"}] = 4;
  m.fields_dropped[{"webhook", "default", "phone", "invalid"}] = 1;
  m.provider_statuses[{"google_data_manager", "default", "SUCCESS"}] = 2;
  m.request_seconds[{"webhook", "default"}].observe(0.02);
  m.rows_by_state["pending"] = 3;
  m.delivery_lag_seconds[{"webhook", "default"}] = 12;
  m.backlog_rows = std::map<outbox::metrics::destination_key, std::int64_t>{{{"webhook", "default"}, 3}};
  m.process = outbox::read_process_stats();
  return m;
}

// Metric names in exposition text: each sample line's name.
std::set<std::string> exported_names(const std::string& text) {
  std::set<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  return names;
}

// Names of the dispatcher's metrics (outbox_*, process_*) used in PromQL `expr`.
std::set<std::string> referenced_names(const std::string& expr) {
  std::set<std::string> names;
  static const std::regex name(R"(\b((outbox|process)_[a-z_]+)\b)");
  for (std::sregex_iterator it(expr.begin(), expr.end(), name), end; it != end; ++it) names.insert((*it)[1]);
  return names;
}

void check_known(const std::set<std::string>& used, const std::set<std::string>& exported, const std::string& where) {
  for (const auto& n : used) {
    CAPTURE(where);
    CAPTURE(n);
    CHECK(exported.contains(n));
  }
}

}  // namespace

TEST_CASE("the alert rules pass promtool check rules and their promtool unit tests") {
  const auto check = run_tool({promtool_exe, "check", "rules", "alerts.yml"}, 30s, monitoring_dir);
  INFO(check.command << "\n" << check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.out.find("SUCCESS") != std::string::npos);
  const auto test = run_tool({promtool_exe, "test", "rules", "alerts_test.yml"}, 60s, monitoring_dir);
  INFO(test.command << "\n" << test.out << test.err);
  CHECK(test.exit_code == 0);
  const auto config = run_tool({promtool_exe, "check", "config", "prometheus.yml"}, 30s, monitoring_dir);
  INFO(config.command << "\n" << config.out << config.err);
  CHECK(config.exit_code == 0);
}

TEST_CASE("the alert rules cover the on-call signals and name only exported metrics") {
  const auto rules = read_text(monitoring_dir + "/alerts.yml");
  for (const char* alert : {"OutboxDeadRows", "OutboxDestinationPaused", "OutboxDeliveryLagHigh", "OutboxDatabaseDown",
                            "OutboxDispatcherDown", "OutboxHeldRows"}) {
    CAPTURE(alert);
    CHECK(rules.find(std::string("alert: ") + alert + "\n") != std::string::npos);
  }
  std::string exprs;
  std::istringstream in(rules);
  for (std::string line; std::getline(in, line);) {
    if (line.find("expr:") != std::string::npos) exprs += line + "\n";
  }
  const auto used = referenced_names(exprs);
  CHECK(used.size() >= 8);
  check_known(used, exported_names(populated().render()), "alerts.yml");
}

TEST_CASE("the Grafana dashboard is valid JSON whose queries name only exported metrics") {
  const auto dashboard = nlohmann::json::parse(read_text(monitoring_dir + "/grafana-dashboard.json"));
  CHECK(dashboard.at("uid") == "outbox-dispatcher");
  const auto exported = exported_names(populated().render());
  std::set<std::string> used;
  std::size_t queries = 0;
  for (const auto& panel : dashboard.at("panels")) {
    CHECK(panel.at("gridPos").is_object());
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel.at("targets")) {
      const auto expr = target.at("expr").get<std::string>();
      ++queries;
      for (const auto& n : referenced_names(expr)) used.insert(n);
    }
  }
  CHECK(queries >= 20);
  check_known(used, exported, "grafana-dashboard.json");
  // The on-call signals are on it.
  for (const char* name : {"outbox_delivery_lag_seconds", "outbox_destination_paused", "outbox_deliveries_total",
                           "outbox_backlog_rows", "process_resident_memory_bytes", "outbox_build_info"}) {
    CAPTURE(name);
    CHECK(used.contains(name));
  }
}

TEST_CASE("promtool check metrics accepts every series the dispatcher can export") {
  const auto text = populated().render();
  const auto r = outbox::test::promtool_check_metrics(text);
  INFO(r.command << "\n" << r.out << r.err << "\n" << text);
  CHECK(r.exit_code == 0);
  CHECK(r.out + r.err == "");  // no lint finding either
}

}  // namespace monitoring_test
