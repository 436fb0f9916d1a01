// Reading raw values: the JSON file named by OUTBOX_CONFIG_FILE, then the
// environment, into raw_config (text and origin only; parsing comes later).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "dispatcher/config/config_parts.hpp"

namespace outbox::config_detail {
namespace {

using nlohmann::json;

raw_destination& destination_entry(raw_config& raw, std::string provider, std::string name, const std::string& origin) {
  auto [it, inserted] = raw.destinations.try_emplace({std::move(provider), std::move(name)});
  if (inserted) it->second.origin = origin;
  return it->second;
}

// A current setting, or a retired one (parse_globals() says why it went).
bool is_global_name(std::string_view name) {
  return find_global_setting(name) != nullptr || find_retired_setting(name) != nullptr;
}

// ---- the JSON file ----------------------------------------------------------

std::optional<std::string> scalar_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_unsigned()) return std::to_string(value.get<std::uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number_float()) return value.dump();
  return std::nullopt;
}

std::string file_origin(std::string_view key) { return "config file key \"" + std::string{key} + "\""; }

void read_file_headers(const json& headers, const std::string& key_path, raw_destination& dest,
                       std::vector<std::string>& problems) {
  for (const auto& [header, header_value] : headers.items()) {
    const std::string header_path = key_path + "." + header;
    if (!header_value.is_string()) {
      problems.push_back(file_origin(header_path) + ": must be a string");
      continue;
    }
    dest.headers[ascii_lowercase(header)] = {header_value.get<std::string>(), file_origin(header_path)};
  }
}

// One destination object: "destinations.<provider>.<name>" at `path`.
void read_file_destination(const json& settings, const std::string& path, raw_destination& dest,
                           std::vector<std::string>& problems) {
  for (const auto& [key, value] : settings.items()) {
    const std::string key_path = path + "." + key;
    if (ascii_lowercase(key) == "headers" && value.is_object()) {
      read_file_headers(value, key_path, dest, problems);
      continue;
    }
    if (value.is_null()) continue;
    auto text = scalar_text(value);
    if (!text) {
      problems.push_back(file_origin(key_path) + ": must be a string, number or boolean");
      continue;
    }
    dest.settings[ascii_lowercase(key)] = {std::move(*text), file_origin(key_path)};
  }
}

void read_file_destinations(const json& all, raw_config& raw, std::vector<std::string>& problems) {
  if (!all.is_object()) {
    problems.push_back(file_origin("destinations") + ": must be an object of providers");
    return;
  }
  for (const auto& [provider, named] : all.items()) {
    const std::string provider_path = "destinations." + provider;
    if (!named.is_object()) {
      problems.push_back(file_origin(provider_path) + ": must be an object of destinations");
      continue;
    }
    for (const auto& [name, settings] : named.items()) {
      const std::string path = provider_path + "." + name;
      if (!settings.is_object()) {
        problems.push_back(file_origin(path) + ": must be an object of settings");
        continue;
      }
      read_file_destination(settings, path,
                            destination_entry(raw, ascii_lowercase(provider), ascii_lowercase(name), file_origin(path)),
                            problems);
    }
  }
}

// File keys are the variable names without OUTBOX_, any case; the variable name itself works too.
std::string variable_for_file_key(std::string_view key) {
  const std::string name = upper(key);
  if (name == "DATABASE_URL" || name.starts_with("OUTBOX_")) return name;
  return "OUTBOX_" + name;
}

// The parsed document, or nullopt and a problem.
std::optional<json> parse_file(const std::string& path, std::vector<std::string>& problems) {
  const std::string origin = std::string{config_file_var} + " \"" + path + "\"";
  std::ifstream in{path, std::ios::binary};
  if (!in) {
    problems.push_back(origin + ": cannot be read: " + std::strerror(errno));
    return std::nullopt;
  }
  const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  json doc;
  try {
    doc = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    // Only the position: the parser's own message quotes the text, which may be a secret.
    problems.push_back(origin + ": not valid JSON (error at byte " + std::to_string(e.byte) + ")");
    return std::nullopt;
  }
  if (!doc.is_object()) {
    problems.push_back(origin + ": the top level must be a JSON object");
    return std::nullopt;
  }
  return doc;
}

void read_file_global(const std::string& key, const json& value, raw_config& raw, std::vector<std::string>& problems) {
  const std::string name = variable_for_file_key(key);
  if (!is_global_name(name)) {
    std::vector<std::string> file_keys;
    for (const auto& setting : global_settings()) file_keys.push_back(file_key(setting.name));
    problems.push_back(file_origin(key) + ": unknown setting" + suggestion(ascii_lowercase(key), file_keys));
    return;
  }
  if (value.is_null()) return;
  auto text = scalar_text(value);
  if (!text) {
    problems.push_back(file_origin(key) + ": must be a string, number or boolean");
    return;
  }
  raw.globals[name] = {std::move(*text), file_origin(key)};
}

// ---- the environment ----------------------------------------------------------

void read_env_destination(const std::string& var, const std::string& value, raw_config& raw,
                          std::vector<std::string>& problems) {
  const auto parts = split(std::string_view{var}.substr(dest_prefix.size()), "__");
  const bool any_empty = std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); });
  const bool is_header = parts.size() >= 3 && upper(parts[2]) == "HEADER";
  if (any_empty || parts.size() < 3 || (is_header && parts.size() != 4) || (!is_header && parts.size() != 3)) {
    problems.push_back(var + ": malformed destination setting; expected " + std::string{dest_pattern} + " or " +
                       "OUTBOX_DEST__<PROVIDER>__<DESTINATION>__HEADER__<NAME>");
    return;
  }
  raw_destination& dest = destination_entry(raw, ascii_lowercase(parts[0]), ascii_lowercase(parts[1]), var);
  if (is_header) {
    std::string header = ascii_lowercase(parts[3]);
    std::replace(header.begin(), header.end(), '_', '-');  // variable names cannot contain '-'
    dest.headers[header] = {value, var};
  } else {
    dest.settings[ascii_lowercase(parts[2])] = {value, var};
  }
}

}  // namespace

void read_file(const std::string& path, raw_config& raw, std::vector<std::string>& problems) {
  const auto doc = parse_file(path, problems);
  if (!doc) return;
  for (const auto& [key, value] : doc->items()) {
    if (ascii_lowercase(key) == "destinations") {
      read_file_destinations(value, raw, problems);
    } else {
      read_file_global(key, value, raw, problems);
    }
  }
}

void read_env(const environment& env, raw_config& raw, std::vector<std::string>& problems) {
  for (const auto& [var, value] : env) {
    if (is_global_name(var)) {
      raw.globals[var] = {value, var};
    } else if (var.starts_with(dest_prefix)) {
      read_env_destination(var, value, raw, problems);
    } else if (var.starts_with("OUTBOX_") && var != config_file_var && var != operator_var) {
      std::vector<std::string_view> names;
      for (const auto& setting : global_settings()) names.push_back(setting.name);
      std::string hint = suggestion(var, names);
      if (hint.empty() && var.starts_with("OUTBOX_DEST")) {
        hint = "; destination settings look like " + std::string{dest_pattern};
      }
      // Name only: an unknown variable may well hold a secret.
      problems.push_back(var + ": unknown setting" + hint);
    }
  }
}

}  // namespace outbox::config_detail
