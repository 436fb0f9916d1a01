#include "dispatcher/engine.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "db/operations_store.hpp"
#include "db/wake_signal.hpp"
#include "dispatcher/event_prep.hpp"
#include "dispatcher/instance_id.hpp"
#include "providers/http_outcome.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using sys_clock = std::chrono::system_clock;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr std::size_t max_settle_batch = 1000;
constexpr auto destination_pause = 60s;  // after a 401/403: probe again after this
constexpr auto operator_pause_recheck = 300s;
constexpr int circuit_threshold = 5;  // consecutive transport failures or 5xx/429 that open the circuit
constexpr auto circuit_open_for = 30s;  // rows of an on-call pause wait this long (resume makes them due)
constexpr auto db_retry_delay = 1s;
constexpr auto connect_timeout = 5s;
constexpr auto min_idle = 20ms;          // never spin on rows locked by another dispatcher
constexpr auto settle_drain_limit = 5s;  // at shutdown, after the grace period

providers::https_client_options http_options(const config& cfg) {
  providers::https_client_options o;
  o.connect_timeout = cfg.connect_timeout;
  o.handshake_timeout = cfg.connect_timeout;
  o.request_timeout = cfg.request_timeout;
  o.extra_ca_file = cfg.extra_ca_file;
  return o;
}

adaptive_wake_options wake_options(const config& cfg) {
  adaptive_wake_options o;
  o.linger = cfg.adaptive_linger;
  o.awake_poll = cfg.adaptive_poll;
  o.ttl = cfg.adaptive_ttl;
  o.wake_rate = cfg.adaptive_wake_rate;
  return o;
}

std::string_view state_name(db::settle_state s) {
  switch (s) {
    case db::settle_state::sent:
      return "sent";
    case db::settle_state::dead:
      return "dead";
    case db::settle_state::held:
      return "held";
    case db::settle_state::pending:
      break;
  }
  return "pending";
}

}  // namespace

engine::engine(asio::any_io_executor ex, const config& cfg, logger& log)
    : ex_(ex),
      cfg_(cfg),
      log_(log),
      instance_id_(make_instance_id(cfg.instance_name.value_or(""))),
      http_(ex, http_options(cfg)),
      destinations_(ex, cfg),
      wake_signal_(wake_options(cfg)),
      wake_timer_(ex),
      settle_timer_(ex),
      maintenance_timer_(ex),
      drain_timer_(ex),
      random_(std::random_device{}()) {}

engine::~engine() = default;

double engine::random01() { return std::uniform_real_distribution<double>(0.0, 1.0)(random_); }

auto engine::track(const char* what) {
  ++background_running_;
  return [this, what](std::exception_ptr e) {
    --background_running_;
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        log_.error("internal task failed", {{"task", what}, {"error", ex.what()}});
      }
    }
    drain_timer_.cancel();
  };
}

auto engine::send_done() {
  return [this](std::exception_ptr e) {
    --active_sends_;
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        log_.error("send task failed", {{"error", ex.what()}});
      }
    }
    if (stopping_) drain_timer_.cancel();
  };
}

void engine::wake() {
  wake_pending_ = true;
  wake_timer_.cancel();
}

void engine::request_stop() {
  if (stopping_) return;
  stopping_ = true;
  log_.info("stop requested: no new claims; finishing requests in flight",
            {{"in_flight", in_flight_.size()}, {"grace_seconds", cfg_.shutdown_grace.count()}});
  if (listener_) listener_->stop();
  destinations_.abort_waiters();
  for (auto* t : rate_waits_) t->cancel();
  maintenance_timer_.cancel();
  wake();
}

