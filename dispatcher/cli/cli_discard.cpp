// `dispatcher discard`: on-call gives up on rows; they are never sent.
#include "dispatcher/cli/cli.hpp"
#include "dispatcher/cli/cli_settle_by_hand.hpp"

namespace outbox::cli {

int discard_command(std::span<const std::string> args) {
  static constexpr settle_by_hand_command discard{
      .name = "discard",
      .done = "discarded",
      .would = "discard",
      .about = R"(Gives up on matching pending, held or dead rows: they become dead with
last_error "discarded by OPERATOR: REASON" and are never sent (unless someone
requeues them later). Each is recorded in the attempts log (outcome
discarded). For an event that must not reach the provider: a test lead, a
payload sent by mistake, a destination that no longer exists. A row a
dispatcher is claiming at that moment is waited for (at most a few seconds).
)",
      .how = db::manual_settlement::discard};
  return run_settle_by_hand(discard, args);
}

}  // namespace outbox::cli
