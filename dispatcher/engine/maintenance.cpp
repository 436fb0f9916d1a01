#include "dispatcher/engine/maintenance.hpp"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "db/delivery_store.hpp"
#include "db/listener.hpp"
#include "db/wake_signal.hpp"
#include "dispatcher/engine/use_tuple.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
constexpr auto retry_delay = 1s;  // after a failed round: leases must not lapse for want of a retry

}  // namespace

maintenance::maintenance(engine_runtime rt, maintenance_options options, db::delivery_store& store,
                         destination_registry& destinations, const registry_keys& keys,
                         const in_flight_table& in_flight, const std::string& instance_id, const bool& stopping,
                         claimer& claim)
    : rt_(rt),
      options_(options),
      destinations_(destinations),
      registry_(keys),
      in_flight_(in_flight),
      instance_id_(instance_id),
      stopping_(stopping),
      claimer_(claim),
      link_(rt, store, "maintenance"),
      timer_(rt.ex, rt.clock),
      started_at_(rt.clock.system_now()) {}

void maintenance::stop() {
  stop_ = true;
  timer_.cancel();
}

void maintenance::reload_pauses() {
  reload_requested_ = true;
  timer_.cancel();
}

void maintenance::reload_registry() {
  registry_reload_requested_ = true;
  timer_.cancel();
}

void maintenance::reload_registry_entries(const std::vector<std::string>& keys) {
  registry_keys_requested_.insert(keys.begin(), keys.end());
  // Many at once (a bulk change the listener got in several reads): one read of all of it.
  if (registry_keys_requested_.size() > db::max_changed_destinations) {
    registry_keys_requested_.clear();
    registry_reload_requested_ = true;
  }
  timer_.cancel();
}

// Before the first claim. The destinations' policies come first, and until they
// are recorded nothing is claimed: a process killed right after its first claim
// must leave behind what a sweep from a bare shell needs (hold, not resend, a
// Meta row), and `dispatcher pause NAME` must know the destination.
asio::awaitable<void> maintenance::async_prepare() {
  while (!policies_recorded_ && !stopping_ && !stop_) {
    // The registry's destinations first: their policies are recorded with the others.
    db::store_session* conn = co_await link_.async_get();
    if (conn && !registry_read_) registry_read_ = co_await async_read_registry(*conn);
    if (conn && registry_read_) (void)co_await async_record_policies(*conn);
    if (policies_recorded_) break;
    timer_.expires_after(retry_delay);
    (void)co_await timer_.async_wait();
  }
  db::store_session* conn = co_await link_.async_get();
  if (!conn) co_return;  // the loop retries
  (void)co_await async_load_pauses(*conn);
  (void)co_await async_read_wake_mode(*conn);
  // The gauges and the heartbeat come with async_run, beside the first claims:
  // over a backlog's every row (20,000: 25 - 55 ms), they made its first request wait.
}

