#pragma once
// The dispatcher's version: the project version from CMakeLists.txt, compiled in
// (`dispatcher --version`, the heartbeat, outbox_build_info).
#include <string_view>

namespace outbox {

// "0.1.0": project(outbox_dispatcher VERSION ...) at build time.
[[nodiscard]] std::string_view version() noexcept;

}  // namespace outbox
