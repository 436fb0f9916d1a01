#pragma once
// `discard` and `mark-sent`: the same command with another outcome
// (cli_discard.cpp, cli_mark_sent.cpp hold what differs).
#include <span>
#include <string>
#include <string_view>

#include "db/operations_store.hpp"

namespace outbox::cli {

struct settle_by_hand_command {
  std::string_view name;   // "discard"
  std::string_view done;   // "discarded"
  std::string_view would;  // "discard"
  std::string_view about;  // the --help text before the common options
  db::manual_settlement how;
};

// Parses FILTER... --reason TEXT [--state ...] [--dry-run] [--json], settles
// the rows (audited as operator_name()) and prints them; the exit code.
[[nodiscard]] int run_settle_by_hand(const settle_by_hand_command& c, std::span<const std::string> args);

}  // namespace outbox::cli
