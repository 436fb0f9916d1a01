#pragma once
// The standard process metrics of Prometheus client libraries (CPU time,
// resident memory, open descriptors, start time), read from /proc/self: the
// dispatcher links no client library, and a scraper's dashboards expect them.
#include <cstdint>
#include <optional>
#include <string_view>

namespace outbox {

struct process_stats {
  double cpu_seconds = 0;  // user + system time
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;      // RLIMIT_NOFILE soft limit
  double start_time_seconds = 0;  // Unix time
};

// This process's figures; nullopt when /proc is not mounted (then no sample is exported).
[[nodiscard]] std::optional<process_stats> read_process_stats();

// Parses the text of /proc/<pid>/stat and the btime line of /proc/stat; pure, for tests.
// `ticks_per_second` is sysconf(_SC_CLK_TCK), `page_bytes` sysconf(_SC_PAGESIZE).
[[nodiscard]] std::optional<process_stats> parse_process_stat(std::string_view stat, std::string_view proc_stat,
                                                              long ticks_per_second, long page_bytes);

}  // namespace outbox
