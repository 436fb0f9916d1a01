#pragma once
// The row filters `requeue`, `discard` and `mark-sent` share: reading the
// options, resolving --since/--until by the database's clock, printing the rows.
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "db/operations_store.hpp"
#include "dispatcher/cli/cli_args.hpp"

namespace outbox::cli {

// The filter options, for each command's --help.
inline constexpr const char* row_filter_help = R"(filters (combined with AND; --name=value works as --name value):
  --id N                 this row (repeatable)
  --lead N               the rows of this lead (lead_project_id), as `inspect --lead`
  --provider NAME        e.g. meta, tiktok, webhook
  --destination NAME
  --error-contains TEXT  last_error contains TEXT (case-sensitive)
  --since WHEN           last changed (updated_at) at or after WHEN: an age with a
                         unit (30m, 1h, 2d: that long ago) or a PostgreSQL time
                         ('2026-11-30 08:00+00')
  --until WHEN           ... before WHEN
  --limit N              only the first N matching rows (by id)
)";

struct row_filter_args {
  db::row_filter filter;
  std::optional<db::time_arg> since;
  std::optional<db::time_arg> until;
  bool json = false;
  bool any_filter = false;    // a filter narrows the rows (--limit alone does not)
  bool states_given = false;  // the first --state replaces the command's default states
};

enum class option_read { not_mine, ok, bad };

// Reads the option `r` is at when it is a filter, --state (values from
// `states`, comma-separated or repeated; "both" for dead,held when both are
// allowed), --dry-run or --json. `bad` after printing why.
[[nodiscard]] option_read read_row_filter_option(arg_reader& r, row_filter_args& a, std::string_view command,
                                                 std::initializer_list<std::string_view> states);

// Turns --since/--until into the filter's timestamps; false after printing why
// (PostgreSQL cannot read the time).
[[nodiscard]] boost::asio::awaitable<bool> async_resolve_times(db::connection& conn, row_filter_args& a,
                                                               std::string_view command);

// The rows (text columns escaped for the terminal) and "<done> N row(s)" ("would
// <would> N row(s) (dry run: nothing changed)"), or a JSON array of {id, provider,
// destination, event_name, previous_state, last_error}.
void print_changed_rows(const std::vector<db::changed_row>& rows, bool json, bool dry_run, std::string_view done,
                        std::string_view would);

// Requeue and mark-sent leave out rows whose personal data was erased: one line
// on standard error says how many the filter named, and why.
[[nodiscard]] boost::asio::awaitable<void> async_report_erased(db::connection& conn, const row_filter_args& a,
                                                               std::string_view command);

}  // namespace outbox::cli
