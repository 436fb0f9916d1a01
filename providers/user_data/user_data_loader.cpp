// The `dispatcher` executable's side of the user data module
// (providers/user_data/user_data_module.hpp): load_user_data_module, and phone::to_e164,
// phone::parsing_region and unicode::fold_for_match, to_lower, is_blank and
// is_punctuation as calls into the module.
// This object is part of the executable itself (CMakeLists.txt), so when the
// linker scans the provider library these are defined already and it never takes
// providers/user_data/phone_numbers.cpp, unicode_fold.cpp, unicode_properties.cpp or
// user_data_linked.cpp from it; --as-needed then drops libphonenumber, protobuf and ICU.
#include <dlfcn.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "providers/user_data/unicode_text.hpp"
#include "providers/user_data/user_data_module.hpp"

namespace outbox {
namespace {

using providers::user_data_module;

// Only where the executable's real location says: beside it (a build tree) or in
// ../lib/dispatcher/ (the image). Never the loader's search path or the working
// directory: a library there would run its constructor with DATABASE_URL in reach.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / providers::user_data_module_file).string());
    out.push_back((exe.parent_path().parent_path() / "lib" / "dispatcher" / providers::user_data_module_file).string());
  }
  return out;
}

// A module, or its folder, that someone other than its owner may write, or owned
// by anyone but root or the executable's owner, is refused before it is loaded
// (loading runs its code).
void require_trusted(const std::string& path) {
  struct ::stat exe {};
  const bool have_exe = ::stat("/proc/self/exe", &exe) == 0;
  const auto refuse = [&](const std::string& what, const std::string& why) {
    throw std::runtime_error("refusing to load the user data module " + path + ": " + what + " " + why +
                             " (fix with chown root and chmod go-w)");
  };
  const std::filesystem::path real = std::filesystem::canonical(path);
  for (const auto& [what, p] :
       {std::pair{std::string{"the file"}, real}, std::pair{std::string{"its folder"}, real.parent_path()}}) {
    struct ::stat st {};
    if (::stat(p.c_str(), &st) != 0) refuse(what + " " + p.string(), "cannot be examined");
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) refuse(what + " " + p.string(), "is writable by group or others");
    if (st.st_uid != 0 && !(have_exe && st.st_uid == exe.st_uid)) {
      refuse(what + " " + p.string(), "is owned by neither root nor the executable's owner");
    }
  }
}

std::string dl_error() {
  const char* e = ::dlerror();
  return e == nullptr ? "unknown error" : e;
}

// The module in the first place that has one (a file there that cannot be
// loaded is an error, not a reason to look further).
const user_data_module& load() {
  std::string tried;
  for (const auto& path : candidates()) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      tried += "\n  " + path + ": no such file";
      continue;
    }
    require_trusted(path);
    // Never closed: the module lives as long as the process.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw std::runtime_error("cannot load the user data module " + path + ": " + dl_error());
    using entry_fn = const user_data_module* (*)();
    const auto entry = reinterpret_cast<entry_fn>(::dlsym(handle, providers::user_data_module_entry));
    if (entry == nullptr) {
      throw std::runtime_error(path + " is not the dispatcher's user data module: " + dl_error());
    }
    const user_data_module* module = entry();
    if (module == nullptr || std::string_view{module->build_id} != OUTBOX_BUILD_ID) {
      throw std::runtime_error(path + " comes from another build of the dispatcher (" +
                               (module == nullptr ? std::string{"?"} : std::string{module->version}) + ", this is " +
                               OUTBOX_VERSION + "): install the executable and its module from the same build");
    }
    return *module;
  }
  throw std::runtime_error(std::string{"the user data module "} + providers::user_data_module_file +
                           " (phone numbers and Unicode matching, needed to hash user data) was not found:" + tried);
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
std::string to_lower(std::string_view utf8) { return module().to_lower(utf8); }
bool is_blank(char32_t cp) { return module().is_blank(cp); }
bool is_punctuation(char32_t cp) { return module().is_punctuation(cp); }

}  // namespace providers::unicode

}  // namespace outbox
