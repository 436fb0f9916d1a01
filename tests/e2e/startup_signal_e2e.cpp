// SIGTERM during start-up (issue 12, stumble 7): `dispatcher run` handles the
// signal from its first line, so a stop sent while it connects or migrates ends
// it at once with exit 0, instead of waiting out a 10 s connect or a 60 s lock
// wait (or, as PID 1 of a container, being ignored until the orchestrator's
// SIGKILL).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <stdexcept>

#include "tests/support/dispatcher_process.hpp"
#include "tests/support/engine_harness.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace startup_signal_e2e {

using namespace std::chrono_literals;
using outbox::test::e2e_fixture;
using outbox::test::eventually;
using steady = std::chrono::steady_clock;

namespace {

// A loopback TCP port that listens but never accepts: the kernel completes the
// handshake, so libpq sends its start-up packet and waits for an answer that
// never comes (a database host that hangs).
class silent_listener {
 public:
  silent_listener() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(fd_);
      throw std::runtime_error("bind/listen failed");
    }
    port_ = ntohs(addr.sin_port);
  }
  ~silent_listener() { ::close(fd_); }
  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // True once a connection waits in the accept queue (never accepted).
  [[nodiscard]] bool wait_for_connection(std::chrono::milliseconds timeout) const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }

 private:
  int fd_;
  int port_ = 0;
};

using pgconn_ptr = std::unique_ptr<PGconn, decltype(&PQfinish)>;

// A session of the test holding the migration lock (db/migrations.cpp's key),
// as another replica's long migration would.
pgconn_ptr hold_migration_lock(const std::string& conninfo) {
  pgconn_ptr conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(conn.get()));
  PGresult* r = PQexec(conn.get(), "SELECT pg_advisory_lock(7310594112315183976)");
  const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
  PQclear(r);
  if (!ok) throw std::runtime_error(PQerrorMessage(conn.get()));
  return conn;
}

long long sessions_on_migration_lock(const e2e_fixture& fx, const std::string& granted) {
  return fx.db.scalar(
      "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
      "(SELECT oid FROM pg_database WHERE datname = current_database()) AND granted = " +
      granted + " AND ((classid::bigint << 32) | objid::bigint) = 7310594112315183976");
}

// Sessions that tried the migration lock and go on trying (db/migrations.cpp
// polls pg_try_advisory_lock rather than wait in pg_advisory_lock).
long long sessions_trying_migration_lock(const e2e_fixture& fx) {
  return fx.db.scalar(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
      "AND query LIKE 'SELECT pg_try_advisory_lock(7310594112315183976)%'");
}

double seconds_since(steady::time_point t, steady::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

}  // namespace

TEST_CASE("SIGTERM while `run` waits for the database to answer its connect: exit 0 at once") {
  e2e_fixture fx;
  silent_listener hung_database;
  const auto url = "postgresql://outbox@127.0.0.1:" + std::to_string(hung_database.port()) + "/outbox";
  auto& d = fx.spawn({"run"}, {{"DATABASE_URL", url}}, "dispatcher-connecting");
  // The connection reached the port: the dispatcher is inside its start-up check.
  REQUIRE(hung_database.wait_for_connection(15s));
  const auto term = steady::now();
  d.signal(SIGTERM);
  const auto status = d.wait_exit(5s);
  INFO(d.describe());
  REQUIRE(status.has_value());  // not after the 10 s connect timeout
  CHECK(*status == 0);          // a clean stop, not killed by the signal (143) nor a failed start (1)
  const double took = seconds_since(term, *d.exited_at());
  MESSAGE("SIGTERM during the connect: exited after " << took << " s");
  CHECK(took < 2.0);
  CHECK(d.count_in_logs("signal received during start-up") == 1);
  CHECK(d.count_in_logs("dispatcher starting") == 0);
}

TEST_CASE("SIGTERM while `run --migrate` waits for another migration's lock: exit 0 at once, lock not left held") {
  e2e_fixture fx;
  auto holder = hold_migration_lock(fx.db.conninfo());
  auto& d = fx.spawn({"run", "--migrate"}, {}, "dispatcher-migrating");
  // Its migration waits behind ours, trying the lock every 250 ms.
  REQUIRE(eventually([&] { return sessions_trying_migration_lock(fx) == 1; }, 15s));
  const auto term = steady::now();
  d.signal(SIGTERM);
  const auto status = d.wait_exit(5s);
  INFO(d.describe());
  REQUIRE(status.has_value());
  CHECK(*status == 0);
  const double took = seconds_since(term, *d.exited_at());
  MESSAGE("SIGTERM during the migration lock wait: exited after " << took << " s");
  CHECK(took < 2.0);
  CHECK(d.count_in_logs("signal received during start-up") == 1);
  CHECK(d.count_in_logs("dispatcher starting") == 0);

  // Once our migration ends, the abandoned session must not keep the lock from the next replica.
  holder.reset();
  const auto lock_sessions = [&] {
    return sessions_on_migration_lock(fx, "true") + sessions_on_migration_lock(fx, "false");
  };
  CHECK(eventually([&] { return lock_sessions() == 0; }, 15s));
  CHECK(fx.db.query("SELECT pg_try_advisory_lock(7310594112315183976)").boolean(0, 0));  // free for the next replica
}

}  // namespace startup_signal_e2e
