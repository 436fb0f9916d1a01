// The engine reads the whole registry at every reload; an entry that did not
// change keeps what was made of it (its secrets are not opened again), so a
// reload costs the entries that changed, not the registry's size.
#include <doctest/doctest.h>

#include "dispatcher/engine/registry_entries.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace registry_interpreter_test {

using outbox::db::registry_entry;

namespace {

registry_entry webhook(const outbox::secrets::sealing_key& key, const std::string& name, const std::string& secret) {
  registry_entry e;
  e.provider = "webhook";
  e.name = name;
  e.settings["url"] = "https://hooks.example.com/" + name;
  e.secrets["secret"] = key.seal(secret, outbox::secrets::secret_context("webhook", name, "secret"));
  return e;
}

}  // namespace

TEST_CASE("registry interpreter: an unchanged entry is not opened again; a changed or new one is") {
  auto key = outbox::secrets::sealing_key::generate();
  const auto a = webhook(key, "brand_a", "whsec_YWFhYWFhYWFhYWFh");
  const auto b = webhook(key, "brand_b", "whsec_YmJiYmJiYmJiYmJi");
  std::vector<outbox::secrets::sealing_key> ring;
  ring.push_back(std::move(key));
  outbox::registry_keys keys{outbox::secrets::sealing_keyring(std::move(ring)), ""};
  outbox::registry_interpreter interpreter(keys);
  auto first = interpreter.interpret({a, b});
  REQUIRE(first.size() == 2);
  CHECK(first[0].config.has_value());
  CHECK(first[1].config.has_value());

  // The keys go away: only what is opened from now on sees it.
  keys.keys = outbox::secrets::sealing_keyring{};
  keys.problem = "no sealing key is configured";
  auto changed_b = b;
  changed_b.settings["concurrency"] = "4";
  const auto c = webhook(outbox::secrets::sealing_key::generate(), "brand_c", "whsec_Y2NjY2NjY2NjY2Nj");
  auto second = interpreter.interpret({a, changed_b, c});
  REQUIRE(second.size() == 3);
  CHECK(second[0].config.has_value());        // unchanged: kept
  CHECK_FALSE(second[1].config.has_value());  // changed: opened again, and cannot be
  CHECK(second[1].unusable.find("no sealing key is configured") != std::string::npos);
  CHECK_FALSE(second[2].config.has_value());  // new
  // A removed entry is forgotten: back again, it is opened again.
  CHECK_FALSE(interpreter.interpret({b}).front().config.has_value());
  CHECK_FALSE(interpreter.interpret({a}).front().config.has_value());
}

}  // namespace registry_interpreter_test
