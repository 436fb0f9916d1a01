// destinations: a CRM with a pixel per project (issue 50). The same drain of
// --rows webhook rows, first to one registry destination, then spread over
// 1,000 (100 paused by their PAUSED setting, 10 whose URL refuses connections
// so their circuit opens), each with a secret sealed in the registry. Per pass:
// the claim statement's mean latency and the drain rate, the dispatcher's RSS,
// /metrics sample lines, `dispatcher status` (time and lines), and the reload:
// a destination created in the registry, a row enqueued for it right after,
// commit of the entry to the request at the sink.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench/dispatcher_harness.hpp"
#include "bench/support.hpp"
#include "bench/workload.hpp"
#include "dispatcher/secrets/sealing_keyring.hpp"
#include "providers/crypto.hpp"

namespace outbox::bench {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr int paused_destinations = 100;
constexpr int broken_destinations = 10;
constexpr int reload_probes = 5;

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("no free port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

// GET http://127.0.0.1:port/path, blocking; the body ("" when it fails).
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) response.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  const auto body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// Sum of the samples of `name` (any labels); and how many sample lines the text has.
double metric_sum(const std::string& text, const std::string& name, std::size_t* lines = nullptr) {
  double sum = 0;
  std::size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++n;
    if (line.starts_with(name) && (line[name.size()] == ' ' || line[name.size()] == '{'))
      sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  if (lines) *lines = n;
  return sum;
}

std::string destination_name(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "d%04d", i);
  return name;
}

struct registry_writer {
  const secrets::sealing_key& key;
  const std::string secret;
  const event_sink& sink;

  json entry(const std::string& name, int i, int count) const {
    json settings = {{"url", sink.url("/" + name)}};
    if (count > 1 && i < paused_destinations) settings["paused"] = "true";
    if (count > 1 && i >= paused_destinations && i < paused_destinations + broken_destinations)
      settings["url"] = "https://127.0.0.1:1/" + name;  // refused: its circuit opens
    json sealed = json::object();
    if (!secret.empty()) sealed["secret"] = key.seal(secret, secrets::secret_context("webhook", name, "secret"));
    return {{"name", name}, {"settings", settings}, {"secrets", sealed}};
  }
  void insert(pg& conn, const json& entries) const {
    (void)conn.exec(
        "INSERT INTO outbox_destination (provider, name, settings, secrets, updated_by) SELECT 'webhook', e->>'name', "
        "e->'settings', e->'secrets', 'outbox_bench' FROM jsonb_array_elements($1::jsonb) e",
        {entries.dump()});
  }
};

// The claim statements the dispatcher ran (pg_stat_statements): which, how often, how long.
json claim_statements(pg& conn) {
  const auto r = conn.exec(
      "SELECT calls, mean_exec_time, CASE WHEN query LIKE '%RECURSIVE%' THEN 'by destination' ELSE 'one scan' END "
      "FROM pg_stat_statements WHERE query LIKE '%picked AS%' AND query LIKE '%lease_token = $2%' "
      "ORDER BY calls DESC");
  json out = json::array();
  for (int i = 0; i < PQntuples(r.get()); ++i)
    out.push_back(
        {{"statement", value(r, i, 2)}, {"calls", std::stoll(value(r, i, 0))}, {"mean_ms", std::stod(value(r, i, 1))}});
  return out;
}

// The status command's wall time and line count.
json time_status(const options& o, dispatcher_setup& s, const std::string& label) {
  const std::string out = o.log_dir + "/status-" + label + ".txt";
  const auto t0 = steady::now();
  child_process status(o.dispatcher, {"status"}, container_environment({{"DATABASE_URL", s.db().conninfo()}}), out);
  const auto done = status.wait(60s);
  std::ifstream in(out);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return {{"seconds", seconds_between(t0, steady::now())}, {"lines", lines}, {"exit_ok", done.exited_ok}};
}

