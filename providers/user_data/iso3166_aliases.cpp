#include "providers/user_data/iso3166.hpp"

namespace outbox::providers::iso3166 {
namespace {

// Names CRMs use that iso-codes lacks: the parts of the United Kingdom, which
// the data only knows as GB's subdivisions, and former or customary short names.
// Read at build time by scripts/gen_iso3166_keys.cpp (and by the tests).
constexpr country_alias alias_table[] = {
    {"UK", "GB"},        {"Great Britain", "GB"}, {"Britain", "GB"},          {"England", "GB"},
    {"Scotland", "GB"},  {"Wales", "GB"},         {"Northern Ireland", "GB"}, {"Russia", "RU"},
    {"Turkey", "TR"},    {"Ivory Coast", "CI"},   {"Cape Verde", "CV"},       {"Swaziland", "SZ"},
    {"Macedonia", "MK"}, {"Vatican", "VA"},       {"Palestine", "PS"},        {"Holland", "NL"},
};

}  // namespace

std::span<const country_alias> country_aliases() { return alias_table; }

}  // namespace outbox::providers::iso3166
