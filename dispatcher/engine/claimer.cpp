#include "dispatcher/engine/claimer.hpp"

#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "db/wake_signal.hpp"
#include "dispatcher/engine/instance_id.hpp"
#include "dispatcher/engine/use_tuple.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using sys_clock = std::chrono::system_clock;
constexpr auto db_retry_delay = 1s;
constexpr auto min_idle = 20ms;  // never spin on rows locked by another dispatcher
// Draining a backlog at the in-flight limit, each settle frees a few rows; a
// claim waits this long for a quarter of a claim batch to be free instead of
// claiming each few rows with a statement (and a commit) of their own.
constexpr auto claim_gather = 5ms;

}  // namespace

claimer::claimer(engine_runtime rt, claimer_options options, db::delivery_store& store,
                 destination_registry& destinations, const in_flight_table& in_flight, const std::string& instance_id,
                 const bool& stopping, sender& send)
    : rt_(rt),
      options_(options),
      destinations_(destinations),
      in_flight_(in_flight),
      instance_id_(instance_id),
      stopping_(stopping),
      sender_(send),
      link_(rt, store, "claim"),
      wake_signal_(options_.adaptive),
      timer_(rt.ex, rt.clock) {}

void claimer::wake() {
  wake_pending_ = true;
  timer_.cancel();
}

void claimer::capacity_freed() {
  if (waiting_for_capacity_) wake();
}

void claimer::set_adaptive(bool adaptive, const std::string& mode) {
  if (!options_.listens) return;  // a poll-only dispatcher never claims to be awake
  if (adaptive == wake_signal_.enabled()) return;
  rt_.log.info("database wake mode", {{"mode", mode}});
  wake_signal_.set_enabled(adaptive);
}

asio::awaitable<void> claimer::async_idle(steady::duration max_wait, steady::duration floor) {
  if (!wake_pending_ && !stopping_) {
    timer_.expires_after(std::max<steady::duration>(max_wait, floor));
    (void)co_await timer_.async_wait();
  }
  wake_pending_ = false;
}

asio::awaitable<void> claimer::async_wait_for_capacity(steady::duration max_wait, steady::duration floor) {
  waiting_for_capacity_ = true;
  co_await async_idle(max_wait, floor);
  waiting_for_capacity_ = false;
}

std::vector<std::string> claimer::skipped_destinations() const {
  std::vector<std::string> keys;
  const auto now = rt_.clock.system_now();
  destinations_.for_each([&](const destination& d) {
    if (d.gate.paused(now)) keys.push_back(d.key());
  });
  // In the registry but not usable (disabled, invalid): their rows wait, unclaimed.
  for (const auto& [key, why] : destinations_.unusable()) keys.push_back(key);
  return keys;
}

// Whether one ordered scan stepping over the skipped destinations' rows costs
// less than the claim destination by destination, by the last backlog read
// (each sweep; unknown: by destination). Stepping over a row costs about
// 0.5 us; the claim by destination about 20 us for each destination with
// unfinished rows (bench/many_destinations.cpp: 1,000 destinations, 4,400 rows
// skipped: 4.8 ms against 22 ms; outbox_bench paused-backlog: 200,000 rows of
// one paused destination: 43 ms against 1.2 ms).
bool claimer::few_rows_in(const std::vector<std::string>& skipped) const {
  if (skipped.empty()) return true;
  if (!rt_.metrics.backlog_rows) return false;
  const auto& backlog = *rt_.metrics.backlog_rows;
  std::int64_t rows = 0;
  for (const auto& key : skipped) {
    // The read lists every configured or unusable destination with unsent rows: absent is none.
    const auto it = backlog.find(split_key(key));
    rows += it == backlog.end() ? 0 : it->second;
  }
  return rows <= skipped_rows_base + skipped_rows_per_destination * static_cast<std::int64_t>(backlog.size());
}

std::optional<steady::duration> claimer::until_a_pause_ends() const {
  std::optional<steady::duration> soonest;
  const auto now = rt_.clock.system_now();
  destinations_.for_each([&](const destination& d) {
    if (const auto at = d.gate.reopens_at()) {
      const auto left = std::max<steady::duration>(steady::duration::zero(), *at - now);
      if (!soonest || left < *soonest) soonest = left;
    }
  });
  return soonest;
}

db::claim_request claimer::request(std::size_t limit) const {
  db::claim_request req;
  req.owner = instance_id_;
  req.token = random_uuid();
  req.lease = options_.lease;
  req.limit = static_cast<int>(limit);
  req.max_attempts = options_.max_attempts;
  return req;
}

