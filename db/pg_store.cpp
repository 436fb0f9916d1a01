#include "db/pg_store.hpp"

#include <optional>

#include "db/delivery_sql.hpp"
#include "db/wake_signal.hpp"

namespace outbox::db {
namespace {

using namespace std::chrono_literals;

// The claim and the settle reuse cached plans all day (measured with
// bench/statement_stats.sh): their session settings keep a cached plan made
// while the table was tiny from reading the whole table once it has grown
// (db/delivery_sql.hpp says how).
std::vector<const char*> session_settings(const std::string& role, const pg_store_options& o) {
  if (role == "claim" && o.claims_skip_flush_wait) return {sql::claim_session_settings, sql::claim_without_flush_wait};
  if (role == "claim") return {sql::claim_session_settings};
  if (role == "settle") return {sql::settle_session_settings};
  return {};
}

// A call on no open connection: as if the connection had been lost.
error not_connected() { return error(error_kind::connection, "not connected to the database"); }

class pg_session final : public store_session {
 public:
  pg_session(boost::asio::any_io_executor ex, const pg_store_options& options, std::string role)
      : ex_(std::move(ex)), options_(options), role_(std::move(role)) {}

  async_outcome<void> async_connect() override {
    if (connected()) co_return outcome<void>{};
    conn_.reset();
    connect_options o;
    o.application_name = "outbox-dispatcher " + role_;
    o.statement_timeout = options_.statement_timeout;
    auto fresh = co_await async_try(connection::async_connect(ex_, options_.conninfo, options_.connect_timeout, o));
    if (!fresh) co_return fresh.error();
    for (const char* settings : session_settings(role_, options_)) {
      auto set = co_await async_try(fresh->async_query(settings, {}, 5s));
      if (!set) co_return set.error();
    }
    conn_.emplace(std::move(*fresh));
    co_return outcome<void>{};
  }
  bool connected() const override { return conn_ && conn_->is_open(); }
  connection* raw() { return conn_ ? &*conn_ : nullptr; }

  // Runs one statement on the open connection (a lost connection's error when
  // none is open); every answer then raises pg_store_options::after_statement,
  // so a test can wait for the engine's next statement instead of polling.
  template <class Statement>
  auto call(Statement statement) -> decltype(statement(std::declval<connection&>())) {
    if (!connected()) co_return not_connected();
    auto answer = co_await statement(*conn_);
    if (options_.after_statement) options_.after_statement();
    co_return answer;
  }
  void drop() override { conn_.reset(); }

  async_outcome<claim_batch> async_claim_batch(const claim_request& req) override {
    co_return co_await call([&](connection& c) { return db::async_claim_batch(c, req); });
  }
  async_outcome<std::vector<claimed_row>> async_claim(const claim_request& req) override {
    co_return co_await call([&](connection& c) { return db::async_claim(c, req); });
  }
  async_outcome<settle_report> async_settle(std::string owner, std::span<const settlement> batch) override {
    co_return co_await call([&](connection& c) { return db::async_settle(c, owner, batch); });
  }
  async_outcome<std::int64_t> async_renew(std::span<const std::int64_t> ids, std::span<const std::string> tokens,
                                          std::chrono::seconds lease) override {
    co_return co_await call([&](connection& c) { return db::async_renew(c, ids, tokens, lease); });
  }
  async_outcome<std::vector<std::int64_t>> async_release_orphans(std::string owner,
                                                                 std::span<const std::string> held) override {
    co_return co_await call([&](connection& c) { return db::async_release_orphans(c, owner, held); });
  }
  async_outcome<std::vector<swept_row>> async_sweep(const sweep_request& req) override {
    co_return co_await call([&](connection& c) { return db::async_sweep(c, req); });
  }
  async_outcome<std::optional<std::chrono::milliseconds>> async_next_due(std::span<const std::string> skip) override {
    co_return co_await call([&](connection& c) { return db::async_next_due(c, skip); });
  }
  async_outcome<void> async_record_policies(std::string owner, std::span<const destination_policy> policies) override {
    co_return co_await call([&](connection& c) { return db::async_record_policies(c, owner, policies); });
  }

