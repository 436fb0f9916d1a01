#pragma once
// The user data module: the parts of normalization that need libphonenumber
// (with protobuf and abseil) or ICU (libicui18n's transliterator, libicuuc's
// case mapping and properties). Mapped, those libraries keep about 3.6 MB
// resident, which a dispatcher that only sends webhooks never uses. So the `dispatcher` executable does not link them:
// it loads dispatcher-user-data.so (this interface; providers/user_data/user_data_module.cpp) at start when a
// destination hashes user data (providers/user_data/user_data_loader.cpp). Tests and tools link
// providers/user_data/phone_numbers.cpp, unicode_fold.cpp and unicode_properties.cpp instead.
#include <string>
#include <string_view>

#include "providers/user_data/phone_numbers.hpp"

namespace outbox::providers {

// What the module provides; the same functions as phone_numbers.hpp and
// unicode::fold_for_match, to_lower, is_blank and is_punctuation (unicode_text.hpp).
struct user_data_module {
  // Checked first, before anything else is read: the executable refuses a module
  // of another build (the layout of this struct and of what crosses it may differ).
  const char* build_id;  // CMake's token for one configuration of one build tree
  const char* version;   // the project version, for the message
  phone::e164_result (*to_e164)(std::string_view raw, std::string_view row_country,
                                std::string_view default_calling_code);
  std::string (*parsing_region)(std::string_view row_country, std::string_view default_calling_code);
  std::string (*fold_for_match)(std::string_view utf8);
  std::string (*to_lower)(std::string_view utf8);
  bool (*is_blank)(char32_t cp);
  bool (*is_punctuation)(char32_t cp);
};

// Makes the module's functions callable before the event loop needs them. In the
// `dispatcher` executable (providers/user_data/user_data_loader.cpp) it loads the module
// once: from the executable's real directory, then ../lib/dispatcher/ beside it
// (the image's /usr/local/lib/dispatcher/), nowhere else; it throws
// std::runtime_error naming where it looked when none has it, and when the first
// one found is writable by group or others (file or folder), owned by neither
// root nor the executable's owner, cannot be loaded or comes from another build. Where the
// functions are linked in
// (providers/user_data/user_data_linked.cpp) it does nothing.
void load_user_data_module();

// The file and its one exported function: `const user_data_module* outbox_user_data_module_v2()`.
inline constexpr const char* user_data_module_file = "dispatcher-user-data.so";
// v2: to_lower, is_blank and is_punctuation joined the struct (a v1 module is refused).
inline constexpr const char* user_data_module_entry = "outbox_user_data_module_v2";

}  // namespace outbox::providers
