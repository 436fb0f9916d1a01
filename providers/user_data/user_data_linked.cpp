// In programs that link providers/user_data/phone_numbers.cpp, unicode_fold.cpp and
// unicode_properties.cpp (the
// tests, the bench, the fuzzers), the user data module is part of the program:
// nothing to load. The `dispatcher` executable has its own definition
// (providers/user_data/user_data_loader.cpp).
#include "providers/user_data/user_data_module.hpp"

namespace outbox::providers {

void load_user_data_module() {}

}  // namespace outbox::providers
