#include "providers/http/https_resolver.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace outbox::providers {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

name_lookup_result system_name_resolver(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* list = nullptr;
  name_lookup_result out;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list); rc != 0) {
    out.error = rc == EAI_SYSTEM ? std::system_category().message(errno) : ::gai_strerror(rc);
    return out;
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner{list, &::freeaddrinfo};
  for (const addrinfo* ai = list; ai; ai = ai->ai_next) {
    asio::ip::tcp::endpoint endpoint;
    if (ai->ai_addrlen > endpoint.capacity()) continue;
    std::memcpy(endpoint.data(), ai->ai_addr, ai->ai_addrlen);
    endpoint.resize(ai->ai_addrlen);
    const auto address = endpoint.address();
    if (std::find(out.addresses.begin(), out.addresses.end(), address) == out.addresses.end())
      out.addresses.push_back(address);
  }
  return out;
}

namespace detail {
namespace {

// Shared by one lookup thread and the io_context's thread.
struct lookup_job {
  std::mutex mutex;
  bool orphaned = false;  // the name_lookups is gone: post nothing (its io_context may be gone too)
};

// One coroutine waiting for a host's answer; lives in its frame.
struct waiter {
  asio::steady_timer* timer;
  std::optional<name_lookup_result>* answer;
};

struct host_lookup {
  std::shared_ptr<lookup_job> job;
  std::vector<waiter*> waiters;
};

}  // namespace

struct name_lookups::core : std::enable_shared_from_this<core> {
  core(asio::any_io_executor executor, name_resolver r) : ex(std::move(executor)), resolver(std::move(r)) {}

  // Adds `me` to the lookup of `host`, starting its thread unless one runs.
  // False when no thread could be started.
  [[nodiscard]] bool join(const std::string& host, waiter* me);
  void forget(const std::string& host, const waiter* me);
  void deliver(const std::string& host, const lookup_job* job, const name_lookup_result& result);

  asio::any_io_executor ex;
  name_resolver resolver;
  std::unordered_map<std::string, host_lookup> by_host;
};

namespace {

// A lookup thread's whole life: resolve, then hand the answer to the io
// thread unless nobody is left to take it.
void run_lookup(std::shared_ptr<lookup_job> job, name_resolver resolver, std::string host, asio::any_io_executor ex,
                std::weak_ptr<name_lookups::core> owner) {
  name_lookup_result result;
  try {
    result = resolver(host);
  } catch (const std::exception& e) {
    result = {{}, e.what()};
  }
  const std::lock_guard lock{job->mutex};  // held while posting, so ~name_lookups cannot slip in between
  if (job->orphaned) return;
  asio::post(ex, [owner = std::move(owner), host = std::move(host), id = job.get(), r = std::move(result)] {
    if (auto c = owner.lock()) c->deliver(host, id, r);
  });
}

}  // namespace

bool name_lookups::core::join(const std::string& host, waiter* me) {
  if (auto it = by_host.find(host); it != by_host.end()) {
    it->second.waiters.push_back(me);
    return true;
  }
  auto job = std::make_shared<lookup_job>();
  try {
    std::thread{run_lookup, job, resolver, host, ex, weak_from_this()}.detach();
  } catch (const std::system_error&) {
    return false;  // out of threads: reported like a failed lookup
  }
  by_host.emplace(host, host_lookup{std::move(job), {me}});
  return true;
}

void name_lookups::core::forget(const std::string& host, const waiter* me) {
  if (auto it = by_host.find(host); it != by_host.end()) std::erase(it->second.waiters, me);
  // The entry stays while its thread runs: later lookups of this host join it.
}

void name_lookups::core::deliver(const std::string& host, const lookup_job* job, const name_lookup_result& result) {
  const auto it = by_host.find(host);
  if (it == by_host.end() || it->second.job.get() != job) return;
  const std::vector<waiter*> waiters = std::move(it->second.waiters);
  by_host.erase(it);
  for (waiter* w : waiters) {
    *w->answer = result;
    w->timer->cancel();
  }
}

name_lookups::name_lookups(asio::any_io_executor ex, name_resolver resolver)
    : core_(std::make_shared<core>(std::move(ex),
                                   resolver ? std::move(resolver) : name_resolver{system_name_resolver})) {}

name_lookups::~name_lookups() {
  for (auto& [host, lookup] : core_->by_host) {
    const std::lock_guard lock{lookup.job->mutex};
    lookup.job->orphaned = true;
  }
}

asio::awaitable<std::optional<name_lookup_result>> name_lookups::async_lookup(std::string host,
                                                                              clock::time_point deadline) {
  const std::shared_ptr<core> c = core_;  // kept alive while this frame waits
  if (clock::now() >= deadline) co_return std::nullopt;
  asio::steady_timer timer{c->ex, deadline};
  std::optional<name_lookup_result> answer;
  waiter me{&timer, &answer};
  if (!c->join(host, &me)) co_return name_lookup_result{{}, "cannot start a thread for the lookup"};
  struct leave {
    core& c;
    const std::string& host;
    const waiter* me;
    ~leave() { c.forget(host, me); }
  } guard{*c, host, &me};
  (void)co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));  // cancelled by deliver()
  co_return answer;
}

std::size_t name_lookups::in_flight() const { return core_->by_host.size(); }

}  // namespace detail
}  // namespace outbox::providers