asio::awaitable<void> maintenance::async_run() {
  const auto renew_every = std::chrono::duration_cast<steady::duration>(options_.lease) / 3;
  auto next_sweep = rt_.clock.steady_now() + options_.sweep_interval;
  bool retry = false;
  if (!stop_) {
    db::store_session* conn = co_await link_.async_get();
    bool read = false;
    if (conn) read = co_await async_read_gauges(*conn);
    retry = !read;
  }
  while (!stop_) {
    if (!reload_requested_ && !registry_reload_requested_ && registry_keys_requested_.empty()) {
      // A sweep the database kept from running stays due; waiting for it then
      // would not wait at all (the maintenance connection retried about every
      // 2 ms, a log line each, through a whole outage). A retry waits its delay,
      // and while stopping no sweep is due.
      const steady::duration until_sweep = stopping_ ? renew_every : next_sweep - rt_.clock.steady_now();
      timer_.expires_after(retry ? retry_delay : std::min<steady::duration>(renew_every, until_sweep));
      (void)co_await timer_.async_wait();
    }
    if (stop_) break;
    db::store_session* conn = co_await link_.async_get();
    if (!conn) {
      retry = true;
      continue;
    }
    bool ok = true;
    if (std::exchange(registry_reload_requested_, false)) {
      registry_keys_requested_.clear();  // the whole read has them
      ok = co_await async_read_registry(*conn);
      registry_reload_requested_ = !ok;  // asked for: read again once the database answers
    }
    if (ok && !registry_keys_requested_.empty()) ok = co_await async_read_registry_entries(*conn);
    if (ok && std::exchange(reload_requested_, false)) {
      ok = co_await async_load_pauses(*conn);
      claimer_.wake();
    }
    if (ok) ok = co_await async_renew(*conn);
    if (ok && !policies_recorded_) ok = co_await async_record_policies(*conn);
    if (ok && rt_.clock.steady_now() >= next_sweep && !stopping_) {
      next_sweep = rt_.clock.steady_now() + options_.sweep_interval;
      ok = co_await async_sweep(*conn);
      if (ok) ok = co_await async_load_pauses(*conn);
      if (ok) ok = co_await async_read_registry(*conn);  // the safety net: a notification is only a hint
      if (ok) ok = co_await async_refresh(*conn);
      if (ok) ok = co_await async_erase_personal_data(*conn);
    }
    retry = !ok;
  }
  co_await async_goodbye();
}

asio::awaitable<bool> maintenance::async_renew(db::store_session& conn) {
  if (in_flight_.empty()) co_return true;
  const auto [ids, tokens] = in_flight_.leases();
  const auto renewed = co_await conn.async_renew(ids, tokens, options_.lease);
  if (!renewed) {
    ++rt_.metrics.db_errors;
    rt_.log.warn("lease renewal failed; retrying in a second", {{"error", renewed.error().what()}});
    co_return false;
  }
  rt_.log.debug("leases renewed", {{"rows", *renewed}, {"held", ids.size()}});
  co_return true;
}

asio::awaitable<bool> maintenance::async_sweep(db::store_session& conn) {
  db::sweep_request req;
  req.max_attempts = options_.max_attempts;
  destinations_.for_each([&](const destination& d) {
    if (d.provider->hold_reclaimed()) req.hold_destinations.push_back(d.key());
  });
  const auto swept = co_await conn.async_sweep(req);
  if (!swept) {
    ++rt_.metrics.db_errors;
    rt_.log.warn("sweep failed; retrying", {{"error", swept.error().what()}});
    co_return false;
  }
  if (!swept->empty()) {
    rt_.metrics.lease_expiries += swept->size();
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& r : *swept) ids.push_back(r.id);
    rt_.log.warn("sweeper reset expired leases", {{"rows", swept->size()}, {"row_ids", ids}});
    claimer_.wake();
  }
  co_return true;
}

// The wake mode and the queue gauges: cheap reads on the sweep cadence. Plain
// statements: GCC 12's Release build of `if (!co_await a) co_return false;
// co_return co_await b;` here trapped (SIGILL) on resume.
asio::awaitable<bool> maintenance::async_refresh(db::store_session& conn) {
  const bool mode_read = co_await async_read_wake_mode(conn);
  if (!mode_read) co_return false;
  const bool gauges_read = co_await async_read_gauges(conn);
  co_return gauges_read;
}