asio::awaitable<void> claimer::async_run() {
  const auto max_in_flight = static_cast<std::size_t>(options_.max_in_flight);
  while (!stopping_) {
    std::size_t capacity = in_flight_.size() < max_in_flight ? max_in_flight - in_flight_.size() : 0;
    if (capacity == 0) {
      co_await async_wait_for_capacity(options_.poll_interval, min_idle);  // the settler wakes us
      continue;
    }
    if (co_await async_gather_capacity(capacity)) continue;
    if (std::exchange(reconnect_, false)) link_.drop();  // its session settings changed
    db::store_session* conn = co_await link_.async_get();
    bool ready = conn != nullptr;
    if (ready) ready = co_await async_release_orphans(*conn);
    if (ready) claim_sent_ = true;  // from here on, a claim's answer may be lost
    if (ready) ready = co_await async_probe(*conn, capacity);
    if (!ready) {
      co_await async_idle(db_retry_delay, db_retry_delay);
      continue;
    }
    bool full = false;
    const auto found = co_await async_claim(*conn, capacity, full);
    last_claim_full_ = found && full;
    if (!found) {
      co_await async_idle(db_retry_delay, db_retry_delay);
      continue;
    }
    co_await async_publish(wake_signal_.after_claim(rt_.clock.steady_now(), *found));
    if (full) continue;  // more may be due right now
    if (link_.connected()) co_await async_wait_next();
  }
  // Going away: inserts must notify the other dispatchers again at once.
  if (wake_signal_.awake()) co_await async_publish(adaptive_wake::action::publish_asleep);
}

// True when it waited for more capacity (the caller looks again): only while
// draining at the in-flight limit, and for claim_gather at most.
asio::awaitable<bool> claimer::async_gather_capacity(std::size_t capacity) {
  const auto batch = static_cast<std::size_t>(std::min(options_.claim_batch, options_.max_in_flight));
  if (!last_claim_full_ || capacity * 4 >= batch || in_flight_.size() == 0 || stopping_) {
    gather_until_.reset();
    co_return false;
  }
  const auto now = rt_.clock.steady_now();
  if (!gather_until_) gather_until_ = now + claim_gather;
  if (now >= *gather_until_) {
    gather_until_.reset();
    co_return false;
  }
  co_await async_wait_for_capacity(*gather_until_ - now, steady::duration::zero());  // a settle ends it early
  co_return true;
}

// Rows claimed under our name whose claim answer was lost: release them once per new connection.
// Until this process has sent a claim there is nothing to release: its
// instance id is new (instance_id.cpp), so no row is under its name, and the
// statement would read every due row of the backlog at start-up for nothing
// (81 ms of PostgreSQL CPU for a backlog of 30,000).
asio::awaitable<bool> claimer::async_release_orphans(db::store_session& conn) {
  if (link_.generation() == orphans_checked_generation_) co_return true;
  if (!claim_sent_) {
    orphans_checked_generation_ = link_.generation();
    co_return true;
  }
  const auto held = in_flight_.tokens();
  const auto released = co_await conn.async_release_orphans(instance_id_, held);
  if (!released) {
    ++rt_.metrics.db_errors;
    rt_.log.warn("could not release rows of lost claims; retrying", {{"error", released.error().what()}});
    co_return false;
  }
  orphans_checked_generation_ = link_.generation();
  if (!released->empty()) {
    rt_.metrics.orphans_released += released->size();
    rt_.log.warn("released rows of claims whose answer was lost with the connection", {{"rows", released->size()}});
  }
  co_return true;
}

// One row alone for each destination whose automatic pause has ended.
asio::awaitable<bool> claimer::async_probe(db::store_session& conn, std::size_t& capacity) {
  const auto now = rt_.clock.system_now();
  std::vector<std::shared_ptr<destination>> due;  // kept: the registry may drop one while a claim runs
  destinations_.for_each_shared([&](const std::shared_ptr<destination>& d) {
    if (d->gate.probe_due(now)) due.push_back(d);
  });
  for (const auto& d : due) {
    if (capacity == 0) break;
    auto req = request(1);
    req.only_destination = d->key();
    auto rows = co_await conn.async_claim(req);
    if (!rows) {
      ++rt_.metrics.db_errors;
      rt_.log.warn("probe claim failed; retrying", {{"error", rows.error().what()}});
      co_return false;
    }
    if (rows->empty()) {
      d->gate.probe_not_needed();  // nothing waiting: the next row tests it
      continue;
    }
    d->gate.probe_started();
    --capacity;
    rt_.log.info("pause over; probing the destination with one row",
                 {{"provider", d->provider_kind}, {"destination", d->name}});
    sender_.dispatch(std::move(*rows), true);
  }
  co_return true;
}

