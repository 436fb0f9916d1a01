#pragma once
// The destination registry (sql/0010_destination_registry.sql): destinations
// the CRM or on-call create at run time, their sealed secrets, and the
// dispatcher's public sealing keys. The engine reads the whole registry (an
// outcome, never a throw); the commands read, lock, write and remove entries
// (they throw db::error).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/connection.hpp"
#include "db/error.hpp"

namespace outbox::db {

// NOTIFY payload on the wake channel meaning "the registry changed: re-read it".
inline constexpr std::string_view destinations_changed_payload = "outbox:destinations";
// The payload that names the entry that changed (sql/0012_registry_change_keys.sql):
// this prefix, then "provider/name".
inline constexpr std::string_view destination_changed_prefix = "outbox:destinations:";

struct registry_entry {
  std::string provider;
  std::string name;
  std::map<std::string, std::string> settings;  // plain values, keys lower-case
  std::map<std::string, std::string> secrets;   // sealed values ("sealed:v1:...")
  bool enabled = true;
  std::string created_at;  // as PostgreSQL prints a timestamptz; empty for a new entry
  std::string updated_at;
  std::string updated_by;
};

struct sealing_public_key {
  std::string key_id;      // 16 hex digits (dispatcher/secrets/sealed_secret.hpp)
  std::string public_key;  // 32 raw bytes
  bool is_current = false;
  std::string published_at;
};

// Every entry, by provider then name. On a database before migration 0010: an
// empty list and `supported` false.
struct registry_read {
  std::vector<registry_entry> entries;
  bool supported = true;
};
[[nodiscard]] boost::asio::awaitable<outcome<registry_read>> async_read_registry(connection& conn);

// The entries of these "provider/name" keys that exist (a key without one: removed).
[[nodiscard]] boost::asio::awaitable<outcome<std::vector<registry_entry>>> async_read_registry_entries(
    connection& conn, std::vector<std::string> keys);

// A destination just became usable here: its pending rows that wait for a later
// look (the grace period's, a put-back's) are due now. Returns how many.
[[nodiscard]] boost::asio::awaitable<outcome<std::int64_t>> async_make_rows_due(connection& conn, std::string provider,
                                                                                std::string destination);

// --- for the commands (they throw db::error) ---

[[nodiscard]] boost::asio::awaitable<std::vector<registry_entry>> async_list_registry(connection& conn);
[[nodiscard]] boost::asio::awaitable<std::optional<registry_entry>> async_registry_entry(connection& conn,
                                                                                         const std::string& provider,
                                                                                         const std::string& name);
// Read-change-write of one entry in one transaction, the entry locked (FOR
// UPDATE), so two commands changing it at once lose neither change. `change`
// gets the entry (nullopt: there is none yet) and returns what to store (its
// settings and secrets whole), or nullopt to store nothing. Stamped by `actor`.
// Returns whether it stored.
using registry_change = std::function<std::optional<registry_entry>(const std::optional<registry_entry>&)>;
[[nodiscard]] boost::asio::awaitable<bool> async_change_registry_entry(connection& conn, const std::string& provider,
                                                                       const std::string& name, registry_change change,
                                                                       const std::string& actor);
// False when there was no such entry.
[[nodiscard]] boost::asio::awaitable<bool> async_remove_registry_entry(connection& conn, const std::string& provider,
                                                                       const std::string& name);
// Rows not final yet (pending, sending) for the destination.
[[nodiscard]] boost::asio::awaitable<std::int64_t> async_unfinished_rows(connection& conn, const std::string& provider,
                                                                         const std::string& name);

[[nodiscard]] boost::asio::awaitable<std::vector<sealing_public_key>> async_sealing_keys(connection& conn);
// Records the key (if new) and makes it the current one.
[[nodiscard]] boost::asio::awaitable<void> async_publish_sealing_key(connection& conn, const std::string& key_id,
                                                                     const std::string& public_key);

}  // namespace outbox::db