void engine::on_listener_event(const db::listener_event& e) {
  switch (e.type) {
    case db::listener_event::kind::notification:
      ++metrics_.notifications;
      if (any_operator_pause_) {
        // Maybe `dispatcher resume`: re-read pauses first, or the claim would put
        // the just-released rows back for another pause period. The reload wakes us.
        pause_reload_requested_ = true;
        maintenance_timer_.cancel();
        break;
      }
      wake();
      break;
    case db::listener_event::kind::listening:
      // Notifications sent while we were away are lost: catch up with a claim now.
      if (e.reconnected) ++metrics_.listener_reconnects;
      log_.info(e.reconnected ? "listener reconnected; catching up" : "listening for new rows",
                {{"channel", cfg_.notify_channel}});
      wake();
      break;
    case db::listener_event::kind::lost:
      log_.warn("listener connection lost; reconnecting (polling continues)", {{"error", e.detail}});
      break;
  }
}

asio::awaitable<bool> engine::async_ensure(std::optional<db::connection>& conn, const char* role) {
  if (conn && conn->is_open()) co_return true;
  conn.reset();
  std::string failure;
  try {
    auto fresh = co_await db::connection::async_connect(ex_, cfg_.database_url, connect_timeout);
    conn.emplace(std::move(fresh));
  } catch (const db::error& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    ++metrics_.db_errors;
    log_.warn("database connection failed; retrying", {{"role", role}, {"error", failure}});
    co_return false;
  }
  log_.debug("database connected", {{"role", role}});
  co_return true;
}

asio::awaitable<void> engine::async_pause_for(steady::duration d) {
  asio::steady_timer t(ex_, d);
  (void)co_await t.async_wait(use_tuple);
}

asio::awaitable<void> engine::async_idle(steady::duration max_wait, steady::duration floor) {
  if (!wake_pending_ && !stopping_) {
    wake_timer_.expires_after(std::max<steady::duration>(max_wait, floor));
    (void)co_await wake_timer_.async_wait(use_tuple);
  }
  wake_pending_ = false;
}

asio::awaitable<void> engine::async_idle(steady::duration max_wait) { co_await async_idle(max_wait, min_idle); }

asio::awaitable<void> engine::async_read_wake_mode(db::connection& conn) {
  if (cfg_.wake != wake_mode::listen) co_return;  // a poll-only dispatcher never claims to be awake
  const std::string mode = co_await db::async_wake_mode(conn);
  const bool adaptive = mode == "adaptive";
  if (adaptive != wake_signal_.enabled()) {
    log_.info("database wake mode", {{"mode", mode}});
    wake_signal_.set_enabled(adaptive);
  }
}

asio::awaitable<void> engine::async_publish_wake(adaptive_wake::action a) {
  if (a == adaptive_wake::action::none || !claim_conn_) co_return;
  const bool awake = a == adaptive_wake::action::publish_awake;
  std::string failure;
  try {
    if (awake) {
      co_await db::async_publish_awake(*claim_conn_, instance_id_, cfg_.adaptive_ttl);
    } else {
      co_await db::async_publish_asleep(*claim_conn_, instance_id_);
    }
  } catch (const db::error& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    // Not published: stay as we were; the next claim decides again. Failing to
    // go awake is the safe side (the trigger keeps notifying).
    ++metrics_.db_errors;
    log_.warn("could not publish the wake state", {{"awake", awake}, {"error", failure}});
    co_return;
  }
  const bool was_awake = wake_signal_.awake();
  wake_signal_.published(a, steady::now());
  metrics_.wake_awake = wake_signal_.awake();
  if (was_awake == awake) co_return;  // a refresh
  ++(awake ? metrics_.wake_awake_transitions : metrics_.wake_asleep_transitions);
  log_.debug(awake ? "draining: marked awake, inserts stop notifying" : "idle: marked asleep, inserts notify again",
             {});
}

