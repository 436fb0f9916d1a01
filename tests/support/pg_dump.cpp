#include "tests/support/pg_dump.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace outbox::test {

std::string pg_dump_of(const scratch_database& db, const scratch_dir& dir) {
  environment env;
  for (const char* name : {"PGHOST", "PGPORT", "PGUSER"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  const char* bin = std::getenv("PG_TEST_BIN");
  const auto done =
      run_child({std::string(bin ? bin : "/usr/lib/postgresql/15/bin") + "/pg_dump", "--no-owner", db.name()}, env,
                std::chrono::seconds(60), dir.path);
  if (done.exit_code != 0) throw std::runtime_error("pg_dump failed: " + done.err);
  return done.out;
}

}  // namespace outbox::test
