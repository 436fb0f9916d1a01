#include "db/delivery_store.hpp"

#include "db/delivery_sql.hpp"
#include "db/text_param.hpp"

namespace outbox::db {
namespace {

using namespace std::chrono_literals;
constexpr auto delivery_timeout = 30s;
// Bounds of the free-form texts a settle stores (the columns are text; these
// keep rows and the attempts log small).
constexpr std::size_t max_error_bytes = 2000;
constexpr std::size_t max_excerpt_bytes = 2000;
constexpr std::size_t max_outcome_bytes = 64;
constexpr std::size_t max_key_bytes = 512;  // match keys, request ids
constexpr const char* plan_mode_sql = "SELECT set_config('plan_cache_mode', $1, false)";

std::vector<swept_row> swept_rows(const result& r) {
  std::vector<swept_row> rows;
  for (int i = 0; i < r.rows(); ++i) {
    rows.push_back({r.int64(i, 0), std::string(r.text(i, 1)), std::string(r.text(i, 2)), std::string(r.text(i, 3)),
                    static_cast<int>(r.int64(i, 4)), std::string(r.text(i, 5)), std::stod(std::string(r.text(i, 6))),
                    r.boolean(i, 7)});
  }
  return rows;
}

claimed_row claimed_from(const result& r, int i, const std::string& token) {
  claimed_row row;
  row.id = r.int64(i, 0);
  row.lead_project_id = r.int64(i, 1);
  row.provider = r.text(i, 2);
  row.destination = r.text(i, 3);
  row.event_name = r.text(i, 4);
  row.idempotency_key = r.text(i, 5);
  row.payload = r.text(i, 6);
  row.attempts = static_cast<int>(r.int64(i, 7));
  row.created_at = sys_clock::time_point(std::chrono::milliseconds(r.int64(i, 8)));
  row.lease_token = token;
  row.reclaimed = r.boolean(i, 9);
  return row;
}

asio::awaitable<claim_batch> claim(connection& conn, const claim_request& req) {
  params args{req.owner,
              req.token,
              std::to_string(req.lease.count()),
              std::to_string(req.limit),
              std::to_string(req.max_attempts),
              text_array(req.skip_destinations),
              req.only_destination};
  // Nothing skipped, or skipped destinations with few rows: one ordered scan of
  // the work index, stepping over the skipped rows. Otherwise destination by
  // destination, so that skipped rows are never read (sql::claim_by_destination),
  // at one index descent per destination with unfinished rows.
  const bool whole_queue = req.one_ordered_scan();
  if (whole_queue) {
    args.push_back(req.scan_from ? std::optional(std::to_string(req.scan_from->due_us)) : std::nullopt);
    args.push_back(req.scan_from ? std::optional(std::to_string(req.scan_from->id)) : std::nullopt);
  }
  const char* name = whole_queue ? "outbox_claim_v5" : "outbox_claim_by_destination_v2";
  const char* text = whole_queue ? sql::claim : sql::claim_by_destination;
  const auto r = co_await conn.async_query_prepared(name, text, std::move(args), delivery_timeout);
  claim_batch found;
  found.rows.reserve(static_cast<std::size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    if (!r.is_null(i, 0)) {
      found.rows.push_back(claimed_from(r, i, req.token));
      // NULL for a row due at -infinity (written by hand): no place to start from.
      if (!found.first_picked && !r.is_null(i, 11)) found.first_picked = claim_position{r.int64(i, 11), r.int64(i, 12)};
    } else if (const auto ms = r.opt_int64(i, 10)) {
      found.next_due.emplace(std::chrono::milliseconds(std::max<std::int64_t>(*ms, 0)));
    } else {
      found.next_due.emplace(std::nullopt);
    }
  }
  co_return found;
}

// Items of a list column, one text per row (string_to_array splits it again);
// the separator never appears inside an item.
std::string joined(const std::vector<std::string>& items, char separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out.push_back(separator);
    for (const char c : item) out.push_back(c == separator ? ' ' : c);
  }
  return out;
}

// The settle's parameters: one array per column, every text cleaned so that no
// provider message can make PostgreSQL reject the statement.
params settle_params(std::string owner, std::span<const settlement> batch) {
  const std::size_t n = batch.size();
  array_literal ids(n * 8), tokens(n * 39), states(n * 7), delays(n * 2), refunds(n * 2), attempts(n * 2),
      started(n * 14), durations(n * 4), outcomes(n * 12), statuses(n * 6), errors(n * 3), excerpts(n * 8),
      logged(n * 2), notes(n * 3), dropped(n * 3), keys(n * 3), requests(n * 3), check_after(n * 2), first_tries(n * 5);
  for (const auto& s : batch) {
    ids.add_int(s.id);
    tokens.add_text(s.lease_token);
    states.add_text(to_string(s.state));
    delays.add_int(s.retry_delay.count());
    refunds.add_bool(s.refund_attempt);
    attempts.add_int(s.attempt);
    started.add_int(epoch_ms(s.started_at));
    durations.add_int(s.duration.count());
    outcomes.add_text(clean_text(s.outcome, max_outcome_bytes));
    s.http_status ? statuses.add_int(*s.http_status) : statuses.add_null();
    errors.add_text(clean_text(s.error, max_error_bytes));
    excerpts.add_text(clean_text(s.response_excerpt, max_excerpt_bytes));
    logged.add_bool(s.log_attempt);
    notes.add_text(clean_text(s.note, max_error_bytes));
    dropped.add_text(clean_text(joined(s.dropped_fields, '\n'), max_error_bytes));
    keys.add_text(clean_text(joined(s.match_keys, ','), max_key_bytes));
    requests.add_text(clean_text(s.provider_request_id, max_key_bytes));
    check_after.add_int(s.status_check_after.count());
    s.unanswered_first_try ? first_tries.add_int(s.unanswered_first_try->count()) : first_tries.add_null();
  }
  return params{std::move(owner),
                std::move(ids).finish(),
                std::move(tokens).finish(),
                std::move(states).finish(),
                std::move(delays).finish(),
                std::move(refunds).finish(),
                std::move(attempts).finish(),
                std::move(started).finish(),
                std::move(durations).finish(),
                std::move(outcomes).finish(),
                std::move(statuses).finish(),
                std::move(errors).finish(),
                std::move(excerpts).finish(),
                std::move(logged).finish(),
                std::move(notes).finish(),
                std::move(dropped).finish(),
                std::move(keys).finish(),
                std::move(requests).finish(),
                std::move(check_after).finish(),
                std::move(first_tries).finish()};
}

// The settle connection plans with generic plans (dispatcher/engine/db_link.cpp); a
// large batch is planned for its size instead, then the mode goes back, also
// when the settle fails (a connection that failed is replaced anyway).
asio::awaitable<result> large_settle(connection& conn, params args) {
  // Named parameter lists: GCC 12 rejects a braced temporary across co_await.
  params custom, generic;
  custom.emplace_back(std::string("force_custom_plan"));
  generic.emplace_back(std::string("force_generic_plan"));
  (void)co_await conn.async_query(plan_mode_sql, std::move(custom), delivery_timeout);
  auto r = co_await async_try(conn.async_query(sql::settle, std::move(args), delivery_timeout));
  if (conn.is_open()) (void)co_await conn.async_query(plan_mode_sql, std::move(generic), delivery_timeout);
  co_return std::move(r).value();  // rethrows a failure (db::error)
}

asio::awaitable<settle_report> settle(connection& conn, std::string owner, std::span<const settlement> batch) {
  // Small batches (one event per request, a steady trickle) reuse a prepared
  // plan: planning this statement costs about 0.7 ms, more than running it for
  // a few rows. Large batches are planned for their size (custom plan).
  // (No co_await inside a conditional expression: GCC 12 miscompiles it.)
  result r;
  if (batch.size() < sql::settle_prepared_below) {
    r = co_await conn.async_query_prepared("outbox_settle_v6", sql::settle, settle_params(std::move(owner), batch),
                                           delivery_timeout);
  } else {
    r = co_await large_settle(conn, settle_params(std::move(owner), batch));
  }
  settle_report report;
  report.applied.reserve(static_cast<std::size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    (r.boolean(i, 1) ? report.applied : report.already_applied).push_back(r.int64(i, 0));
  }
  co_return report;
}

asio::awaitable<std::int64_t> renew(connection& conn, std::span<const std::int64_t> ids,
                                    std::span<const std::string> tokens, std::chrono::seconds lease) {
  params args{int_array(ids), text_array(tokens), std::to_string(lease.count())};
  const auto r = co_await conn.async_query(sql::renew, std::move(args), delivery_timeout);
  co_return r.affected();
}

asio::awaitable<std::vector<std::int64_t>> release_orphans(connection& conn, const std::string& owner,
                                                           std::span<const std::string> held_tokens) {
  params args{owner, text_array(held_tokens)};
  const auto r = co_await conn.async_query(sql::release_orphans, std::move(args), delivery_timeout);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < r.rows(); ++i) ids.push_back(r.int64(i, 0));
  co_return ids;
}

