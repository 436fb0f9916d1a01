#include "dispatcher/engine/settler.hpp"
#include "dispatcher/engine/use_tuple.hpp"

#include <algorithm>
#include <unordered_set>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
constexpr std::size_t max_batch = 1000;
constexpr std::size_t flush_at_once = 64;  // outcomes that end the settle window early
// While rows wait inside the process for a destination's slot, the
// destination sets the pace, not the database: after a settle, outcomes wait
// up to this long (or for flush_at_once of them) to share the next one. With a
// receiver at CONCURRENCY 10 each settle otherwise took the 16 outcomes that
// arrived while the last one ran: 1,153 settles (and commits) and 561 claims
// for 20,000 rows, against 297 and 300 with the wait, and a fifth less
// PostgreSQL CPU per event (issue 29, docs/bench-log/2026-12-06.md).
constexpr auto backlog_settle_window = 20ms;
constexpr auto reconnect_delay = 1s;  // only when the connect itself failed
// A database-wide refusal (read-only, disk full, a cancel, a lock or statement
// timeout, a deadlock): the same outcomes go again after this, doubled each
// time up to the longest, on a new connection.
constexpr auto first_refusal_delay = 250ms;
constexpr auto longest_refusal_delay = 5s;

// What is left of an outcome when its own texts cannot be stored: ASCII only.
db::settlement plain(db::settlement s, const std::string& why) {
  std::string error = "the outcome's text could not be stored (" + why + ")";
  std::string kept;
  for (const char c : s.error) {
    if (c >= 0x20 && c < 0x7f) kept += c;
    if (kept.size() >= 200) break;
  }
  if (!kept.empty()) error += ": " + kept;
  s.error = std::move(error);
  s.response_excerpt.clear();
  s.note.clear();
  return s;
}

// SQLSTATE classes 22 (data exception), 23 (integrity constraint violation) and
// 54 (program limit exceeded: a value too large) are caused by what a row holds:
// halving the batch isolates that row. Any other refusal says nothing about the
// rows, and splitting or dropping them would lose delivered outcomes (the rows
// would be sent again once their leases end).
bool caused_by_row_data(const std::string& sqlstate) {
  return sqlstate.starts_with("22") || sqlstate.starts_with("23") || sqlstate.starts_with("54");
}

}  // namespace

settler::settler(engine_runtime rt, settler_options options, db::delivery_store& store,
                 const destination_registry& destinations, in_flight_table& in_flight, const std::string& instance_id,
                 claimer_signals claimer)
    : rt_(rt),
      options_(options),
      destinations_(destinations),
      in_flight_(in_flight),
      instance_id_(instance_id),
      claimer_(std::move(claimer)),
      link_(rt, store, "settle"),
      timer_(rt.ex, rt.clock) {}

void settler::enqueue(db::settlement s, metrics::destination_key labels) {
  const auto id = s.id;
  if (!queue_.contains(id)) order_.push_back(id);
  queue_.insert_or_assign(id, queued_outcome{std::move(s), std::move(labels)});
  if (backing_off_) return;  // new outcomes wait with the others for the database
  if (!gathering_ || !worth_gathering()) timer_.cancel();
}

// Whether some row in flight still waits for its request's answer: only then
// can another outcome arrive to share the settle. When none does (every row
// held has its outcome queued), waiting out the window only delays the room
// the claimer needs for its next claim: with OUTBOX_MAX_IN_FLIGHT=10 that
// wait was most of each claim-send-settle cycle (2,144 rows/s; see
// docs/benchmarks.md).
bool settler::requests_out() const { return in_flight_.size() > queue_.size(); }

// Whether the gathering outcomes may wait for more. Behind a destination's
// slots, only while more rows wait for a slot than outcomes are held: each
// held outcome keeps its row's room from the claimer, and once the waiting rows
// run out the requests would stop until the settle and the next claim are done
// (with OUTBOX_MAX_IN_FLIGHT close to CONCURRENCY, at once).
bool settler::worth_gathering() const {
  if (queue_.empty() || queue_.size() >= flush_at_once || !requests_out()) return false;
  return !behind_slots_ || destinations_.rows_waiting_for_slots() > queue_.size();
}

