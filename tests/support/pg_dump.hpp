#pragma once
// The database as `pg_dump` writes it: what a backup of it holds.
#include <string>

#include "tests/support/child_process.hpp"
#include "tests/support/pg_fixture.hpp"

namespace outbox::test {

// pg_dump of `db` (PostgreSQL's binaries from PG_TEST_BIN); throws when it fails.
[[nodiscard]] std::string pg_dump_of(const scratch_database& db, const scratch_dir& dir);

}  // namespace outbox::test
