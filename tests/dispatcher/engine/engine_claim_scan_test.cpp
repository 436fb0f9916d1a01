// Where the claim's one ordered scan starts while a destination is skipped
// (dispatcher/engine/claim_scan_mark.hpp), in virtual time: past the skipped
// rows, back to the beginning when the destination resumes, and from the
// beginning at least once a second, so that no row is left behind.
#include <doctest/doctest.h>

#include <algorithm>

#include "db/fleet_store.hpp"
#include "tests/support/engine_rig.hpp"

namespace engine_claim_scan_test {

using namespace std::chrono_literals;
using outbox::test::engine_rig;

namespace {

void add_held(outbox::environment& env) {
  for (const std::string name : {"HELD", "OTHER"}) {
    env["OUTBOX_DEST__WEBHOOK__" + name + "__URL"] = "https://held.test/hook";
    env["OUTBOX_DEST__WEBHOOK__" + name + "__SECRET"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  }
  env["OUTBOX_CLAIM_BATCH"] = "5";
  env["OUTBOX_WAKE_MODE"] = "listen";  // a resume is heard at once
}

// The claims from the `from`-th on that skipped exactly `skipped`, in order.
std::vector<outbox::db::claim_request> skipping(const engine_rig& rig, std::vector<std::string> skipped,
                                                std::size_t from = 0) {
  std::sort(skipped.begin(), skipped.end());
  std::vector<outbox::db::claim_request> out;
  for (auto i = from; i < rig.store.claim_requests.size(); ++i) {
    auto keys = rig.store.claim_requests[i].skip_destinations;
    std::sort(keys.begin(), keys.end());
    if (keys == skipped) out.push_back(rig.store.claim_requests[i]);
  }
  return out;
}

}  // namespace

TEST_CASE("engine claim scan: with destinations paused, a claim starts where the last one picked; a resume restarts") {
  engine_rig rig(add_held);
  rig.store.pause("webhook", "held", "incident");
  rig.store.pause("webhook", "other", "incident");
  rig.enqueue(1000, "Lead", "{}", "other");
  std::vector<std::int64_t> held;
  for (int lead = 1; lead <= 20; ++lead) held.push_back(rig.enqueue(lead, "Lead", "{}", "held"));
  std::vector<std::int64_t> live;
  for (int lead = 21; lead <= 40; ++lead) live.push_back(rig.enqueue(lead));
  rig.start();
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 20; }));
  const auto claims = skipping(rig, {"webhook/held", "webhook/other"});
  REQUIRE(claims.size() >= 4);  // 20 rows, 5 a claim
  CHECK_FALSE(claims.front().scan_from.has_value());
  // All rows share one time (one virtual instant): the id tells them apart, and
  // the later claims start past the 20 paused rows.
  const auto started_past_held = std::count_if(
      claims.begin(), claims.end(), [&](const auto& r) { return r.scan_from && r.scan_from->id > held.back(); });
  CHECK(started_past_held >= 3);
  for (const auto id : held) CHECK(rig.row(id).attempts == 0);

  // Resumed: its rows lie before the place the claims started at; the next claim
  // starts at the beginning, though another destination is still skipped.
  const auto before_resume = rig.store.claim_requests.size();
  rig.store.resume("webhook", "held");
  rig.store.notify(std::string(outbox::db::pauses_changed_payload));
  const auto resumed_at = rig.clock.steady_now();
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") == 40; }));
  CHECK(rig.clock.steady_now() - resumed_at < 1s);
  const auto resumed = skipping(rig, {"webhook/other"}, before_resume);
  REQUIRE(!resumed.empty());
  CHECK_FALSE(resumed.front().scan_from.has_value());
  for (const auto id : held) CHECK(rig.row(id).attempts == 1);
}

TEST_CASE("engine claim scan: a row committed long after its transaction began is claimed within a second or so") {
  engine_rig rig([](auto& env) {
    add_held(env);
    env["OUTBOX_MAX_IN_FLIGHT"] = "1";  // each claim takes one row: full, so the next starts at its place
  });
  rig.http.fallback = outbox::test::scripted_answer::reply(200).delayed(100ms);
  rig.store.pause("webhook", "held", "incident");
  for (int lead = 1; lead <= 3; ++lead) rig.enqueue(lead, "Lead", "{}", "held");
  // A CRM transaction inserts, then works 3 s before its commit; later transactions' rows go meanwhile.
  const auto late = rig.store.enqueue_uncommitted(100, "webhook", "Lead");
  rig.start();
  (void)rig.run_until([] { return false; }, 3s);
  for (int lead = 200; lead < 260; ++lead) rig.enqueue(lead);
  REQUIRE(rig.run_until([&] { return rig.store.count("sent") >= 5; }, 10s));
  rig.store.commit(late);
  const auto committed_at = rig.clock.steady_now();
  const auto claims_before = rig.store.claim_requests.size();
  REQUIRE(rig.run_until_state(late, "sent", 10s));
  CHECK(rig.clock.steady_now() - committed_at <= 1500ms);  // a claim from the beginning each second
  CHECK(rig.store.count("sent") < 61);                     // while the others still drain
  // The claim right after the commit started at the last one's place, past the row.
  REQUIRE(rig.store.claim_requests.size() > claims_before);
  CHECK(rig.store.claim_requests[claims_before].scan_from.has_value());
  CHECK(rig.row(late).attempts == 1);
}

}  // namespace engine_claim_scan_test
