#pragma once
// Data Manager's GET /v1/requestStatus:retrieve?requestId=... for fake_google
// (google/ads/datamanager/v1 RetrieveRequestStatusResponse): every request that
// events:ingest accepted gets a fresh id and a script of answers, one per read,
// the last one repeating. Unscripted requests answer PROCESSING for the first
// `processing_reads` reads, then SUCCESS. An id it never issued is 404 NOT_FOUND.
// It counts the reads of each id (a read counts when the request arrives, before
// any delay). fake_google checks the bearer token before asking it.
//
// Header-only so that fake_google (outbox_fakes, also linked by the demo) needs
// no other source file.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_https_server.hpp"

namespace outbox::test {

// One answer of requestStatus:retrieve.
struct status_answer {
  using counts = std::vector<std::pair<std::string, std::int64_t>>;  // (reason, recordCount)

  int http_status = 200;              // 503: UNAVAILABLE, nothing about the request
  std::string status = "PROCESSING";  // requestStatus
  counts errors;                      // errorInfo.errorCounts
  counts warnings;                    // warningInfo.warningCounts
  std::chrono::milliseconds delay{0};

  [[nodiscard]] static status_answer processing() { return {}; }
  [[nodiscard]] static status_answer success(counts warnings = {}) { return {200, "SUCCESS", {}, std::move(warnings)}; }
  [[nodiscard]] static status_answer partial_success(counts errors) {
    return {200, "PARTIAL_SUCCESS", std::move(errors)};
  }
  [[nodiscard]] static status_answer failed(counts errors) { return {200, "FAILED", std::move(errors)}; }
  [[nodiscard]] static status_answer status_unknown() { return {200, "REQUEST_STATUS_UNKNOWN"}; }
  [[nodiscard]] static status_answer unavailable() { return {503, ""}; }
  [[nodiscard]] static status_answer quota_exceeded() { return {429, ""}; }
  [[nodiscard]] status_answer after(std::chrono::milliseconds d) const {
    auto copy = *this;
    copy.delay = d;
    return copy;
  }
};

class fake_request_statuses {
 public:
  static constexpr std::string_view path = "/v1/requestStatus:retrieve";

  explicit fake_request_statuses(int processing_reads = 1) : processing_reads_(processing_reads) {
    std::random_device rd;
    prefix_ = std::to_string(rd() % 1000000) + "-";  // unique across fakes in one database
  }

  // The script of the next request events:ingest accepts (scripts queue up in order).
  void script_next(std::vector<status_answer> answers) {
    const std::lock_guard lock{mutex_};
    next_scripts_.push_back(std::move(answers));
  }
  // Replaces what the reads of `request_id` answer from now on; returns the reads so far.
  int script(const std::string& request_id, std::vector<status_answer> answers) {
    const std::lock_guard lock{mutex_};
    auto& r = requests_.at(request_id);
    r.script = std::move(answers);
    r.next = 0;
    return r.reads;
  }

  // Like Google's per-project quota of non-ingestion calls: every read of any
  // request answers 429 RESOURCE_EXHAUSTED (with a RetryInfo of `retry_delay`)
  // until restore_quota(); such reads are counted in refused_reads().
  void exhaust_quota(std::string retry_delay) {
    const std::lock_guard lock{mutex_};
    quota_exhausted_ = true;
    quota_retry_delay_ = std::move(retry_delay);
  }
  void restore_quota() {
    const std::lock_guard lock{mutex_};
    quota_exhausted_ = false;
  }
  [[nodiscard]] int refused_reads() const {
    const std::lock_guard lock{mutex_};
    return refused_reads_;
  }

  // An accepted request of `events` events to `destination`: its new requestId.
  [[nodiscard]] std::string accept(std::size_t events, nlohmann::json destination) {
    const std::lock_guard lock{mutex_};
    std::string id = "dm-" + prefix_ + std::to_string(order_.size() + 1);
    request r{events, std::move(destination), {}, 0, 0};
    if (!next_scripts_.empty()) {
      r.script = std::move(next_scripts_.front());
      next_scripts_.pop_front();
    } else {
      r.script.assign(static_cast<std::size_t>(processing_reads_), status_answer::processing());
      r.script.push_back(status_answer::success());
    }
    requests_.emplace(id, std::move(r));
    order_.push_back(id);
    return id;
  }

