// The sender's first look at a claimed row: its destination, or why it has
// none. A row for a destination of the registry that is not usable now
// (disabled, invalid, a secret that does not open) waits; a row for a
// destination configured nowhere waits OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS
// for it to be created, and is never dead before the registry was read again
// after the row was inserted.
#include "dispatcher/engine/sender.hpp"

#include "providers/text.hpp"

namespace outbox {
namespace {

using namespace std::chrono_literals;
// A row of a registry destination that is not usable looks again after this
// (a change of the registry wakes the claimer sooner).
constexpr auto unusable_retry = std::chrono::milliseconds{60s};
// A row whose destination may have been created since the registry was last read.
constexpr auto registry_reread_wait = std::chrono::milliseconds{2s};
// The longest wait between two looks while an unknown destination's grace runs.
constexpr auto unknown_retry = std::chrono::milliseconds{30s};

// Rows of unknown destinations are remembered this long past the grace: one that
// never comes back (sent by another dispatcher, requeued) is then forgotten.
constexpr auto unknown_seen_kept = std::chrono::minutes{10};
constexpr std::size_t unknown_seen_bound = 10000;

}  // namespace

// Pruned when the map has doubled since the last pruning: never a scan of it at every look.
void sender::forget_unknown_rows_seen_before(std::chrono::system_clock::time_point before) {
  if (unknown_seen_.size() < unknown_seen_prune_at_) return;
  std::erase_if(unknown_seen_, [&](const auto& seen) { return seen.second.since < before; });
  unknown_seen_prune_at_ = std::max(unknown_seen_bound, 2 * unknown_seen_.size());
}

// Why a row names no configured destination, and what to do about it.
std::string sender::unknown_destination_error(const db::claimed_row& row) const {
  const std::string named =
      "no destination '" + row.destination + "' is configured for provider '" + row.provider + "'";
  const std::string provider = providers::ascii_lowercase(row.provider);
  const std::string destination = providers::ascii_lowercase(row.destination);
  if (destinations_.find(provider, destination) != nullptr) {
    // Configured under its lower-case name: the row was written with capitals (an SQL call, not the Django app).
    return named + ": provider and destination names are case-sensitive, and '" + provider + "/" + destination +
           "' is configured; enqueue the row with those names";
  }
  std::string var = "OUTBOX_DEST__" + row.provider + "__" + row.destination + "__...";
  for (char& c : var) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  if (!could_be_created(row)) return named + " (set " + var + ")";
  return named + " (set " + var + ", or `dispatcher destination set " + row.provider + " " + row.destination + "`)";
}

// Whether the registry could ever hold the row's destination: a provider this
// dispatcher knows, and names as the registry writes them (lower-case).
bool sender::could_be_created(const db::claimed_row& row) {
  return is_known_provider(row.provider) && row.destination == providers::ascii_lowercase(row.destination) &&
         !row.destination.empty();
}

db::settlement sender::plan_without_destination(const db::claimed_row& row, const row_ticket& ticket,
                                                std::chrono::system_clock::time_point now) {
  if (const auto why = destinations_.unusable_reason(row.provider, row.destination)) {
    return plan_putback(ticket, unusable_retry, "waiting",
                        "destination " + row.provider + "/" + row.destination + " is not usable: " + *why, now);
  }
  const std::string error = unknown_destination_error(row);
  if (!could_be_created(row)) return plan_rejection(ticket, error, now);
  // First a read of the registry (of this entry alone, or of all of it) that
  // started after this process first saw the row: that read began after the
  // row's commit, so after that of a destination created with it (or a moment
  // before: its notification may come after the row's). Both times are this
  // process's clock. Then the grace's longer waits; and once it is over, one
  // more read that started after it, before the row is dead: a destination
  // created late in the grace may not have been read here yet.
  forget_unknown_rows_seen_before(now - options_.unknown_destination_grace - unknown_seen_kept);
  const auto waited = now - row.created_at;
  const bool grace_over = waited >= options_.unknown_destination_grace;
  auto& seen = unknown_seen_.try_emplace(row.id, unknown_row_seen{now, grace_over}).first->second;
  if (grace_over && !seen.past_grace) seen = {now, true};
  const auto key = key_of(row.provider, row.destination);
  const auto read_at = destinations_.registry_read_at(key);
  if (destinations_.registry_supported() && (!read_at || *read_at <= seen.since)) {
    destinations_.request_reload(key);
    return plan_putback(ticket, registry_reread_wait, "waiting", error + "; reading the registry again", now);
  }
  if (!grace_over) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.unknown_destination_grace - waited);
    return plan_putback(ticket, std::min(unknown_retry, left), "waiting",
                        error + "; the row waits for it until " +
                            std::to_string(options_.unknown_destination_grace.count()) +
                            " s after its insert (OUTBOX_UNKNOWN_DESTINATION_GRACE_SECONDS)",
                        now);
  }
  unknown_seen_.erase(row.id);
  return plan_rejection(ticket, error, now);
}

// Takes one row into flight; returns its settlement when it can never be sent
// as it is, must wait or must be held, else sets `dest`.
std::optional<db::settlement> sender::route(const db::claimed_row& row, bool probe,
                                            std::shared_ptr<destination>& dest) {
  const auto now = rt_.clock.system_now();
  const row_ticket ticket{row.id, row.lease_token, row.attempts, row.created_at};
  dest = destinations_.find_shared(row.provider, row.destination);
  if (dest && !unknown_seen_.empty()) unknown_seen_.erase(row.id);  // its destination came
  in_flight_row entry{ticket, row.lead_project_id, dest ? row.provider : unknown_label,
                      dest ? row.destination : unknown_label};
  entry.hold_on_doubt = dest && dest->provider->hold_reclaimed();
  entry.probe = probe;
  if (!in_flight_.add(std::move(entry))) {
    // Our own lease expired while the database was away and we claimed the row
    // again: the request (or outcome) already under way settles under the new lease.
    rt_.log.warn("re-claimed a row this process still has in flight; keeping its request", {{"row_id", row.id}});
    dest = nullptr;
    return std::nullopt;
  }
  if (row.reclaimed) {
    ++rt_.metrics.reclaimed;
    rt_.log.warn(
        "took over a row whose lease expired",
        {{"row_id", row.id}, {"provider", row.provider}, {"destination", row.destination}, {"attempt", row.attempts}});
  }
  if (!dest) return plan_without_destination(row, ticket, now);
  if (row.reclaimed && dest->provider->hold_reclaimed()) {
    return plan_hold(ticket,
                     "the previous lease expired while a request may have been in flight; held for review "
                     "because this destination does not rely on provider dedup (run `dispatcher requeue` to resend)",
                     now);
  }
  return std::nullopt;
}

}  // namespace outbox
