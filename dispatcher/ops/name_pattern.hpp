#pragma once
// The destination filter of `dispatcher status --destination` and /status?destination=:
// a name, or a prefix followed by '*' ("project_*").
#include <string_view>

namespace outbox {

[[nodiscard]] inline bool matches_name_pattern(std::string_view name, std::string_view pattern) {
  if (pattern.ends_with('*')) return name.starts_with(pattern.substr(0, pattern.size() - 1));
  return name == pattern;
}

}  // namespace outbox
