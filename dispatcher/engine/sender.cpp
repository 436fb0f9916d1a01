#include "dispatcher/engine/sender.hpp"

#include <cstdio>
#include <map>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "dispatcher/engine/event_prep.hpp"
#include "dispatcher/engine/task_guard.hpp"
#include "dispatcher/engine/use_tuple.hpp"
#include "providers/http/http_outcome.hpp"
#include "providers/text.hpp"

namespace outbox {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using sys_clock = std::chrono::system_clock;
using steady = std::chrono::steady_clock;
constexpr auto destination_pause = 60s;  // after a destination-wide failure (401/403): probe again after this
// After the 4xx share crossed MAX_4XX_SHARE: long enough for on-call to look before
// more of the app's error budget goes (`dispatcher resume` lifts it at once).
constexpr auto client_error_pause = std::chrono::seconds{15min};

// A provider's check must never end the claim loop: an exception is a rejection too.
providers::preparation prepared_for(const destination& dest, const providers::outbound_event& event,
                                    sys_clock::time_point now) {
  try {
    return dest.provider->prepare(event, now);
  } catch (const std::exception& e) {
    providers::preparation p;
    p.error = std::string("could not validate the event: ") + e.what();
    return p;
  }
}

}  // namespace

sender::sender(engine_runtime rt, sender_options options, destination_registry& destinations,
               in_flight_table& in_flight, const bool& stopping, std::function<void()> wake_claimer, settler& settle,
               providers::http_transport& http)
    : rt_(rt),
      options_(std::move(options)),
      destinations_(destinations),
      in_flight_(in_flight),
      stopping_(stopping),
      wake_claimer_(std::move(wake_claimer)),
      settler_(settle),
      http_(http),
      random_(std::random_device{}()) {}

double sender::random01() { return std::uniform_real_distribution<double>(0.0, 1.0)(random_); }

void sender::settle(db::settlement s) {
  metrics::destination_key labels{unknown_label, unknown_label};
  if (auto* row = in_flight_.find(s.id)) {
    row->outcome_queued = true;
    labels = {row->provider, row->destination};
  }
  settler_.enqueue(std::move(s), std::move(labels));
}

void sender::stop() {
  destinations_.abort_waiters();
  for (auto* t : rate_waits_) t->cancel();
}

void sender::dispatch(std::vector<db::claimed_row> rows, bool probe) {
  const auto now = rt_.clock.system_now();
  std::map<std::shared_ptr<destination>, std::vector<providers::outbound_event>> groups;
  for (auto& row : rows) {
    ++rt_.metrics.claimed;
    std::shared_ptr<destination> dest;
    if (auto early = route(row, probe, dest)) {
      settle(std::move(*early));
      continue;
    }
    if (!dest) continue;  // re-claimed: already under way
    const auto& ticket = in_flight_.find(row.id)->ticket;
    auto prepared = prepare_event(row, options_.max_payload_bytes,
                                  dest->provider->reads_payload() ? payload_use::parsed : payload_use::text_only);
    if (const auto* problem = std::get_if<std::string>(&prepared)) {
      settle(plan_rejection(ticket, *problem, now));
      continue;
    }
    auto& event = std::get<providers::outbound_event>(prepared);
    auto check = prepared_for(*dest, event, now);
    note_dropped(*dest, row.id, check.dropped);
    if (check.error) {
      auto s = plan_rejection(ticket, *check.error, now);
      s.dropped_fields = dropped_texts(check.dropped);
      settle(std::move(s));
      continue;
    }
    event.prepared = std::move(check.state);
    if (event.prepared) {
      // The provider's prepared state is all its requests read from here on
      // (provider.hpp): the payload's document and text would only hold memory
      // while the row waits in a batch.
      event.payload = nullptr;
      std::string{}.swap(event.payload_text);
    }
    auto* entry = in_flight_.find(row.id);
    entry->dropped = dropped_texts(check.dropped);
    entry->match_keys = std::move(check.match_keys);
    groups[dest].push_back(std::move(event));
  }
  if (probe) {
    for (const auto& row : rows) {
      auto dest = destinations_.find_shared(row.provider, row.destination);
      if (dest && dest->gate.probing() && !groups.contains(dest)) dest->gate.probe_abandoned(now);
    }
  }
  for (auto& [dest, events] : groups) {
    const std::size_t batch = std::max<std::size_t>(1, dest->provider->max_batch_size());
    for (std::size_t i = 0; i < events.size(); i += batch) {
      const auto first = events.begin() + static_cast<long>(i);
      const auto last = events.begin() + static_cast<long>(std::min(events.size(), i + batch));
      spawn(dest,
            std::vector<providers::outbound_event>(std::make_move_iterator(first), std::make_move_iterator(last)));
    }
  }
}

