// The maintenance loop's part in the destination registry: read it before the
// first claim, when a notification says it changed (only the entries it names),
// when a row names a destination not known here, and at every sweep (a
// notification is only a hint); apply it; say what changed.
#include "dispatcher/engine/maintenance.hpp"

namespace outbox {

namespace asio = boost::asio;

asio::awaitable<bool> maintenance::async_read_registry(db::store_session& conn) {
  // Before the statement: a destination committed before this instant is in what it reads.
  const auto started = rt_.clock.system_now();
  auto read = co_await conn.async_read_registry();
  if (!read) {
    ++rt_.metrics.db_errors;
    rt_.log.warn("destination registry not read; keeping the destinations as they are",
                 {{"error", read.error().what()}});
    co_return false;
  }
  if (!read->supported) {
    if (destinations_.registry_supported()) {
      rt_.log.info("no destination registry in this database (migration 0010 not applied): environment only");
    }
    destinations_.note_registry_unsupported();
    co_return true;
  }
  const bool first_read = !destinations_.registry_read_at().has_value();
  const auto changes =
      destinations_.apply_registry(registry_.interpret(read->entries), started, rt_.clock.steady_now());
  co_await async_registry_applied(conn, changes, first_read);
  co_return true;
}

// The entries a notification named, read and applied alone: a change of one
// destination costs the same with one destination or a thousand.
asio::awaitable<bool> maintenance::async_read_registry_entries(db::store_session& conn) {
  if (!destinations_.registry_read_at() || !destinations_.registry_supported()) {
    registry_keys_requested_.clear();
    const bool read = co_await async_read_registry(conn);
    registry_reload_requested_ = !read;  // asked for: read again once the database answers
    co_return read;
  }
  std::vector<std::string> keys(registry_keys_requested_.begin(), registry_keys_requested_.end());
  registry_keys_requested_.clear();
  const auto started = rt_.clock.system_now();
  const auto read = co_await conn.async_read_registry_entries(keys);
  if (!read) {
    ++rt_.metrics.db_errors;
    rt_.log.warn("destination registry entries not read; keeping the destinations as they are",
                 {{"error", read.error().what()}});
    registry_keys_requested_.insert(keys.begin(), keys.end());  // read them once the database answers
    co_return false;
  }
  const auto changes = destinations_.apply_registry_entries(keys, registry_.interpret_entries(keys, *read), started,
                                                            rt_.clock.steady_now());
  co_await async_registry_applied(conn, changes, false);
  co_return true;
}

// What follows a change of the destinations: the log, pauses and policies, waiting rows.
asio::awaitable<void> maintenance::async_registry_applied(db::store_session& conn, const registry_changes& changes,
                                                          bool first_read) {
  log_registry_changes(changes);
  if (first_read) log_unusable_at_start();
  // A destination added (or enabled, or repaired) starts with a fresh gate: an on-call pause holds it too.
  if (!changes.added.empty()) apply_on_call_pauses(last_pauses_);
  if (!changes.added.empty() || !changes.changed.empty()) {
    policies_recorded_ = false;  // `dispatcher sweep` and `pause` must know them
  }
  // Rows that waited for a destination now usable here (created, enabled again, repaired) go now.
  // Not at start-up: there every entry is "added", and rows in a backoff must keep it.
  const std::vector<std::string> now_usable = first_read ? std::vector<std::string>{} : changes.added;
  for (const auto& key : now_usable) {
    auto [provider, name] = split_key(key);
    auto due = co_await conn.async_make_rows_due(std::move(provider), std::move(name));
    if (!due) break;  // they still go at their own next look (at most 30 s on)
  }
  // Rows that waited for a destination just added (or for one just enabled) are claimable now.
  if (changes.any()) claimer_.wake();
}

// One line at start-up naming every registry destination this process cannot
// use (a wrong or missing key file shows here first); the others go on.
void maintenance::log_unusable_at_start() {
  const auto& unusable = destinations_.unusable();
  if (unusable.empty()) return;
  std::string names;
  for (const auto& [key, why] : unusable) names.append(names.empty() ? "" : ", ").append(key);
  nlohmann::json fields{{"destinations", names}, {"count", unusable.size()}};
  if (!registry_.key_problem().empty()) fields["sealing_key"] = registry_.key_problem();
  rt_.log.error("registry destinations this dispatcher cannot use; their rows wait, the others are delivered",
                std::move(fields));
}

void maintenance::log_registry_changes(const registry_changes& changes) {
  for (const auto& key : changes.added) rt_.log.info("destination added from the registry", {{"destination", key}});
  for (const auto& key : changes.changed) {
    rt_.log.info("destination changed in the registry; requests under way finish as they started",
                 {{"destination", key}});
  }
  for (const auto& key : changes.removed) {
    rt_.log.info("destination removed from the registry; its rows wait", {{"destination", key}});
  }
  for (const auto& [key, why] : changes.unusable) {
    rt_.log.error("destination in the registry is not usable; its rows wait", {{"destination", key}, {"reason", why}});
  }
  for (const auto& key : changes.shadowed) {
    if (!shadowed_told_.insert(key).second) continue;
    rt_.log.warn("destination is both in the environment and in the registry; the environment's is used",
                 {{"destination", key}});
  }
}

}  // namespace outbox
