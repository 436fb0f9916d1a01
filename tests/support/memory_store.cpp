#include "tests/support/memory_store.hpp"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "providers/crypto.hpp"
#include "tests/support/memory_statements.hpp"

namespace outbox::test {

namespace asio = boost::asio;

// One role's connection: open from a connect until the store breaks its connections.
class memory_session final : public db::store_session {
 public:
  explicit memory_session(memory_store& store) : s_(store) {}

  db::async_outcome<void> async_connect() override {
    co_await hop();
    if (connected()) co_return db::outcome<void>{};
    ++s_.calls_["connect"];
    if (s_.refuse_connects) co_return db::error(db::error_kind::connect, "connection refused (scripted)");
    if (auto f = take("connect")) co_return f->failure;
    epoch_ = s_.connection_epoch_;
    co_return db::outcome<void>{};
  }
  bool connected() const override { return epoch_ && *epoch_ == s_.connection_epoch_; }
  void drop() override { epoch_.reset(); }

  db::async_outcome<db::claim_batch> async_claim_batch(const db::claim_request& req) override {
    co_return co_await run<db::claim_batch>("claim", [&](memory_statements& m) { return m.claim(req); });
  }
  db::async_outcome<std::vector<db::claimed_row>> async_claim(const db::claim_request& req) override {
    co_return co_await run<std::vector<db::claimed_row>>("claim",
                                                         [&](memory_statements& m) { return m.claim(req).rows; });
  }
  db::async_outcome<db::settle_report> async_settle(std::string owner, std::span<const db::settlement> batch) override {
    co_return co_await run<db::settle_report>("settle", [&](memory_statements& m) { return m.settle(owner, batch); });
  }
  db::async_outcome<std::int64_t> async_renew(std::span<const std::int64_t> ids, std::span<const std::string> tokens,
                                              std::chrono::seconds lease) override {
    co_return co_await run<std::int64_t>("renew", [&](memory_statements& m) { return m.renew(ids, tokens, lease); });
  }
  db::async_outcome<std::vector<std::int64_t>> async_release_orphans(std::string owner,
                                                                     std::span<const std::string> held) override {
    co_return co_await run<std::vector<std::int64_t>>(
        "release_orphans", [&](memory_statements& m) { return m.release_orphans(owner, held); });
  }
  db::async_outcome<std::vector<db::swept_row>> async_sweep(const db::sweep_request& req) override {
    co_return co_await run<std::vector<db::swept_row>>("sweep", [&](memory_statements& m) { return m.sweep(req); });
  }
  db::async_outcome<std::optional<std::chrono::milliseconds>> async_next_due(
      std::span<const std::string> skip) override {
    co_return co_await run<std::optional<std::chrono::milliseconds>>(
        "next_due", [&](memory_statements& m) { return m.next_due(skip); });
  }
  db::async_outcome<void> async_record_policies(std::string owner,
                                                std::span<const db::destination_policy> policies) override {
    co_return co_await run_void("record_policies", [&](memory_statements& m) { m.record_policies(owner, policies); });
  }
  db::async_outcome<std::vector<db::destination_pause>> async_list_pauses() override {
    co_return co_await run<std::vector<db::destination_pause>>("list_pauses",
                                                               [&](memory_statements& m) { return m.list_pauses(); });
  }
  db::async_outcome<std::vector<db::resume_request>> async_resume_requests(std::string& since) override {
    co_return co_await run<std::vector<db::resume_request>>(
        "resume_requests", [&](memory_statements& m) { return m.resume_requests(since); });
  }
  db::async_outcome<db::queue_gauges> async_queue_gauges(std::vector<std::string> paused) override {
    co_return co_await run<db::queue_gauges>("queue_gauges",
                                             [&](memory_statements& m) { return m.queue_gauges(paused); });
  }
  db::async_outcome<std::vector<db::destination_lag>> async_delivery_lag() override {
    co_return co_await run<std::vector<db::destination_lag>>("delivery_lag",
                                                             [&](memory_statements& m) { return m.delivery_lag(); });
  }
  db::async_outcome<void> async_beat(const db::heartbeat& beat) override {
    co_return co_await run_void("beat", [&](memory_statements& m) { m.beat(beat); });
  }
  db::async_outcome<void> async_goodbye(std::string instance) override {
    co_return co_await run_void("goodbye", [&](memory_statements& m) { m.goodbye(instance); });
  }
  db::async_outcome<nlohmann::json> async_fleet() override {
    co_return co_await run<nlohmann::json>("fleet", [&](memory_statements& m) { return m.fleet(); });
  }
  db::async_outcome<std::int64_t> async_erase_expired_personal_data(const db::retention_request& req) override {
    co_return co_await run<std::int64_t>("erase_personal_data",
                                         [&](memory_statements& m) { return m.erase_expired_personal_data(req); });
  }
  db::async_outcome<db::registry_read> async_read_registry() override {
    co_return co_await run<db::registry_read>("read_registry", [&](memory_statements&) {
      return db::registry_read{s_.registry, true};
    });
  }
  db::async_outcome<std::vector<db::registry_entry>> async_read_registry_entries(
      std::vector<std::string> keys) override {
    co_return co_await run<std::vector<db::registry_entry>>("read_registry_entries", [&](memory_statements&) {
      std::vector<db::registry_entry> found;
      for (const auto& e : s_.registry) {
        if (std::find(keys.begin(), keys.end(), e.provider + "/" + e.name) != keys.end()) found.push_back(e);
      }
      return found;
    });
  }
  db::async_outcome<std::int64_t> async_make_rows_due(std::string provider, std::string destination) override {
    co_return co_await run<std::int64_t>("make_rows_due", [&](memory_statements&) {
      std::int64_t n = 0;
      const auto now = s_.clock_.system_now();
      for (auto& [id, row] : s_.rows_) {
        if (row.state != "pending" || row.provider != provider || row.destination != destination) continue;
        if (row.next_attempt_at <= now) continue;
        row.next_attempt_at = now;
        ++n;
      }
      return n;
    });
  }
  db::async_outcome<std::string> async_wake_mode() override {
    co_return co_await run<std::string>("wake_mode", [&](memory_statements&) { return s_.wake_mode; });
  }
  db::async_outcome<void> async_publish_awake(std::string instance, std::chrono::milliseconds ttl) override {
    co_return co_await run_void("publish_awake", [&](memory_statements& m) { m.publish_awake(instance, ttl); });
  }
  db::async_outcome<void> async_publish_asleep(std::string instance) override {
    co_return co_await run_void("publish_asleep", [&](memory_statements& m) { m.publish_asleep(instance); });
  }
  db::async_outcome<std::vector<db::due_request>> async_take_due_requests(std::size_t limit,
                                                                          std::chrono::seconds hold_for) override {
    co_return co_await run<std::vector<db::due_request>>(
        "take_due_requests", [&](memory_statements& m) { return m.take_due_requests(limit, hold_for); });
  }
  db::async_outcome<std::int64_t> async_record_request_check(const db::request_check& check) override {
    co_return co_await run<std::int64_t>("record_request_check",
                                         [&](memory_statements& m) { return m.record_request_check(check); });
  }