// Creates destination `name` in the registry, enqueues a row for it right after,
// and returns the seconds from the entry's commit to the request at the sink.
double reload_probe(pg& conn, dispatcher_setup& s, const registry_writer& w, const std::string& name, int lead) {
  const std::size_t before = s.sink().count();
  const auto t0 = steady::now();
  w.insert(conn, json::array({w.entry(name, 0, 1)}));
  (void)conn.exec("SELECT enqueue_event_delivery($1, 'webhook', 'Lead', '{\"value\": 1}'::jsonb, $2)",
                  {std::to_string(lead), name});
  while (s.sink().count() <= before) {
    if (steady::now() - t0 > 30s) s.failed("the row for new destination " + name + " was not sent within 30 s");
    std::this_thread::sleep_for(1ms);
  }
  return seconds_between(t0, steady::now());
}

// Inserts rows [first, first + rows) spread over `count` destinations (one
// statement) and returns how many of them can be sent (not paused, not refused).
std::int64_t insert_rows(pg& conn, std::int64_t first, std::int64_t rows, int count) {
  (void)conn.exec(
      "INSERT INTO event_delivery (lead_project_id, provider, destination, event_name, idempotency_key, payload) "
      "SELECT g, 'webhook', 'd' || lpad((g % $3::int)::text, 4, '0'), 'Lead', 'many-' || g, '{\"value\": 1}' "
      "FROM generate_series($1::bigint, $2::bigint) g",
      {std::to_string(first), std::to_string(first + rows - 1), std::to_string(count)});
  const int unsendable = count > 1 ? paused_destinations + broken_destinations : 0;
  std::int64_t sendable = 0;
  for (std::int64_t g = first; g < first + rows; ++g) sendable += (g % count) >= unsendable ? 1 : 0;
  return sendable;
}

// Waits until the sink has `total` requests; the seconds from `t0`.
double wait_for_requests(dispatcher_setup& s, std::int64_t total, steady::time_point t0) {
  while (static_cast<std::int64_t>(s.sink().count()) < total) {
    if (steady::now() - t0 > 300s) s.failed("only " + std::to_string(s.sink().count()) + " requests in 300 s");
    if (!s.proc().running()) s.failed("the dispatcher exited");
    std::this_thread::sleep_for(1ms);
  }
  return seconds_between(t0, steady::now());
}

// The dispatcher's own claim histogram: {sum, count}.
std::pair<double, double> claim_histogram(int port) {
  const std::string m = http_get(port, "/metrics");
  return {metric_sum(m, "outbox_claim_duration_seconds_sum"), metric_sum(m, "outbox_claim_duration_seconds_count")};
}

// Starts the dispatcher on `count` registry destinations, drains --rows rows
// cold (start-up: every destination opens its first connection), then --rows
// more warm; claims are measured on the warm drain.
json drain_twice(const options& o, dispatcher_setup& s, pg& conn, int count, int metrics_port) {
  json out;
  const auto cold = insert_rows(conn, 1, o.rows, count);
  (void)conn.exec("VACUUM ANALYZE event_delivery");
  const auto t0 = steady::now();
  s.start(false);
  out["cold_seconds"] = wait_for_requests(s, cold, t0);
  out["cold_rows_per_second"] = static_cast<double>(cold) / out["cold_seconds"].get<double>();
  const auto before = claim_histogram(metrics_port);
  const bool statements = reset_statements(conn);  // when pg_stat_statements is loaded
  const auto t1 = steady::now();
  const auto warm = insert_rows(conn, o.rows + 1, o.rows, count);
  out["warm_seconds"] = wait_for_requests(s, cold + warm, t1);
  out["rows_per_second"] = static_cast<double>(warm) / out["warm_seconds"].get<double>();
  const auto after = claim_histogram(metrics_port);
  out["claims"] = after.second - before.second;
  out["claim_ms_mean"] = out["claims"] > 0 ? 1000 * (after.first - before.first) / (after.second - before.second) : 0;
  if (statements) out["claim_statements"] = claim_statements(conn);
  out["rows_sent"] = cold + warm;
  return out;
}

