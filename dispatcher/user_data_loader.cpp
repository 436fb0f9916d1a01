// The `dispatcher` executable's side of the user data module
// (providers/user_data_module.hpp): load_user_data_module, and phone::to_e164,
// phone::parsing_region and unicode::fold_for_match as calls into the module.
// This object is part of the executable itself (CMakeLists.txt), so when the
// linker scans the provider library these are defined already and it never takes
// providers/phone_numbers.cpp, unicode_fold.cpp or user_data_linked.cpp from it;
// --as-needed then drops libphonenumber, protobuf and libicui18n.
#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "dispatcher/version.hpp"
#include "providers/unicode_text.hpp"
#include "providers/user_data_module.hpp"

namespace outbox {
namespace {

using providers::user_data_module;

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / providers::user_data_module_file).string());
    out.push_back((exe.parent_path().parent_path() / "lib" / "dispatcher" / providers::user_data_module_file).string());
  }
  out.emplace_back(providers::user_data_module_file);  // LD_LIBRARY_PATH, ld.so.cache, /usr/lib
  return out;
}

const user_data_module& load() {
  std::string tried;
  for (const auto& path : candidates()) {
    // Never closed: the module lives as long as the process.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += "\n  " + path + ": " + ::dlerror();
      continue;
    }
    using entry_fn = const user_data_module* (*)();
    const auto entry = reinterpret_cast<entry_fn>(::dlsym(handle, providers::user_data_module_entry));
    const user_data_module* module = entry == nullptr ? nullptr : entry();
    if (module == nullptr) throw std::runtime_error(path + " is not the dispatcher's user data module");
    if (std::string_view{module->version} != version()) {
      throw std::runtime_error(path + " was built for dispatcher " + module->version + ", this is " +
                               std::string{version()} + ": install both from the same build");
    }
    return *module;
  }
  throw std::runtime_error(std::string{"the user data module "} + providers::user_data_module_file +
                           " (phone numbers and Unicode matching, needed to hash user data) was not found:" +
                           tried);
}

const user_data_module& module() {
  static const user_data_module& loaded = load();
  return loaded;
}

}  // namespace

namespace providers {

void load_user_data_module() { (void)module(); }

}  // namespace providers

namespace providers::phone {

e164_result to_e164(std::string_view raw, std::string_view row_country, std::string_view default_calling_code) {
  return module().to_e164(raw, row_country, default_calling_code);
}

std::string parsing_region(std::string_view row_country, std::string_view default_calling_code) {
  return module().parsing_region(row_country, default_calling_code);
}

}  // namespace providers::phone

namespace providers::unicode {

std::string fold_for_match(std::string_view utf8) { return module().fold_for_match(utf8); }

}  // namespace providers::unicode

}  // namespace outbox