asio::awaitable<void> engine::async_run() {
  log_.info("dispatcher starting",
            {{"instance", instance_id_},
             {"wake_mode", cfg_.wake == wake_mode::listen ? "listen" : "poll"},
             {"destinations", destinations_.size()},
             {"lease_seconds", cfg_.lease.count()},
             {"claim_batch", cfg_.claim_batch},
             {"max_in_flight", cfg_.max_in_flight}});
  for (const auto& w : cfg_.warnings) log_.warn("configuration", {{"warning", w}});

  if (cfg_.wake == wake_mode::listen) {
    db::listener_options lo;
    lo.conninfo = cfg_.database_url;
    lo.channel = cfg_.notify_channel;
    lo.heartbeat_interval = cfg_.listen_heartbeat;
    listener_.emplace(ex_, lo, [this](const db::listener_event& e) { on_listener_event(e); });
    asio::co_spawn(ex_, listener_->async_run(), track("listener"));
  }
  asio::co_spawn(ex_, async_settle_loop(), [this](std::exception_ptr e) {
    settle_done_ = true;
    if (e) log_.error("settle loop failed", {});
    drain_timer_.cancel();
  });
  asio::co_spawn(ex_, async_maintenance_loop(), track("maintenance"));

  co_await async_load_pauses();  // before the first claim, so a paused destination gets nothing
  if (maintenance_conn_) {
    try {
      co_await async_read_wake_mode(*maintenance_conn_);
    } catch (const db::error& e) {
      log_.warn("could not read the wake mode; notifications only until the next sweep",
                {{"error", std::string(e.what())}});
    }
  }
  co_await async_claim_loop();

  // Graceful drain: let requests in flight finish within the grace period.
  const auto grace_end = steady::now() + cfg_.shutdown_grace;
  while (active_sends_ > 0 && steady::now() < grace_end) {
    drain_timer_.expires_at(grace_end);
    (void)co_await drain_timer_.async_wait(use_tuple);
  }
  // Whatever is still in flight and not yet settled goes back to pending now.
  std::unordered_set<std::int64_t> queued;
  for (const auto& s : settle_queue_) queued.insert(s.id);
  std::size_t abandoned = 0;
  for (auto& [id, row] : in_flight_) {
    if (queued.contains(id)) continue;
    row.abandoned = true;
    ++abandoned;
    enqueue(row.started ? plan_putback(row.ticket, 0ms, "abandoned",
                                       "abandoned at shutdown while its request was in flight; it will be "
                                       "retried with the same idempotency key")
                        : plan_putback(row.ticket, 0ms, "released", "released unsent at shutdown"));
  }
  if (abandoned) log_.warn("giving back rows at shutdown", {{"rows", abandoned}});

  settle_stop_ = true;
  settle_deadline_ = steady::now() + settle_drain_limit;
  settle_timer_.cancel();
  while (!settle_done_ || background_running_ > 0) {
    drain_timer_.expires_after(settle_drain_limit);
    (void)co_await drain_timer_.async_wait(use_tuple);
  }
  http_.close_idle();
  claim_conn_.reset();
  settle_conn_.reset();
  maintenance_conn_.reset();
  log_.info("dispatcher stopped", {{"delivered", metrics_.total("delivered")},
                                   {"retried", metrics_.total("retry")},
                                   {"dead", metrics_.total("dead") + metrics_.total("rejected")},
                                   {"lease_lost", metrics_.lease_lost},
                                   {"left_in_flight", in_flight_.size()}});
}

asio::awaitable<void> engine::async_load_pauses() {
  const bool connected = co_await async_ensure(maintenance_conn_, "maintenance");
  if (!connected) co_return;  // the maintenance loop retries
  std::string failure;
  try {
    apply_operator_pauses(co_await db::async_list_pauses(*maintenance_conn_));
  } catch (const db::error& e) {
    failure = e.what();
  }
  if (!failure.empty()) log_.warn("could not read paused destinations; retrying later", {{"error", failure}});
}