// Claims and dispatches; the number of rows found, or nullopt on failure.
asio::awaitable<std::optional<std::size_t>> claimer::async_claim(db::store_session& conn, std::size_t capacity,
                                                                 bool& full) {
  auto req = request(std::min<std::size_t>(static_cast<std::size_t>(options_.claim_batch), capacity));
  req.skip_destinations = skipped_destinations();
  req.few_skipped_rows = few_rows_in(req.skip_destinations);
  const auto t0 = rt_.clock.steady_now();
  const bool one_scan = req.one_ordered_scan();  // else destination by destination: nothing to step over
  if (one_scan) req.scan_from = scan_mark_.start(req.skip_destinations, t0);
  auto found_batch = co_await conn.async_claim_batch(req);
  rt_.metrics.database_up = found_batch.has_value();
  next_due_.reset();
  // A claim that was not full read every due row: the next one, a while later,
  // starts at the beginning (it then also finds leases that expired meanwhile).
  if (found_batch && one_scan && static_cast<int>(found_batch->rows.size()) == req.limit) {
    scan_mark_.claimed(found_batch->first_picked, t0);
  } else {
    if (found_batch && one_scan) scan_mark_.claimed(std::nullopt, t0);  // counts as a look from the start
    scan_mark_.forget();
  }
  if (!found_batch) {
    // The claim may have committed: its rows are released after the reconnect.
    ++rt_.metrics.db_errors;
    rt_.log.warn("claim failed; retrying", {{"error", found_batch.error().what()}});
    co_return std::nullopt;
  }
  next_due_ = found_batch->next_due;
  auto& rows = found_batch->rows;
  rt_.metrics.claim_seconds.observe(std::chrono::duration<double>(rt_.clock.steady_now() - t0).count());
  full = static_cast<int>(rows.size()) == req.limit;
  const std::size_t found = rows.size();
  if (!req.skip_destinations.empty()) {
    rt_.log.debug("claim skipped paused destinations",
                  {{"destinations", req.skip_destinations.size()}, {"rows", found}});
  }
  // Requests first: neither the wake-state write nor the next-due query may delay them.
  if (found > 0) sender_.dispatch(std::move(rows), false);
  co_return found;
}

asio::awaitable<void> claimer::async_wait_next() {
  // The claim that was not full answered it (db::claim_batch::next_due); a
  // full claim never waits, so there is no query of its own to run here.
  steady::duration wait = options_.poll_interval;
  if (next_due_ && *next_due_ && **next_due_ < wait) wait = **next_due_ + 1ms;
  if (const auto reopen = until_a_pause_ends(); reopen && *reopen < wait) wait = *reopen + 1ms;
  steady::duration floor = min_idle;
  if (const auto adaptive = wake_signal_.max_idle(rt_.clock.steady_now())) {
    // Awake (no notification will come) or handing over to notifications:
    // its cadence also replaces the anti-spin floor, which would be 20 ms.
    wait = std::min(wait, *adaptive);
    floor = std::min(floor, *adaptive);
  }
  co_await async_idle(wait, floor);
}

asio::awaitable<void> claimer::async_publish(adaptive_wake::action a) {
  if (a == adaptive_wake::action::none) co_return;
  db::store_session* conn = co_await link_.async_get();
  if (!conn) co_return;
  const bool awake = a == adaptive_wake::action::publish_awake;
  db::outcome<void> done;
  if (awake) {
    done = co_await conn->async_publish_awake(instance_id_, options_.adaptive.ttl);
  } else {
    done = co_await conn->async_publish_asleep(instance_id_);
  }
  if (!done) {
    // Not published: stay as we were; the next claim decides again. Failing to
    // go awake is the safe side (the trigger keeps notifying).
    ++rt_.metrics.db_errors;
    rt_.log.warn("could not publish the wake state", {{"awake", awake}, {"error", done.error().what()}});
    co_return;
  }
  const bool was_awake = wake_signal_.awake();
  wake_signal_.published(a, rt_.clock.steady_now());
  rt_.metrics.wake_awake = wake_signal_.awake();
  if (was_awake == awake) co_return;  // a refresh
  ++(awake ? rt_.metrics.wake_awake_transitions : rt_.metrics.wake_asleep_transitions);
  rt_.log.debug(awake ? "draining: marked awake, inserts stop notifying" : "idle: marked asleep, inserts notify again",
                {});
}

}  // namespace outbox