void sender::spawn(std::shared_ptr<destination> dest, std::vector<providers::outbound_event> events) {
  ++active_;
  asio::co_spawn(rt_.ex, async_send_batch(std::move(dest), std::move(events)), task_guard(rt_.log, "send", [this] {
                   --active_;
                   on_task_done();
                 }));
}

// A slot and a rate token; false when the rows must go back unsent (shutdown,
// or the destination was paused while they waited).
asio::awaitable<bool> sender::async_wait_turn(destination& dest) {
  const bool slot = co_await dest.limiter.async_acquire();
  if (slot && !stopping_) {
    const auto wait = dest.bucket.reserve(rt_.clock.steady_now());
    if (wait > steady::duration::zero()) {
      clock_timer t(rt_.ex, rt_.clock);
      t.expires_after(wait);
      rate_waits_.push_back(&t);
      (void)co_await t.async_wait();
      std::erase(rate_waits_, &t);
    }
  }
  if (slot && !stopping_) co_return true;
  if (slot) dest.limiter.release();
  co_return false;
}

// Holds `kept` until its request is judged: the registry may drop the destination meanwhile.
asio::awaitable<void> sender::async_send_batch(std::shared_ptr<destination> kept,
                                               std::vector<providers::outbound_event> events) {
  destination& dest = *kept;
  const bool probe = events.size() == 1 && in_flight_.find(events.front().row_id)->probe;
  const bool turn = co_await async_wait_turn(dest);
  if (!turn) {
    if (stopping_) {
      put_back(events, 0ms, "released", "released unsent at shutdown");
    } else {
      put_back(events, 0ms, "waiting", "destination removed from the registry while the rows waited for a slot");
    }
    co_return;
  }
  if (drop_forgotten(events)) {
    dest.limiter.release();
    co_return;
  }
  if (!probe && dest.gate.paused(rt_.clock.system_now())) {
    // Paused while these rows waited for a slot: back to pending, due now; the
    // claim leaves them alone until the destination reopens.
    dest.limiter.release();
    put_back(events, 0ms, "paused", "destination paused: " + dest.gate.reason());
    co_return;
  }
  for (const auto& e : events) in_flight_.find(e.row_id)->started = true;
  auto ex = co_await async_exchange(dest, events);
  dest.limiter.release();
  // Rows given back at shutdown while this request ran: their fate is already queued.
  std::erase_if(events, [&](const providers::outbound_event& e) { return in_flight_.find(e.row_id)->abandoned; });
  if (events.empty()) co_return;
  std::vector<std::int64_t> rows;
  rows.reserve(events.size());
  for (const auto& e : events) rows.push_back(e.row_id);
  note_health(dest, ex, rows, rt_.clock.system_now(), probe);
  judge(dest, std::move(events), std::move(ex));
}

