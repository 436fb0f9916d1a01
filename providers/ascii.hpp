#pragma once
// ASCII character classes of the formats the providers parse (dates, ids, codes,
// numbers in settings): never the locale's, which <cctype> would consult.

namespace outbox::providers {

[[nodiscard]] constexpr bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace outbox::providers
