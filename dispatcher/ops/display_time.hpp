#pragma once
// One timestamp format in every command's text output: RFC 3339 in UTC to the
// second ("2026-12-06T03:54:05Z"), the format of the logs, /status and the
// heartbeat. PostgreSQL writes timestamptz two ways (json: "...T...+00:00",
// text: "... ...+00", each in the session's time zone, with fractions);
// both come out the same here. JSON output (--json) keeps PostgreSQL's text.
#include <string>
#include <string_view>

namespace outbox {

// "2026-12-06 04:54:05.123+01" -> "2026-12-06T03:54:05Z"; text that is not a
// timestamp with an offset is returned unchanged.
[[nodiscard]] std::string display_time(std::string_view timestamp);

}  // namespace outbox