 private:
  // A statement is a round trip: other coroutines run meanwhile, as they would on PostgreSQL.
  static asio::awaitable<void> hop() { co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable); }

  std::optional<memory_fault> take(const std::string& op) {
    const auto it =
        std::find_if(s_.faults_.begin(), s_.faults_.end(), [&](const memory_fault& f) { return f.op == op; });
    if (it == s_.faults_.end()) return std::nullopt;
    memory_fault f = *it;
    s_.faults_.erase(it);
    return f;
  }

  template <class T, class Work>
  asio::awaitable<db::outcome<T>> run(const std::string& op, Work work) {
    co_await hop();
    ++s_.calls_[op];
    std::optional<db::outcome<T>> answer;
    if (!connected()) {
      answer.emplace(db::error(db::error_kind::connection, "server closed the connection (scripted)"));
    } else if (auto f = take(op)) {
      memory_statements m(s_);
      if (f->applied) (void)work(m);
      if (f->failure.connection_lost()) epoch_.reset();
      answer.emplace(f->failure);
    } else {
      memory_statements m(s_);
      answer.emplace(work(m));
    }
    s_.on_call(op);
    co_return std::move(*answer);
  }

  template <class Work>
  asio::awaitable<db::outcome<void>> run_void(const std::string& op, Work work) {
    auto r = co_await run<bool>(op, [&](memory_statements& m) {
      work(m);
      return true;
    });
    if (!r) co_return r.error();
    co_return db::outcome<void>{};
  }

  memory_store& s_;
  std::optional<std::uint64_t> epoch_;
};

