#include "providers/crypto.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <climits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace outbox::providers {
namespace {

using mac_ptr = std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)>;
using mac_ctx_ptr = std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)>;

constexpr std::size_t sha256_size = 32;

const unsigned char* bytes_of(std::string_view s) {
  // OpenSSL wants a non-null pointer even for empty input (an empty HMAC key is legal).
  static constexpr unsigned char empty = 0;
  return s.empty() ? &empty : reinterpret_cast<const unsigned char*>(s.data());
}

// OpenSSL's encode/decode take int lengths; anything near INT_MAX is a bug upstream.
int checked_int(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX / 2)) throw std::length_error("crypto: input too large");
  return static_cast<int>(n);
}

// Fetching the algorithm is the expensive part, so do it once per process.
EVP_MAC* hmac_algorithm() {
  static const mac_ptr mac{EVP_MAC_fetch(nullptr, "HMAC", nullptr), &EVP_MAC_free};
  if (!mac) throw std::runtime_error("OpenSSL: HMAC is not available");
  return mac.get();
}

using md_ptr = std::unique_ptr<EVP_MD, decltype(&EVP_MD_free)>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

// EVP_sha256() makes each EVP_Digest fetch the algorithm again (half of a
// hash's cost in OpenSSL 3); one fetch per process and one context per thread.
EVP_MD* sha256_algorithm() {
  static const md_ptr md{EVP_MD_fetch(nullptr, "SHA256", nullptr), &EVP_MD_free};
  if (!md) throw std::runtime_error("OpenSSL: SHA-256 is not available");
  return md.get();
}

EVP_MD_CTX* sha256_context() {
  thread_local const md_ctx_ptr ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  if (!ctx) throw std::runtime_error("OpenSSL: out of memory for a digest context");
  return ctx.get();
}

bool is_base64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

}  // namespace

// One keyed context, re-initialised for each message: EVP_MAC_init with no key
// keeps the key (HMAC's inner and outer pads are not recomputed). Duplicating
// the keyed context per message, as before, cost about 20 allocations each
// (heaptrack: most of a signed webhook request's OpenSSL allocations).
struct hmac_sha256_signer::state {
  EVP_MAC_CTX* ctx = nullptr;
  std::mutex in_use;  // sign() is const and may be called from any thread
};

hmac_sha256_signer::hmac_sha256_signer(std::string_view key) {
  mac_ctx_ptr ctx{EVP_MAC_CTX_new(hmac_algorithm()), &EVP_MAC_CTX_free};
  if (!ctx) throw std::runtime_error("OpenSSL: EVP_MAC_CTX_new failed");
  char digest_name[] = "SHA256";
  const std::array<OSSL_PARAM, 2> params{OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
                                         OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(ctx.get(), bytes_of(key), key.size(), params.data()) != 1) {
    throw std::runtime_error("OpenSSL: HMAC-SHA256 key set-up failed");
  }
  keyed_ = new state{ctx.release()};
}

hmac_sha256_signer::~hmac_sha256_signer() {
  if (keyed_) EVP_MAC_CTX_free(keyed_->ctx);
  delete keyed_;
}

hmac_sha256_signer::hmac_sha256_signer(hmac_sha256_signer&& other) noexcept
    : keyed_(std::exchange(other.keyed_, nullptr)) {}

hmac_sha256_signer& hmac_sha256_signer::operator=(hmac_sha256_signer&& other) noexcept {
  if (this != &other) {
    if (keyed_) EVP_MAC_CTX_free(keyed_->ctx);
    delete keyed_;
    keyed_ = std::exchange(other.keyed_, nullptr);
  }
  return *this;
}

std::string hmac_sha256_signer::sign(std::initializer_list<std::string_view> parts) const {
  if (!keyed_) throw std::logic_error("hmac_sha256_signer used after move");
  const std::lock_guard lock{keyed_->in_use};
  EVP_MAC_CTX* ctx = keyed_->ctx;
  if (EVP_MAC_init(ctx, nullptr, 0, nullptr) != 1) throw std::runtime_error("OpenSSL: HMAC-SHA256 failed");
  for (const auto part : parts) {
    if (EVP_MAC_update(ctx, bytes_of(part), part.size()) != 1) {
      throw std::runtime_error("OpenSSL: HMAC-SHA256 failed");
    }
  }
  std::string out(sha256_size, '\0');
  std::size_t out_len = 0;
  if (EVP_MAC_final(ctx, reinterpret_cast<unsigned char*>(out.data()), &out_len, out.size()) != 1 ||
      out_len != sha256_size) {
    throw std::runtime_error("OpenSSL: HMAC-SHA256 failed");
  }
  return out;
}

std::string hmac_sha256(std::string_view key, std::string_view data) { return hmac_sha256_signer(key).sign({data}); }

namespace {

void sha256_into(std::string_view data, unsigned char (&digest)[sha256_size]) {
  unsigned int out_len = 0;
  EVP_MD_CTX* ctx = sha256_context();
  if (EVP_DigestInit_ex2(ctx, sha256_algorithm(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, bytes_of(data), data.size()) != 1 || EVP_DigestFinal_ex(ctx, digest, &out_len) != 1 ||
      out_len != sha256_size) {
    throw std::runtime_error("OpenSSL: SHA-256 failed");
  }
}

// Writes 2 * size lowercase hex digits at `out`.
void hex_into(const unsigned char* bytes, std::size_t size, char* out) {
  static constexpr char digits[] = "0123456789abcdef";
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 0x0f];
  }
}

}  // namespace

std::string sha256(std::string_view data) {
  unsigned char digest[sha256_size];
  sha256_into(data, digest);
  return std::string(reinterpret_cast<const char*>(digest), sha256_size);
}

// Hashed user fields are the hot path of every batched row: no intermediate string.
std::string sha256_hex(std::string_view data) {
  unsigned char digest[sha256_size];
  sha256_into(data, digest);
  std::string out(2 * sha256_size, '\0');
  hex_into(digest, sha256_size, out.data());
  return out;
}

std::string hex_encode(std::string_view bytes) {
  std::string out(bytes.size() * 2, '\0');
  hex_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out.data());
  return out;
}

std::string base64_encode(std::string_view bytes) {
  const int in_len = checked_int(bytes.size());
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // +1: EVP_EncodeBlock writes a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes_of(bytes), in_len);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  // EVP_DecodeBlock skips whitespace and miscounts padding, so validate first.
  std::size_t pad = 0;
  while (pad < text.size() && pad < 3 && text[text.size() - 1 - pad] == '=') ++pad;
  const std::string_view body = text.substr(0, text.size() - pad);
  for (const char c : body) {
    if (!is_base64_char(c)) return std::nullopt;
  }
  if (body.size() % 4 == 1 || pad > 2) return std::nullopt;
  if (pad > 0 && text.size() % 4 != 0) return std::nullopt;
  std::string padded{body};
  const std::size_t missing = (4 - body.size() % 4) % 4;
  padded.append(missing, '=');

  std::string out(padded.size() / 4 * 3 + 1, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes_of(padded), checked_int(padded.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - missing);  // DecodeBlock counts padding as zero bytes
  return out;
}

}  // namespace outbox::providers
