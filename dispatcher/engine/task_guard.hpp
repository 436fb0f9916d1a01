#pragma once
// Completion handler for a background coroutine started with co_spawn: logs the
// exception text if the task crashed (a crash is a bug, but it must be seen),
// then runs `done`.
#include <exception>
#include <functional>
#include <string>

#include "dispatcher/ops/log.hpp"

namespace outbox {

class task_guard {
 public:
  task_guard(
      logger& log, std::string task, std::function<void()> done = [] {})
      : log_(&log), task_(std::move(task)), done_(std::move(done)) {}

  void operator()(std::exception_ptr e) const {
    if (e) {
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        what = ex.what();
      } catch (...) {
      }
      log_->error("internal task failed", {{"task", task_}, {"error", what}});
    }
    done_();
  }

 private:
  logger* log_;
  std::string task_;
  std::function<void()> done_;
};

}  // namespace outbox