asio::awaitable<void> engine::async_claim_loop() {
  const auto max_in_flight = static_cast<std::size_t>(cfg_.max_in_flight);
  while (!stopping_) {
    const std::size_t capacity = in_flight_.size() < max_in_flight ? max_in_flight - in_flight_.size() : 0;
    if (capacity == 0) {
      capacity_blocked_ = true;  // the settle loop wakes us when rows complete
      co_await async_idle(cfg_.poll_interval);
      continue;
    }
    capacity_blocked_ = false;
    const bool connected = co_await async_ensure(claim_conn_, "claim");
    if (!connected) {
      co_await async_idle(db_retry_delay);
      continue;
    }
    db::claim_request req;
    req.owner = instance_id_;
    req.token = random_uuid();
    req.lease = cfg_.lease;
    req.limit = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(cfg_.claim_batch), capacity));
    req.max_attempts = cfg_.backoff.max_attempts;

    std::vector<db::claimed_row> rows;
    std::string failure;
    try {
      const auto t0 = steady::now();
      rows = co_await db::async_claim(*claim_conn_, req);
      metrics_.claim_seconds.observe(std::chrono::duration<double>(steady::now() - t0).count());
    } catch (const db::error& e) {
      failure = e.what();
    }
    metrics_.database_up = failure.empty();
    if (!failure.empty()) {
      ++metrics_.db_errors;
      log_.warn("claim failed; retrying", {{"error", failure}});
      co_await async_idle(db_retry_delay);
      continue;
    }
    const bool full = static_cast<int>(rows.size()) == req.limit;
    const std::size_t found = rows.size();
    // Requests first: neither the wake-state write nor the next-due query may delay them.
    if (found > 0) dispatch(std::move(rows));
    co_await async_publish_wake(wake_signal_.after_claim(steady::now(), found));
    if (full) continue;  // more may be due right now
    std::optional<std::chrono::milliseconds> next_due;
    try {
      next_due = co_await db::async_next_due(*claim_conn_);
    } catch (const db::error& e) {
      ++metrics_.db_errors;
      log_.warn("reading the next due time failed; polling instead", {{"error", std::string(e.what())}});
    }
    steady::duration wait = cfg_.poll_interval;
    if (next_due && *next_due < wait) wait = *next_due + 1ms;
    steady::duration floor = min_idle;
    if (const auto adaptive = wake_signal_.max_idle(steady::now())) {
      // Awake (no notification will come) or handing over to notifications:
      // its cadence also replaces the anti-spin floor, which would be 20 ms.
      wait = std::min(wait, *adaptive);
      floor = std::min(floor, *adaptive);
    }
    co_await async_idle(wait, floor);
  }
  // Going away: inserts must notify the other dispatchers again at once.
  if (wake_signal_.awake()) co_await async_publish_wake(adaptive_wake::action::publish_asleep);
}