json run_pass(const options& base, int count) {
  const std::string label = "destinations-" + std::to_string(count);
  note(label + ": 2 x " + std::to_string(base.rows) + " rows over " + std::to_string(count) +
       " registry destination(s)");
  options o = base;
  const int metrics_port = free_port();
  const std::string key_file = o.log_dir + "/sealing-" + label + ".pem";
  const auto key = secrets::sealing_key::generate();
  std::ofstream(key_file) << key.private_pem();
  o.extra_env.emplace_back("OUTBOX_SEALING_KEY_FILE", key_file);
  o.extra_env.emplace_back("OUTBOX_METRICS_ADDRESS", "127.0.0.1:" + std::to_string(metrics_port));
  dispatcher_setup s(o, label);
  pg conn(s.db().conninfo());
  (void)conn.exec(
      "INSERT INTO outbox_sealing_key (key_id, public_key, is_current) VALUES ($1, decode($2, 'hex'), true)",
      {key.id(), outbox::providers::hex_encode(key.public_raw())});
  const registry_writer w{key, webhook_secret_for(o), s.sink()};
  json entries = json::array();
  for (int i = 0; i < count; ++i) entries.push_back(w.entry(destination_name(i), i, count));
  w.insert(conn, entries);

  json out = drain_twice(o, s, conn, count, metrics_port);
  out["destinations"] = count;
  out["rows"] = 2 * o.rows;
  std::vector<double> reloads;
  for (int i = 0; i < reload_probes; ++i)
    reloads.push_back(reload_probe(conn, s, w, "probe_" + std::to_string(i), 900000000 + i));
  std::sort(reloads.begin(), reloads.end());
  out["reload_seconds_p50"] = percentile(reloads, 50);
  out["reload_seconds_max"] = reloads.back();
  const std::string metrics = http_get(metrics_port, "/metrics");
  std::size_t lines = 0;
  out["paused_series_at_1"] = metric_sum(metrics, "outbox_destination_paused", &lines);
  out["metrics_sample_lines"] = lines;
  out["metrics_bytes"] = metrics.size();
  const auto sample = sample_process(s.proc().pid());
  out["rss_mb"] = sample.rss_mb;
  out["rss_peak_mb"] = sample.hwm_mb;
  out["status"] = time_status(o, s, label);
  (void)s.proc().terminate(30s);
  note(label + ": warm " + fmt(out["rows_per_second"].get<double>()) + " rows/s, claim " +
       fmt(out["claim_ms_mean"].get<double>(), 2) + " ms mean, RSS peak " + fmt(sample.hwm_mb, 1) + " MB, reload " +
       fmt(out["reload_seconds_p50"].get<double>(), 3) + " s");
  return out;
}

}  // namespace

json run_many_destinations(const options& given) {
  options o = given;
  if (!o.rows_given) o.rows = 20000;
  json out = json::array();
  for (const int count : {1, 1000}) out.push_back(run_pass(o, count));
  return out;
}

void print_many_destinations_summary(const json& result) {
  std::vector<std::vector<std::string>> table{{"destinations", "rows/s cold", "rows/s warm", "claim ms (mean)",
                                               "claim statement ms", "RSS MB (peak)", "reload s (p50/max)",
                                               "/metrics lines", "status s / lines"}};
  for (const auto& r : result) {
    double statement_ms = std::nan("");
    for (const auto& st : r.value("claim_statements", json::array()))
      if (st["statement"] == "one scan") statement_ms = st["mean_ms"].get<double>();
    table.push_back({fmt(num(r, "destinations")), fmt(num(r, "cold_rows_per_second")), fmt(num(r, "rows_per_second")),
                     fmt(num(r, "claim_ms_mean"), 3), fmt(statement_ms, 3),
                     fmt(num(r, "rss_mb"), 1) + " (" + fmt(num(r, "rss_peak_mb"), 1) + ")",
                     fmt(num(r, "reload_seconds_p50"), 3) + " / " + fmt(num(r, "reload_seconds_max"), 3),
                     fmt(num(r, "metrics_sample_lines")),
                     fmt(num(r, "status", "seconds"), 2) + " / " + fmt(num(r, "status", "lines"))});
  }
  std::cout << "\n" << format_table(table) << std::flush;
}

}  // namespace outbox::bench
