// `dispatcher mark-sent`: on-call records that the provider already has the events.
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_settle_by_hand.hpp"

namespace outbox::cli {

int mark_sent_command(std::span<const std::string> args) {
  static constexpr settle_by_hand_command mark_sent{
      .name = "mark-sent",
      .done = "marked sent",
      .would = "mark sent",
      .about = R"(Records matching pending, held or dead rows as sent (sent_at now) without
sending anything: for events the provider is known to have, e.g. a held row
whose request did arrive, or events uploaded by hand. Each is recorded in the
attempts log (outcome marked_sent) with who ran it and why. `prune` later
removes them like any sent row.
)",
      .how = db::manual_settlement::mark_sent};
  return run_settle_by_hand(mark_sent, args);
}

}  // namespace outbox::cli
