#pragma once
// Query parameters, always sent separately from the SQL text (never concatenated).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace outbox::db {

using param = std::optional<std::string>;  // nullopt is SQL NULL
using params = std::vector<param>;

// PostgreSQL array literals for passing many values as one parameter
// (e.g. `= ANY($1::bigint[])`, `unnest($2::text[])`).
[[nodiscard]] std::string int_array(std::span<const std::int64_t> values);
[[nodiscard]] std::string text_array(std::span<const std::optional<std::string>> values);
[[nodiscard]] std::string text_array(std::span<const std::string> values);

}  // namespace outbox::db
