#pragma once
// How long one delivery attempt can hold its row, in the worst case, from the
// HTTPS client's timeouts; the lease must cover it (plus lease_margin) or a
// second dispatcher could claim and resend a row whose request is still running.
//
// One attempt is: connect (DNS + TCP) + TLS handshake + request (write and read),
// and twice that when a pooled keep-alive connection turns out stale and the
// request is retried on a fresh one. A destination with OAuth (google_ads,
// google_data_manager) may first fetch a token: one more connect + handshake +
// request. Until providers/http/https_client.hpp offers
// https_client_options::worst_case_attempt(), config validation uses this.
#include <chrono>

namespace outbox {

// (oauth ? connect + handshake + request : 0) + 2 * (connect + handshake + request)
[[nodiscard]] std::chrono::milliseconds worst_case_attempt(std::chrono::milliseconds connect,
                                                           std::chrono::milliseconds handshake,
                                                           std::chrono::milliseconds request, bool oauth);

// The shortest lease, in whole seconds (rounded up), that covers `worst_case` plus `margin`.
[[nodiscard]] std::chrono::seconds minimum_lease(std::chrono::milliseconds worst_case, std::chrono::seconds margin);

}  // namespace outbox
