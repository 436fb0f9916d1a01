#include "dispatcher/engine/engine.hpp"

#include <charconv>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "db/fleet_store.hpp"
#include "dispatcher/engine/http_options.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "dispatcher/engine/task_guard.hpp"
#include "dispatcher/engine/use_tuple.hpp"
#include "providers/api_versions.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
constexpr auto settle_drain_limit = 5s;  // at shutdown, after the grace period

}  // namespace

// Not with a destination that holds reclaimed rows for on-call
// (ON_EXPIRED_LEASE=hold): it must find a row whose request may have gone out
// still in `sending` after a crash, not pending as if new.
bool claims_may_skip_flush_wait(const config& cfg, const destination_registry& destinations) {
  bool holds = false;
  destinations.for_each([&](const destination& d) { holds = holds || d.provider->hold_reclaimed(); });
  return !cfg.claim_synchronous_commit && !holds;
}

engine::engine(asio::any_io_executor ex, const config& cfg, logger& log, engine_ports ports)
    : own_store_(ports.store ? nullptr : std::make_unique<db::pg_store>(ex, db::pg_store_options{cfg.database_url})),
      store_(ports.store ? *ports.store : *own_store_),
      cfg_(cfg),
      rt_{ex, ports.clock ? *ports.clock : real_clock(), log, metrics_},
      instance_id_(make_instance_id(cfg.instance_name.value_or(""))),
      destinations_(ex, cfg, rt_.clock.system_now(), rt_.clock.steady_now()),
      registry_keys_(load_registry_keys(cfg)),
      own_http_(ports.http ? nullptr : std::make_unique<providers::https_client>(ex, http_options(cfg))),
      settler_(rt_, settler_options_from(cfg), store_, destinations_, in_flight_, instance_id_,
               claimer_signals{[this] { claimer_.wake(); }, [this] { claimer_.capacity_freed(); }}),
      sender_(
          rt_, sender_options_from(cfg), destinations_, in_flight_, stopping_, [this] { claimer_.wake(); }, settler_,
          ports.http ? *ports.http : *own_http_),
      claimer_(rt_, claimer_options_from(cfg), store_, destinations_, in_flight_, instance_id_, stopping_, sender_),
      maintenance_(rt_, maintenance_options_from(cfg), store_, destinations_, registry_keys_, in_flight_, instance_id_,
                   stopping_, claimer_),
      reconciler_(rt_, reconciler_options_from(cfg), store_, destinations_, ports.http),
      drain_timer_(ex, rt_.clock) {
  if (auto* pg = dynamic_cast<db::pg_store*>(&store_)) {
    pg->set_claims_skip_flush_wait(claims_may_skip_flush_wait(cfg, destinations_));
  }
  destinations_.on_reload_request = [this](const std::string& key) { maintenance_.reload_registry_entries({key}); };
  // A registry destination that holds reclaimed rows (Meta's ON_EXPIRED_LEASE=hold, read
  // before the first claim or added later) needs claims that wait for the flush: the
  // claim connection is opened again with that setting before the next claim.
  destinations_.on_applied = [this] {
    auto* pg = dynamic_cast<db::pg_store*>(&store_);
    const bool skip = claims_may_skip_flush_wait(cfg_, destinations_);
    if (!pg || pg->claims_skip_flush_wait() == skip) return;
    pg->set_claims_skip_flush_wait(skip);
    claimer_.reconnect_before_next_claim();
  };
  sender_.on_task_done = [this] {
    if (stopping_) drain_timer_.cancel();
  };
}

engine::~engine() = default;

void engine::start(const char* what, asio::awaitable<void> task, bool* finished) {
  ++background_running_;
  asio::co_spawn(rt_.ex, std::move(task), task_guard(rt_.log, what, [this, finished] {
                   --background_running_;
                   if (finished) *finished = true;
                   drain_timer_.cancel();
                 }));
}

