# Writes OUT, a C++ file defining outbox::revision(), at every build, touching
# it only when the commit changed (so a new commit recompiles one file).
# The commit: $ENV{OUTBOX_REVISION} when set (the Dockerfile's build argument,
# as the image's build context has no .git), else git's HEAD, else "unknown".
if(DEFINED ENV{OUTBOX_REVISION} AND NOT "$ENV{OUTBOX_REVISION}" STREQUAL "")
  set(revision "$ENV{OUTBOX_REVISION}")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse HEAD
    OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
  if(failed)
    set(revision unknown)
  endif()
endif()
if(revision MATCHES "^[0-9a-fA-F]+$")
  string(SUBSTRING "${revision}" 0 12 revision)
  string(TOLOWER "${revision}" revision)
else()
  set(revision unknown)
endif()
set(content "// Generated at build time by cmake/write_revision.cmake. Do not edit.\n#include \"dispatcher/ops/version.hpp\"\nnamespace outbox {\nstd::string_view revision() noexcept { return \"${revision}\"; }\n}  // namespace outbox\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