// Notifications as the trigger sends them: one per enqueue that inserted.
class memory_listener final : public db::store_listener {
 public:
  memory_listener(std::vector<db::listener::handler>& handlers, db::listener::handler on_event)
      : handlers_(handlers), on_event_(std::move(on_event)) {}
  asio::awaitable<void> async_run() override {
    asio::steady_timer parked(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    parked_ = &parked;
    handlers_.push_back(on_event_);
    listening_ = true;
    on_event_({db::listener_event::kind::listening, false, {}});
    if (!stopped_) (void)co_await parked.async_wait(asio::as_tuple(asio::use_awaitable));
    listening_ = false;
    parked_ = nullptr;
    handlers_.clear();
  }
  void stop() override {
    stopped_ = true;
    if (parked_) parked_->cancel();
  }
  bool is_listening() const override { return listening_; }

 private:
  std::vector<db::listener::handler>& handlers_;
  db::listener::handler on_event_;
  asio::steady_timer* parked_ = nullptr;
  bool stopped_ = false;
  bool listening_ = false;
};

memory_store::memory_store(engine_clock& clock) : clock_(clock) {}

std::string memory_store::idempotency_key(std::int64_t lead_project_id, const std::string& provider,
                                          const std::string& event_name) {
  const std::string x = providers::sha256_hex("outbox-dispatcher/v1:" + std::to_string(lead_project_id) + ":" +
                                              provider + ":" + event_name);
  const int variant = ((x[16] >= 'a' ? x[16] - 'a' + 10 : x[16] - '0') & 3) | 8;
  return x.substr(0, 8) + "-" + x.substr(8, 4) + "-8" + x.substr(13, 3) + "-" + "0123456789abcdef"[variant] +
         x.substr(17, 3) + "-" + x.substr(20, 12);
}

bool memory_store::insert_notifies() const {
  if (wake_mode == "off") return false;
  return wake_mode != "adaptive" || awake().empty();
}

std::set<std::string> memory_store::awake() const {
  std::set<std::string> out;
  for (const auto& [instance, until] : awake_) {
    if (until > clock_.system_now()) out.insert(instance);
  }
  return out;
}

bool memory_store::enqueue(std::int64_t lead_project_id, const std::string& provider, const std::string& event_name,
                           const std::string& payload, const std::string& destination,
                           const std::string& idempotency_key) {
  for (const auto& [id, r] : rows_) {
    if (r.lead_project_id == lead_project_id && r.provider == provider && r.event_name == event_name) return false;
  }
  auto r = new_row(lead_project_id, provider, event_name, payload, destination, idempotency_key);
  rows_.emplace(r.id, std::move(r));
  if (insert_notifies()) notify();
  return true;
}

std::int64_t memory_store::enqueue_uncommitted(std::int64_t lead_project_id, const std::string& provider,
                                               const std::string& event_name, const std::string& payload) {
  auto r = new_row(lead_project_id, provider, event_name, payload, "default", {});
  const auto id = r.id;
  uncommitted_.emplace(id, std::make_pair(std::move(r), insert_notifies()));
  return id;
}

void memory_store::commit(std::int64_t id) {
  auto [row, notifies] = std::move(uncommitted_.at(id));
  uncommitted_.erase(id);
  rows_.emplace(id, std::move(row));
  if (notifies) notify();
}

memory_row memory_store::new_row(std::int64_t lead_project_id, const std::string& provider,
                                 const std::string& event_name, const std::string& payload,
                                 const std::string& destination, const std::string& idempotency_key) {
  const auto now = clock_.system_now();
  memory_row r;
  r.id = next_id_++;
  r.lead_project_id = lead_project_id;
  r.provider = provider;
  r.destination = destination;
  r.event_name = event_name;
  r.idempotency_key =
      idempotency_key.empty() ? memory_store::idempotency_key(lead_project_id, provider, event_name) : idempotency_key;
  r.payload = nlohmann::json::parse(payload).dump();  // jsonb keeps a normalized text
  r.next_attempt_at = r.created_at = r.updated_at = now;
  return r;
}

void memory_store::notify(const std::string& payload) {
  ++notifications_;
  for (const auto& handler : listeners_) handler({db::listener_event::kind::notification, false, payload});
}

void memory_store::pause(const std::string& provider, const std::string& destination, const std::string& reason,
                         const std::string& by) {
  pauses_[provider + "/" + destination] = {provider, destination, reason, "", by};
}

void memory_store::resume(const std::string& provider, const std::string& destination) {
  pauses_.erase(provider + "/" + destination);
}

void memory_store::request_resume(const std::string& provider, const std::string& destination) {
  resume_requests_.emplace_back(++resume_sequence_, db::resume_request{provider, destination});
}

const memory_row* memory_store::find(std::int64_t id) const {
  const auto it = rows_.find(id);
  return it == rows_.end() ? nullptr : &it->second;
}

memory_row& memory_store::row(std::int64_t id) { return rows_.at(id); }

std::vector<std::int64_t> memory_store::ids() const {
  std::vector<std::int64_t> out;
  for (const auto& [id, r] : rows_) out.push_back(id);
  return out;
}

std::int64_t memory_store::count(const std::string& state) const {
  return std::count_if(rows_.begin(), rows_.end(), [&](const auto& kv) { return kv.second.state == state; });
}

std::vector<memory_attempt> memory_store::attempts(std::int64_t id) const {
  std::vector<memory_attempt> out;
  for (const auto& a : attempts_) {
    if (a.delivery_id == id) out.push_back(a);
  }
  return out;
}

std::pair<std::string, int> memory_store::request_status(const std::string& request_id) const {
  for (const auto& r : requests_) {
    if (r.request_id == request_id) return {r.status, r.checks};
  }
  return {"", -1};
}

int memory_store::calls(const std::string& op) const {
  const auto it = calls_.find(op);
  return it == calls_.end() ? 0 : it->second;
}

std::unique_ptr<db::store_session> memory_store::open_session(const std::string& /*role*/) {
  return std::make_unique<memory_session>(*this);
}

std::unique_ptr<db::store_listener> memory_store::make_listener(const std::string& /*channel*/,
                                                                std::chrono::seconds /*heartbeat*/,
                                                                db::listener::handler on_event) {
  return std::make_unique<memory_listener>(listeners_, std::move(on_event));
}

}  // namespace outbox::test
