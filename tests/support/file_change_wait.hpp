#pragma once
// Waiting on what a separate process writes, without polling: the condition is
// checked again each time the kernel reports a write to the file (inotify), so
// a test wakes when the line it waits for lands, not at the next tick.
#include <chrono>
#include <filesystem>
#include <functional>

namespace outbox::test {

// Waits until `ready()` holds, checking it at the start and after each write to
// `file` (which must exist). Gives up at `timeout`, or as soon as `exited_fd`
// (a pidfd of the writing process; -1 for none) reports the process gone and a
// last check fails: a dead process writes no more lines.
[[nodiscard]] bool wait_for_file_change(const std::filesystem::path& file, int exited_fd,
                                        const std::function<bool()>& ready, std::chrono::milliseconds timeout);

}  // namespace outbox::test
