#include "dispatcher/ops/process_stats.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace outbox {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<std::uint64_t> to_number(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The space-separated fields after "pid (comm) ", which may itself hold spaces
// and parentheses: the last ')' ends it. fields[0] is field 3 of proc(5), state.
std::vector<std::string_view> stat_fields(std::string_view stat) {
  std::vector<std::string_view> fields;
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos) return fields;
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    const auto start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const auto end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  }
  return fields;
}

std::optional<std::uint64_t> boot_time(std::string_view proc_stat) {
  const auto at = proc_stat.find("\nbtime ");
  if (at == std::string_view::npos) return std::nullopt;
  auto line = proc_stat.substr(at + 7);
  return to_number(line.substr(0, line.find('\n')));
}

std::uint64_t count_open_fds() {
  std::error_code ec;
  std::uint64_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return n > 0 ? n - 1 : 0;  // the iterator's own descriptor
}

}  // namespace

std::optional<process_stats> parse_process_stat(std::string_view stat, std::string_view proc_stat,
                                                long ticks_per_second, long page_bytes) {
  const auto f = stat_fields(stat);
  // proc(5) numbers from 1: utime 14, stime 15, starttime 22, vsize 23, rss 24.
  auto field = [&](std::size_t number) { return number - 3 < f.size() ? to_number(f[number - 3]) : std::nullopt; };
  const auto utime = field(14), stime = field(15), start = field(22), vsize = field(23), rss = field(24);
  const auto btime = boot_time(proc_stat);
  if (!utime || !stime || !start || !vsize || !rss || !btime || ticks_per_second <= 0 || page_bytes <= 0)
    return std::nullopt;
  process_stats s;
  const auto ticks = static_cast<double>(ticks_per_second);
  s.cpu_seconds = static_cast<double>(*utime + *stime) / ticks;
  s.start_time_seconds = static_cast<double>(*btime) + static_cast<double>(*start) / ticks;
  s.virtual_bytes = *vsize;
  s.resident_bytes = *rss * static_cast<std::uint64_t>(page_bytes);
  return s;
}

std::optional<process_stats> read_process_stats() {
  auto s = parse_process_stat(read_file("/proc/self/stat"), read_file("/proc/stat"), sysconf(_SC_CLK_TCK),
                              sysconf(_SC_PAGESIZE));
  if (!s) return std::nullopt;
  s->open_fds = count_open_fds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) s->max_fds = limit.rlim_cur;
  return s;
}

}  // namespace outbox
