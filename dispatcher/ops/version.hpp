#pragma once
// The dispatcher's version: the project version from CMakeLists.txt and the
// commit it was built from, compiled in. `dispatcher --version`, the heartbeat
// (`dispatcher status`), `config --json` and outbox_build_info all read these.
#include <string>
#include <string_view>

namespace outbox {

// "0.1.0": project(outbox_dispatcher VERSION ...) at build time.
[[nodiscard]] std::string_view version() noexcept;

// The commit, 12 hex digits, or "unknown" when built outside a git checkout
// without OUTBOX_REVISION (cmake/write_revision.cmake).
[[nodiscard]] std::string_view revision() noexcept;

// "0.1.0 (commit 1a2b3c4d5e6f)": what people read.
[[nodiscard]] std::string version_line();

}  // namespace outbox
