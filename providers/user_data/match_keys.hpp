#pragma once
// The match keys a conversion can carry, by the name metrics and `dispatcher
// status` show (match-key coverage: why a destination's match quality is low).
#include <array>
#include <string_view>

namespace outbox::providers::match_key {

inline constexpr std::string_view email = "email";
inline constexpr std::string_view phone = "phone";
inline constexpr std::string_view external_id = "external_id";
inline constexpr std::string_view click_id = "click_id";            // gclid, gbraid, wbraid, ttclid
inline constexpr std::string_view browser_id = "browser_id";        // fbc, fbp, ttp (first-party cookies)
inline constexpr std::string_view ip_user_agent = "ip_user_agent";  // both present
inline constexpr std::string_view address = "address";              // name with city, zip or country
inline constexpr std::string_view lead_id = "lead_id";              // the platform's own lead id
inline constexpr std::string_view date_of_birth = "date_of_birth";

inline constexpr std::array<std::string_view, 9> all{email,         phone,   external_id, click_id,     browser_id,
                                                     ip_user_agent, address, lead_id,     date_of_birth};

}  // namespace outbox::providers::match_key
