#include "db/destination_registry_store.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "db/params.hpp"
#include "db/transaction_sql.hpp"

namespace outbox::db {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
constexpr std::chrono::seconds registry_timeout{30};

constexpr const char* registry_exists_sql = "SELECT to_regclass('outbox_destination') IS NOT NULL";

constexpr const char* registry_list_sql = R"sql(
SELECT provider, name, settings::text, secrets::text, enabled, created_at::text, updated_at::text, updated_by
FROM outbox_destination ORDER BY provider, name)sql";

constexpr const char* registry_entry_sql = R"sql(
SELECT provider, name, settings::text, secrets::text, enabled, created_at::text, updated_at::text, updated_by
FROM outbox_destination WHERE provider = $1 AND name = $2)sql";

// The entries named by "provider/name" keys (a notification named them).
constexpr const char* registry_entries_sql = R"sql(
SELECT provider, name, settings::text, secrets::text, enabled, created_at::text, updated_at::text, updated_by
FROM outbox_destination WHERE (provider, name) IN (SELECT split_part(k, '/', 1), substr(k, strpos(k, '/') + 1)
                                                     FROM unnest($1::text[]) k))sql";

// FOR UPDATE locks an entry that exists; the advisory lock on the name also
// orders two commands creating the same entry at once (neither change is lost).
constexpr const char* registry_lock_sql = R"sql(
SELECT provider, name, settings::text, secrets::text, enabled, created_at::text, updated_at::text, updated_by
FROM (SELECT pg_advisory_xact_lock(hashtextextended('outbox_destination:' || $1 || '/' || $2, 0))) AS locked,
     outbox_destination WHERE provider = $1 AND name = $2 FOR UPDATE OF outbox_destination)sql";

constexpr const char* registry_put_sql = R"sql(
INSERT INTO outbox_destination (provider, name, settings, secrets, enabled, updated_by)
VALUES ($1, $2, $3::jsonb, $4::jsonb, $5::boolean, $6)
ON CONFLICT (provider, name) DO UPDATE SET
    settings = EXCLUDED.settings, secrets = EXCLUDED.secrets, enabled = EXCLUDED.enabled,
    updated_at = now(), updated_by = EXCLUDED.updated_by)sql";

constexpr const char* make_rows_due_sql = R"sql(
UPDATE event_delivery SET next_attempt_at = now()
WHERE final_state IS NULL AND state = 'pending' AND provider = $1 AND destination = $2 AND next_attempt_at > now())sql";

constexpr const char* registry_remove_sql = "DELETE FROM outbox_destination WHERE provider = $1 AND name = $2";

constexpr const char* registry_unfinished_sql = R"sql(
SELECT count(*) FROM event_delivery WHERE final_state IS NULL AND provider = $1 AND destination = $2)sql";

constexpr const char* sealing_keys_sql = R"sql(
SELECT key_id, encode(public_key, 'hex'), is_current, published_at::text
FROM outbox_sealing_key ORDER BY is_current DESC, published_at DESC)sql";

// The one current key: the others stop being current in the same statement.
constexpr const char* publish_key_sql = R"sql(
WITH old AS (UPDATE outbox_sealing_key SET is_current = false WHERE is_current AND key_id <> $1 RETURNING 1)
INSERT INTO outbox_sealing_key (key_id, public_key, is_current)
SELECT $1, decode($2, 'hex'), true FROM (SELECT count(*) FROM old) AS done
ON CONFLICT (key_id) DO UPDATE SET is_current = true)sql";

std::map<std::string, std::string> registry_string_map(std::string_view text) {
  std::map<std::string, std::string> out;
  const json doc = json::parse(text, nullptr, false);
  if (!doc.is_object()) return out;
  for (const auto& [key, value] : doc.items()) out[key] = value.is_string() ? value.get<std::string>() : value.dump();
  return out;
}

std::string registry_json_text(const std::map<std::string, std::string>& values) {
  return json(values).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<registry_entry> registry_entries_from(const result& r) {
  std::vector<registry_entry> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({std::string(r.text(i, 0)), std::string(r.text(i, 1)), registry_string_map(r.text(i, 2)),
                   registry_string_map(r.text(i, 3)), r.boolean(i, 4), std::string(r.text(i, 5)),
                   std::string(r.text(i, 6)), std::string(r.text(i, 7))});
  }
  return out;
}

std::string hex_text(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string from_hex_text(std::string_view text) {
  std::string out;
  const auto value = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    out.push_back(static_cast<char>(value(text[i]) * 16 + value(text[i + 1])));
  }
  return out;
}

