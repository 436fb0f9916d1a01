#pragma once
// What counts as personal data in a canonical event (issue 51; docs/personal_data.md):
// the user fields, click and browser ids and the platforms' lead ids, and,
// under `extra`, those names and the platforms' own names for them (Meta's
// `user_data.em`, TikTok's `context.user`, Data Manager's `userIdentifiers`).
// sql/0013_personal_data.sql holds the same list (outbox_personal_fields(),
// which erases them in the database); tests/db/personal_data_pgtest.cpp keeps
// the two equal.
#include <array>
#include <string_view>

#include <nlohmann/json.hpp>

namespace outbox::providers {

inline constexpr std::array<std::string_view, 21> personal_event_fields = {
    "email", "phone",  "first_name", "last_name",   "date_of_birth", "gender",     "city",
    "state", "zip",    "country",    "external_id", "client_ip",     "user_agent", "fbc",
    "fbp",   "ttclid", "ttp",        "gclid",       "gbraid",        "wbraid",     "lead_id"};

inline constexpr std::array<std::string_view, 28> personal_platform_fields = {
    "user_data",
    "userData",
    "user",
    "userIdentifiers",
    "user_identifiers",
    "addressInfo",
    "address",
    "em",
    "ph",
    "fn",
    "ln",
    "db",
    "ge",
    "ct",
    "st",
    "zp",
    "client_ip_address",
    "client_user_agent",
    "ip",
    "emailAddress",
    "phoneNumber",
    "hashedEmail",
    "hashedPhoneNumber",
    "givenName",
    "familyName",
    "postalCode",
    "regionCode",
    "callback"};  // callback: TikTok's click id (context.ad.callback)

// Whether a key of a canonical event, or of anything under its `extra`, holds personal data.
[[nodiscard]] constexpr bool is_personal_field(std::string_view key) {
  for (const auto f : personal_event_fields) {
    if (f == key) return true;
  }
  for (const auto f : personal_platform_fields) {
    if (f == key) return true;
  }
  return false;
}

// `doc` with the value under every personal key, at any depth, replaced by
// `marker`: the field names stay, and so does whether each was present.
[[nodiscard]] nlohmann::json with_personal_data_replaced(const nlohmann::json& doc, std::string_view marker);

}  // namespace outbox::providers