void engine::dispatch(std::vector<db::claimed_row> rows) {
  const auto now = sys_clock::now();
  std::map<destination*, std::vector<providers::outbound_event>> groups;
  for (auto& row : rows) {
    ++metrics_.claimed;
    const row_ticket ticket{row.id, row.lease_token, row.attempts, row.created_at};
    if (const auto it = in_flight_.find(row.id); it != in_flight_.end()) {
      // Our own lease expired while the database was away and we claimed the row
      // again: keep the request already running and settle it under the new lease.
      it->second.ticket.lease_token = row.lease_token;
      log_.warn("re-claimed a row this process still has in flight; keeping the running request",
                {{"row_id", row.id}});
      continue;
    }
    in_flight_.emplace(row.id, in_flight_row{ticket, row.provider, row.destination});
    if (row.reclaimed) {
      ++metrics_.reclaimed;
      log_.warn("took over a row whose lease expired", {{"row_id", row.id},
                                                        {"provider", row.provider},
                                                        {"destination", row.destination},
                                                        {"attempt", row.attempts}});
    }
    destination* dest = destinations_.find(row.provider, row.destination);
    if (dest && row.reclaimed && dest->provider->hold_reclaimed()) {
      enqueue(plan_hold(ticket,
                        "the previous lease expired while a request may have been in flight; held for review "
                        "because this destination does not rely on provider dedup (run `dispatcher requeue` to resend)",
                        now));
      continue;
    }
    if (!dest) {
      enqueue(plan_rejection(ticket,
                             "no destination '" + row.destination + "' is configured for provider '" + row.provider +
                                 "' (set OUTBOX_DEST__" + row.provider + "__" + row.destination + "__...)",
                             now));
      continue;
    }
    auto prepared = prepare_event(row, cfg_.max_payload_bytes);
    if (const auto* problem = std::get_if<std::string>(&prepared)) {
      enqueue(plan_rejection(ticket, *problem, now));
      continue;
    }
    auto& event = std::get<providers::outbound_event>(prepared);
    if (auto problem = dest->provider->validate(event, now)) {
      enqueue(plan_rejection(ticket, *problem, now));
      continue;
    }
    groups[dest].push_back(std::move(event));
  }
  for (auto& [dest, events] : groups) {
    if (dest->paused(now)) {
      const sys_clock::duration cap = dest->operator_paused ? sys_clock::duration(operator_pause_recheck)
                                                            : sys_clock::duration(destination_pause);
      const auto remaining =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::min<sys_clock::duration>(dest->paused_until - now, cap));
      put_back(events, remaining, "paused", "destination paused: " + dest->pause_reason);
      continue;
    }
    const std::size_t batch = std::max<std::size_t>(1, dest->provider->max_batch_size());
    for (std::size_t i = 0; i < events.size(); i += batch) {
      std::vector<providers::outbound_event> chunk(std::make_move_iterator(events.begin() + static_cast<long>(i)),
                                                   std::make_move_iterator(events.begin() + static_cast<long>(
                                                                                std::min(events.size(), i + batch))));
      ++active_sends_;
      asio::co_spawn(ex_, async_send_batch(*dest, std::move(chunk)), send_done());
    }
  }
}

asio::awaitable<void> engine::async_send_batch(destination& dest, std::vector<providers::outbound_event> events) {
  const bool slot = co_await dest.limiter.async_acquire();
  if (slot && !stopping_) {
    const auto wait = dest.bucket.reserve(steady::now());
    if (wait > steady::duration::zero()) {
      asio::steady_timer t(ex_, wait);
      rate_waits_.push_back(&t);
      (void)co_await t.async_wait(use_tuple);
      std::erase(rate_waits_, &t);
    }
  }
  if (!slot || stopping_) {
    if (slot) dest.limiter.release();
    put_back(events, 0ms, "released", "released unsent at shutdown");
    co_return;
  }

  for (const auto& e : events) in_flight_.at(e.row_id).started = true;
  auto ex = co_await async_exchange(dest, events);
  dest.limiter.release();
  const auto now = sys_clock::now();

  // Rows given back at shutdown while this request ran: their fate is already queued.
  std::erase_if(events, [&](const providers::outbound_event& e) { return in_flight_.at(e.row_id).abandoned; });
  if (events.empty()) co_return;

  auto& verdict = ex.verdict;
  note_health(dest, ex, now);
  if (verdict.pause_destination) {
    if (!dest.operator_paused) {  // never shorten an on-call pause
      dest.paused_until = now + destination_pause;
      dest.pause_reason = *verdict.pause_destination;
    }
    log_.error("destination paused after a destination-wide failure",
               {{"provider", dest.provider_kind},
                {"destination", dest.name},
                {"reason", dest.pause_reason},
                {"pause_seconds", destination_pause.count()}});
    put_back(events, destination_pause, "paused", dest.pause_reason);
    co_return;
  }
  if (verdict.events.size() != events.size()) {
    verdict.events.assign(events.size(), providers::event_outcome{providers::outcome_kind::retry,
                                                                  "provider returned a wrong number of outcomes", {}});
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& ticket = in_flight_.at(events[i].row_id).ticket;
    if (verdict.events[i].resend_alone && events.size() > 1 && !stopping_) {
      // An all-or-nothing batch was refused: isolate the culprit by resending one by one.
      std::vector<providers::outbound_event> alone{events[i]};
      ++active_sends_;
      asio::co_spawn(ex_, async_send_batch(dest, std::move(alone)), send_done());
      continue;
    }
    enqueue(plan_settlement(ticket, verdict.events[i], ex.facts, cfg_.backoff, now, random01()));
  }
}