// After an idle spell the first outcome waits up to the settle window for
// others, so a trickle of outcomes shares statements and commits. Outcomes that
// arrive while a settle runs need no window: they queue behind it, unless rows
// wait for a destination's slots (backlog_settle_window).
asio::awaitable<void> settler::async_gather(steady::duration window, bool behind_slots) {
  if (window <= steady::duration::zero()) co_return;
  const auto until = rt_.clock.steady_now() + window;
  gathering_ = true;
  behind_slots_ = behind_slots;
  while (!stop_ && worth_gathering() && rt_.clock.steady_now() < until) {
    timer_.expires_at(until);
    (void)co_await timer_.async_wait();
  }
  gathering_ = false;
  behind_slots_ = false;
}

void settler::stop(steady::time_point deadline) {
  stop_ = true;
  deadline_ = deadline;
  timer_.cancel();
}

std::vector<db::settlement> settler::next_batch() {
  std::vector<db::settlement> batch;
  for (auto it = order_.begin(); it != order_.end() && batch.size() < max_batch; ++it) {
    auto found = queue_.find(*it);
    if (found == queue_.end()) continue;
    db::settlement s = found->second.settlement;
    // The row's current lease: it may have been re-claimed since the outcome was queued.
    if (const auto* row = in_flight_.find(s.id)) s.lease_token = row->ticket.lease_token;
    batch.push_back(std::move(s));
  }
  return batch;
}

asio::awaitable<void> settler::async_run() {
  for (;;) {
    std::erase_if(order_, [&](std::int64_t id) { return !queue_.contains(id); });
    if (queue_.empty()) {
      if (stop_) break;
      timer_.expires_after(1h);
      (void)co_await timer_.async_wait();
      co_await async_gather(options_.settle_window, false);
      continue;
    }
    if (!stop_ && options_.settle_window > steady::duration::zero()) co_await async_gather(backlog_settle_window, true);
    if (stop_ && rt_.clock.steady_now() > deadline_) {
      rt_.log.error("could not record outcomes before exit; those rows are retried after their lease expires",
                    {{"rows", queue_.size()}});
      break;
    }
    db::store_session* conn = co_await link_.async_get();
    if (!conn) {
      timer_.expires_after(reconnect_delay);
      (void)co_await timer_.async_wait();
      continue;
    }
    // A lost connection: loop at once; the next get reconnects and the same settle goes again.
    if (co_await async_flush(*conn, next_batch()) == flush_result::refused) {
      co_await async_wait_after_refusal();
    } else {
      refusal_delay_ = steady::duration::zero();
    }
  }
}

// After a database-wide refusal: wait, then the same outcomes go again on a new
// connection (a failover's new primary; with several hosts the connection asks
// for a read-write one).
asio::awaitable<void> settler::async_wait_after_refusal() {
  refusal_delay_ = refusal_delay_ == steady::duration::zero()
                       ? steady::duration{first_refusal_delay}
                       : std::min<steady::duration>(refusal_delay_ * 2, longest_refusal_delay);
  link_.drop();
  backing_off_ = true;
  timer_.expires_after(refusal_delay_);
  (void)co_await timer_.async_wait();
  backing_off_ = false;
}

