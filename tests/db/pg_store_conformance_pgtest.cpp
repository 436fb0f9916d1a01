// The store conformance suite against PostgreSQL.
#include "tests/db/store_conformance.hpp"

OUTBOX_STORE_CONFORMANCE(outbox::test::pg_harness);