  async_outcome<std::vector<destination_pause>> async_list_pauses() override {
    co_return co_await call([&](connection& c) { return async_try(db::async_list_pauses(c)); });
  }
  async_outcome<std::vector<resume_request>> async_resume_requests(std::string& since) override {
    co_return co_await call([&](connection& c) { return db::async_resume_requests(c, since); });
  }
  async_outcome<queue_gauges> async_queue_gauges(std::vector<std::string> paused) override {
    co_return co_await call([&](connection& c) { return async_try(db::async_queue_gauges(c, paused)); });
  }
  async_outcome<std::vector<destination_lag>> async_delivery_lag() override {
    co_return co_await call([&](connection& c) { return db::async_delivery_lag(c); });
  }
  async_outcome<void> async_beat(const heartbeat& beat) override {
    co_return co_await call([&](connection& c) { return db::async_beat(c, beat); });
  }
  async_outcome<void> async_goodbye(std::string instance) override {
    co_return co_await call([&](connection& c) { return db::async_goodbye(c, instance); });
  }
  async_outcome<nlohmann::json> async_fleet() override {
    co_return co_await call([&](connection& c) { return async_try(db::async_fleet(c)); });
  }

  async_outcome<std::int64_t> async_erase_expired_personal_data(const retention_request& req) override {
    co_return co_await call([&](connection& c) { return db::async_erase_expired_personal_data(c, req); });
  }
  async_outcome<registry_read> async_read_registry() override {
    co_return co_await call([&](connection& c) { return db::async_read_registry(c); });
  }
  async_outcome<std::vector<registry_entry>> async_read_registry_entries(std::vector<std::string> keys) override {
    co_return co_await call([&](connection& c) { return db::async_read_registry_entries(c, keys); });
  }
  async_outcome<std::int64_t> async_make_rows_due(std::string provider, std::string destination) override {
    co_return co_await call([&](connection& c) { return db::async_make_rows_due(c, provider, destination); });
  }
  async_outcome<std::string> async_wake_mode() override {
    co_return co_await call([&](connection& c) { return async_try(db::async_wake_mode(c)); });
  }
  async_outcome<void> async_publish_awake(std::string instance, std::chrono::milliseconds ttl) override {
    co_return co_await call([&](connection& c) { return async_try(db::async_publish_awake(c, instance, ttl)); });
  }
  async_outcome<void> async_publish_asleep(std::string instance) override {
    co_return co_await call([&](connection& c) { return async_try(db::async_publish_asleep(c, instance)); });
  }

  async_outcome<std::vector<due_request>> async_take_due_requests(std::size_t limit,
                                                                  std::chrono::seconds hold_for) override {
    co_return co_await call([&](connection& c) { return db::async_take_due_requests(c, limit, hold_for); });
  }
  async_outcome<std::int64_t> async_record_request_check(const request_check& check) override {
    co_return co_await call([&](connection& c) { return db::async_record_request_check(c, check); });
  }

 private:
  boost::asio::any_io_executor ex_;
  const pg_store_options& options_;
  std::string role_;
  std::optional<connection> conn_;
};

class pg_listener final : public store_listener {
 public:
  pg_listener(boost::asio::any_io_executor ex, listener_options o, listener::handler on_event)
      : impl_(std::move(ex), std::move(o), std::move(on_event)) {}
  boost::asio::awaitable<void> async_run() override { return impl_.async_run(); }
  void stop() override { impl_.stop(); }
  bool is_listening() const override { return impl_.is_listening(); }

 private:
  listener impl_;
};

}  // namespace

pg_store::pg_store(boost::asio::any_io_executor ex, pg_store_options options)
    : ex_(std::move(ex)), options_(std::move(options)) {}

connection* pg_store::connection_of(store_session& session) {
  auto* pg = dynamic_cast<pg_session*>(&session);
  return pg ? pg->raw() : nullptr;
}

std::unique_ptr<store_session> pg_store::open_session(const std::string& role) {
  return std::make_unique<pg_session>(ex_, options_, role);
}

std::unique_ptr<store_listener> pg_store::make_listener(const std::string& channel, std::chrono::seconds heartbeat,
                                                        listener::handler on_event) {
  listener_options o;
  o.conninfo = options_.conninfo;
  o.channel = channel;
  o.heartbeat_interval = heartbeat;
  return std::make_unique<pg_listener>(ex_, std::move(o), std::move(on_event));
}

}  // namespace outbox::db
