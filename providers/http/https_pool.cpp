#include "providers/http/https_pool.hpp"

#include <iterator>
#include <utility>

namespace outbox::providers::detail {

connection_ptr connection_pool::take(const std::string& origin) {
  const auto now = clock::now();
  prune(now);
  const auto it = idle_.find(origin);
  if (it == idle_.end()) return nullptr;
  auto& pool = it->second;
  connection_ptr found;
  while (!found && !pool.empty()) {
    found = std::move(pool.back());  // the most recently used is the least likely to be stale
    pool.pop_back();
    if (now - found->idle_since >= check_after_ && peer_has_closed(*found)) found.reset();
  }
  if (pool.empty()) idle_.erase(it);
  return found;
}

void connection_pool::give_back(const std::string& origin, connection_ptr conn) {
  const auto now = clock::now();
  prune(now);
  if (idle_timeout_ <= std::chrono::milliseconds::zero() || max_per_origin_ == 0) return;
  conn->tcp().expires_never();
  conn->idle_since = now;
  auto& pool = idle_[origin];
  if (pool.size() >= max_per_origin_) pool.erase(pool.begin());  // drop the oldest
  pool.push_back(std::move(conn));
}

std::size_t connection_pool::size() const {
  std::size_t n = 0;
  for (const auto& [origin, pool] : idle_) n += pool.size();
  return n;
}

void connection_pool::prune(clock::time_point now) {
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& pool = it->second;
    std::erase_if(pool, [&](const connection_ptr& c) { return now - c->idle_since >= idle_timeout_; });
    it = pool.empty() ? idle_.erase(it) : std::next(it);
  }
}

}  // namespace outbox::providers::detail
