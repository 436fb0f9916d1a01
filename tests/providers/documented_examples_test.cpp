// Golden requests built from the providers' own documented examples: raw CRM
// values in, the documented normalized-and-hashed values out, through the real
// providers (Meta's customer information parameters, Google's Data Manager
// formatting guide, TikTok's sample request). Expected hashes are the ones the
// documentation prints (or sha256 of its normalized value).
#include <doctest/doctest.h>

#include <chrono>
#include <span>
#include <string>

#include "providers/crypto.hpp"
#include "providers/google/google_data_manager_provider.hpp"
#include "providers/meta/meta_provider.hpp"
#include "providers/tiktok/tiktok_provider.hpp"
#include "tests/support/fake_google_wire.hpp"
#include "tests/support/provider_test_kit.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace documented_examples_test {

using namespace outbox::providers;
using nlohmann::json;
using std::chrono::system_clock;

namespace {

const system_clock::time_point now = system_clock::time_point{} + std::chrono::seconds{1767229200};
constexpr std::int64_t an_hour_ago = 1767225600;

outbound_event event(json payload, std::string key = "doc-1") {
  return outbox::test::test_event(std::move(payload), std::move(key));
}

json meta_user_data(const json& payload) {
  meta_destination d;
  d.pixel_id = "1234567890";
  d.access_token = "token";
  const meta_provider p{d};
  const auto e = event(payload);
  REQUIRE_FALSE(p.validate(e, now).has_value());
  return json::parse(p.build_request(std::span{&e, 1}, now).body)["data"][0]["user_data"];
}

json data_manager_event_of(const json& payload) {
  const google_data_manager_provider p{make_google_data_manager_destination({{"account_id", "123-456-7890"},
                                                                             {"conversion_action_id", "987654"},
                                                                             {"client_id", "c"},
                                                                             {"client_secret", "s"},
                                                                             {"refresh_token", "r"}},
                                                                            {})};
  const auto e = event(payload);
  REQUIRE_FALSE(p.validate(e, now).has_value());
  const auto body = p.build_request(std::span{&e, 1}, now).body;
  outbox::test::fake_google_wire::keep_ingest_body(body);  // checks/datamanager_protos parses it
  return json::parse(body)["events"][0];
}

json one(const char* hash) { return json::array({hash}); }

}  // namespace

TEST_CASE("Meta customer information parameters: the documented examples, from raw CRM values") {
  const auto user = meta_user_data({{"event_time", an_hour_ago},
                                    {"email", "John_Smith@gmail.com"},
                                    {"phone", "(650)555-1212"},
                                    {"country", "United States"},
                                    {"first_name", "Mary"},
                                    {"date_of_birth", "2/16/1997"},
                                    {"gender", "Female"}});
  CHECK(user["em"] == one("62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f"));
  CHECK(user["ph"] == one("e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176"));  // US from country
  CHECK(user["country"] == one("79adb2a2fce5c6ba215fe5f27f532d4e7edbac4b6a5e09e1ef3a08084a904621"));
  CHECK(user["fn"] == one("6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec"));
  CHECK(user["db"] == one("01acdbf6ec7b4f478a225f1a246e5d6767eeab1a7ffa17f025265b5b94f40f0c"));  // 19970216
  CHECK(user["ge"] == json::array({sha256_hex("f")}));
  // The non-Latin examples of the same table: accents and Hangul kept as they are.
  CHECK(meta_user_data({{"event_time", an_hour_ago}, {"first_name", "Valéry"}})["fn"] ==
        one("08e1996b5dd49e62a4b4c010d44e4345592a863bb9f8e3976219bac29417149c"));
  CHECK(meta_user_data({{"event_time", an_hour_ago}, {"first_name", "정"}})["fn"] ==
        one("8fa8cd9c440be61d0151429310034083132b35975c4bea67fdd74158eb51db14"));
}

TEST_CASE("Meta: a CRM's lead with lists, Unicode names and region names, as a Conversion Leads event") {
  const auto user = meta_user_data({{"event_time", an_hour_ago},
                                    {"email", {"NGUYEN.VAN@Example.VN", "nguyen.van@example.vn "}},
                                    {"phone", {"090 123 45 67", "+84 90 123 4567"}},
                                    {"country", "VN"},
                                    {"first_name", "NGUYỄN"},
                                    {"last_name", "ĐẶNG"},
                                    {"city", "Hồ Chí Minh"},
                                    {"date_of_birth", "19900131"}});
  CHECK(user["em"] == json::array({sha256_hex("nguyen.van@example.vn")}));  // one email after normalization
  CHECK(user["ph"] == json::array({sha256_hex("84901234567")}));            // one phone: national and E.164 agree
  CHECK(user["fn"] == json::array({sha256_hex("nguyễn")}));
  CHECK(user["ln"] == json::array({sha256_hex("đặng")}));
  CHECK(user["ct"] == json::array({sha256_hex("hồchíminh")}));
  CHECK(user["db"] == json::array({sha256_hex("19900131")}));
  CHECK(user["country"] == json::array({sha256_hex("vn")}));
  CHECK(meta_user_data({{"event_time", an_hour_ago}, {"last_name", "ΣΟΦΙΑΣ"}})["ln"] ==
        json::array({sha256_hex("σοφιας")}));  // final sigma, as JavaScript's toLowerCase
  CHECK(meta_user_data({{"event_time", an_hour_ago}, {"country", "UK"}})["country"] == json::array({sha256_hex("gb")}));
  CHECK(meta_user_data({{"event_time", an_hour_ago}, {"country", "us"}, {"state", "California"}})["st"] ==
        json::array({sha256_hex("ca")}));
}