void sender::judge(destination& dest, std::vector<providers::outbound_event> events, exchange ex) {
  const auto now = rt_.clock.system_now();
  auto& verdict = ex.verdict;
  if (verdict.pause_destination) {
    dest.gate.pause(now, destination_pause, *verdict.pause_destination);
    rt_.log.error("destination paused after a destination-wide failure",
                  {{"provider", dest.provider_kind},
                   {"destination", dest.name},
                   {"reason", *verdict.pause_destination},
                   {"pause_seconds", destination_pause.count()}});
    for (const auto& e : events) {
      settle(plan_paused_attempt(in_flight_.find(e.row_id)->ticket, ex.facts, *verdict.pause_destination));
    }
    return;
  }
  if (verdict.events.size() != events.size()) {
    verdict.events =
        every_event(events.size(), providers::outcome_kind::retry, "provider returned a wrong number of outcomes");
  }
  const auto resent = resend_groups(dest, events, verdict);
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (resent[i]) continue;
    const auto& ticket = in_flight_.find(events[i].row_id)->ticket;
    if (verdict.events[i].resend_alone && events.size() > 1 && !stopping_) {
      // An all-or-nothing batch was refused: isolate the culprit by resending one by one.
      spawn(dest.shared_from_this(), {events[i]});
      continue;
    }
    auto s = plan_settlement(ticket, verdict.events[i], ex.facts, options_.backoff, now, random01());
    s.note = ex.facts.note;
    attach_event_facts(dest, events[i].row_id, verdict, verdict.events[i], s);
    settle(std::move(s));
  }
}

// The events of a refused batch that go again at once in smaller requests, one per
// resend_group (the rest beside a named culprit, or a half). A group that is the
// whole batch is settled as it stands instead: resent as it was, it would be
// refused the same way, for ever.
std::vector<bool> sender::resend_groups(destination& dest, const std::vector<providers::outbound_event>& events,
                                        const providers::batch_outcome& verdict) {
  std::vector<bool> resent(events.size(), false);
  if (events.size() < 2 || stopping_) return resent;
  std::map<std::uint32_t, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (const auto g = verdict.events[i].resend_group; g != 0) members[g].push_back(i);
  }
  for (const auto& [group, indices] : members) {
    if (indices.size() == events.size()) continue;
    std::vector<providers::outbound_event> batch;
    batch.reserve(indices.size());
    for (const auto i : indices) {
      batch.push_back(events[i]);
      resent[i] = true;
    }
    spawn(dest.shared_from_this(), std::move(batch));
  }
  return resent;
}

// Counts 4xx answers (429 is throttling, not an error of ours) and pauses the
// destination once their share of the last requests crosses MAX_4XX_SHARE.
void sender::note_client_errors(destination& dest, const exchange& ex, sys_clock::time_point now) {
  if (dest.max_4xx_share <= 0 || !ex.facts.http_status) return;
  const int status = *ex.facts.http_status;
  dest.client_errors.record(status >= 400 && status <= 499 && status != 429);
  if (!dest.client_errors.over(dest.max_4xx_share) || dest.gate.paused(now)) return;
  const auto& w = dest.client_errors;
  char share[64];
  std::snprintf(share, sizeof share, "%.1f %% of the last %zu requests (%zu)",
                100.0 * double(w.errors()) / double(w.requests()), w.requests(), w.errors());
  const std::string reason = "4xx answers to " + std::string{share} + " exceed MAX_4XX_SHARE " +
                             std::to_string(static_cast<int>(dest.max_4xx_share * 100 + 0.5)) +
                             " %: paused to spare the app's error budget; find the rejected rows in `dispatcher "
                             "status`, then `dispatcher resume " +
                             dest.provider_kind + " " + dest.name + "`";
  dest.gate.pause(now, client_error_pause, reason);
  dest.client_errors.reset();
  rt_.log.error("destination paused: too many 4xx answers", {{"provider", dest.provider_kind},
                                                             {"destination", dest.name},
                                                             {"reason", reason},
                                                             {"pause_seconds", client_error_pause.count()}});
  wake_claimer_();
}

