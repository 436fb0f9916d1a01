// The store conformance suite against the in-memory store of the engine tests.
#include "tests/db/store_conformance.hpp"

OUTBOX_STORE_CONFORMANCE(outbox::test::memory_harness);
