// The entry of dispatcher-user-data.so (providers/user_data/user_data_module.hpp). Built
// with hidden visibility: this function is the module's only exported symbol.
#include "providers/user_data/user_data_module.hpp"

#include "providers/user_data/unicode_text.hpp"

extern "C" __attribute__((visibility("default"))) const outbox::providers::user_data_module*
outbox_user_data_module_v2() {
  using namespace outbox::providers;
  static const user_data_module module{OUTBOX_BUILD_ID,        OUTBOX_VERSION,           &phone::to_e164,
                                       &phone::parsing_region, &unicode::fold_for_match, &unicode::to_lower,
                                       &unicode::is_blank,     &unicode::is_punctuation};
  return &module;
}
