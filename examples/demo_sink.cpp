// The demo's stand-ins for the providers, over real HTTPS with a throwaway CA:
// Meta Conversions API, TikTok Events API 2.0, Google's Data Manager API (with
// its OAuth2 token endpoint; the default Google path, since the Google Ads API
// refuses click-conversion uploads from new integrations) and a webhook
// receiver, each on its own port. Meta, TikTok and
// Google answer through the fakes the tests use (tests/support/fake_*.hpp), which
// check requests the way the real APIs do; the webhook receiver checks the
// Standard Webhooks signature. TikTok is "down" for its first two requests
// (HTTP 503), then recovers. On SIGTERM or SIGINT it prints what each provider
// received and exits.
//   usage: demo_sink <dir> [webhook-secret]
//   writes <dir>/ca.pem, then <dir>/endpoints.env (META_URL=..., TIKTOK_URL=...,
//   GOOGLE_URL=..., WEBHOOK_URL=...) once every server listens.
#include <pthread.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/crypto.hpp"
#include "tests/support/fake_google.hpp"
#include "tests/support/fake_meta.hpp"
#include "tests/support/fake_tiktok.hpp"
#include "tests/support/test_https_server.hpp"
#include "tests/support/test_tls.hpp"

namespace {

using nlohmann::json;
using namespace outbox::test;

constexpr int tiktok_outage_requests = 2;

// "3e5c2f0a1b…" for a hash, "" when absent; accepts a string or an array of strings.
std::string prefix(const json& v, std::size_t n = 8) {
  const json& s = v.is_array() && !v.empty() ? v[0] : v;
  if (!s.is_string()) return s.is_null() ? "" : s.dump();
  const auto& text = s.get_ref<const std::string&>();
  return text.size() <= n ? text : text.substr(0, n) + "…";
}

const json& at(const json& j, const char* key) {
  static const json none;
  return j.is_object() && j.contains(key) ? j[key] : none;
}

// "label value" pairs joined by two spaces; empty values are left out.
std::string fields(std::initializer_list<std::pair<std::string, std::string>> pairs) {
  std::string out;
  for (const auto& [label, value] : pairs) {
    if (value.empty()) continue;
    if (!out.empty()) out += "  ";
    out += label.empty() ? value : label + " " + value;
  }
  return out;
}

std::string money(const json& value, const json& currency) {
  return value.is_null() ? "" : value.dump() + (currency.is_string() ? " " + currency.get<std::string>() : "");
}

std::string excerpt(std::string s, std::size_t n = 90) { return s.size() <= n ? s : s.substr(0, n) + "…"; }

// An event name padded to one width, so that the columns line up.
std::string pad(const json& name) {
  std::string s = name.is_string() ? name.get<std::string>() : "?";
  if (s.size() < 15) s.resize(15, ' ');
  return s;
}

std::string meta_event(const json& e) {
  const json& u = at(e, "user_data");
  const json& c = at(e, "custom_data");
  return fields({{"", pad(at(e, "event_name"))},
                 {"event_id", prefix(at(e, "event_id"), 13)},
                 {"em", prefix(at(u, "em"))},
                 {"ph", prefix(at(u, "ph"))},
                 {"fbc", prefix(at(u, "fbc"), 16)},
                 {"lead_id", prefix(at(u, "lead_id"), 20)},
                 {"value", money(at(c, "value"), at(c, "currency"))}});
}

std::string tiktok_event(const json& e) {
  const json& u = at(e, "user");
  const json& p = at(e, "properties");
  return fields({{"", pad(at(e, "event"))},
                 {"event_id", prefix(at(e, "event_id"), 13)},
                 {"email", prefix(at(u, "email"))},
                 {"phone", prefix(at(u, "phone"))},
                 {"ttclid", prefix(at(u, "ttclid"), 16)},
                 {"value", money(at(p, "value"), at(p, "currency"))}});
}

// One Data Manager event: its dedup id, click id, hashed identifiers, value.
std::string google_event(const json& e) {
  std::string email, phone, address;
  for (const auto& id : at(at(e, "userData"), "userIdentifiers")) {
    if (id.contains("emailAddress")) email = prefix(id["emailAddress"]);
    if (id.contains("phoneNumber")) phone = prefix(id["phoneNumber"]);
    if (id.contains("address")) address = "hashed names, " + prefix(at(id["address"], "regionCode"));
  }
  return fields({{"transactionId", prefix(at(e, "transactionId"), 13)},
                 {"gclid", prefix(at(at(e, "adIdentifiers"), "gclid"), 18)},
                 {"emailAddress", email},
                 {"phoneNumber", phone},
                 {"address", address},
                 {"value", money(at(e, "conversionValue"), at(e, "currency"))}});
}

// What each provider received: per provider, each request's lines by request number.
class journal {
 public:
  // Numbers a new request to `provider`: 1, 2, ...
  int begin(const std::string& provider) {
    const std::lock_guard lock{mu_};
    return ++requests_[provider];
  }
  void add(const std::string& provider, int number, std::vector<std::string> lines) {
    const std::lock_guard lock{mu_};
    lines_[provider][number] = std::move(lines);
  }
  [[nodiscard]] int requests(const std::string& provider) const {
    const std::lock_guard lock{mu_};
    const auto it = requests_.find(provider);
    return it == requests_.end() ? 0 : it->second;
  }
  [[nodiscard]] std::vector<std::string> lines(const std::string& provider) const {
    const std::lock_guard lock{mu_};
    std::vector<std::string> out;
    if (const auto it = lines_.find(provider); it != lines_.end()) {
      for (const auto& [number, lines] : it->second) out.insert(out.end(), lines.begin(), lines.end());
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::map<int, std::vector<std::string>>> lines_;
  std::map<std::string, int> requests_;
};

// "#2 -> 200 {"events_received":1,...}" and, when accepted, one line per event.
std::vector<std::string> describe(int number, const response_plan& answer, const json& events, bool accepted,
                                  std::string (*event_line)(const json&), const std::string& note = {}) {
  std::vector<std::string> out{"#" + std::to_string(number) + " -> " + std::to_string(answer.status) + " " +
                               excerpt(answer.body, 110) + note};
  if (!accepted) {
    out.back() += "  (" + std::to_string(events.is_array() ? events.size() : 0) + " event(s) not accepted)";
    return out;
  }
  if (events.is_array()) {
    for (const auto& e : events) out.push_back("     " + event_line(e));
  }
  return out;
}

void print_section(const std::string& title, const std::vector<std::string>& lines) {
  std::cout << title << "\n";
  for (const auto& l : lines) std::cout << "  " << l << "\n";
  if (lines.empty()) std::cout << "  (nothing)\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: demo_sink <dir> [webhook-secret]\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::string webhook_key = argc == 3 ? argv[2] : "";
  if (webhook_key.starts_with("whsec_")) {
    webhook_key = outbox::providers::base64_decode(webhook_key.substr(6)).value_or(webhook_key);
  }
  // Block the stop signals before the server threads start, then wait for one here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  test_ca ca("outbox demo CA");
  ca.write_cert_pem(dir / "ca.pem");
  journal log;  // outlives the servers below, whose threads write to it
  test_server_options tls;
  tls.certificate = ca.issue();  // localhost and 127.0.0.1

  // Meta: the fake decides; we only write down what it saw.
  fake_meta_options meta_options;
  meta_options.app_secret = "demo-meta-app-secret";  // so appsecret_proof is checked too
  const fake_meta meta(meta_options);
  test_https_server meta_server(tls);
  meta_server.set_fallback([&log, api = meta.make_responder()](const recorded_request& r) {
    const int number = log.begin("meta");
    auto answer = api(r);
    const json body = json::parse(r.body, nullptr, false);
    log.add("meta", number, describe(number, answer, at(body, "data"), answer.status == 200, meta_event));
    return answer;
  });

  // TikTok: an outage first (HTTP 503, which the dispatcher retries with backoff), then the fake.
  const fake_tiktok tiktok;
  test_https_server tiktok_server(tls);
  tiktok_server.set_fallback([&log, api = tiktok.make_responder()](const recorded_request& r) {
    const int number = log.begin("tiktok");
    const json body = json::parse(r.body, nullptr, false);
    if (number <= tiktok_outage_requests) {
      auto down = response_plan::reply(503, R"({"code":50002,"message":"Service temporarily unavailable"})",
                                       {{"content-type", "application/json"}});
      log.add("tiktok", number, describe(number, down, at(body, "data"), false, tiktok_event, "  (simulated outage)"));
      return down;
    }
    auto answer = api(r);
    const json reply = json::parse(answer.body, nullptr, false);
    log.add("tiktok", number, describe(number, answer, at(body, "data"), at(reply, "code") == 0, tiktok_event));
    return answer;
  });

  // Google: OAuth2 token endpoint and the Data Manager API on one server of its own.
  fake_google google(ca);

  // Webhook: any 2xx is delivery; check the signature the dispatcher computed.
  test_https_server webhook_server(tls);
  webhook_server.set_fallback([&log, webhook_key](const recorded_request& r) {
    const auto id = r.header("webhook-id").value_or("");
    const auto ts = r.header("webhook-timestamp").value_or("");
    const auto sig = r.header("webhook-signature").value_or("");
    std::string check = "unsigned";
    if (!sig.empty() && !webhook_key.empty()) {
      using namespace outbox::providers;
      const auto expected = "v1," + base64_encode(hmac_sha256(webhook_key, id + "." + ts + "." + r.body));
      check = sig == expected ? "signature ok" : "SIGNATURE MISMATCH";
    }
    const int number = log.begin("webhook");
    log.add("webhook", number,
            {"#" + std::to_string(number) + " -> 200  " + r.method + " " + r.target + "  webhook-id " +
                 prefix(json(id), 13) + "  " + check,
             "     body " + excerpt(r.body)});
    return response_plan::reply(200, R"({"ok":true})", {{"content-type", "application/json"}});
  });

  {
    const auto tmp = dir / "endpoints.env.tmp";
    std::ofstream(tmp) << "META_URL=" << meta_server.url("", "localhost") << "\n"
                       << "TIKTOK_URL=" << tiktok_server.url("", "localhost") << "\n"
                       << "GOOGLE_URL=" << google.base_url() << "\n"
                       << "WEBHOOK_URL=" << webhook_server.url("/crm-hook", "localhost") << "\n";
    std::filesystem::rename(tmp, dir / "endpoints.env");  // appears complete or not at all
  }

  int signo = 0;
  sigwait(&stop_signals, &signo);

  print_section("meta      Conversions API, POST " + meta.events_path() + " (" + std::to_string(log.requests("meta")) +
                    " request(s))",
                log.lines("meta"));
  print_section("tiktok    Events API 2.0, POST /open_api/v1.3/event/track/ (" +
                    std::to_string(log.requests("tiktok")) + " request(s))",
                log.lines("tiktok"));
  std::vector<std::string> google_lines;
  for (const auto& t : google.token_requests()) {
    const auto grant = t.body.find("grant_type=refresh_token") != std::string::npos ? "grant_type=refresh_token" : "?";
    google_lines.push_back("token: " + t.method + " /token " + grant + " (client id and secret, refresh token)");
  }
  std::set<std::string> accepted;
  for (const auto& e : google.ingested_events()) accepted.insert(e.value("transactionId", ""));
  int n = 0;
  for (const auto& r : google.data_manager_requests()) {
    const json body = json::parse(r.body, nullptr, false);
    const json& events = at(body, "events");
    const bool bearer = r.header("authorization").value_or("").starts_with("Bearer ");
    google_lines.push_back("#" + std::to_string(++n) + " POST " + r.target + "  " + std::to_string(events.size()) +
                           " event(s), encoding " + prefix(at(body, "encoding")) + ", " +
                           (bearer ? "Bearer token" : "no token"));
    for (const auto& e : events) {
      google_lines.push_back(
          std::string(accepted.contains(e.value("transactionId", "")) ? "     " : "     (refused) ") + google_event(e));
    }
  }
  print_section("google    OAuth2 token endpoint + Data Manager API events:ingest (" + std::to_string(n) +
                    " request(s), " + std::to_string(accepted.size()) + " event(s) accepted)",
                google_lines);
  print_section("webhook   Standard Webhooks receiver (" + std::to_string(log.requests("webhook")) + " request(s))",
                log.lines("webhook"));
  std::cout << std::flush;
  return 0;
}
