#pragma once
// Small, allocation-friendly wrappers over OpenSSL for what providers need:
// request signatures (HMAC-SHA256), PII hashing (SHA-256 hex) and encodings.
// Byte strings travel as std::string / std::string_view (raw bytes, not text).
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace outbox::providers {

// Raw 32-byte HMAC-SHA256 of `data` under `key` (an empty key is valid).
[[nodiscard]] std::string hmac_sha256(std::string_view key, std::string_view data);

// HMAC-SHA256 under one fixed key, for signing many messages: the key schedule
// and algorithm lookup happen once here, each sign() only copies the keyed
// state (about 4x cheaper per short message than hmac_sha256()).
class hmac_sha256_signer {
 public:
  explicit hmac_sha256_signer(std::string_view key);
  ~hmac_sha256_signer();
  hmac_sha256_signer(hmac_sha256_signer&& other) noexcept;
  hmac_sha256_signer& operator=(hmac_sha256_signer&& other) noexcept;
  hmac_sha256_signer(const hmac_sha256_signer&) = delete;
  hmac_sha256_signer& operator=(const hmac_sha256_signer&) = delete;

  // Raw 32-byte HMAC-SHA256 of the concatenation of `parts`.
  [[nodiscard]] std::string sign(std::initializer_list<std::string_view> parts) const;

 private:
  struct state;
  state* keyed_ = nullptr;  // the keyed EVP_MAC_CTX, re-initialised (same key) for each message
};

// Raw 32-byte SHA-256 digest.
[[nodiscard]] std::string sha256(std::string_view data);

// Lower-case hex SHA-256, the form Meta, TikTok and Google expect for hashed PII.
[[nodiscard]] std::string sha256_hex(std::string_view data);

// Lower-case hex of arbitrary bytes.
[[nodiscard]] std::string hex_encode(std::string_view bytes);

// Standard base64 (RFC 4648 section 4, '+' '/', with '=' padding).
[[nodiscard]] std::string base64_encode(std::string_view bytes);

// Decodes standard base64. Padding may be omitted; anything else that is not
// canonical base64 (whitespace, URL-safe alphabet, stray '=') gives nullopt.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace outbox::providers
