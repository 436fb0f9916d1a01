#pragma once
// Runtime state of each configured destination: its provider, concurrency
// limit, rate limit and pause. Built once from the configuration.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>

#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/async_limiter.hpp"
#include "dispatcher/engine/client_error_window.hpp"
#include "dispatcher/engine/destination_gate.hpp"
#include "dispatcher/engine/token_bucket.hpp"
#include "providers/google/oauth_token_source.hpp"
#include "providers/provider.hpp"

namespace outbox {

struct destination {
  destination(boost::asio::any_io_executor ex, const destination_config& cfg, std::unique_ptr<providers::provider> impl,
              std::chrono::system_clock::time_point now, std::chrono::steady_clock::time_point steady_now);

  std::string provider_kind;
  std::string name;
  std::unique_ptr<providers::provider> provider;
  async_limiter limiter;
  token_bucket bucket;
  destination_gate gate;                                // paused / probing / open: see destination_gate.hpp
  std::optional<providers::oauth_token_source> tokens;  // set when the provider needs OAuth
  client_error_window client_errors;                    // 4xx share of the last requests
  double max_4xx_share = 0;                             // pause above this share; 0: never

  // "provider/destination", as the claim's skip list and the policy table name it.
  [[nodiscard]] std::string key() const { return provider_kind + "/" + name; }
};

class destination_registry {
 public:
  destination_registry(boost::asio::any_io_executor ex, const config& cfg, std::chrono::system_clock::time_point now,
                       std::chrono::steady_clock::time_point steady_now);

  // nullptr when (provider, name) is not configured.
  [[nodiscard]] destination* find(std::string_view provider, std::string_view name);
  void abort_waiters();
  // Rows waiting for a free slot of their destination (its CONCURRENCY is used up).
  [[nodiscard]] std::size_t rows_waiting_for_slots() const;
  [[nodiscard]] std::size_t size() const { return by_key_.size(); }
  template <class F>
  void for_each(F&& f) {
    for (auto& [key, d] : by_key_) f(*d);
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [key, d] : by_key_) f(static_cast<const destination&>(*d));
  }

 private:
  std::map<std::string, std::unique_ptr<destination>, std::less<>> by_key_;
};

}  // namespace outbox