  // The answer to GET `target` (path and query).
  [[nodiscard]] response_plan answer(std::string_view target) {
    const std::lock_guard lock{mutex_};
    const std::string id = query_value(target, "requestId");
    if (id.empty()) return error(400, "INVALID_ARGUMENT", "request_id is required.");
    const auto it = requests_.find(id);
    if (it == requests_.end()) {
      ++unknown_reads_;
      return error(404, "NOT_FOUND", "Request ID " + id + " not found.");
    }
    request& r = it->second;
    ++r.reads;
    if (quota_exhausted_) {
      ++refused_reads_;
      return quota_error();
    }
    const status_answer& a = r.script.empty() ? fallback_ : r.script[std::min(r.next, r.script.size() - 1)];
    if (r.next < r.script.size()) ++r.next;
    if (a.http_status == 429) return error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.").after(a.delay);
    if (a.http_status != 200) {
      return error(a.http_status, "UNAVAILABLE", "The service is currently unavailable.").after(a.delay);
    }
    return response_plan::reply(200, body(r, a).dump()).after(a.delay);
  }

  [[nodiscard]] int reads(const std::string& request_id) const {
    const std::lock_guard lock{mutex_};
    const auto it = requests_.find(request_id);
    return it == requests_.end() ? 0 : it->second.reads;
  }
  [[nodiscard]] int total_reads() const {
    const std::lock_guard lock{mutex_};
    int n = unknown_reads_;
    for (const auto& [id, r] : requests_) n += r.reads;
    return n;
  }
  [[nodiscard]] int unknown_reads() const {
    const std::lock_guard lock{mutex_};
    return unknown_reads_;
  }
  // Every requestId issued, in the order the requests were accepted.
  [[nodiscard]] std::vector<std::string> request_ids() const {
    const std::lock_guard lock{mutex_};
    return order_;
  }

 private:
  struct request {
    std::size_t events = 0;
    nlohmann::json destination;
    std::vector<status_answer> script;
    std::size_t next = 0;  // the script's answer for the next read
    int reads = 0;
  };

  static nlohmann::json count_list(const status_answer::counts& counts, const char* list) {
    nlohmann::json items = nlohmann::json::array();
    // int64 fields are JSON strings in proto3 JSON.
    for (const auto& [reason, n] : counts) items.push_back({{"recordCount", std::to_string(n)}, {"reason", reason}});
    return {{list, std::move(items)}};
  }

  static nlohmann::json body(const request& r, const status_answer& a) {
    nlohmann::json entry{{"destination", r.destination}, {"requestStatus", a.status}};
    std::int64_t failed = 0;
    for (const auto& e : a.errors) failed += e.second;
    if (a.status == "SUCCESS" || a.status == "PARTIAL_SUCCESS") {
      entry["eventsIngestionStatus"] = {{"recordCount", std::to_string(static_cast<std::int64_t>(r.events) - failed)}};
    }
    if (!a.errors.empty()) entry["errorInfo"] = count_list(a.errors, "errorCounts");
    if (!a.warnings.empty()) entry["warningInfo"] = count_list(a.warnings, "warningCounts");
    return {{"requestStatusPerDestination", nlohmann::json::array({std::move(entry)})}};
  }

  static response_plan error(int status, std::string_view code_name, std::string message) {
    return response_plan::reply(
        status,
        nlohmann::json{{"error", {{"code", status}, {"message", std::move(message)}, {"status", code_name}}}}.dump());
  }

  // google.rpc.Status with a google.rpc.RetryInfo, as Google's quota refusals carry it.
  response_plan quota_error() const {
    nlohmann::json retry{{"@type", "type.googleapis.com/google.rpc.RetryInfo"}, {"retryDelay", quota_retry_delay_}};
    return response_plan::reply(429, nlohmann::json{{"error",
                                                     {{"code", 429},
                                                      {"message", "Quota exceeded for quota metric 'Requests'."},
                                                      {"status", "RESOURCE_EXHAUSTED"},
                                                      {"details", nlohmann::json::array({retry})}}}}
                                         .dump());
  }

  // The percent-decoded value of `name` in the query of `target`, or "".
  static std::string query_value(std::string_view target, std::string_view name) {
    const auto q = target.find('?');
    if (q == std::string_view::npos) return {};
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
      const auto amp = query.find('&');
      const auto pair = query.substr(0, amp);
      if (pair.starts_with(name) && pair.size() > name.size() && pair[name.size()] == '=') {
        return decode(pair.substr(name.size() + 1));
      }
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
    return {};
  }

  static std::string decode(std::string_view s) {
    const auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
        out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
        i += 2;
      } else {
        out += s[i] == '+' ? ' ' : s[i];  // as servers read a query: an unescaped '+' is a space
      }
    }
    return out;
  }

  mutable std::mutex mutex_;
  int processing_reads_;
  std::string prefix_;
  std::deque<std::vector<status_answer>> next_scripts_;
  std::map<std::string, request, std::less<>> requests_;
  std::vector<std::string> order_;
  int unknown_reads_ = 0;
  bool quota_exhausted_ = false;
  std::string quota_retry_delay_;
  int refused_reads_ = 0;
  status_answer fallback_ = status_answer::success();
};

}  // namespace outbox::test