// Final rows past their retention lose their personal data, a small batch per
// statement (each its own short transaction, rows others hold skipped), at
// most max_erase_batches per sweep so that lease renewals never wait long.
asio::awaitable<bool> maintenance::async_erase_personal_data(db::store_session& conn) {
  constexpr int max_erase_batches = 50;  // 10,000 rows a sweep: 667 rows/s at the default 15 s
  db::retention_request req;
  // 0 keeps the data: a retention of 100 years never comes.
  constexpr std::chrono::seconds forever{100LL * 365 * 86400};
  req.sent_after = options_.keep_personal_data_sent.count() > 0 ? options_.keep_personal_data_sent : forever;
  req.dead_after = options_.keep_personal_data_dead.count() > 0 ? options_.keep_personal_data_dead : forever;
  if (req.sent_after == forever && req.dead_after == forever) co_return true;
  for (int i = 0; i < max_erase_batches && !stop_; ++i) {
    const auto erased = co_await conn.async_erase_expired_personal_data(req);
    if (!erased) {
      rt_.log.warn("could not erase expired personal data; trying again at the next sweep",
                   {{"error", erased.error().what()}});
      co_return !erased.error().connection_lost();
    }
    rt_.metrics.personal_data_erased += static_cast<std::uint64_t>(*erased);
    if (*erased < req.batch) break;
  }
  co_return true;
}

asio::awaitable<bool> maintenance::async_read_wake_mode(db::store_session& conn) {
  if (!options_.listens) co_return true;
  const auto mode = co_await conn.async_wake_mode();
  if (!mode) {
    rt_.log.warn("could not read the wake mode; keeping the current one", {{"error", mode.error().what()}});
    co_return false;
  }
  claimer_.set_adaptive(*mode == "adaptive", *mode);
  co_return true;
}

// The queue gauges, the heartbeat and the delivery lag.
asio::awaitable<bool> maintenance::async_read_gauges(db::store_session& conn) {
  const auto gauges = co_await conn.async_queue_gauges(claimer_.skipped_destinations());
  if (!gauges) co_return false;
  rt_.metrics.rows_by_state = gauges->rows_by_state;
  rt_.metrics.oldest_due_seconds = gauges->oldest_due_seconds;
  co_return co_await async_fleet_refresh(conn);
}

asio::awaitable<bool> maintenance::async_load_pauses(db::store_session& conn) {
  const auto pauses = co_await conn.async_list_pauses();
  if (!pauses) {
    ++rt_.metrics.db_errors;
    rt_.log.warn("could not read paused destinations; retrying", {{"error", pauses.error().what()}});
    co_return false;
  }
  last_pauses_ = *pauses;
  apply_on_call_pauses(*pauses);
  co_return co_await async_apply_resume_requests(conn);
}

asio::awaitable<bool> maintenance::async_record_policies(db::store_session& conn) {
  std::vector<db::destination_policy> policies;
  destinations_.for_each([&](const destination& d) {
    policies.push_back({d.provider_kind, d.name, d.provider->hold_reclaimed(), options_.max_attempts});
  });
  const auto done = co_await conn.async_record_policies(instance_id_, policies);
  if (!done) {
    // An older schema (before 0004) or a transient failure: the sweeper works without it.
    rt_.log.warn("could not record destination policies", {{"error", done.error().what()}});
    policies_recorded_ = done.error().kind() == db::error_kind::sql;  // do not retry a schema problem forever
    co_return !done.error().connection_lost();
  }
  policies_recorded_ = true;
  co_return true;
}

void maintenance::apply_on_call_pauses(const std::vector<db::destination_pause>& pauses) {
  any_on_call_pause_ = !pauses.empty();
  destinations_.for_each([&](destination& d) {
    const auto it = std::find_if(pauses.begin(), pauses.end(), [&](const db::destination_pause& p) {
      return p.provider == d.provider_kind && p.destination == d.name;
    });
    if (it != pauses.end() && !d.gate.on_call_paused()) {
      d.gate.manual_pause("paused by " + it->paused_by + ": " + it->reason, rt_.clock.system_now());
      rt_.log.warn(
          "destination paused by on-call",
          {{"provider", d.provider_kind}, {"destination", d.name}, {"reason", it->reason}, {"by", it->paused_by}});
    } else if (it == pauses.end() && d.gate.on_call_paused()) {
      (void)d.gate.resume();
      rt_.log.info("destination resumed by on-call", {{"provider", d.provider_kind}, {"destination", d.name}});
      claimer_.wake();
    }
  });
}

}  // namespace outbox
