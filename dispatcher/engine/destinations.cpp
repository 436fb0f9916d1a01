#include "dispatcher/engine/destinations.hpp"

namespace outbox {
namespace {

std::string key_of(std::string_view provider, std::string_view name) {
  std::string key(provider);
  key += '/';
  key += name;
  return key;
}

}  // namespace

destination::destination(boost::asio::any_io_executor ex, const destination_config& cfg,
                         std::unique_ptr<providers::provider> impl, std::chrono::system_clock::time_point now,
                         std::chrono::steady_clock::time_point steady_now)
    : provider_kind(cfg.provider),
      name(cfg.name),
      provider(std::move(impl)),
      limiter(ex, static_cast<std::size_t>(cfg.concurrency)),
      bucket(cfg.rate_per_second, cfg.burst, steady_now),
      max_4xx_share(cfg.max_4xx_share) {
  if (const auto* oauth = provider->oauth()) tokens.emplace(ex, *oauth);
  if (cfg.paused) gate.configure_paused(now);
}

destination_registry::destination_registry(boost::asio::any_io_executor ex, const config& cfg,
                                           std::chrono::system_clock::time_point now,
                                           std::chrono::steady_clock::time_point steady_now) {
  for (const auto& d : cfg.destinations) {
    by_key_.emplace(key_of(d.provider, d.name),
                    std::make_unique<destination>(ex, d, make_provider(d), now, steady_now));
  }
}

destination* destination_registry::find(std::string_view provider, std::string_view name) {
  const auto it = by_key_.find(key_of(provider, name));
  return it == by_key_.end() ? nullptr : it->second.get();
}

void destination_registry::abort_waiters() {
  for (auto& [key, d] : by_key_) d->limiter.abort_waiters();
}

std::size_t destination_registry::rows_waiting_for_slots() const {
  std::size_t rows = 0;
  for (const auto& [key, d] : by_key_) rows += d->limiter.waiting();
  return rows;
}

}  // namespace outbox
