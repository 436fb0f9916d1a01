#pragma once
// Idle keep-alive connections of the HTTPS client, per origin, oldest first.
// Lives on the client's thread; nothing here blocks.
#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "providers/http/https_connection.hpp"

namespace outbox::providers::detail {

class connection_pool {
 public:
  // An idle_timeout of 0 or max_per_origin of 0 disables reuse. A connection
  // idle for check_after or longer is checked for a close by the peer first.
  connection_pool(std::chrono::milliseconds idle_timeout, std::size_t max_per_origin,
                  std::chrono::milliseconds check_after)
      : idle_timeout_(idle_timeout), max_per_origin_(max_per_origin), check_after_(check_after) {}

  // The most recently used connection to `origin` not known to be closed, or null.
  [[nodiscard]] connection_ptr take(const std::string& origin);
  // Keeps `conn` for reuse (dropping the oldest when the origin is full).
  void give_back(const std::string& origin, connection_ptr conn);

  [[nodiscard]] std::size_t size() const;
  void clear() { idle_.clear(); }

 private:
  void prune(clock::time_point now);

  std::chrono::milliseconds idle_timeout_;
  std::size_t max_per_origin_;
  std::chrono::milliseconds check_after_;
  std::unordered_map<std::string, std::vector<connection_ptr>> idle_;
};

}  // namespace outbox::providers::detail
