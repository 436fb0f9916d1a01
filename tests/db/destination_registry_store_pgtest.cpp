// The destination registry's statements (sql/0010_destination_registry.sql):
// a change is one read-change-write under a row lock, a notification naming
// each entry changed (sql/0012_registry_change_keys.sql), a read of the entries
// named, and one current sealing key.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "db/destination_registry_store.hpp"
#include "tests/support/notify_probe.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace destination_registry_store_pgtest {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using outbox::db::connection;
using outbox::db::registry_entry;

TEST_CASE("registry: a change reads the entry it replaces, stores it whole, and names the entry it notifies") {
  outbox::test::scratch_database db;
  outbox::test::notify_probe probe(db.conninfo());
  const auto listed = outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<registry_entry>> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    bool saw_none = false;
    const bool stored = co_await outbox::db::async_change_registry_entry(
        c, "meta", "project_17",
        [&](const std::optional<registry_entry>& current) -> std::optional<registry_entry> {
          saw_none = !current;
          registry_entry next;
          next.settings = {{"pixel_id", "17"}};
          next.secrets = {{"access_token", "sealed:v1:0123456789abcdef:AAAA"}};
          return next;
        },
        "alice@host");
    CHECK(stored);
    CHECK(saw_none);
    // A change that stores nothing leaves the entry as it was.
    std::optional<registry_entry> seen;
    CHECK_FALSE(co_await outbox::db::async_change_registry_entry(
        c, "meta", "project_17",
        [&](const std::optional<registry_entry>& current) -> std::optional<registry_entry> {
          seen = current;
          return std::nullopt;
        },
        "bob@host"));
    REQUIRE(seen.has_value());
    CHECK(seen->settings.at("pixel_id") == "17");
    CHECK(seen->updated_by == "alice@host");
    co_return co_await outbox::db::async_list_registry(c);
  });
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].secrets.at("access_token") == "sealed:v1:0123456789abcdef:AAAA");
  // The stored change; the one that stored nothing rolled back.
  CHECK(probe.payloads_since_last() == std::vector<std::string>{"outbox:destinations:meta/project_17"});
  // A hundred entries written in one statement: a notification each (the listener
  // turns more than 64 at once into one read of the whole registry: listener_pgtest).
  db.query(
      "INSERT INTO outbox_destination (provider, name, settings) "
      "SELECT 'webhook', 'brand_' || g, jsonb_build_object('url', 'https://h.example.com/' || g) "
      "FROM generate_series(1, 100) g");
  const auto inserted = probe.payloads_since_last();
  CHECK(inserted.size() == 100);
  CHECK(inserted.front() == "outbox:destinations:webhook/brand_1");
  // A rename names both; a delete names what went; a TRUNCATE asks for everything.
  db.query("UPDATE outbox_destination SET name = 'brand_x' WHERE name = 'brand_7'");
  CHECK(probe.payloads_since_last() ==
        std::vector<std::string>{"outbox:destinations:webhook/brand_7", "outbox:destinations:webhook/brand_x"});
  const auto read =
      outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::outcome<std::vector<registry_entry>>> {
        auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
        std::vector<std::string> keys{"webhook/brand_x", "webhook/brand_7", "meta/project_17", "webhook/none"};
        co_return co_await outbox::db::async_read_registry_entries(c, std::move(keys));
      });
  REQUIRE(read.has_value());
  const auto& named = *read;
  REQUIRE(named.size() == 2);  // brand_7 is gone, none never was
  CHECK(named[0].provider + "/" + named[0].name != named[1].provider + "/" + named[1].name);
  for (const auto& e : named) CHECK((e.name == "brand_x" || (e.name == "project_17" && e.provider == "meta")));
  db.query("DELETE FROM outbox_destination WHERE provider = 'webhook' AND name IN ('brand_1', 'brand_2')");
  CHECK(probe.payloads_since_last().size() == 2);
  db.query("TRUNCATE outbox_destination");
  CHECK(probe.payloads_since_last() == std::vector<std::string>{"outbox:destinations"});
}

TEST_CASE("registry: a published key becomes the only current one; a schema before 0010 reads as unsupported") {
  outbox::test::scratch_database db;
  const auto keys =
      outbox::test::run_async([&](auto ex) -> asio::awaitable<std::vector<outbox::db::sealing_public_key>> {
        auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
        co_await outbox::db::async_publish_sealing_key(c, "00000000000000aa", std::string(32, 'a'));
        co_await outbox::db::async_publish_sealing_key(c, "00000000000000bb", std::string(32, 'b'));
        co_await outbox::db::async_publish_sealing_key(c, "00000000000000bb",
                                                       std::string(32, 'b'));  // again: no change
        co_return co_await outbox::db::async_sealing_keys(c);
      });
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].key_id == "00000000000000bb");
  CHECK(keys[0].is_current);
  CHECK(keys[0].public_key == std::string(32, 'b'));
  CHECK_FALSE(keys[1].is_current);

  db.query("DROP TABLE outbox_destination");
  const auto read = outbox::test::run_async([&](auto ex) -> asio::awaitable<outbox::db::registry_read> {
    auto c = co_await connection::async_connect(ex, db.conninfo(), 5s);
    auto read = co_await outbox::db::async_read_registry(c);
    co_return read.value();
  });
  CHECK_FALSE(read.supported);
  CHECK(read.entries.empty());
}

}  // namespace destination_registry_store_pgtest