asio::awaitable<settler::flush_result> settler::async_flush(db::store_session& conn,
                                                            std::vector<db::settlement> batch) {
  const auto t0 = rt_.clock.steady_now();
  const auto r = co_await conn.async_settle(instance_id_, batch);
  if (r) {
    rt_.metrics.settle_seconds.observe(std::chrono::duration<double>(rt_.clock.steady_now() - t0).count());
    apply(batch, *r);
    co_return flush_result::done;
  }
  ++rt_.metrics.db_errors;
  const auto& failure = r.error();
  if (failure.connection_lost()) {
    rt_.log.warn("settle failed with the connection; sending it again on a new one",
                 {{"rows", batch.size()}, {"error", failure.what()}});
    co_return flush_result::connection_lost;
  }
  if (!caused_by_row_data(failure.sqlstate())) {
    rt_.log.warn("settle refused by the database, not for a row's data; keeping the outcomes and trying again",
                 {{"rows", batch.size()}, {"error", failure.what()}, {"sqlstate", failure.sqlstate()}});
    co_return flush_result::refused;
  }
  if (batch.size() == 1) co_return co_await async_flush_alone(conn, std::move(batch.front()));
  // A data problem in some row: halve until it is alone, so the others are recorded.
  rt_.log.warn("settle rejected by the database; splitting the batch to isolate the row",
               {{"rows", batch.size()}, {"error", failure.what()}, {"sqlstate", failure.sqlstate()}});
  const auto half = static_cast<long>(batch.size() / 2);
  std::vector<db::settlement> first(batch.begin(), batch.begin() + half), second(batch.begin() + half, batch.end());
  if (const auto r = co_await async_flush(conn, std::move(first)); r != flush_result::done) co_return r;
  co_return co_await async_flush(conn, std::move(second));
}

asio::awaitable<settler::flush_result> settler::async_flush_alone(db::store_session& conn, db::settlement s) {
  std::vector<db::settlement> one{plain(std::move(s), "rejected by the database")};
  const auto r = co_await conn.async_settle(instance_id_, one);
  if (r) {
    apply(one, *r);
    co_return flush_result::done;
  }
  if (r.error().connection_lost()) co_return flush_result::connection_lost;
  if (!caused_by_row_data(r.error().sqlstate())) co_return flush_result::refused;
  // Even the plain outcome is refused: never wedge the queue on it. The row's
  // lease expires and it is retried like after a crash.
  rt_.log.error("could not record an outcome; dropping it (the row is retried after its lease expires)",
                {{"row_id", one.front().id}, {"error", r.error().what()}});
  finish(one.front());
  claimer_.capacity_freed();
  co_return flush_result::done;
}

void settler::apply(std::span<const db::settlement> batch, const db::settle_report& report) {
  const std::unordered_set<std::int64_t> applied(report.applied.begin(), report.applied.end());
  const std::unordered_set<std::int64_t> earlier(report.already_applied.begin(), report.already_applied.end());
  for (const auto& s : batch) {
    if (applied.contains(s.id)) {
      record(s);
    } else if (earlier.contains(s.id)) {
      rt_.log.info("outcome already recorded by a settle whose answer was lost", {{"row_id", s.id}});
      record(s);
    } else {
      ++rt_.metrics.lease_lost;
      rt_.log.warn("lease lost before settling: another worker owns the row now; outcome not recorded",
                   {{"row_id", s.id}, {"outcome", s.outcome}});
    }
    finish(s);
  }
  // A retry is due at a time the claimer's last answer did not know; one claim
  // learns it. Otherwise the claimer only needs to hear of the freed room.
  const bool retry = std::any_of(batch.begin(), batch.end(),
                                 [](const db::settlement& s) { return s.state == db::settle_state::pending; });
  if (retry) {
    claimer_.wake();
  } else {
    claimer_.capacity_freed();
  }
}

void settler::finish(const db::settlement& s) {
  queue_.erase(s.id);
  in_flight_.erase(s.id);
}

void settler::record(const db::settlement& s) {
  const auto queued = queue_.find(s.id);
  if (queued == queue_.end()) return;
  const auto& labels = queued->second.labels;
  rt_.metrics.note_settled(labels, s.outcome, s.error, s.started_at);
  const log_level level = s.state == db::settle_state::sent   ? log_level::debug
                          : s.state == db::settle_state::dead ? log_level::warn
                                                              : log_level::info;
  rt_.log.log(level, "row settled", [&] {
    nlohmann::json f{{"row_id", s.id},
                     {"provider", labels.first},
                     {"destination", labels.second},
                     {"state", db::to_string(s.state)},
                     {"outcome", s.outcome},
                     {"attempt", s.attempt}};
    if (s.http_status) f["http_status"] = *s.http_status;
    if (!s.error.empty()) f["error"] = s.error;
    if (s.state == db::settle_state::pending) f["retry_in_ms"] = s.retry_delay.count();
    return f;
  });
}

}  // namespace outbox
