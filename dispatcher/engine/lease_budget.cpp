#include "dispatcher/engine/lease_budget.hpp"

namespace outbox {

std::chrono::milliseconds worst_case_attempt(std::chrono::milliseconds connect, std::chrono::milliseconds handshake,
                                             std::chrono::milliseconds request, bool oauth) {
  const auto exchange = connect + handshake + request;
  const auto token_fetch = oauth ? exchange : std::chrono::milliseconds{0};
  return token_fetch + 2 * exchange;  // the second try: a stale keep-alive connection, then a fresh one
}

std::chrono::seconds minimum_lease(std::chrono::milliseconds worst_case, std::chrono::seconds margin) {
  return std::chrono::ceil<std::chrono::seconds>(worst_case) + margin;
}

}  // namespace outbox
