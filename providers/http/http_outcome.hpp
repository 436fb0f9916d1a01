#pragma once
// Generic judgement of an HTTP result, shared by every provider: what a status
// code or transport failure means for the event (delivered / retry / dead), how
// to read Retry-After, and how to quote a response body safely in logs and rows.
// Providers with richer error envelopes (Meta, TikTok, Google) start from this
// and refine it.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "providers/http/http_types.hpp"
#include "providers/provider.hpp"

namespace outbox::providers {

// Longest Retry-After we honour; a server asking for more gets this (the engine's
// retry horizon then decides whether another attempt is still worth it).
inline constexpr std::chrono::seconds max_retry_after{std::chrono::hours{24}};

// Parses a Retry-After value (RFC 9110 section 10.2.3): delta-seconds ("120") or an
// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"). Surrounding blanks are allowed.
// Garbage, negative numbers and the obsolete RFC 850 / asctime date forms give
// nullopt; a date in the past gives 0 s; anything longer is clamped to max_retry_after.
[[nodiscard]] std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                                    std::chrono::system_clock::time_point now);

// 408, 425, 429 and 5xx: the server may accept the same request later.
[[nodiscard]] bool is_retryable_status(int status);

// 401 and 403: the destination's credentials or permissions are wrong, so every
// event to it would fail the same way. The engine pauses the destination instead
// of burning each row's attempts.
[[nodiscard]] bool is_destination_wide_failure(int status);

// A body excerpt that is safe to log or store in a text column: valid UTF-8 (bad
// bytes become U+FFFD, the cut falls on a code point boundary), control characters
// other than \n and \t replaced by a space, at most `max` bytes including a
// trailing "..." when cut.
[[nodiscard]] std::string response_excerpt(std::string_view body, std::size_t max = 512);

// Same, on one line (\n and \t replaced too): for error texts.
[[nodiscard]] std::string one_line_excerpt(std::string_view body, std::size_t max = 200);

// One event's outcome from an HTTP result:
//   2xx -> delivered; 408/425/429/5xx -> retry (retry_after from Retry-After);
//   any other status -> dead; transport failure -> retry, except bad_url -> dead.
// `error` reads like "HTTP 503: <first 200 bytes of body>" or "timeout: <message>".
// `now` only matters for a Retry-After given as a date.
[[nodiscard]] event_outcome classify_http_result(const http_result& result, std::chrono::system_clock::time_point now);

// The same outcome for all `n` events of one request (for providers whose
// response says nothing per event). For 401/403 it also sets pause_destination
// ("HTTP 401 from destination: ...") and marks the events retry rather than dead:
// the rows are not at fault and must survive until the destination is fixed.
[[nodiscard]] batch_outcome uniform_outcome(std::size_t n, const http_result& result,
                                            std::chrono::system_clock::time_point now);

}  // namespace outbox::providers
