#pragma once
// The wire pieces fake_google.cpp answers with: TLS for the fake's server, form
// bodies, google.rpc.Status errors, and the formats Google checks.
#include <map>
#include <regex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

namespace outbox::test::fake_google_wire {

[[nodiscard]] test_server_options tls_for(const test_ca& ca);
[[nodiscard]] std::string percent_decode(std::string_view s);
[[nodiscard]] std::map<std::string, std::string> form_fields(std::string_view body);
[[nodiscard]] response_plan json_reply(int status, const nlohmann::json& body);
[[nodiscard]] response_plan rpc_error(int status, std::string_view code_name, std::string_view message,
                                      nlohmann::json details = nlohmann::json::array());
[[nodiscard]] response_plan unauthenticated();
[[nodiscard]] bool is_gclid_like(std::string_view s);
// Hex of either case: Google decodes the hex.
[[nodiscard]] bool is_sha256_hex_any_case(const nlohmann::json& v);
[[nodiscard]] const std::regex& ads_path();
[[nodiscard]] const std::regex& ads_date_time();
[[nodiscard]] const std::regex& rfc3339();
// Keeps a copy of an events:ingest body in $OUTBOX_DM_BODY_DIR (one file each) when
// it is set, for scripts/check_datamanager_protos.py to parse against Google's protos.
void keep_ingest_body(std::string_view body);

}  // namespace outbox::test::fake_google_wire