const std::string& sweep_statement(bool dry_run) {
  static const std::string wet =
      std::string("WITH expired AS (") + sql::sweep_candidates + " FOR UPDATE OF d SKIP LOCKED)" + sql::sweep_tail;
  static const std::string dry =
      std::string("WITH expired AS (") + sql::sweep_candidates + ")" + sql::sweep_dry_run_tail;
  return dry_run ? dry : wet;
}

asio::awaitable<std::vector<swept_row>> sweep(connection& conn, const sweep_request& req) {
  params args{req.provider, std::to_string(req.older_than.count()), std::to_string(req.max_attempts),
              text_array(req.hold_destinations)};
  const auto r = co_await conn.async_query(sweep_statement(req.dry_run), std::move(args), delivery_timeout);
  co_return swept_rows(r);
}

asio::awaitable<std::optional<std::chrono::milliseconds>> next_due(connection& conn,
                                                                   std::span<const std::string> skip_destinations) {
  params args{text_array(skip_destinations)};
  const auto r =
      co_await conn.async_query_prepared("outbox_next_due_v3", sql::next_due, std::move(args), delivery_timeout);
  const auto ms = r.opt_int64(0, 0);
  if (!ms) co_return std::nullopt;
  co_return std::chrono::milliseconds(std::max<std::int64_t>(*ms, 0));
}

