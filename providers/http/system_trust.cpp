#include "providers/http/system_trust.hpp"

#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string_view>

namespace outbox::providers {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// "5ad8a5d6.0": eight hex digits, a dot, a sequence number.
bool is_hash_name(std::string_view name) {
  const auto dot = name.find('.');
  if (dot != 8 || name.size() < 10) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = i < 8 ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') : i == 8 || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void add_hashed_directories(SSL_CTX* ctx, const std::string& dirs) {
  X509_LOOKUP* lookup = X509_STORE_add_lookup(SSL_CTX_get_cert_store(ctx), X509_LOOKUP_hash_dir());
  if (lookup == nullptr || X509_LOOKUP_add_dir(lookup, dirs.c_str(), X509_FILETYPE_PEM) != 1) {
    throw std::runtime_error("cannot use the CA directory " + dirs);
  }
}

}  // namespace

bool is_hashed_ca_directory(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec)) {
    if (is_hash_name(it->path().filename().string())) return true;
  }
  return false;
}

void use_system_trust(SSL_CTX* ctx) {
  const char* file_env = std::getenv(X509_get_default_cert_file_env());
  const bool file_given = file_env != nullptr && *file_env != '\0';
  if (file_given && SSL_CTX_load_verify_file(ctx, file_env) != 1) {
    throw std::runtime_error(std::string{"cannot load "} + X509_get_default_cert_file_env() + "=" + file_env);
  }
  // Every directory of the list is searched (lazily, so adding them costs nothing).
  const std::string dirs = env_or(X509_get_default_cert_dir_env(), X509_get_default_cert_dir());
  add_hashed_directories(ctx, dirs);
  bool any_hashed = false;
  for (std::size_t from = 0; from <= dirs.size() && !any_hashed;) {
    const std::size_t colon = std::min(dirs.find(':', from), dirs.size());
    any_hashed = is_hashed_ca_directory(dirs.substr(from, colon - from));
    from = colon + 1;
  }
  if (any_hashed || file_given) return;
  // No hashed directory: the bundle, whole, as OpenSSL's defaults would (a missing one is no error).
  const char* bundle = X509_get_default_cert_file();
  std::error_code ec;
  if (std::filesystem::exists(bundle, ec) && SSL_CTX_load_verify_file(ctx, bundle) != 1) {
    throw std::runtime_error(std::string{"cannot load the CA bundle "} + bundle);
  }
}

}  // namespace outbox::providers
