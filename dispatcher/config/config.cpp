// load_config(): the stages in order (config_parts.hpp lists the files).
#include "dispatcher/config/config.hpp"

#include <algorithm>

#include "dispatcher/config/config_parts.hpp"

extern char** environ;  // POSIX

namespace outbox {

std::string_view destination_config::setting(std::string_view key) const {
  const auto it = settings.find(std::string{key});
  return it == settings.end() ? std::string_view{} : std::string_view{it->second};
}

const destination_config* config::find_destination(std::string_view provider, std::string_view name) const {
  const auto it = std::find_if(destinations.begin(), destinations.end(),
                               [&](const destination_config& d) { return d.provider == provider && d.name == name; });
  return it == destinations.end() ? nullptr : &*it;
}

config_error::config_error(std::vector<std::string> problems)
    : std::runtime_error([&] {
        std::string text = "invalid configuration (" + std::to_string(problems.size()) +
                           (problems.size() == 1 ? " problem):" : " problems):");
        for (const auto& p : problems) text += "\n  " + p;
        return text;
      }()),
      problems_(std::move(problems)) {}

environment process_environment() {
  environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text{*entry};
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string{text.substr(0, eq)}, std::string{text.substr(eq + 1)});
  }
  return env;
}

config load_config(const environment& env) {
  using namespace config_detail;
  std::vector<std::string> problems;
  raw_config raw;
  if (const auto file = env.find(config_file_var); file != env.end() && !file->second.empty()) {
    read_file(file->second, raw, problems);
  }
  read_env(env, raw, problems);  // after the file: the environment wins

  config cfg;
  const bool lease_inputs_valid = parse_globals(raw, cfg, problems);
  parse_destinations(raw, cfg, problems);
  if (lease_inputs_valid) check_lease_budget(raw, cfg, problems);
  if (!problems.empty()) throw config_error(std::move(problems));
  return cfg;
}

}  // namespace outbox
