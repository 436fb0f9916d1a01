#pragma once
// What every ad-platform mapping does with a canonical event's user fields:
// normalize each value (user_data.hpp), hash it, drop what is unusable with a
// reason, and remove repeats that only show after normalization ("A@x.com" and
// "a@x.com " are one email).
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "providers/canonical_event.hpp"
#include "providers/dropped_field.hpp"
#include "providers/user_data/user_data.hpp"

namespace outbox::providers {

class user_field_reader {
 public:
  // `default_calling_code`: the destination's, for phones without one; the row's
  // first usable country is the phone region and the state lookup's country.
  // `now`: the engine's clock (a date of birth after its day is unusable).
  user_field_reader(const canonical_event& event, std::string_view default_calling_code, dropped_fields& dropped,
                    std::chrono::system_clock::time_point now);

  // SHA-256 hex of each usable value of `raws` (field `name` in drop notes).
  [[nodiscard]] std::vector<std::string> hashed(std::string_view name, pii_field field,
                                                const std::vector<std::string>& raws);
  // Normalized, not hashed (values some APIs take in clear, e.g. Google's postal code).
  [[nodiscard]] std::vector<std::string> normalized(std::string_view name, pii_field field,
                                                    const std::vector<std::string>& raws);
  [[nodiscard]] const normalize_options& options() const { return options_; }
  // Meta: Parameter Builder hashes keep their ".<appendix>" (normalize_options).
  void keep_hash_appendix() { options_.keep_hash_appendix = true; }

 private:
  template <class Step>
  std::vector<std::string> each(std::string_view name, const std::vector<std::string>& raws, Step step);

  normalize_options options_;
  dropped_fields& dropped_;
};

}  // namespace outbox::providers