TEST_CASE("Google Data Manager formatting guide: the documented examples") {
  const auto e = data_manager_event_of(
      {{"event_time", an_hour_ago},
       {"email", {"DanaM@example.com", "cloudy.sanfrancisco+shopping@gmail.com", " dana @example.com"}},
       {"phone", "+1-800-555-0100"},
       {"first_name", "Dana"},
       {"last_name", "Müller"},
       {"country", "United States"},
       {"zip", "94043"}});
  const json expected = json::array(
      {{{"emailAddress", "1df6b43bc68dd38eca94e6a65b4f466ae537b796c81a526918b40ac4a7b906c7"}},  // danam@example.com
       {{"emailAddress", "223ebda6f6889b1494551ba902d9d381daf2f642bae055888e96343d53e9f9c4"}},  // gmail rules
       {{"emailAddress", "07e2f1394b0ea80e2adca010ea8318df697001a005ba7452720edda4b0ce57b3"}},  // inner blank removed
       {{"phoneNumber", "fb4f73a6ec5fdb7077d564cdd22c3554b43ce49168550c3b12c547b78c517b30"}},   // +18005550100
       {{"address",
         {{"givenName", sha256_hex("dana")},
          {"familyName", sha256_hex("müller")},
          {"regionCode", "US"},
          {"postalCode", "94043"}}}}});
  CHECK(e["userData"]["userIdentifiers"] == expected);
}

TEST_CASE("Google Data Manager formatting guide: titles, suffixes, inner blanks and the postal code in clear") {
  const auto address = [](const json& names) {
    json payload = {{"event_time", an_hour_ago}, {"country", "GB"}, {"zip", "  SW1A 1AA "}};
    payload.update(names);
    return data_manager_event_of(payload)["userData"]["userIdentifiers"][0]["address"];
  };
  CHECK(address({{"first_name", "Mrs. Mary"}, {"last_name", "Smith Jr."}}) ==
        json{{"givenName", sha256_hex("mary")},
             {"familyName", sha256_hex("smith")},
             {"regionCode", "GB"},
             {"postalCode", "SW1A 1AA"}});  // trimmed only: case and the inner blank kept
  CHECK(address({{"first_name", "Mary   Ann"}, {"last_name", "van der Berg"}})["givenName"] ==
        sha256_hex("mary   ann"));
  // Meta's zp rule is its own: lower-case, blanks removed; its names keep titles.
  const auto meta = meta_user_data({{"event_time", an_hour_ago}, {"zip", "  SW1A 1AA "}, {"first_name", "Mrs. Mary"}});
  CHECK(meta["zp"] == one(sha256_hex("sw1a1aa").c_str()));
  CHECK(meta["fn"] == one(sha256_hex("mrs mary").c_str()));
}

TEST_CASE("Meta Parameter Builder values pass through untouched; TikTok and Google send the hash alone") {
  const std::string hashed = sha256_hex("john_smith@gmail.com") + ".AQYBAQIA";
  const std::string fbc = "fb.1.1554763741205.IwAR2F4-dbP0l7Mn1IawQQGCINEz7PYXQvwjNwB_qa2ofrHyiLjcbCRxTDMgE.AQYBAQIA";
  const auto meta = meta_user_data({{"event_time", an_hour_ago},
                                    {"email", hashed},
                                    {"external_id", hashed},
                                    {"fbc", fbc},
                                    {"fbp", "fb.1.1596403881668.1116446470.AQYBAQIA"}});
  CHECK(meta["em"] == json::array({hashed}));
  CHECK(meta["external_id"] == json::array({hashed}));
  CHECK(meta["fbc"] == fbc);
  CHECK(meta["fbp"] == "fb.1.1596403881668.1116446470.AQYBAQIA");
  const auto google = data_manager_event_of({{"event_time", an_hour_ago}, {"email", hashed}});
  CHECK(google["userData"]["userIdentifiers"][0]["emailAddress"] == sha256_hex("john_smith@gmail.com"));
}

TEST_CASE("TikTok: the hash vectors of its sample request, from raw CRM values, several emails as a list") {
  tiktok_destination d;
  d.access_token = "t";
  d.event_source_id = "SET";
  const tiktok_provider p{d};
  const auto e = event({{"event_time", an_hour_ago},
                        {"email", {" ALICE_abc@gmail.com ", "bob@example.com"}},
                        {"phone", "+1 213 373 4253"},
                        {"external_id", "user_123"}});
  const auto user = json::parse(p.build_request(std::span{&e, 1}, now).body)["data"][0]["user"];
  CHECK(user["email"] == json::array({"848a771458438fc2ec420560d769fb9b9b86851ee338ec56517baabd79d3bb4f",
                                      sha256_hex("bob@example.com")}));
  CHECK(user["phone"] == "9f7ec22d72092cd3c0b58726ed9c2d91b92e51a3f29837508fb2948bb22dd2fd");
  CHECK(user["external_id"] == "80fba0ae1c48e3978e43e4efc365e14e12ea0c830ba8ba5b9a2dafc7e3f2ab8b");
}

}  // namespace documented_examples_test
