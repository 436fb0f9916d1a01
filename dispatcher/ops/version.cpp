#include "dispatcher/ops/version.hpp"

// Defined for this file only by CMakeLists.txt, so a version bump recompiles one file.
#ifndef OUTBOX_VERSION
#error "OUTBOX_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace outbox {

std::string_view version() noexcept { return OUTBOX_VERSION; }

std::string version_line() { return std::string(version()) + " (commit " + std::string(revision()) + ")"; }

}  // namespace outbox
