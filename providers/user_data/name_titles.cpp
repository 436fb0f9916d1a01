#include "providers/user_data/name_titles.hpp"

#include <algorithm>
#include <array>

namespace outbox::providers {

namespace {

// English forms, as Google's examples are; each as it reads after punctuation is
// removed ("Mrs." -> "mrs", "Ph.D." -> "phd"). Short on purpose: a word that is
// also a name ("Major", "Judge") is never taken for a title.
constexpr std::array<std::string_view, 16> prefixes = {"mr",   "mrs", "ms", "miss", "mx",   "dr",  "prof", "sir",
                                                       "dame", "rev", "fr", "lord", "lady", "hon", "mstr", "madam"};
constexpr std::array<std::string_view, 14> suffixes = {"jr",  "jnr", "sr",  "snr", "ii",  "iii", "iv",
                                                       "phd", "md",  "esq", "dds", "dvm", "mba", "cpa"};

bool is_blank_byte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

}  // namespace

std::string without_name_prefixes(std::string_view lowered) {
  std::string_view name = lowered;
  for (;;) {
    const auto blank = std::find_if(name.begin(), name.end(), is_blank_byte);
    if (blank == name.end() || !listed(prefixes, std::string_view{name.begin(), blank})) break;
    const auto rest = std::find_if_not(blank, name.end(), is_blank_byte);
    if (rest == name.end()) break;
    name = std::string_view{rest, name.end()};
  }
  return std::string{name};
}

std::string without_name_suffixes(std::string_view lowered) {
  std::string_view name = lowered;
  for (;;) {
    const auto last_blank = std::find_if(name.rbegin(), name.rend(), is_blank_byte);
    if (last_blank == name.rend() || !listed(suffixes, std::string_view{last_blank.base(), name.end()})) break;
    const auto kept_end = std::find_if_not(last_blank, name.rend(), is_blank_byte);
    if (kept_end == name.rend()) break;
    name = std::string_view{name.begin(), kept_end.base()};
  }
  return std::string{name};
}

}  // namespace outbox::providers
