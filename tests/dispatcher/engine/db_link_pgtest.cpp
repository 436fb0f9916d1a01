// Each role's database session as the PostgreSQL store sets it up, read back from the
// server: whether the claim's commit waits for its WAL flush
// (OUTBOX_CLAIM_SYNCHRONOUS_COMMIT) and the cached-plan settings of the claim
// and the settle.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "db/pg_store.hpp"
#include "dispatcher/config/config.hpp"
#include "dispatcher/engine/db_link.hpp"
#include "dispatcher/engine/engine.hpp"
#include "dispatcher/engine/engine_runtime.hpp"
#include "tests/support/pg_fixture.hpp"
#include "tests/support/run_async.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace db_link_pgtest {

using namespace std::chrono_literals;
using outbox::test::scratch_database;

namespace {

// SHOW `setting` on the session db_link opens for `role`, under `env`.
std::string session_setting(const scratch_database& db, outbox::environment env, const std::string& role,
                            const std::string& setting) {
  env["DATABASE_URL"] = db.conninfo();
  env["OUTBOX_DEST__WEBHOOK__DEFAULT__URL"] = "https://127.0.0.1:1/hook";
  env["OUTBOX_DEST__WEBHOOK__DEFAULT__SECRET"] = "whsec_dGVzdHNlY3JldA==";
  const outbox::config cfg = outbox::load_config(env);
  std::ostringstream log_text;
  outbox::logger log{outbox::log_level::error, &log_text};
  const outbox::db::params which{setting};  // outside the coroutine: GCC 12 miscompiles braced lists inside one
  return outbox::test::run_async([&](auto ex) -> boost::asio::awaitable<std::string> {
    const outbox::destination_registry destinations(ex, cfg, {}, {});
    outbox::db::pg_store store(ex, {cfg.database_url});
    store.set_claims_skip_flush_wait(outbox::claims_may_skip_flush_wait(cfg, destinations));
    outbox::metrics metrics;
    outbox::db_link link(outbox::engine_runtime{ex, outbox::real_clock(), log, metrics}, store, role);
    outbox::db::store_session* session = co_await link.async_get();
    REQUIRE(session != nullptr);
    outbox::db::connection* conn = outbox::db::pg_store::connection_of(*session);
    REQUIRE(conn != nullptr);
    auto shown = co_await conn->async_query("SELECT current_setting($1)", which, 5s);
    co_return std::string(shown.text(0, 0));
  });
}

}  // namespace

TEST_CASE("db_link: a claim's commit skips the WAL flush wait unless OUTBOX_CLAIM_SYNCHRONOUS_COMMIT=on") {
  scratch_database db(false);
  CHECK(session_setting(db, {}, "claim", "synchronous_commit") == "off");
  CHECK(session_setting(db, {{"OUTBOX_CLAIM_SYNCHRONOUS_COMMIT", "ON"}}, "claim", "synchronous_commit") == "on");
  CHECK(session_setting(db, {{"OUTBOX_CLAIM_SYNCHRONOUS_COMMIT", "off"}}, "claim", "synchronous_commit") == "off");
  // Outcomes, renewals and everything else always wait for their flush.
  for (const char* role : {"settle", "maintenance", "reconciler"}) {
    CAPTURE(role);
    CHECK(session_setting(db, {}, role, "synchronous_commit") == "on");
  }
  // A hold destination must find a row whose claim a crash lost in `sending`, not pending.
  const outbox::environment hold{{"OUTBOX_DEST__META__DEFAULT__PIXEL_ID", "1234567890"},
                                 {"OUTBOX_DEST__META__DEFAULT__ACCESS_TOKEN", "meta-token"},
                                 {"OUTBOX_DEST__META__DEFAULT__ON_EXPIRED_LEASE", "hold"}};
  CHECK(session_setting(db, hold, "claim", "synchronous_commit") == "on");
  auto resend = hold;
  resend["OUTBOX_DEST__META__DEFAULT__ON_EXPIRED_LEASE"] = "resend";
  CHECK(session_setting(db, resend, "claim", "synchronous_commit") == "off");
  CHECK(session_setting(db, {}, "claim", "plan_cache_mode") == "force_generic_plan");
  CHECK(session_setting(db, {}, "settle", "enable_nestloop") == "off");
}

}  // namespace db_link_pgtest
