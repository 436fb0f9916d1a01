#include "providers/http/http_outcome.hpp"

#include <doctest/doctest.h>

#include <string>

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace http_outcome_test {

using namespace outbox::providers;
using namespace std::chrono_literals;
using std::chrono::seconds;
using std::chrono::system_clock;

namespace {

// 2021-02-25T15:02:10Z
const system_clock::time_point now = system_clock::time_point{} + 1614265330s;

http_result response(int status, std::string body = {}, header_list headers = {}) {
  http_result r;
  r.response = http_response{status, std::move(headers), std::move(body)};
  return r;
}

http_result failure(transport_error error, std::string message, bool maybe_delivered = false) {
  http_result r;
  r.error = error;
  r.error_message = std::move(message);
  r.maybe_delivered = maybe_delivered;
  return r;
}

bool is_valid_utf8(std::string_view s) {
  // Independent, simple checker: decode and re-check ranges.
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const char32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace

TEST_CASE("parse_retry_after reads delta-seconds") {
  CHECK(parse_retry_after("120", now) == seconds{120});
  CHECK(parse_retry_after("0", now) == seconds{0});
  CHECK(parse_retry_after("  7 \t", now) == seconds{7});
  CHECK(parse_retry_after("86400", now) == seconds{86400});
}

TEST_CASE("parse_retry_after clamps absurd values to 24 h") {
  CHECK(parse_retry_after("86401", now) == max_retry_after);
  CHECK(parse_retry_after("999999999", now) == max_retry_after);
  CHECK(parse_retry_after("99999999999999999999999999999", now) == max_retry_after);  // would overflow int64
  CHECK(max_retry_after == seconds{24 * 3600});
}

TEST_CASE("parse_retry_after rejects garbage and negative values") {
  for (const char* bad : {"", "   ", "-5", "+5", "1.5", "5s", "soon", "12 34", "0x10",
                          "Thu, 25 Feb 2021 15:04:10 UTC",     // not GMT
                          "thu, 25 Feb 2021 15:04:10 GMT",     // names are case-sensitive
                          "Thu, 25 Feb 2021 25:04:10 GMT",     // hour out of range
                          "Thu, 30 Feb 2021 15:04:10 GMT",     // no such day
                          "Thu, 25 Foo 2021 15:04:10 GMT",     // no such month
                          "Thu, 5 Feb 2021 15:04:10 GMT",      // day needs two digits
                          "Thursday, 25-Feb-21 15:04:10 GMT",  // obsolete RFC 850 form
                          "Thu Feb 25 15:04:10 2021"}) {       // obsolete asctime form
    CAPTURE(bad);
    CHECK_FALSE(parse_retry_after(bad, now).has_value());
  }
}

TEST_CASE("parse_retry_after reads an IMF-fixdate relative to now") {
  CHECK(parse_retry_after("Thu, 25 Feb 2021 15:04:10 GMT", now) == seconds{120});
  CHECK(parse_retry_after(" Thu, 25 Feb 2021 15:02:10 GMT ", now) == seconds{0});
  CHECK(parse_retry_after("Fri, 26 Feb 2021 15:02:10 GMT", now) == seconds{86400});
  // Dates in the past mean "now"; far-future dates are clamped.
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now) == seconds{0});
  CHECK(parse_retry_after("Fri, 01 Jan 2100 00:00:00 GMT", now) == max_retry_after);
  // Leap day is a valid date.
  CHECK(parse_retry_after("Tue, 29 Feb 2000 00:00:00 GMT", now) == seconds{0});
  // Sub-second part of `now` rounds the wait down, never up past the date.
  CHECK(parse_retry_after("Thu, 25 Feb 2021 15:04:10 GMT", now + 500ms) == seconds{119});
}

TEST_CASE("parse_retry_after caps dates and numbers far in the future without overflowing") {
  // system_clock counts nanoseconds and ends in 2262: these used to wrap around.
  CHECK(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now) == max_retry_after);
  CHECK(parse_retry_after("Sat, 01 Jan 2263 00:00:00 GMT", now) == max_retry_after);
  CHECK(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", system_clock::now()) == max_retry_after);
  CHECK(parse_retry_after("Sat, 01 Jan 0000 00:00:00 GMT", now) == seconds{0});
  CHECK(parse_retry_after("99999999999999999999", now) == max_retry_after);
  const auto far = classify_http_result(response(503, "", {{"retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"}}), now);
  CHECK(far.retry_after == max_retry_after);
}

TEST_CASE("status classes") {
  for (int s : {408, 425, 429, 500, 502, 503, 504, 599}) {
    CAPTURE(s);
    CHECK(is_retryable_status(s));
  }
  for (int s : {200, 301, 400, 401, 403, 404, 409, 410, 422, 600}) {
    CAPTURE(s);
    CHECK_FALSE(is_retryable_status(s));
  }
  CHECK(is_destination_wide_failure(401));
  CHECK(is_destination_wide_failure(403));
  for (int s : {400, 404, 407, 429, 500}) {
    CAPTURE(s);
    CHECK_FALSE(is_destination_wide_failure(s));
  }
}

TEST_CASE("2xx is delivered with no error") {
  for (int s : {200, 201, 202, 204, 299}) {
    CAPTURE(s);
    const auto o = classify_http_result(response(s, "ok"), now);
    CHECK(o.kind == outcome_kind::delivered);
    CHECK(o.error.empty());
    CHECK_FALSE(o.retry_after.has_value());
  }
}

TEST_CASE("retryable statuses retry and quote the body") {
  for (int s : {408, 425, 429, 500, 503, 504}) {
    CAPTURE(s);
    const auto o = classify_http_result(response(s, "busy"), now);
    CHECK(o.kind == outcome_kind::retry);
    CHECK(o.error == "HTTP " + std::to_string(s) + ": busy");
  }
}

TEST_CASE("Retry-After header becomes retry_after") {
  const auto o = classify_http_result(response(503, "", {{"retry-after", "30"}}), now);
  CHECK(o.kind == outcome_kind::retry);
  CHECK(o.retry_after == seconds{30});
  CHECK(o.error == "HTTP 503");

  const auto dated = classify_http_result(response(429, "", {{"retry-after", "Thu, 25 Feb 2021 15:04:10 GMT"}}), now);
  CHECK(dated.retry_after == seconds{120});

  const auto garbage = classify_http_result(response(429, "", {{"retry-after", "later"}}), now);
  CHECK(garbage.kind == outcome_kind::retry);
  CHECK_FALSE(garbage.retry_after.has_value());

  // A permanent failure never carries a retry hint.
  const auto dead = classify_http_result(response(400, "", {{"retry-after", "30"}}), now);
  CHECK(dead.kind == outcome_kind::dead);
  CHECK_FALSE(dead.retry_after.has_value());
}

TEST_CASE("other statuses are dead") {
  for (int s : {100, 301, 302, 304, 400, 401, 403, 404, 409, 410, 413, 422}) {
    CAPTURE(s);
    const auto o = classify_http_result(response(s, "{\"error\":\"bad\"}"), now);
    CHECK(o.kind == outcome_kind::dead);
    CHECK(o.error == "HTTP " + std::to_string(s) + ": {\"error\":\"bad\"}");
  }
}

TEST_CASE("the error quotes at most 200 bytes of the body, on one line") {
  const auto o = classify_http_result(response(500, "line1\r\nline2\t" + std::string(1000, 'x')), now);
  CHECK(o.error.starts_with("HTTP 500: line1  line2 xxx"));
  CHECK(o.error.ends_with("..."));
  CHECK(o.error.size() == std::string_view{"HTTP 500: "}.size() + 200);
  CHECK(o.error.find('\n') == std::string::npos);
}

TEST_CASE("transport errors retry, except bad_url which is dead") {
  for (auto e :
       {transport_error::resolve, transport_error::connect, transport_error::tls_handshake, transport_error::timeout,
        transport_error::connection_reset, transport_error::response_too_large, transport_error::bad_response}) {
    CAPTURE(to_string(e));
    const auto o = classify_http_result(failure(e, "boom"), now);
    CHECK(o.kind == outcome_kind::retry);
    CHECK(o.error == std::string{to_string(e)} + ": boom");
    CHECK_FALSE(o.retry_after.has_value());
  }
  const auto bad = classify_http_result(failure(transport_error::bad_url, "no host"), now);
  CHECK(bad.kind == outcome_kind::dead);
  CHECK(bad.error == std::string{to_string(transport_error::bad_url)} + ": no host");
}

TEST_CASE("transport error text") {
  const auto timeout = classify_http_result(failure(transport_error::timeout, "read deadline"), now);
  CHECK(timeout.error == "timeout: read deadline");
  const auto maybe = classify_http_result(failure(transport_error::connection_reset, "eof", true), now);
  CHECK(maybe.error.find("may have reached the server") != std::string::npos);
  const auto bare = classify_http_result(failure(transport_error::connect, ""), now);
  CHECK(bare.error == to_string(transport_error::connect));
  // No response and no error is a client bug; retrying is the safe reading.
  const auto none = classify_http_result(http_result{}, now);
  CHECK(none.kind == outcome_kind::retry);
  CHECK(none.error == "no response");
}

TEST_CASE("uniform_outcome gives every event the same outcome") {
  const auto b = uniform_outcome(3, response(503, "down", {{"retry-after", "9"}}), now);
  REQUIRE(b.events.size() == 3);
  for (const auto& o : b.events) {
    CHECK(o.kind == outcome_kind::retry);
    CHECK(o.error == "HTTP 503: down");
    CHECK(o.retry_after == seconds{9});
  }
  CHECK_FALSE(b.pause_destination.has_value());

  const auto ok = uniform_outcome(1, response(200), now);
  REQUIRE(ok.events.size() == 1);
  CHECK(ok.events[0].kind == outcome_kind::delivered);

  CHECK(uniform_outcome(0, response(200), now).events.empty());
}

TEST_CASE("401 and 403 pause the destination and keep the rows alive") {
  for (int s : {401, 403}) {
    CAPTURE(s);
    const auto b = uniform_outcome(2, response(s, "{\"error\":\"invalid token\"}"), now);
    REQUIRE(b.pause_destination.has_value());
    CHECK(*b.pause_destination == "HTTP " + std::to_string(s) + " from destination: {\"error\":\"invalid token\"}");
    REQUIRE(b.events.size() == 2);
    for (const auto& o : b.events) CHECK(o.kind == outcome_kind::retry);
  }
  CHECK(uniform_outcome(1, response(401), now).pause_destination ==
        std::optional<std::string>{"HTTP 401 from destination"});
  // Other 4xx are the row's fault: dead, no pause.
  const auto b = uniform_outcome(1, response(400, "bad field"), now);
  CHECK_FALSE(b.pause_destination.has_value());
  CHECK(b.events[0].kind == outcome_kind::dead);
  // Transport errors never pause.
  CHECK_FALSE(uniform_outcome(1, failure(transport_error::timeout, "x"), now).pause_destination.has_value());
}

TEST_CASE("response_excerpt keeps short text as is") {
  CHECK(response_excerpt("") == "");
  CHECK(response_excerpt("hello") == "hello");
  CHECK(response_excerpt("a\nb\tc") == "a\nb\tc");
  CHECK(response_excerpt("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80") == "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST_CASE("response_excerpt replaces control characters") {
  CHECK(response_excerpt(std::string("a\0b\rc\x1b[0m\x7f", 10)) == "a b c [0m ");
  CHECK(response_excerpt("x\xc2\x85y") == "x y");  // C1 control (NEL)
  CHECK(one_line_excerpt("a\nb\tc") == "a b c");
}

TEST_CASE("response_excerpt turns invalid UTF-8 into U+FFFD") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(response_excerpt("a\xff"
                         "b") == "a" + fffd + "b");
  CHECK(response_excerpt("\xc3") == fffd);                                   // truncated sequence
  CHECK(response_excerpt("\xc0\xaf") == fffd + fffd);                        // overlong '/'
  CHECK(response_excerpt("\xed\xa0\x80") == fffd + fffd + fffd);             // UTF-16 surrogate
  CHECK(response_excerpt("\xf4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // > U+10FFFF
  CHECK(is_valid_utf8(response_excerpt("\x80\x81\xfe\xfe ok")));
}

TEST_CASE("response_excerpt cuts at max bytes on a code point boundary") {
  const std::string long_text(1000, 'a');
  const std::string cut = response_excerpt(long_text);
  CHECK(cut.size() == 512);
  CHECK(cut.ends_with("..."));

  CHECK(response_excerpt("abcdef", 6) == "abcdef");
  CHECK(response_excerpt("abcdefg", 6) == "abc...");
  CHECK(response_excerpt("abcdefg", 2) == "ab");  // too small for the ellipsis

  // "é" is 2 bytes: a cut must not split it.
  const std::string accents = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";  // 4 x é = 8 bytes
  const std::string cut_accents = response_excerpt(accents, 7);
  CHECK(cut_accents == "\xc3\xa9\xc3\xa9...");
  CHECK(is_valid_utf8(cut_accents));

  // Every max on a mixed string still gives valid UTF-8 within the budget.
  const std::string mixed = "h\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80\xff\nend";
  for (std::size_t max = 0; max <= mixed.size() + 8; ++max) {
    CAPTURE(max);
    const std::string e = response_excerpt(mixed, max);
    CHECK(e.size() <= max);
    CHECK(is_valid_utf8(e));
  }
}

}  // namespace http_outcome_test
