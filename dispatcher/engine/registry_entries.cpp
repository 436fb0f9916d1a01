#include "dispatcher/engine/registry_entries.hpp"

namespace outbox {
namespace {

registry_destination interpret(const db::registry_entry& e, const registry_keys& ring) {
  const auto& keys = ring.keys;
  const auto& key_problem = ring.problem;
  registry_destination out{e.provider, e.name, std::nullopt, {}};
  if (!e.enabled) {
    out.unusable = "disabled in the registry (`dispatcher destination set " + e.provider + " " + e.name + " --enable`)";
    return out;
  }
  std::map<std::string, std::string> values = e.settings;
  std::vector<std::string> problems;
  for (const auto& [key, sealed] : e.secrets) {
    if (!key_problem.empty()) {
      problems.push_back(key + ": cannot be opened: " + key_problem);
      continue;
    }
    auto opened = keys.open(sealed, secrets::secret_context(e.provider, e.name, key));
    if (!opened.value) {
      problems.push_back(key + ": cannot be opened: " + opened.problem);
      continue;
    }
    values[key] = std::move(*opened.value);
  }
  if (problems.empty()) {
    auto checked = check_destination(e.provider, e.name, values);
    // The parser names values by key, never quoting a secret (config.hpp's provider_kind::validate).
    for (const auto& [key, message] : checked.problems) problems.push_back((key.empty() ? "" : key + ": ") + message);
    out.config = std::move(checked.destination);
  }
  if (!problems.empty()) {
    out.config.reset();
    for (const auto& p : problems) out.unusable += (out.unusable.empty() ? "" : "; ") + p;
  }
  return out;
}

}  // namespace

registry_keys load_registry_keys(const config& cfg) {
  registry_keys out;
  try {
    out.keys = secrets::load_keyring({cfg.sealing_key_file, cfg.sealing_key_file_previous});
  } catch (const std::exception& e) {
    out.problem = e.what();
  }
  if (out.problem.empty() && out.keys.empty()) out.problem = "no sealing key is configured (OUTBOX_SEALING_KEY_FILE)";
  return out;
}

namespace {

bool same_content(const db::registry_entry& a, const db::registry_entry& b) {
  return a.enabled == b.enabled && a.settings == b.settings && a.secrets == b.secrets;
}

}  // namespace

// `entries` interpreted into `into`; an entry unchanged since its remembered
// interpretation in `from` keeps it (its secrets were opened once).
std::vector<registry_destination> registry_interpreter::interpret_reusing(
    const std::vector<db::registry_entry>& entries, remembered_map& from, remembered_map& into) {
  std::vector<registry_destination> out;
  out.reserve(entries.size());
  for (const auto& e : entries) {
    std::string key = key_of(e.provider, e.name);
    const auto before = from.find(key);
    if (before != from.end() && same_content(before->second.entry, e)) {
      out.push_back(before->second.result);
      into.insert_or_assign(std::move(key), std::move(before->second));
      continue;
    }
    auto fresh = interpret_registry({e}, keys_);
    out.push_back(fresh.front());
    into.insert_or_assign(std::move(key), remembered{e, std::move(fresh.front())});
  }
  return out;
}

std::vector<registry_destination> registry_interpreter::interpret(const std::vector<db::registry_entry>& entries) {
  remembered_map now;
  auto out = interpret_reusing(entries, last_, now);
  last_ = std::move(now);  // entries removed from the registry are forgotten
  return out;
}

std::vector<registry_destination> registry_interpreter::interpret_entries(
    const std::vector<std::string>& keys, const std::vector<db::registry_entry>& found) {
  remembered_map kept;
  for (const auto& key : keys) {  // read again: what was found comes back, the rest is forgotten
    if (auto node = last_.extract(key)) kept.insert(std::move(node));
  }
  return interpret_reusing(found, kept, last_);
}

std::vector<registry_destination> interpret_registry(const std::vector<db::registry_entry>& entries,
                                                     const registry_keys& keys) {
  std::vector<registry_destination> out;
  out.reserve(entries.size());
  for (const auto& e : entries) {
    try {
      out.push_back(interpret(e, keys));
    } catch (const std::exception& ex) {  // OpenSSL failing inside open(): this entry only
      out.push_back({e.provider, e.name, std::nullopt, std::string("cannot be read: ") + ex.what()});
    }
  }
  return out;
}

}  // namespace outbox
