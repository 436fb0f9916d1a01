#include "dispatcher/engine/destinations.hpp"

namespace outbox {

std::string key_of(std::string_view provider, std::string_view name) {
  std::string key(provider);
  key += '/';
  key += name;
  return key;
}

std::pair<std::string, std::string> split_key(std::string_view key) {
  const auto slash = key.find('/');
  return {std::string(key.substr(0, slash)), slash == std::string_view::npos ? "" : std::string(key.substr(slash + 1))};
}

namespace {

bool same_oauth(const providers::oauth_settings& a, const providers::oauth_settings& b) {
  return a.token_url == b.token_url && a.client_id == b.client_id && a.client_secret == b.client_secret &&
         a.refresh_token == b.refresh_token;
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
  if (const auto* oauth = provider->oauth()) tokens = std::make_shared<providers::oauth_token_source>(ex, *oauth);
  if (cfg.paused) gate.configure_paused(now);
}

void destination::reconfigure(boost::asio::any_io_executor ex, const destination_config& cfg,
                              std::unique_ptr<providers::provider> impl, std::chrono::system_clock::time_point now) {
  const providers::oauth_settings* before = provider->oauth();
  const providers::oauth_settings* after = impl->oauth();
  if (!after) {
    tokens.reset();
  } else if (!before || !same_oauth(*before, *after)) {
    tokens = std::make_shared<providers::oauth_token_source>(ex, *after);  // requests under way keep the old one
  }
  provider = std::move(impl);
  limiter.set_limit(static_cast<std::size_t>(cfg.concurrency));
  bucket.configure(cfg.rate_per_second, cfg.burst);
  gate.set_configured_paused(cfg.paused, now);
  max_4xx_share = cfg.max_4xx_share;
}

destination_registry::destination_registry(boost::asio::any_io_executor ex, const config& cfg,
                                           std::chrono::system_clock::time_point now,
                                           std::chrono::steady_clock::time_point steady_now)
    : ex_(ex) {
  for (const auto& d : cfg.destinations) {
    const auto key = key_of(d.provider, d.name);
    by_key_.emplace(key, std::make_shared<destination>(ex, d, make_provider(d), now, steady_now));
    from_environment_.insert(key);
  }
}

destination* destination_registry::find(std::string_view provider, std::string_view name) {
  const auto it = by_key_.find(key_of(provider, name));
  return it == by_key_.end() ? nullptr : it->second.get();
}

const destination* destination_registry::find(std::string_view provider, std::string_view name) const {
  const auto it = by_key_.find(key_of(provider, name));
  return it == by_key_.end() ? nullptr : it->second.get();
}

std::shared_ptr<destination> destination_registry::find_shared(std::string_view provider, std::string_view name) {
  const auto it = by_key_.find(key_of(provider, name));
  return it == by_key_.end() ? nullptr : it->second;
}

std::optional<std::string> destination_registry::unusable_reason(std::string_view provider,
                                                                 std::string_view name) const {
  const auto it = unusable_.find(key_of(provider, name));
  if (it == unusable_.end()) return std::nullopt;
  return it->second;
}

bool destination_registry::from_environment(std::string_view provider, std::string_view name) const {
  return from_environment_.contains(key_of(provider, name));
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
