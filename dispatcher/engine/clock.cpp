#include "dispatcher/engine/clock.hpp"

namespace outbox {
namespace {

class machine_clock final : public engine_clock {
 public:
  [[nodiscard]] steady_time steady_now() const override { return std::chrono::steady_clock::now(); }
  [[nodiscard]] system_time system_now() const override { return std::chrono::system_clock::now(); }
};

}  // namespace

engine_clock& real_clock() {
  static machine_clock instance;
  return instance;
}

}  // namespace outbox
