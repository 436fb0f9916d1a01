#include "dispatcher/engine/reconciler.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "dispatcher/engine/use_tuple.hpp"
#include "providers/http/http_outcome.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
constexpr std::size_t checks_per_round = 50;
// A taken request is not offered to another dispatcher for this long.
constexpr std::chrono::seconds hold_while_checking{600};

// Destinations with no shared quota each have their own.
std::string quota_scope_of(const destination& d) {
  auto scope = d.provider->status_quota_scope();
  return scope.empty() ? d.key() : scope;
}

bool is_final(providers::request_state s) {
  return s == providers::request_state::success || s == providers::request_state::partial_success ||
         s == providers::request_state::failure;
}

// Records one check. When the connection was lost, once more on a fresh one: the
// status was read already, and an unrecorded request waits hold_while_checking.
// A replay of a write that did commit only counts one check more.
asio::awaitable<std::optional<std::int64_t>> async_record(db_link& link, db::store_session*& conn,
                                                          const db::request_check& check, logger& log) {
  auto rows = co_await conn->async_record_request_check(check);
  if (!rows && !conn->connected()) {
    link.drop();
    conn = co_await link.async_get();
    if (conn != nullptr) rows = co_await conn->async_record_request_check(check);
  }
  if (rows) co_return *rows;
  log.warn("could not record a request status", {{"request_id", check.request_id}, {"error", rows.error().what()}});
  if (conn != nullptr && !conn->connected()) link.drop();
  co_return std::nullopt;
}

}  // namespace

reconciler::reconciler(engine_runtime rt, reconciler_options options, db::delivery_store& store,
                       destination_registry& destinations, providers::http_transport* http)
    : rt_(rt),
      options_(std::move(options)),
      link_(rt, store, "reconciler"),
      destinations_(destinations),
      given_http_(http),
      timer_(rt.ex, rt.clock) {}

bool reconciler::needed(const destination_registry& destinations) {
  bool any = false;
  destinations.for_each([&](const destination& d) { any = any || d.provider->status_request("probe").has_value(); });
  return any;
}

void reconciler::stop() {
  stop_ = true;
  timer_.cancel();
}

asio::awaitable<void> reconciler::async_run() {
  if (!given_http_ && !http_) http_.emplace(rt_.ex, options_.http);
  while (!stop_) {
    if (auto* conn = co_await link_.async_get()) co_await async_check_due(*conn);
    if (stop_) break;
    timer_.expires_after(options_.status_poll_interval);
    (void)co_await timer_.async_wait();
  }
  transport().close_idle();
}

asio::awaitable<void> reconciler::async_check_due(db::store_session& conn) {
  auto due = co_await conn.async_take_due_requests(checks_per_round, hold_while_checking);
  if (!due) {
    rt_.log.warn("could not read requests due for a status check", {{"error", due.error().what()}});
    if (!conn.connected()) link_.drop();
    co_return;
  }
  db::store_session* current = &conn;
  for (const auto& request : *due) {
    if (stop_) co_return;
    const auto check = co_await async_check(request);
    const auto rows = co_await async_record(link_, current, check, rt_.log);
    if (!rows) co_return;  // the rest of the round comes due again after hold_while_checking
    note(check, *rows);
  }
}