asio::awaitable<engine::exchange> engine::async_exchange(destination& dest,
                                                         const std::vector<providers::outbound_event>& events) {
  exchange ex;
  // One retry after refreshing a token the API refused (401): tokens can be revoked early.
  for (int round = 0; round < 2; ++round) {
    providers::http_request request;
    std::string build_error;
    try {
      request = dest.provider->build_request(events, sys_clock::now());
    } catch (const std::exception& e) {
      build_error = std::string("could not build the request: ") + e.what();
    }
    if (!build_error.empty()) {
      ex.facts.started_at = sys_clock::now();
      ex.verdict.events.assign(events.size(), providers::event_outcome{providers::outcome_kind::dead, build_error, {}});
      co_return ex;
    }
    if (dest.tokens) {
      const auto token = co_await dest.tokens->async_token(http_);
      if (!token.ok()) {
        ex.facts.started_at = sys_clock::now();
        ex.facts.response_excerpt = token.error;
        if (token.permanent) {
          ex.verdict.pause_destination = token.error;
        } else {
          ex.verdict.events.assign(events.size(), providers::event_outcome{providers::outcome_kind::retry,
                                                                           token.error, {}});
        }
        co_return ex;
      }
      request.headers.emplace_back("authorization", "Bearer " + token.access_token);
    }
    ex.facts.started_at = sys_clock::now();
    const auto t0 = steady::now();
    const metrics::destination_key key{dest.provider_kind, dest.name};
    ++metrics_.requests[key];
    const auto result = co_await http_.async_send(std::move(request));
    ex.facts.duration = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
    metrics_.request_seconds[key].observe(std::chrono::duration<double>(steady::now() - t0).count());
    if (result.response) {
      ex.facts.http_status = result.response->status;
      ex.facts.response_excerpt = providers::response_excerpt(result.response->body);
    } else {
      ex.facts.http_status.reset();
      ex.facts.response_excerpt = std::string(providers::to_string(result.error)) + ": " + result.error_message;
    }
    try {
      ex.verdict = dest.provider->classify(events, result);
    } catch (const std::exception& e) {
      // A hostile or malformed response must never end the send task (the limiter
      // slot and the rows would be stuck): treat it as a transient failure.
      ex.verdict = {};
      ex.verdict.events.assign(events.size(),
                               providers::event_outcome{providers::outcome_kind::retry,
                                                        std::string("could not judge the response: ") + e.what(), {}});
    }
    if (!ex.verdict.reauthenticate || !dest.tokens || round == 1) break;
    log_.info("access token refused; refreshing it and resending once",
              {{"provider", dest.provider_kind}, {"destination", dest.name}});
    dest.tokens->invalidate();
  }
  if (ex.verdict.reauthenticate && !ex.verdict.pause_destination) {
    ex.verdict.pause_destination = "the API refused a freshly refreshed access token (HTTP 401)";
  }
  co_return ex;
}


outbox::metrics engine::metrics_snapshot() const {
  auto m = metrics_;
  m.in_flight = static_cast<std::int64_t>(in_flight_.size());
  m.listener_up = listener_ && listener_->is_listening();
  const auto now = sys_clock::now();
  destinations_.for_each([&](const destination& d) {
    if (d.paused(now)) m.paused.insert({d.provider_kind, d.name});
  });
  return m;
}

std::pair<bool, std::string> engine::readiness() const {
  if (!metrics_.database_up) return {false, "the database is not reachable"};
  if (cfg_.wake == wake_mode::listen && !(listener_ && listener_->is_listening()))
    return {false, "the LISTEN connection is down (polling continues)"};
  return {true, {}};
}