void engine::request_stop() {
  if (stopping_) return;
  stopping_ = true;
  rt_.log.info("stop requested: no new claims; finishing requests in flight",
               {{"in_flight", in_flight_.size()}, {"grace_seconds", cfg_.shutdown_grace.count()}});
  if (listener_) listener_->stop();
  sender_.stop();
  claimer_.wake();
}

// What a notification's signals (db::listener_event::detail) ask besides a
// claim: the registry read whole or the entries named, and leads forgotten.
void engine::act_on_signals(const std::string& signals) {
  std::vector<std::string> keys;
  bool whole = false;
  for (std::size_t at = 0; at <= signals.size();) {
    const auto end = std::min(signals.find(',', at), signals.size());
    const std::string_view signal(signals.data() + at, end - at);
    whole |= signal == db::destinations_changed_payload;
    if (signal.starts_with(db::destination_changed_prefix))
      keys.emplace_back(signal.substr(db::destination_changed_prefix.size()));
    if (signal.starts_with(db::lead_forgotten_prefix)) forgotten_lead(signal.substr(db::lead_forgotten_prefix.size()));
    at = end + 1;
  }
  if (whole) {
    maintenance_.reload_registry();
  } else if (!keys.empty()) {
    maintenance_.reload_registry_entries(keys);
  }
}

// "outbox:forgotten:<lead>": its rows waiting here for their turn are not sent.
void engine::forgotten_lead(std::string_view lead) {
  std::int64_t id = 0;
  const auto [end, ec] = std::from_chars(lead.data(), lead.data() + lead.size(), id);
  if (ec == std::errc{} && end == lead.data() + lead.size()) sender_.forget_leads({id});
}

void engine::on_listener_event(const db::listener_event& e) {
  switch (e.type) {
    case db::listener_event::kind::notification:
      ++rt_.metrics.notifications;
      act_on_signals(e.detail);
      if (maintenance_.any_on_call_pause() || e.detail.find(db::pauses_changed_payload) != std::string::npos) {
        // Maybe `dispatcher resume`: re-read pauses first, or the claim would skip
        // the just-released destination. The reload wakes the claimer.
        maintenance_.reload_pauses();
        break;
      }
      claimer_.wake();
      break;
    case db::listener_event::kind::listening:
      // Notifications sent while we were away are lost: catch up with a claim now.
      if (e.reconnected) ++rt_.metrics.listener_reconnects;
      rt_.log.info(e.reconnected ? "listener reconnected; catching up" : "listening for new rows",
                   {{"channel", cfg_.notify_channel}});
      claimer_.wake();
      break;
    case db::listener_event::kind::lost:
      rt_.log.warn("listener connection lost; reconnecting (polling continues)", {{"error", e.detail}});
      break;
  }
}

asio::awaitable<void> engine::async_run() {
  const auto& cfg = cfg_;
  rt_.log.info("dispatcher starting", {{"instance", instance_id_},
                                       {"wake_mode", cfg.wake == wake_mode::listen ? "listen" : "poll"},
                                       {"destinations", destinations_.size()},
                                       {"lease_seconds", cfg.lease.count()},
                                       {"claim_batch", cfg.claim_batch},
                                       {"max_in_flight", cfg.max_in_flight}});
  for (const auto& w : cfg.warnings) rt_.log.warn("configuration", {{"warning", w}});
  destinations_.for_each([&](const destination& d) {
    const auto now = rt_.clock.system_now();
    if (auto w = providers::api_sunset_warning(d.provider_kind, d.provider->api_version(), now)) {
      rt_.log.warn("API version near its sunset", {{"destination", d.key()}, {"warning", *w}});
    }
  });
  if (cfg.wake == wake_mode::listen) {
    listener_ = store_.make_listener(cfg.notify_channel, cfg.listen_heartbeat,
                                     [this](const db::listener_event& e) { on_listener_event(e); });
    start("listener", listener_->async_run());
  }
  start("settler", settler_.async_run(), &settler_finished_);
  co_await maintenance_.async_prepare();  // before the first claim, so a paused destination gets nothing
  start("maintenance", maintenance_.async_run());
  if (reconciler::needed(destinations_)) start("reconciler", reconciler_.async_run());
  co_await claimer_.async_run();
  reconciler_.stop();
  co_await async_drain();
  rt_.log.info("dispatcher stopped", {{"delivered", rt_.metrics.total("delivered")},
                                      {"retried", rt_.metrics.total("retry")},
                                      {"dead", rt_.metrics.total("dead") + rt_.metrics.total("rejected")},
                                      {"lease_lost", rt_.metrics.lease_lost},
                                      {"left_in_flight", in_flight_.size()}});
}

