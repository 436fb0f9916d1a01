#pragma once
// Runtime state of each configured destination: its provider, concurrency
// limit, rate limit and pause. Built from the configuration at start-up; the
// destinations of the registry in the database (docs/destinations.md) are
// added, changed and removed while the engine runs (apply_registry).
//
// A destination is held by shared_ptr: a batch keeps its destination alive
// while its request runs, even when the registry removes it meanwhile; and a
// request keeps the provider (and OAuth token source) it started with, so a
// change applies from the next request on.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/async_limiter.hpp"
#include "dispatcher/engine/client_error_window.hpp"
#include "dispatcher/engine/destination_gate.hpp"
#include "dispatcher/engine/token_bucket.hpp"
#include "providers/google/oauth_token_source.hpp"
#include "providers/provider.hpp"

namespace outbox {

struct destination : std::enable_shared_from_this<destination> {
  destination(boost::asio::any_io_executor ex, const destination_config& cfg, std::unique_ptr<providers::provider> impl,
              std::chrono::system_clock::time_point now, std::chrono::steady_clock::time_point steady_now);

  std::string provider_kind;
  std::string name;
  // Takes the registry's new settings: the provider for the next request,
  // CONCURRENCY as slots free, the rate, PAUSED, the OAuth client when its
  // credentials changed (a new token from the next request).
  void reconfigure(boost::asio::any_io_executor ex, const destination_config& cfg,
                   std::unique_ptr<providers::provider> impl, std::chrono::system_clock::time_point now);

  std::shared_ptr<const providers::provider> provider;
  async_limiter limiter;
  token_bucket bucket;
  destination_gate gate;                                  // paused / probing / open: see destination_gate.hpp
  std::shared_ptr<providers::oauth_token_source> tokens;  // set when the provider needs OAuth
  client_error_window client_errors;                      // 4xx share of the last requests
  double max_4xx_share = 0;                               // pause above this share; 0: never

  // "provider/destination", as the claim's skip list and the policy table name it.
  [[nodiscard]] std::string key() const { return provider_kind + "/" + name; }
};

// A destination's key, "provider/name" (names never hold a '/'), and its two parts back.
[[nodiscard]] std::string key_of(std::string_view provider, std::string_view name);
[[nodiscard]] std::pair<std::string, std::string> split_key(std::string_view key);

// One destination of the registry, as the engine reads it (registry_entries.hpp).
struct registry_destination {
  std::string provider;
  std::string name;
  std::optional<destination_config> config;  // set when it can be used
  std::string unusable;                      // otherwise why: disabled, invalid, a secret that does not open
};

// What one apply_registry() changed, for the log.
struct registry_changes {
  std::vector<std::string> added, changed, removed;           // "provider/name"
  std::vector<std::pair<std::string, std::string>> unusable;  // newly unusable or with a new reason: key, why
  std::vector<std::string> shadowed;                          // also in the environment, which wins
  [[nodiscard]] bool any() const { return !added.empty() || !changed.empty() || !removed.empty() || !unusable.empty(); }
};

class destination_registry {
 public:
  destination_registry(boost::asio::any_io_executor ex, const config& cfg, std::chrono::system_clock::time_point now,
                       std::chrono::steady_clock::time_point steady_now);

  // nullptr when (provider, name) is not configured.
  [[nodiscard]] destination* find(std::string_view provider, std::string_view name);
  [[nodiscard]] const destination* find(std::string_view provider, std::string_view name) const;
  [[nodiscard]] std::shared_ptr<destination> find_shared(std::string_view provider, std::string_view name);
  // Why a destination of the registry is not used (disabled, invalid, its secret
  // does not open); nullopt when it is used or not in the registry.
  [[nodiscard]] std::optional<std::string> unusable_reason(std::string_view provider, std::string_view name) const;
  // Whether the environment or the configuration file defines it (else the registry).
  [[nodiscard]] bool from_environment(std::string_view provider, std::string_view name) const;
  // "provider/name" of the registry's destinations that are not used, with why.
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& unusable() const { return unusable_; }

  // Makes the registry's destinations those of `entries` (the whole registry):
  // adds, reconfigures and removes destinations that came from it; the
  // environment's destinations are never touched (an entry of the same name is
  // shadowed). Throws nothing: a provider that cannot be built makes the entry unusable.
  registry_changes apply_registry(const std::vector<registry_destination>& entries,
                                  std::chrono::system_clock::time_point now,
                                  std::chrono::steady_clock::time_point steady_now);
  // The same for some entries only ("provider/name" `keys`, a notification named
  // them): those of `found` are applied, a key without one is removed. The
  // others stay as they are, and registry_read_at() too.
  registry_changes apply_registry_entries(const std::vector<std::string>& keys,
                                          const std::vector<registry_destination>& found,
                                          std::chrono::system_clock::time_point now,
                                          std::chrono::steady_clock::time_point steady_now);
  // When the last read of the registry started (its `now`; nullopt: never), and whether
  // the database has one (migration 0010). A destination committed before then is known here.
  [[nodiscard]] std::optional<std::chrono::system_clock::time_point> registry_read_at() const { return read_at_; }
  // The same for one "provider/name": the later of the last whole read and the last read of that entry alone.
  [[nodiscard]] std::optional<std::chrono::system_clock::time_point> registry_read_at(std::string_view key) const;
  [[nodiscard]] bool registry_supported() const { return supported_; }
  void note_registry_unsupported() { supported_ = false; }
  // Asks for a fresh read of the registry's entry "provider/name" (a row names a destination not known here).
  void request_reload(const std::string& key) { on_reload_request(key); }
  std::function<void(const std::string&)> on_reload_request = [](const std::string&) {};
  // After every apply_registry (the engine re-derives what depends on the set of destinations).
  std::function<void()> on_applied = [] {};
  void abort_waiters();
  // Rows waiting for a free slot of their destination (its CONCURRENCY is used up).
  [[nodiscard]] std::size_t rows_waiting_for_slots() const;
  [[nodiscard]] std::size_t size() const { return by_key_.size(); }
  template <class F>
  void for_each(F&& f) {
    for (auto& [key, d] : by_key_) f(*d);
  }
  template <class F>
  void for_each_shared(F&& f) {
    for (auto& [key, d] : by_key_) f(d);
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [key, d] : by_key_) f(static_cast<const destination&>(*d));
  }

 private:
  // destinations_registry.cpp: one entry of the registry, applied or removed.
  void apply_entry(const registry_destination& e, std::chrono::system_clock::time_point now,
                   std::chrono::steady_clock::time_point steady_now, registry_changes& out);
  void remove_entry(const std::string& key, registry_changes& out);

  boost::asio::any_io_executor ex_;
  std::map<std::string, std::shared_ptr<destination>, std::less<>> by_key_;
  std::set<std::string, std::less<>> from_environment_;
  std::map<std::string, destination_config, std::less<>> from_registry_;  // as last applied
  std::map<std::string, std::string, std::less<>> unusable_;
  std::optional<std::chrono::system_clock::time_point> read_at_;
  // Entries read alone since the last whole read, and when that read started.
  std::map<std::string, std::chrono::system_clock::time_point, std::less<>> entry_read_at_;
  bool supported_ = true;
};

}  // namespace outbox