void engine::note_health(destination& dest, const exchange& ex, sys_clock::time_point now) {
  const bool failing = !ex.facts.http_status || *ex.facts.http_status >= 500 || *ex.facts.http_status == 429;
  if (!failing) {
    dest.consecutive_failures = 0;
    return;
  }
  if (++dest.consecutive_failures < circuit_threshold || dest.paused(now)) return;
  // Circuit breaker: stop hammering a destination that keeps failing; probe again later.
  dest.consecutive_failures = 0;
  dest.paused_until = now + circuit_open_for;
  dest.pause_reason = "circuit open after " + std::to_string(circuit_threshold) + " consecutive failures";
  log_.error("destination circuit opened", {{"provider", dest.provider_kind},
                                            {"destination", dest.name},
                                            {"last_error", ex.facts.response_excerpt},
                                            {"open_seconds", circuit_open_for.count()}});
}

void engine::apply_operator_pauses(const std::vector<db::destination_pause>& pauses) {
  any_operator_pause_ = !pauses.empty();
  destinations_.for_each([&](destination& d) {
    const auto it = std::find_if(pauses.begin(), pauses.end(), [&](const db::destination_pause& p) {
      return p.provider == d.provider_kind && p.destination == d.name;
    });
    if (it != pauses.end() && !d.operator_paused) {
      d.operator_paused = true;
      d.paused_until = sys_clock::time_point::max();
      d.pause_reason = "paused by " + it->paused_by + ": " + it->reason;
      log_.warn("destination paused by on-call", {{"provider", d.provider_kind}, {"destination", d.name},
                                                  {"reason", it->reason}, {"by", it->paused_by}});
    } else if (it == pauses.end() && d.operator_paused) {
      d.operator_paused = false;
      d.paused_until = {};
      d.pause_reason.clear();
      log_.info("destination resumed by on-call", {{"provider", d.provider_kind}, {"destination", d.name}});
      wake();
    }
  });
}

void engine::put_back(const std::vector<providers::outbound_event>& events, std::chrono::milliseconds delay,
                      const std::string& outcome, const std::string& reason) {
  for (const auto& e : events) enqueue(plan_putback(in_flight_.at(e.row_id).ticket, delay, outcome, reason));
}

void engine::enqueue(db::settlement s) {
  settle_queue_.push_back(std::move(s));
  settle_timer_.cancel();
}

void engine::record(const db::settlement& s) {
  const auto& row = in_flight_.at(s.id);
  ++metrics_.deliveries[{row.provider, row.destination, s.outcome}];
  const log_level level = s.state == db::settle_state::sent ? log_level::debug
                          : s.state == db::settle_state::dead ? log_level::warn
                                                              : log_level::info;
  log_.log(level, "row settled", [&] {
    nlohmann::json f{{"row_id", s.id},         {"provider", row.provider},  {"destination", row.destination},
                     {"state", state_name(s.state)}, {"outcome", s.outcome}, {"attempt", s.attempt}};
    if (s.http_status) f["http_status"] = *s.http_status;
    if (!s.error.empty()) f["error"] = s.error;
    if (s.state == db::settle_state::pending) f["retry_in_ms"] = s.retry_delay.count();
    return f;
  });
}

