#include "providers/provider.hpp"

namespace outbox::providers {

std::string_view to_string(request_state s) {
  switch (s) {
    case request_state::processing:
      return "PROCESSING";
    case request_state::success:
      return "SUCCESS";
    case request_state::partial_success:
      return "PARTIAL_SUCCESS";
    case request_state::failure:
      return "FAILURE";
    case request_state::unknown:
      break;
  }
  return "UNKNOWN";
}

}  // namespace outbox::providers
