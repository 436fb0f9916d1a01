#pragma once
// Text that becomes a statement parameter must be valid UTF-8 without NUL, or
// PostgreSQL rejects the whole statement (22021 / 22P05) and one bad provider
// message would poison a batch settle. Every free-form text the engine stores
// (errors, response excerpts) goes through clean_text first.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace outbox::db {

// Valid UTF-8 with invalid sequences replaced by U+FFFD, NUL bytes dropped, and
// at most `max_bytes` bytes, cut on a character boundary ("..." marks a cut).
[[nodiscard]] std::string clean_text(std::string_view text, std::size_t max_bytes);

// A JSON document with every string (keys too) through clean_text, for jsonb
// parameters: PostgreSQL refuses "\u0000" in jsonb (22P05) as in text.
[[nodiscard]] nlohmann::json clean_json(const nlohmann::json& doc, std::size_t max_string_bytes);

// Length of the longest prefix of `text` that is at most `max_bytes` long and
// ends on a character boundary (text assumed valid UTF-8).
[[nodiscard]] std::size_t utf8_boundary(std::string_view text, std::size_t max_bytes);

}  // namespace outbox::db
