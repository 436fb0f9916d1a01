// `dispatcher inspect ID`: one row and everything each attempt saw.
#include <charconv>
#include <iostream>

#include "db/operations_store.hpp"
#include "db/personal_data_store.hpp"
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_args.hpp"
#include "dispatcher/ops/display_time.hpp"
#include "dispatcher/ops/terminal_text.hpp"
#include "providers/personal_data.hpp"

namespace outbox::cli {
namespace {

constexpr const char* inspect_help = R"(usage: dispatcher inspect ID [--json] [--show-personal-data]
       dispatcher inspect --lead LEAD_ID [--json] [--show-personal-data]
       dispatcher inspect --key IDEMPOTENCY_KEY [--json] [--show-personal-data]

Shows one event_delivery row (state, attempts, schedule, lease, last error,
provider response, and the payload as stored: byte for byte the body a webhook
receives and signs, row.payload_text in --json) and its attempts log, oldest first: per attempt
its error, response, the fields the provider left out (dropped: field:
reason, detail), the match keys it carried and, for a request the provider
processes later, that request's id and the result the provider reported.
--lead shows every row of a lead (lead_project_id), --key the row(s) with that
idempotency key (the id providers see; this lookup reads the whole table).
--json prints {"row", "attempts"} for an ID, an array of them for --lead/--key.
Exit code 1 when no row matches.

Personal data in the payload (email, phone, names, address, ids: see
docs/personal_data.md) shows as "[hidden]": the field names stay, and so does
whether each was present. --show-personal-data shows the payload as stored,
and records who looked at which rows (outbox_personal_data_access; --operator).
)";

// JSON text for the terminal. dump() escapes C0 controls but keeps DEL and C1
// (U+009B is a one-byte CSI) as they are.
std::string json_text(const nlohmann::json& v) {
  return terminal_text(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// A value from the database for the terminal: CRM payloads, provider errors
// and responses may hold escape sequences (dispatcher/ops/terminal_text.hpp).
std::string text(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return terminal_text(v.get<std::string>());
  return json_text(v);
}

// A timestamp from the database, in the one format of the text output.
std::string time_text(const nlohmann::json& v) {
  if (!v.is_string()) return text(v);
  return terminal_text(display_time(v.get<std::string>()));
}

// "SUCCESS (checked T, 10 ingested)" for the provider_request row of an attempt's request.
std::string request_result(const nlohmann::json& r) {
  if (r.is_null()) return "(no result recorded)";
  std::string out = text(r["status"]) + " (";
  if (r["checked_at"].is_null()) {
    out += "not checked yet, first check " + time_text(r["next_check_at"]);
  } else {
    out += "checked " + time_text(r["checked_at"]);
  }
  if (!r["detail"].is_null() && !r["detail"].get<std::string>().empty()) out += ", " + text(r["detail"]);
  return out + ")";
}

// What the attempt knew about the conversion: fields left out, match keys, the provider's later verdict.
void print_conversion_facts(const nlohmann::json& a) {
  if (const auto it = a.find("note"); it != a.end() && !it->is_null()) std::cout << "      note: " << text(*it) << "\n";
  if (const auto it = a.find("dropped_fields"); it != a.end() && it->is_array()) {
    for (const auto& d : *it) std::cout << "      dropped: " << text(d) << "\n";
  }
  if (const auto it = a.find("match_keys"); it != a.end() && it->is_array() && !it->empty()) {
    std::string keys;
    for (const auto& k : *it) keys += (keys.empty() ? "" : ", ") + text(k);
    std::cout << "      match keys: " << keys << "\n";
  }
  if (const auto it = a.find("provider_request_id"); it != a.end() && !it->is_null()) {
    const auto result = request_result(a.value("provider_request", nlohmann::json{}));
    std::cout << "      provider request: " << text(*it) << " " << result << "\n";
  }
}

// "3", or "3 (not counted)" for an attempt the dispatcher refunded: a
// destination-wide refusal (outcome `paused`, dispatcher/engine/sender.cpp) puts the
// row back with its attempt count lowered, so the next attempt has the same number.
std::string attempt_number(const nlohmann::json& a) {
  const bool refunded = a["outcome"].is_string() && a["outcome"].get<std::string>() == "paused";
  return text(a["attempt"]) + (refunded ? " (not counted)" : "");
}

// The payload with its personal data masked: the row's `payload` and `payload_text`.
void hide_personal_data(nlohmann::json& doc) {
  auto& row = doc["row"];
  if (!row.contains("payload")) return;
  auto masked = providers::with_personal_data_replaced(row["payload"], "[hidden]");
  if (masked == row["payload"]) return;  // nothing personal: the stored bytes as they are
  row["payload"] = std::move(masked);
  row["payload_text"] = row["payload"].dump();
  row["personal_data_hidden"] = true;
}

void print_row(const nlohmann::json& doc) {
  const auto& row = doc["row"];
  for (const char* key : {"id", "lead_project_id", "provider", "destination", "event_name", "idempotency_key", "state",
                          "attempts", "next_attempt_at", "lease_owner", "lease_expires_at", "sent_at",
                          "last_http_status", "last_error", "provider_response", "created_at", "updated_at"}) {
    const bool time = std::string_view(key).ends_with("_at");
    std::cout << std::string(18 - std::string_view(key).size(), ' ') << key << "  "
              << (time ? time_text(row[key]) : text(row[key])) << "\n";
  }
  if (row.contains("personal_data_erased_at") && !row["personal_data_erased_at"].is_null()) {
    std::cout << "     personal data  erased " << time_text(row["personal_data_erased_at"]) << " ("
              << text(row["personal_data_erased_why"]) << ")\n";
  }
  // payload_text is the stored text itself: byte for byte the body a webhook receives and signs
  // (a platform's body is built from it); the parsed `payload` would be a re-serialization.
  const auto& exact = row.contains("payload_text") ? row["payload_text"] : row["payload"];
  const bool hidden = row.value("personal_data_hidden", false);
  std::cout << std::string(11, ' ') << "payload  " << text(exact) << "\n"
            << std::string(20, ' ')
            << (hidden ? "(personal data hidden: --show-personal-data shows it, and records that you looked)"
                       : "(as stored: the exact bytes of a webhook's body)")
            << "\n\nattempts:\n";
  if (doc["attempts"].empty()) std::cout << "  (none yet)\n";
  for (const auto& a : doc["attempts"]) {
    std::cout << "  #" << attempt_number(a) << "  " << time_text(a["started_at"]) << "  " << text(a["outcome"])
              << "  http " << text(a["http_status"]) << "  " << text(a["duration_ms"]) << " ms  by "
              << text(a["lease_owner"]) << "\n";
    if (!a["error"].is_null()) std::cout << "      error: " << text(a["error"]) << "\n";
    if (!a["response_excerpt"].is_null()) std::cout << "      response: " << text(a["response_excerpt"]) << "\n";
    print_conversion_facts(a);
  }
}

struct inspect_args {
  std::optional<std::int64_t> id;
  db::row_lookup lookup;
  bool json = false;
  bool show_personal_data = false;
};

// What was asked for, for the access record: "row 12", "lead 7", "key ...".
std::string asked_for(const inspect_args& a) {
  if (a.id) return "row " + std::to_string(*a.id);
  if (a.lookup.lead) return "lead " + std::to_string(*a.lookup.lead);
  return "key " + a.lookup.key.value_or("");
}

// Masks the docs' personal data, or records that it is shown.
boost::asio::awaitable<void> async_guard_personal_data(db::connection& conn, const inspect_args& a,
                                                       std::vector<nlohmann::json*> docs) {
  if (a.show_personal_data) {
    co_await db::async_record_personal_data_access(conn, operator_name(), "inspect " + asked_for(a));
    co_return;
  }
  for (auto* doc : docs) hide_personal_data(*doc);
}

std::optional<std::int64_t> read_id(const std::string& arg) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
  if (ec != std::errc{} || p != arg.data() + arg.size()) return std::nullopt;
  return v;
}

// The arguments; an exit code when the command ends here (--help, a bad argument).
std::optional<int> read_args(std::span<const std::string> args, inspect_args& a) {
  arg_reader r(args);
  while (!r.done()) {
    if (r.flag("--help") || r.flag("-h")) {
      std::cout << inspect_help;
      return exit_ok;
    }
    if (r.flag("--json")) {
      a.json = true;
    } else if (r.flag("--show-personal-data")) {
      a.show_personal_data = true;
    } else if (auto lead = r.option("--lead")) {
      a.lookup.lead = read_id(*lead);
      if (!a.lookup.lead) {
        std::cerr << "dispatcher inspect: --lead: not a lead id: '" << terminal_text(*lead) << "'\n";
        return exit_usage;
      }
    } else if (auto key = r.option("--key")) {
      a.lookup.key = *key;
    } else if (r.current().starts_with("--")) {
      std::cerr << "dispatcher inspect: unknown or incomplete option '" << terminal_text(r.current()) << "'\n"
                << inspect_help;
      return exit_usage;
    } else {
      const auto arg = r.positional();
      const auto id = read_id(arg);
      if (a.id || !id) {
        std::cerr << "dispatcher inspect: expected one row id, got '" << terminal_text(arg) << "'\n" << inspect_help;
        return exit_usage;
      }
      a.id = id;
    }
  }
  const int ways = (a.id ? 1 : 0) + (a.lookup.lead ? 1 : 0) + (a.lookup.key ? 1 : 0);
  if (ways != 1) {
    std::cerr << (ways == 0 ? "" : "dispatcher inspect: give one of ID, --lead or --key\n") << inspect_help;
    return exit_usage;
  }
  return std::nullopt;
}

boost::asio::awaitable<int> async_inspect_lookup(db::connection& conn, const inspect_args& a) {
  const auto ids = co_await db::async_find_rows(conn, a.lookup);
  if (ids.empty()) {
    std::cerr << "dispatcher inspect: no row "
              << (a.lookup.lead ? "for lead " + std::to_string(*a.lookup.lead)
                                : "with key '" + terminal_text(*a.lookup.key, 80) + "'")
              << "\n";
    co_return exit_failure;
  }
  auto docs = nlohmann::json::array();
  for (const auto id : ids) {
    auto doc = co_await db::async_inspect(conn, id);
    if (!doc.is_null()) docs.push_back(std::move(doc));  // pruned in between: skipped
  }
  std::vector<nlohmann::json*> shown;
  for (auto& doc : docs) shown.push_back(&doc);
  co_await async_guard_personal_data(conn, a, shown);
  if (a.json) {
    std::cout << docs.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    co_return exit_ok;
  }
  for (std::size_t i = 0; i < docs.size(); ++i) {
    std::cout << (i == 0 ? "" : "\n") << "== row " << (i + 1) << " of " << docs.size() << "\n";
    print_row(docs[i]);
  }
  co_return exit_ok;
}

boost::asio::awaitable<int> async_inspect_and_print(db::connection& conn, inspect_args a) {
  if (!a.id) co_return co_await async_inspect_lookup(conn, a);
  auto doc = co_await db::async_inspect(conn, *a.id);
  // Named, not braced in the call: GCC 12 mishandles a braced initializer in a co_await expression.
  std::vector<nlohmann::json*> shown{&doc};
  if (!doc.is_null()) co_await async_guard_personal_data(conn, a, shown);
  if (doc.is_null()) {
    std::cerr << "dispatcher inspect: no row with id " << *a.id << "\n";
    co_return exit_failure;
  }
  if (a.json) {
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    co_return exit_ok;
  }
  print_row(doc);
  co_return exit_ok;
}

}  // namespace

int inspect_command(std::span<const std::string> args) {
  inspect_args a;
  if (const auto done = read_args(args, a)) return *done;
  return with_database(database_conninfo(),
                       [a = std::move(a)](db::connection& conn) { return async_inspect_and_print(conn, a); });
}

}  // namespace outbox::cli