asio::awaitable<void> record_policies(connection& conn, const std::string& owner,
                                      std::span<const destination_policy> policies) {
  std::vector<std::string> providers, destinations;
  std::vector<bool> holds;
  std::vector<std::int64_t> max_attempts;
  for (const auto& p : policies) {
    providers.push_back(p.provider);
    destinations.push_back(p.destination);
    holds.push_back(p.hold_reclaimed);
    max_attempts.push_back(p.max_attempts);
  }
  params args{text_array(providers), text_array(destinations), bool_array(holds), int_array(max_attempts), owner};
  (void)co_await conn.async_query(sql::record_policies, std::move(args), delivery_timeout);
}

}  // namespace

std::string_view to_string(settle_state s) {
  switch (s) {
    case settle_state::sent: return "sent";
    case settle_state::dead: return "dead";
    case settle_state::held: return "held";
    case settle_state::pending: break;
  }
  return "pending";
}

asio::awaitable<outcome<claim_batch>> async_claim_batch(connection& conn, const claim_request& req) {
  co_return co_await async_try(claim(conn, req));
}

asio::awaitable<outcome<std::vector<claimed_row>>> async_claim(connection& conn, const claim_request& req) {
  auto found = co_await async_claim_batch(conn, req);
  if (!found) co_return found.error();
  co_return std::move(found->rows);
}

asio::awaitable<outcome<settle_report>> async_settle(connection& conn, std::string owner,
                                                     std::span<const settlement> batch) {
  co_return co_await async_try(settle(conn, std::move(owner), batch));
}

asio::awaitable<outcome<std::int64_t>> async_renew(connection& conn, std::span<const std::int64_t> ids,
                                                   std::span<const std::string> tokens, std::chrono::seconds lease) {
  co_return co_await async_try(renew(conn, ids, tokens, lease));
}

asio::awaitable<outcome<std::vector<std::int64_t>>> async_release_orphans(connection& conn, const std::string& owner,
                                                                          std::span<const std::string> held_tokens) {
  co_return co_await async_try(release_orphans(conn, owner, held_tokens));
}

asio::awaitable<outcome<std::vector<swept_row>>> async_sweep(connection& conn, const sweep_request& req) {
  co_return co_await async_try(sweep(conn, req));
}

asio::awaitable<outcome<std::optional<std::chrono::milliseconds>>> async_next_due(
    connection& conn, std::span<const std::string> skip_destinations) {
  co_return co_await async_try(next_due(conn, skip_destinations));
}

asio::awaitable<outcome<void>> async_record_policies(connection& conn, const std::string& owner,
                                                     std::span<const destination_policy> policies) {
  co_return co_await async_try(record_policies(conn, owner, policies));
}

}  // namespace outbox::db
