#include "tests/support/notify_probe.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <stdexcept>

#include "tests/support/pg_fixture.hpp"

namespace outbox::test {
namespace {

// Its own channel, so the sentinel never wakes a dispatcher listening on the
// real one. One notification queue serves every channel, so order holds across them.
constexpr const char* sentinel_channel = "notify_probe_sentinel";

}  // namespace

struct notify_probe::state {
  std::string conninfo;
  std::string channel;
  PGconn* conn = nullptr;
  ~state() {
    if (conn) PQfinish(conn);
  }
};

notify_probe::notify_probe(const std::string& conninfo, std::string channel) : s_(std::make_unique<state>()) {
  s_->conninfo = conninfo;
  s_->channel = std::move(channel);
  s_->conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(s_->conn) != CONNECTION_OK) {
    throw std::runtime_error(std::string("notify_probe: connect: ") + PQerrorMessage(s_->conn));
  }
  PGresult* r = PQexec(s_->conn, ("LISTEN " + s_->channel + "; LISTEN " + sentinel_channel).c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  if (!ok) throw std::runtime_error(std::string("notify_probe: LISTEN: ") + PQerrorMessage(s_->conn));
}

notify_probe::~notify_probe() = default;

int notify_probe::count_since_last(std::chrono::milliseconds timeout) {
  return static_cast<int>(payloads_since_last(timeout).size());
}

std::vector<std::string> notify_probe::payloads_since_last(std::chrono::milliseconds timeout) {
  (void)sql(s_->conninfo, "SELECT pg_notify($1, '')", {std::string(sentinel_channel)});
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> payloads;
  for (;;) {
    if (PQconsumeInput(s_->conn) != 1) {
      throw std::runtime_error(std::string("notify_probe: ") + PQerrorMessage(s_->conn));
    }
    while (PGnotify* n = PQnotifies(s_->conn)) {
      const bool is_sentinel = std::string(n->relname) == sentinel_channel;
      if (!is_sentinel) payloads.emplace_back(n->extra);
      PQfreemem(n);
      if (is_sentinel) return payloads;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("notify_probe: the sentinel notification never arrived");
    pollfd p{PQsocket(s_->conn), POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>(left.count()));
  }
}

}  // namespace outbox::test
