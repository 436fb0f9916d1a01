#pragma once
// Text from the database (CRM payloads, provider errors, pause reasons) printed
// for a human on a terminal. Such text is not trusted: "\x1b[2J" in a last_error
// would clear the on-call's screen, and other escape sequences can rewrite what
// was printed before or retitle the window. Everything a terminal could act on
// is shown as a visible escape instead. JSON output (--json) needs none of this:
// nlohmann escapes control characters itself.
#include <cstddef>
#include <string>
#include <string_view>

namespace outbox {

// A copy of `text` safe to write to a terminal:
//   - C0 controls (U+0000-U+001F, tab and newline included) and DEL: "\n", "\r",
//     "\t", else "\xNN" (ESC is "\x1b");
//   - C1 controls (U+0080-U+009F; U+009B is a one-byte CSI): "\u009b";
//   - bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069), which
//     reorder what is shown ("Trojan Source"): "\u202e";
//   - bytes that are not valid UTF-8 (stray continuation bytes, overlong forms,
//     surrogates, beyond U+10FFFF, truncated sequences): "\xNN" per byte.
// Everything else, valid UTF-8 included, is kept. Backslashes are kept as they
// are: this is for reading, not for parsing back.
// `max_bytes` caps the result; the cut never splits an escape or a character.
[[nodiscard]] std::string terminal_text(std::string_view text, std::size_t max_bytes = std::string::npos);

}  // namespace outbox