void sender::note_health(destination& dest, const exchange& ex, std::span<const std::int64_t> rows,
                         sys_clock::time_point now, bool probe) {
  note_client_errors(dest, ex, now);
  const bool failing = !ex.facts.http_status || *ex.facts.http_status >= 500 || *ex.facts.http_status == 429;
  if (probe) {
    const bool healthy = !failing && !ex.verdict.pause_destination;
    dest.gate.probe_finished(healthy, now);
    rt_.log.info(healthy ? "destination probe succeeded; resuming" : "destination probe failed; staying paused",
                 {{"provider", dest.provider_kind}, {"destination", dest.name}});
    // Either way the claimer looks again: at the resumed destination, or to
    // time its next look by the new pause's end.
    wake_claimer_();
  }
  if (dest.gate.note_result(failing, rows, now)) {
    rt_.log.error("destination circuit opened", {{"provider", dest.provider_kind},
                                                 {"destination", dest.name},
                                                 {"last_error", ex.facts.response_excerpt},
                                                 {"open_seconds", destination_gate::circuit_open_for.count()}});
    wake_claimer_();  // its wait must end when the circuit's pause does
  }
}

void sender::forget_leads(const std::vector<std::int64_t>& leads) {
  const auto now = rt_.clock.steady_now();
  // A row in flight waits at most a lease: older entries can never match a row again.
  std::erase_if(forgotten_leads_, [&](const auto& f) { return now - f.second > forgotten_kept; });
  for (const auto lead : leads) forgotten_leads_.insert_or_assign(lead, now);
}

// Rows of a lead forgotten (outbox_forget_lead()) while they waited for their
// turn: not sent. Their row is dead already and its lease gone, so what the
// settle says of them changes nothing. True when none is left to send.
bool sender::drop_forgotten(std::vector<providers::outbound_event>& events) {
  if (forgotten_leads_.empty()) return false;
  std::vector<providers::outbound_event> forgotten;
  std::erase_if(events, [&](const providers::outbound_event& e) {
    if (!forgotten_leads_.contains(in_flight_.find(e.row_id)->lead_project_id)) return false;
    forgotten.push_back(e);
    return true;
  });
  if (forgotten.empty()) return false;
  rt_.log.info("rows of a forgotten lead dropped before their request", {{"rows", forgotten.size()}});
  put_back(forgotten, 0ms, "forgotten", "forgotten on request before its request was sent");
  return events.empty();
}

void sender::put_back(const std::vector<providers::outbound_event>& events, std::chrono::milliseconds delay,
                      const std::string& outcome, const std::string& reason) {
  for (const auto& e : events) {
    auto s = plan_putback(in_flight_.find(e.row_id)->ticket, delay, outcome, reason, rt_.clock.system_now());
    s.log_attempt = false;  // nothing was attempted
    settle(std::move(s));
  }
}

}  // namespace outbox

namespace outbox {

void sender::abandon_running() {
  const auto now = rt_.clock.system_now();
  std::vector<db::settlement> fates;
  in_flight_.for_each([&](in_flight_row& row) {
    if (row.outcome_queued || row.abandoned) return;
    row.abandoned = true;
    db::settlement s;
    if (!row.started) {
      s = plan_putback(row.ticket, 0ms, "released", "released unsent at shutdown", now);
      s.log_attempt = false;
      fates.push_back(std::move(s));
      return;
    }
    if (row.hold_on_doubt) {
      // This destination must not resend after an uncertain attempt: a human decides.
      s = plan_hold(row.ticket,
                    "the dispatcher stopped while a request was in flight; held for review "
                    "because this destination does not rely on provider dedup (run `dispatcher requeue` to resend)",
                    now);
    } else {
      s = plan_putback(row.ticket, 0ms, "abandoned",
                       "the dispatcher stopped while a request was in flight; the provider's dedup id covers a resend",
                       now);
    }
    s.refund_attempt = false;  // a request was made: the attempt counts
    s.log_attempt = true;
    fates.push_back(std::move(s));
  });
  if (!fates.empty()) rt_.log.warn("grace period over: settling requests still in flight", {{"rows", fates.size()}});
  for (auto& s : fates) settle(std::move(s));
}

}  // namespace outbox