// One status read; the result says what to record (status empty: unchanged).
asio::awaitable<db::request_check> reconciler::async_check(const db::due_request& due) {
  db::request_check check{due.provider, due.destination, due.request_id, "", "", unreadable_retry};
  const bool too_old = std::chrono::seconds{due.age_seconds} >= give_up_after;
  // Kept for the whole check: the registry may drop the destination while it waits.
  const auto dest = destinations_.find_shared(due.provider, due.destination);
  // The provider and token source as they are now: a registry change during the check
  // replaces the destination's, never these.
  const auto provider = dest ? dest->provider : nullptr;
  const auto tokens = dest ? dest->tokens : nullptr;
  std::optional<providers::http_request> request;
  if (provider) request = provider->status_request(due.request_id);
  if (!request) {
    check.detail = "destination is no longer configured with a status endpoint";
    check.next_check = std::chrono::hours{1};
    if (too_old) check.status = "UNKNOWN";
    co_return check;
  }
  // Unread: asked again soon, but never later than a regular check would be.
  check.next_check = std::min<std::chrono::seconds>(unreadable_retry, provider->status_check_delay());
  const std::string scope = quota_scope_of(*dest);
  if (const auto left = scope_paused(scope)) {
    check.read = false;  // the project's quota is spent: wait with it, without asking
    check.next_check = *left;
    check.detail = "status reads of " + scope + " wait for its quota (RESOURCE_EXHAUSTED)";
    co_return check;
  }
  if (tokens) {
    const auto token = co_await tokens->async_token(transport(), rt_.clock.steady_now());
    if (!token.ok()) {
      check.detail = "no access token for the status check: " + token.error;
      if (too_old) check.status = "UNKNOWN";
      co_return check;
    }
    request->headers.emplace_back("authorization", "Bearer " + token.access_token);
  }
  const auto result = co_await transport().async_send(std::move(*request));
  // A refused token (revoked early) would stay cached until it expires: the next check gets a fresh one.
  if (tokens && result.response && result.response->status == 401) tokens->invalidate();
  const auto status = provider->read_status(result);
  check.detail = status.detail;
  if (status.quota_exhausted) {
    pause_scope(scope, *status.quota_exhausted, check.next_check);
    check.next_check = scope_paused(scope).value_or(check.next_check);
  } else {
    quota_pauses_.erase(scope);  // a read went through: the next refusal starts the back-off again
  }
  if (status.retry_later) {
    if (too_old) check.status = "UNKNOWN";
    co_return check;
  }
  check.status = std::string{providers::to_string(status.state)};
  check.next_check = processing_interval(provider->status_check_delay(), due.checks);
  if (!is_final(status.state) && too_old) {
    check.status = "UNKNOWN";
    check.detail = "no final status " + std::to_string(give_up_after.count()) +
                   " h after acceptance; last: " + std::string{providers::to_string(status.state)} +
                   (status.detail.empty() ? "" : " " + status.detail);
  }
  co_return check;
}

std::chrono::seconds reconciler::processing_interval(std::chrono::seconds delay, int reads) {
  const std::chrono::seconds widest{widest_interval};
  std::chrono::seconds next = std::max(delay, std::chrono::seconds{1});
  for (int i = 0; i < reads && next < widest; ++i) next *= 2;
  return std::min(next, std::max(widest, delay));
}

void reconciler::pause_scope(const std::string& scope, std::chrono::seconds retry_delay, std::chrono::seconds first) {
  auto& pause = quota_pauses_[scope];
  const auto now = rt_.clock.steady_now();
  const bool in_a_row = pause.last.count() > 0;
  const std::chrono::seconds backoff =
      in_a_row ? std::min<std::chrono::seconds>(pause.last * 2, longest_quota_pause) : std::max(first, 1s);
  pause.last = std::max(backoff, retry_delay);
  pause.until = std::max(pause.until, now + pause.last);
  rt_.log.warn("status reads paused: the provider's quota is exhausted",
               {{"scope", scope}, {"pause_seconds", pause.last.count()}, {"retry_delay_seconds", retry_delay.count()}});
}

std::optional<std::chrono::seconds> reconciler::scope_paused(const std::string& scope) const {
  const auto it = quota_pauses_.find(scope);
  const auto now = rt_.clock.steady_now();
  if (it == quota_pauses_.end() || it->second.until <= now) return std::nullopt;
  return std::chrono::ceil<std::chrono::seconds>(it->second.until - now);
}

void reconciler::note(const db::request_check& check, std::int64_t rows) {
  const nlohmann::json fields{{"provider", check.provider},
                              {"destination", check.destination},
                              {"request_id", check.request_id},
                              {"status", check.status.empty() ? "unread" : check.status},
                              {"rows", rows},
                              {"detail", check.detail}};
  if (check.status.empty() || check.status == "PROCESSING") {
    rt_.log.debug("request status not final yet", fields);
    return;
  }
  rt_.metrics.provider_statuses[{check.provider, check.destination, check.status}] += static_cast<std::uint64_t>(rows);
  if (check.status == "SUCCESS") {
    rt_.log.info("provider processed the request", fields);
  } else {
    rt_.log.warn("provider did not process every event of the request", fields);
  }
}

}  // namespace outbox