asio::awaitable<std::optional<registry_entry>> registry_one_entry(connection& conn, const char* sql,
                                                                  std::string provider, std::string name) {
  params args{std::move(provider), std::move(name)};
  auto entries = registry_entries_from(co_await conn.async_query(sql, std::move(args), registry_timeout));
  if (entries.empty()) co_return std::nullopt;
  co_return std::move(entries.front());
}

asio::awaitable<void> put_registry_entry(connection& conn, const registry_entry& entry, const std::string& actor) {
  params args{entry.provider,
              entry.name,
              registry_json_text(entry.settings),
              registry_json_text(entry.secrets),
              entry.enabled ? "true" : "false",
              actor};
  (void)co_await conn.async_query(registry_put_sql, std::move(args), registry_timeout);
}

// No co_await inside a braced initializer: GCC 12 then destroys the temporaries twice.
asio::awaitable<registry_read> read_registry(connection& conn) {
  registry_read out;
  const auto exists = co_await conn.async_query(registry_exists_sql, {}, registry_timeout);
  out.supported = exists.boolean(0, 0);
  if (out.supported) out.entries = co_await async_list_registry(conn);
  co_return out;
}

asio::awaitable<std::vector<registry_entry>> read_registry_entries(connection& conn, std::vector<std::string> keys) {
  params args{text_array(keys)};
  co_return registry_entries_from(co_await conn.async_query(registry_entries_sql, std::move(args), registry_timeout));
}

asio::awaitable<std::int64_t> make_rows_due(connection& conn, std::string provider, std::string destination) {
  params args{std::move(provider), std::move(destination)};
  const auto r = co_await conn.async_query(make_rows_due_sql, std::move(args), registry_timeout);
  co_return r.affected();
}

}  // namespace

asio::awaitable<outcome<std::vector<registry_entry>>> async_read_registry_entries(connection& conn,
                                                                                  std::vector<std::string> keys) {
  co_return co_await async_try(read_registry_entries(conn, std::move(keys)));
}

asio::awaitable<outcome<std::int64_t>> async_make_rows_due(connection& conn, std::string provider,
                                                           std::string destination) {
  co_return co_await async_try(make_rows_due(conn, std::move(provider), std::move(destination)));
}

asio::awaitable<outcome<registry_read>> async_read_registry(connection& conn) {
  co_return co_await async_try(read_registry(conn));
}

asio::awaitable<std::vector<registry_entry>> async_list_registry(connection& conn) {
  co_return registry_entries_from(co_await conn.async_query(registry_list_sql, {}, registry_timeout));
}

asio::awaitable<std::optional<registry_entry>> async_registry_entry(connection& conn, const std::string& provider,
                                                                    const std::string& name) {
  co_return co_await registry_one_entry(conn, registry_entry_sql, provider, name);
}

asio::awaitable<bool> async_change_registry_entry(connection& conn, const std::string& provider,
                                                  const std::string& name, registry_change change,
                                                  const std::string& actor) {
  co_await conn.async_exec_script(begin_sql, registry_timeout);
  bool stored = false;
  try {
    const auto current = co_await registry_one_entry(conn, registry_lock_sql, provider, name);
    if (auto next = change(current)) {
      next->provider = provider;
      next->name = name;
      co_await put_registry_entry(conn, *next, actor);
      stored = true;
    }
  } catch (...) {
    conn.close();  // the transaction ends with the connection; the command reports the error
    throw;
  }
  co_await conn.async_exec_script(stored ? commit_sql : rollback_sql, registry_timeout);
  co_return stored;
}

asio::awaitable<bool> async_remove_registry_entry(connection& conn, const std::string& provider,
                                                  const std::string& name) {
  params args{provider, name};
  const auto r = co_await conn.async_query(registry_remove_sql, std::move(args), registry_timeout);
  co_return r.affected() > 0;
}

asio::awaitable<std::int64_t> async_unfinished_rows(connection& conn, const std::string& provider,
                                                    const std::string& name) {
  params args{provider, name};
  const auto r = co_await conn.async_query(registry_unfinished_sql, std::move(args), registry_timeout);
  co_return r.int64(0, 0);
}

asio::awaitable<std::vector<sealing_public_key>> async_sealing_keys(connection& conn) {
  const auto r = co_await conn.async_query(sealing_keys_sql, {}, registry_timeout);
  std::vector<sealing_public_key> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({std::string(r.text(i, 0)), from_hex_text(r.text(i, 1)), r.boolean(i, 2), std::string(r.text(i, 3))});
  }
  co_return out;
}

asio::awaitable<void> async_publish_sealing_key(connection& conn, const std::string& key_id,
                                                const std::string& public_key) {
  params args{key_id, hex_text(public_key)};
  (void)co_await conn.async_query(publish_key_sql, std::move(args), registry_timeout);
}

}  // namespace outbox::db
