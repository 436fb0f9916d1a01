#pragma once
// A tiny reader for subcommand options: flags (--dry-run) and options with a
// value (--provider meta). Anything it does not recognise is a usage error.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace outbox::cli {

class arg_reader {
 public:
  explicit arg_reader(std::span<const std::string> args) : args_(args) {}

  [[nodiscard]] bool done() const { return i_ >= args_.size(); }
  [[nodiscard]] const std::string& current() const { return args_[i_]; }
  // Consumes the flag when it is next.
  [[nodiscard]] bool flag(std::string_view name) {
    if (done() || args_[i_] != name) return false;
    ++i_;
    return true;
  }
  // Consumes "--name value" or "--name=value" when next; sets `missing_value` if
  // the value is absent.
  [[nodiscard]] std::optional<std::string> option(std::string_view name) {
    if (done()) return std::nullopt;
    const std::string_view arg = args_[i_];
    if (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=') {
      ++i_;
      return std::string{arg.substr(name.size() + 1)};
    }
    if (arg != name) return std::nullopt;
    if (i_ + 1 >= args_.size()) {
      missing_value_ = true;  // left unconsumed: the caller reports it as incomplete
      return std::nullopt;
    }
    i_ += 2;
    return args_[i_ - 1];
  }
  // Consumes a positional argument.
  [[nodiscard]] std::string positional() { return args_[i_++]; }
  [[nodiscard]] bool missing_value() const { return missing_value_; }

 private:
  std::span<const std::string> args_;
  std::size_t i_ = 0;
  bool missing_value_ = false;
};

}  // namespace outbox::cli
