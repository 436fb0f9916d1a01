// libFuzzer target: raw bytes as one user value (a CRM field: email, phone,
// name...) through every normalization and hash of providers/user_data/user_data.hpp.
// The first byte picks the default calling code and the row's region (its
// normalized country), so the phone and state rules see destinations with and
// without a calling code and rows with and without a country. Findings:
// crashes, sanitizer reports, exceptions (these run inside prepare() and
// build_request()), and hashes that are not 64 lower-case hex characters.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "providers/user_data/user_data.hpp"

namespace {

using namespace outbox::providers;

constexpr std::array all_fields{pii_field::email,
                                pii_field::email_google,
                                pii_field::phone_digits,
                                pii_field::phone_e164,
                                pii_field::name,
                                pii_field::given_name_google,
                                pii_field::family_name_google,
                                pii_field::city,
                                pii_field::state,
                                pii_field::zip,
                                pii_field::postal_code_google,
                                pii_field::country,
                                pii_field::date_of_birth,
                                pii_field::external_id,
                                pii_field::gender};

constexpr std::array<std::string_view, 4> calling_codes{"", "1", "+44", "49"};
// Regions as normalize_country gives them; "aq" has no ISO 3166-2 subdivisions,
// "xk" is not an ISO 3166-1 code at all (a caller passing one must not crash).
constexpr std::array<std::string_view, 6> regions{"", "us", "de", "gb", "aq", "xk"};

bool is_lower_hex_sha256(std::string_view s) {
  if (s.size() != 64) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const normalize_options options{std::string(calling_codes[data[0] % calling_codes.size()]),
                                  std::string(regions[(data[0] / calling_codes.size()) % regions.size()])};
  const std::string_view raw(reinterpret_cast<const char*>(data) + 1, size - 1);
  (void)utf8_to_lower(raw);
  (void)is_sha256_hex(raw);
  (void)normalize_phone(raw, phone_style::digits, options.default_calling_code);
  (void)normalize_phone(raw, phone_style::e164, options.default_calling_code);
  for (const auto field : all_fields) {
    (void)normalize_pii(field, raw, options);
    const auto hash = hash_pii(field, raw, options);
    if (hash && !is_lower_hex_sha256(*hash)) {
      std::fprintf(stderr, "user_data_fuzz: hash_pii gave '%s', not a lower-case hex SHA-256\n", hash->c_str());
      std::abort();
    }
  }
  return 0;
}
