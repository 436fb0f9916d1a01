#include "dispatcher/engine/destinations.hpp"

#include <stdexcept>

#include "providers/google/google_ads_provider.hpp"
#include "providers/google/google_data_manager_provider.hpp"
#include "providers/meta/meta_provider.hpp"
#include "providers/tiktok/tiktok_provider.hpp"
#include "providers/webhook/webhook_provider.hpp"

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
                         std::unique_ptr<providers::provider> impl)
    : provider_kind(cfg.provider),
      name(cfg.name),
      provider(std::move(impl)),
      limiter(ex, static_cast<std::size_t>(cfg.concurrency)),
      bucket(cfg.rate_per_second, cfg.burst, token_bucket::clock::now()) {
  if (const auto* oauth = provider->oauth()) tokens.emplace(ex, *oauth);
  if (cfg.paused) gate.configure_paused();
}

std::unique_ptr<providers::provider> make_provider(const destination_config& cfg) {
  if (cfg.provider == "webhook") {
    return std::make_unique<providers::webhook_provider>(
        providers::make_webhook_destination(cfg.settings, cfg.extra_headers));
  }
  if (cfg.provider == "meta") {
    return std::make_unique<providers::meta_provider>(providers::make_meta_destination(cfg.settings));
  }
  if (cfg.provider == "tiktok") {
    return std::make_unique<providers::tiktok_provider>(providers::make_tiktok_destination(cfg.settings));
  }
  if (cfg.provider == "google_ads") {
    return std::make_unique<providers::google_ads_provider>(
        providers::make_google_ads_destination(cfg.settings, cfg.extra_headers));
  }
  if (cfg.provider == "google_data_manager") {
    return std::make_unique<providers::google_data_manager_provider>(
        providers::make_google_data_manager_destination(cfg.settings, cfg.extra_headers));
  }
  throw std::invalid_argument("unknown provider kind '" + cfg.provider + "'");
}

destination_registry::destination_registry(boost::asio::any_io_executor ex, const config& cfg) {
  for (const auto& d : cfg.destinations) {
    by_key_.emplace(key_of(d.provider, d.name), std::make_unique<destination>(ex, d, make_provider(d)));
  }
}

destination* destination_registry::find(std::string_view provider, std::string_view name) {
  const auto it = by_key_.find(key_of(provider, name));
  return it == by_key_.end() ? nullptr : it->second.get();
}

void destination_registry::abort_waiters() {
  for (auto& [key, d] : by_key_) d->limiter.abort_waiters();
}

}  // namespace outbox