asio::awaitable<void> engine::async_wait_until(bool (engine::*done)() const, steady::time_point deadline) {
  while (!(this->*done)() && rt_.clock.steady_now() < deadline) {
    drain_timer_.expires_at(deadline);
    (void)co_await drain_timer_.async_wait();
  }
}

// Requests in flight get the grace period; leases stay renewed meanwhile. Then
// what is still running is settled (held on hold destinations), the outcomes
// are recorded, and the maintenance loop stops last.
asio::awaitable<void> engine::async_drain() {
  co_await async_wait_until(&engine::sends_done, rt_.clock.steady_now() + cfg_.shutdown_grace);
  sender_.abandon_running();
  settler_.stop(rt_.clock.steady_now() + settle_drain_limit);
  co_await async_wait_until(&engine::settler_done, rt_.clock.steady_now() + settle_drain_limit + 1s);
  maintenance_.stop();
  co_await async_wait_until(&engine::tasks_done, rt_.clock.steady_now() + settle_drain_limit + 5s);
  sender_.close_idle();
}

namespace {

// The gate's state in on-call words. An automatic pause is a circuit breaker
// when the gate opened it for consecutive failures (its reason says so).
destination_view view_of(const destination_gate& gate, std::chrono::system_clock::time_point now) {
  destination_view v;
  v.reason = gate.reason();
  v.paused_since = gate.paused_since();
  if (gate.manually_paused()) {
    v.state = "paused";
  } else if (gate.probing()) {
    v.state = "probing";
  } else if (gate.paused(now)) {
    v.state = gate.reason().starts_with("circuit open") ? "circuit open" : "paused (automatic)";
    v.reopens_at = gate.reopens_at();
  } else {
    v.state = "delivering";  // not "open": a breaker that is open is a broken one
    v.reason.clear();
    v.paused_since.reset();
  }
  return v;
}

}  // namespace

outbox::metrics engine::metrics_snapshot() const {
  auto m = rt_.metrics;
  m.in_flight = static_cast<std::int64_t>(in_flight_.size());
  m.listener_up = listener_ && listener_->is_listening();
  m.instance = instance_id_;
  m.process = read_process_stats();
  const auto now = rt_.clock.system_now();
  destinations_.for_each([&](const destination& d) {
    const metrics::destination_key key{d.provider_kind, d.name};
    if (d.gate.paused(now)) m.paused.insert(key);
    auto& view = m.destinations[key] = view_of(d.gate, now);
    view.zero_filled = destinations_.from_environment(d.provider_kind, d.name);
    const auto version = d.provider->api_version();
    if (const auto sunset = providers::api_version_sunset(d.provider_kind, version)) {
      view.api_sunset_seconds =
          std::chrono::duration<double>(std::chrono::system_clock::time_point{*sunset} - now).count();
    }
    view.api_sunset_warning = providers::api_sunset_warning(d.provider_kind, version, now).value_or("");
  });
  for (const auto& [key, why] : destinations_.unusable()) {
    m.registry_unusable[split_key(key)] = why;
  }
  return m;
}

std::pair<bool, std::string> engine::readiness() const {
  if (!rt_.metrics.database_up) return {false, "the database is not reachable"};
  if (cfg_.wake == wake_mode::listen && !(listener_ && listener_->is_listening()))
    return {false, "the LISTEN connection is down (polling continues)"};
  return {true, {}};
}

}  // namespace outbox
