#include "tests/support/fake_google_wire.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace outbox::test::fake_google_wire {

using nlohmann::json;

test_server_options tls_for(const test_ca& ca) {
  test_server_options o;
  o.certificate = ca.issue();  // localhost and 127.0.0.1
  return o;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> form_fields(std::string_view body) {
  std::map<std::string, std::string> fields;
  while (!body.empty()) {
    const auto amp = body.find('&');
    const auto pair = body.substr(0, amp);
    const auto eq = pair.find('=');
    fields[percent_decode(pair.substr(0, eq))] =
        eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    body.remove_prefix(amp + 1);
  }
  return fields;
}

response_plan json_reply(int status, const json& body) { return response_plan::reply(status, body.dump()); }

response_plan rpc_error(int status, std::string_view code_name, std::string_view message, json details) {
  return json_reply(
      status, json{{"error",
                    {{"code", status}, {"message", message}, {"status", code_name}, {"details", std::move(details)}}}});
}

response_plan unauthenticated() {
  return rpc_error(401, "UNAUTHENTICATED",
                   "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                   "other valid authentication credential.");
}

bool is_gclid_like(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool is_sha256_hex_any_case(const json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

const std::regex& ads_path() {
  static const std::regex re{R"(^/(v\d+)/customers/(\d+):uploadClickConversions$)"};
  return re;
}

const std::regex& ads_date_time() {
  static const std::regex re{R"(^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$)"};
  return re;
}

const std::regex& rfc3339() {
  static const std::regex re{R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$)"};
  return re;
}

void keep_ingest_body(std::string_view body) {
  const char* dir = std::getenv("OUTBOX_DM_BODY_DIR");
  if (dir == nullptr || *dir == '\0') return;
  static std::atomic<unsigned> kept{0};
  // Test programs run side by side (ctest -j) and one after another: the process id
  // and the time keep their files apart.
  const auto ns = std::chrono::system_clock::now().time_since_epoch().count();
  const auto name = std::to_string(::getpid()) + "-" + std::to_string(ns) + "-" + std::to_string(kept++) + ".json";
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path{dir} / name, std::ios::binary) << body;
}

}  // namespace outbox::test::fake_google_wire
