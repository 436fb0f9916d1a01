#pragma once
// Name lookups that cannot hold each other up. Asio's resolver runs every
// lookup of an io_context on one hidden thread, so one slow DNS answer delayed
// every other destination and blew the connect budget. Here each host being
// looked up gets its own short-lived thread; the waiting coroutine gives up
// at its deadline and the late answer is dropped.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

namespace outbox::providers {

struct name_lookup_result {
  std::vector<boost::asio::ip::address> addresses;  // empty on failure
  std::string error;                                // why, when empty ("" gives "no addresses")
};

// A blocking lookup of one host name. Runs on a thread of its own, so it must
// be thread-safe and must not touch the io_context or anything it owns.
using name_resolver = std::function<name_lookup_result(const std::string& host)>;

// getaddrinfo (any address family, only those configured on this machine).
[[nodiscard]] name_lookup_result system_name_resolver(const std::string& host);

namespace detail {

// Lookups in flight, one thread per host name: concurrent requests for the
// same name share its thread, other names never wait for it.
//
// Lives on the io_context's thread like the client. Its destructor does not
// wait for lookup threads: they finish on their own and drop their answer.
class name_lookups {
 public:
  name_lookups(boost::asio::any_io_executor ex, name_resolver resolver);
  ~name_lookups();
  name_lookups(const name_lookups&) = delete;
  name_lookups& operator=(const name_lookups&) = delete;

  // The answer for `host`, or nullopt once `deadline` passes (the lookup
  // thread keeps running; a later call for the same host joins it).
  [[nodiscard]] boost::asio::awaitable<std::optional<name_lookup_result>> async_lookup(
      std::string host, std::chrono::steady_clock::time_point deadline);

  [[nodiscard]] std::size_t in_flight() const;  // hosts with a lookup thread running

  struct core;  // opaque; public only so the lookup threads' code can name it

 private:
  std::shared_ptr<core> core_;  // shared with posted completions, which hold it weakly
};

}  // namespace detail
}  // namespace outbox::providers
