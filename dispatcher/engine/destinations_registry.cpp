// The registry's entries applied to the destinations (destinations.hpp): the
// whole registry after a read of all of it, or the few entries a notification
// named. An unchanged entry costs a comparison: no provider is built for it.
#include <set>

#include "dispatcher/engine/destinations.hpp"

namespace outbox {
namespace {

bool same_registry_config(const destination_config& a, const destination_config& b) {
  return a.settings == b.settings && a.extra_headers == b.extra_headers && a.concurrency == b.concurrency &&
         a.rate_per_second == b.rate_per_second && a.burst == b.burst && a.paused == b.paused &&
         a.max_4xx_share == b.max_4xx_share;
}

}  // namespace

registry_changes destination_registry::apply_registry(const std::vector<registry_destination>& entries,
                                                      std::chrono::system_clock::time_point now,
                                                      std::chrono::steady_clock::time_point steady_now) {
  registry_changes out;
  std::set<std::string, std::less<>> seen;
  for (const auto& e : entries) {
    seen.insert(key_of(e.provider, e.name));
    apply_entry(e, now, steady_now, out);
  }
  std::vector<std::string> gone;
  for (const auto& [key, config] : from_registry_) {
    if (!seen.contains(key)) gone.push_back(key);
  }
  for (const auto& [key, why] : unusable_) {
    if (!seen.contains(key)) gone.push_back(key);
  }
  for (const auto& key : gone) remove_entry(key, out);
  std::erase_if(entry_read_at_, [&](const auto& read) { return read.second <= now; });
  read_at_ = now;
  supported_ = true;
  on_applied();
  return out;
}

registry_changes destination_registry::apply_registry_entries(const std::vector<std::string>& keys,
                                                              const std::vector<registry_destination>& found,
                                                              std::chrono::system_clock::time_point now,
                                                              std::chrono::steady_clock::time_point steady_now) {
  registry_changes out;
  std::set<std::string, std::less<>> present;
  for (const auto& e : found) {
    present.insert(key_of(e.provider, e.name));
    apply_entry(e, now, steady_now, out);
  }
  for (const auto& key : keys) {
    if (!present.contains(key)) remove_entry(key, out);
    entry_read_at_.insert_or_assign(key, now);
  }
  on_applied();
  return out;
}

std::optional<std::chrono::system_clock::time_point> destination_registry::registry_read_at(
    std::string_view key) const {
  const auto alone = entry_read_at_.find(key);
  if (alone == entry_read_at_.end()) return read_at_;
  return read_at_ ? std::max(*read_at_, alone->second) : alone->second;
}

void destination_registry::apply_entry(const registry_destination& e, std::chrono::system_clock::time_point now,
                                       std::chrono::steady_clock::time_point steady_now, registry_changes& out) {
  const auto key = key_of(e.provider, e.name);
  if (from_environment_.contains(key)) {
    out.shadowed.push_back(key);
    return;
  }
  const auto before = from_registry_.find(key);
  // Unchanged: no provider built (a thousand of them cost 5 ms a reload).
  if (e.config && before != from_registry_.end() && same_registry_config(before->second, *e.config)) return;
  std::unique_ptr<providers::provider> impl;
  std::string why = e.unusable;
  if (e.config) {
    try {
      impl = make_provider(*e.config);
    } catch (const std::exception& ex) {
      why = std::string("cannot be built: ") + ex.what();
    }
  }
  if (!impl) {
    if (!unusable_.contains(key) || unusable_.at(key) != why) out.unusable.emplace_back(key, why);
    unusable_.insert_or_assign(key, why);
    if (before != from_registry_.end()) {  // usable no more: its rows wait (reported as unusable, not removed)
      by_key_.at(key)->limiter.abort_waiters();
      by_key_.erase(key);
      from_registry_.erase(before);
    }
    return;
  }
  unusable_.erase(key);
  if (before == from_registry_.end()) {
    by_key_[key] = std::make_shared<destination>(ex_, *e.config, std::move(impl), now, steady_now);
    out.added.push_back(key);
  } else {
    by_key_.at(key)->reconfigure(ex_, *e.config, std::move(impl), now);
    out.changed.push_back(key);
  }
  from_registry_.insert_or_assign(key, *e.config);
}

// Gone from the registry: its rows wait (for the grace period) as if it had never been.
void destination_registry::remove_entry(const std::string& key, registry_changes& out) {
  unusable_.erase(key);
  const auto it = from_registry_.find(key);
  if (it == from_registry_.end()) return;
  by_key_.at(key)->limiter.abort_waiters();  // rows waiting for its slots go back to pending
  by_key_.erase(key);
  from_registry_.erase(it);
  out.removed.push_back(key);
}

}  // namespace outbox
