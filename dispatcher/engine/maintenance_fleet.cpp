// The maintenance loop's part that on-call sees across dispatchers: its
// heartbeat with the destinations it paused by itself, "retry now" requests
// for those pauses (`dispatcher resume`), and the delivery lag per destination.
#include <unistd.h>

#include <climits>

#include "db/fleet_store.hpp"
#include "dispatcher/engine/maintenance.hpp"
#include "dispatcher/ops/version.hpp"
#include "providers/canonical_event.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
using sys_clock = std::chrono::system_clock;

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string iso_time(sys_clock::time_point t) {
  return providers::format_rfc3339_utc(std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
}

// The heartbeat and resume tables are missing (a schema before 0006): nothing to
// write or read until `dispatcher migrate`. Any other SQL error is tried again
// next round: one bad value must not switch the heartbeat off for good.
bool schema_before_fleet(const db::error& e) {
  return e.kind() == db::error_kind::sql && (e.sqlstate() == "42P01" || e.sqlstate() == "42703");
}

}  // namespace

asio::awaitable<bool> maintenance::async_apply_resume_requests(db::store_session& conn) {
  if (!fleet_supported_) co_return true;
  const auto requests = co_await conn.async_resume_requests(resume_marker_);
  if (!requests) {
    if (schema_before_fleet(requests.error())) {
      fleet_supported_ = false;  // a schema before 0006: nothing to read
      rt_.log.warn("no dispatcher heartbeat table (run `dispatcher migrate`)", {{"error", requests.error().what()}});
      co_return true;
    }
    co_return false;
  }
  const auto now = rt_.clock.system_now();
  bool lifted = false;
  for (const auto& r : *requests) {
    auto* d = destinations_.find(r.provider, r.destination);
    if (d == nullptr || d->gate.manually_paused() || !d->gate.paused(now)) continue;
    (void)d->gate.resume();
    lifted = true;
    rt_.log.info("automatic pause lifted by on-call (retry now)",
                 {{"provider", d->provider_kind}, {"destination", d->name}});
    claimer_.wake();
  }
  // The heartbeat says so at once: status must not show a pause that is gone.
  if (lifted) co_return co_await async_heartbeat(conn);
  co_return true;
}

asio::awaitable<bool> maintenance::async_fleet_refresh(db::store_session& conn) {
  const auto lags = co_await conn.async_delivery_lag();
  if (!lags) co_return false;
  rt_.metrics.delivery_lag_seconds.clear();
  std::map<metrics::destination_key, std::int64_t> backlog;
  // A 0 for the environment's destinations; the registry's only when they have rows (metrics.hpp).
  destinations_.for_each([&](const destination& d) {
    if (!destinations_.from_environment(d.provider_kind, d.name)) return;
    rt_.metrics.delivery_lag_seconds[{d.provider_kind, d.name}] = 0;
    backlog[{d.provider_kind, d.name}] = 0;
  });
  for (const auto& l : *lags) {
    // Only configured destinations (and the registry's unusable ones, whose rows
    // wait): label values never come from CRM rows.
    if (destinations_.find(l.provider, l.destination) != nullptr ||
        destinations_.unusable_reason(l.provider, l.destination)) {
      rt_.metrics.delivery_lag_seconds[{l.provider, l.destination}] = l.seconds;
      backlog[{l.provider, l.destination}] = l.rows;
    }
  }
  rt_.metrics.backlog_rows = std::move(backlog);
  const bool beat = co_await async_heartbeat(conn);
  if (beat && fleet_supported_) co_await async_read_fleet(conn);
  co_return beat;
}

// The live dispatchers for /status: which of them paused which destination.
asio::awaitable<void> maintenance::async_read_fleet(db::store_session& conn) {
  // On a failure the page keeps the last list and the next sweep tries again (a
  // lost connection is replaced then). It used to throw on a lost connection,
  // which ended the maintenance task and with it lease renewal.
  const auto fleet = co_await conn.async_fleet();
  if (!fleet) co_return;
  std::vector<fleet_member> members;
  for (const auto& d : *fleet) {
    if (!d.value("live", false)) continue;
    fleet_member m{d.value("instance", ""), d.value("host", ""), d.value("last_seen", ""), {}};
    for (const auto& p : d.value("automatic_pauses", nlohmann::json::array())) {
      const std::string since = p.value("since", "");
      m.automatic_pauses[{p.value("provider", ""), p.value("destination", "")}] =
          (since.empty() ? "" : "since " + since + ": ") + p.value("reason", "");
    }
    members.push_back(std::move(m));
  }
  rt_.metrics.fleet = std::move(members);
}

asio::awaitable<bool> maintenance::async_heartbeat(db::store_session& conn) {
  if (!fleet_supported_) co_return true;
  const auto now = rt_.clock.system_now();
  db::heartbeat beat{instance_id_,
                     version_line(),
                     host_name(),
                     static_cast<int>(::getpid()),
                     started_at_,
                     options_.sweep_interval,
                     nlohmann::json::array()};
  destinations_.for_each([&](const destination& d) {
    if (!d.gate.paused(now) || d.gate.manually_paused()) return;
    const auto until = d.gate.reopens_at();
    const auto since = d.gate.paused_since();
    beat.automatic_pauses.push_back({{"provider", d.provider_kind},
                                     {"destination", d.name},
                                     {"reason", d.gate.reason()},
                                     {"since", since ? iso_time(*since) : ""},
                                     {"until", until ? iso_time(*until) : ""}});
  });
  // A registry destination that is not usable stops as a pause does: status shows it with the reason.
  for (const auto& [key, why] : destinations_.unusable()) {
    const auto [provider, name] = split_key(key);
    beat.automatic_pauses.push_back({{"provider", provider},
                                     {"destination", name},
                                     {"reason", "not usable: " + why},
                                     {"kind", "registry"},
                                     {"since", ""},
                                     {"until", ""}});
  }
  const auto done = co_await conn.async_beat(beat);
  if (!done && schema_before_fleet(done.error())) {
    fleet_supported_ = false;
    co_return true;
  }
  if (!done) rt_.log.warn("heartbeat not recorded; trying again", {{"error", done.error().what()}});
  co_return done.has_value();
}

// A clean stop: this instance's heartbeat goes, so `status` and `resume` stop
// counting it (and its automatic pauses) at once. A crash leaves it to age out.
asio::awaitable<void> maintenance::async_goodbye() {
  if (!fleet_supported_) co_return;
  db::store_session* conn = co_await link_.async_get();
  if (conn == nullptr) co_return;
  const auto done = co_await conn->async_goodbye(instance_id_);
  if (!done) rt_.log.warn("could not remove this dispatcher's heartbeat", {{"error", done.error().what()}});
}

}  // namespace outbox