asio::awaitable<void> engine::async_settle_loop() {
  for (;;) {
    if (settle_queue_.empty()) {
      if (settle_stop_) break;
      settle_timer_.expires_after(1h);
      (void)co_await settle_timer_.async_wait(use_tuple);
      continue;
    }
    if (settle_stop_ && steady::now() > settle_deadline_) {
      log_.error("could not record outcomes before exit; those rows are retried after their lease expires",
                 {{"rows", settle_queue_.size()}});
      break;
    }
    const bool connected = co_await async_ensure(settle_conn_, "settle");
    if (!connected) {
      co_await async_pause_for(db_retry_delay);
      continue;
    }
    const auto n = std::min(settle_queue_.size(), max_settle_batch);
    const std::vector<db::settlement> batch(settle_queue_.begin(), settle_queue_.begin() + static_cast<long>(n));
    std::vector<std::int64_t> settled;
    std::string failure;
    try {
      const auto t0 = steady::now();
      settled = co_await db::async_settle(*settle_conn_, instance_id_, batch);
      metrics_.settle_seconds.observe(std::chrono::duration<double>(steady::now() - t0).count());
    } catch (const db::error& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      ++metrics_.db_errors;
      log_.warn("settle failed; retrying", {{"rows", n}, {"error", failure}});
      co_await async_pause_for(db_retry_delay);
      continue;  // the batch stays queued
    }
    settle_queue_.erase(settle_queue_.begin(), settle_queue_.begin() + static_cast<long>(n));
    const std::unordered_set<std::int64_t> ok(settled.begin(), settled.end());
    for (const auto& s : batch) {
      if (ok.contains(s.id)) {
        record(s);
      } else {
        ++metrics_.lease_lost;
        log_.warn("lease lost before settling: another worker owns the row now; outcome not recorded",
                  {{"row_id", s.id}, {"outcome", s.outcome}});
      }
      in_flight_.erase(s.id);
    }
    if (capacity_blocked_) wake();
  }
}

asio::awaitable<void> engine::async_maintenance_loop() {
  const auto renew_every = std::chrono::duration_cast<steady::duration>(cfg_.lease) / 3;
  auto next_sweep = steady::now() + cfg_.sweep_interval;
  while (!stopping_) {
    if (!pause_reload_requested_) {
      maintenance_timer_.expires_after(std::min(renew_every, next_sweep - steady::now()));
      (void)co_await maintenance_timer_.async_wait(use_tuple);
    }
    if (stopping_) break;
    const bool connected = co_await async_ensure(maintenance_conn_, "maintenance");
    if (!connected) continue;
    const bool reload_pauses = std::exchange(pause_reload_requested_, false);
    std::string failure;
    try {
      if (!in_flight_.empty()) {
        std::vector<std::int64_t> ids;
        std::vector<std::string> tokens;
        for (const auto& [id, row] : in_flight_) {
          ids.push_back(id);
          tokens.push_back(row.ticket.lease_token);
        }
        const auto renewed = co_await db::async_renew(*maintenance_conn_, ids, tokens, cfg_.lease);
        log_.debug("leases renewed", {{"rows", renewed}, {"held", ids.size()}});
      }
      if (reload_pauses && steady::now() < next_sweep) {
        apply_operator_pauses(co_await db::async_list_pauses(*maintenance_conn_));
        wake();
      }
      if (steady::now() >= next_sweep) {
        next_sweep = steady::now() + cfg_.sweep_interval;
        db::sweep_request req;
        req.max_attempts = cfg_.backoff.max_attempts;
        destinations_.for_each([&](const destination& d) {
          if (d.provider->hold_reclaimed()) req.hold_destinations.push_back(d.provider_kind + "/" + d.name);
        });
        const auto swept = co_await db::async_sweep(*maintenance_conn_, req);
        apply_operator_pauses(co_await db::async_list_pauses(*maintenance_conn_));
        co_await async_read_wake_mode(*maintenance_conn_);
        const auto gauges = co_await db::async_queue_gauges(*maintenance_conn_);
        metrics_.rows_by_state = gauges.rows_by_state;
        metrics_.oldest_due_seconds = gauges.oldest_due_seconds;
        if (!swept.empty()) {
          metrics_.lease_expiries += swept.size();
          nlohmann::json ids = nlohmann::json::array();
          for (const auto& r : swept) ids.push_back(r.id);
          log_.warn("sweeper reset expired leases", {{"rows", swept.size()}, {"row_ids", ids}});
          wake();
        }
      }
    } catch (const db::error& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      ++metrics_.db_errors;
      log_.warn("lease maintenance failed; retrying", {{"error", failure}});
    }
  }
}

}  // namespace outbox
