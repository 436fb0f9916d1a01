#pragma once
// Destination secrets sealed at rest (docs/destinations.md, "Secrets"): what is
// stored is `sealed:v1:<key id>:<base64>`, readable only with the dispatcher's
// private key, so a dump, a backup or a replica of the database alone reveals
// no token. Anyone with the public key can seal (the CRM writes secrets it
// cannot read back).
//
// The construction is HPKE's base mode (RFC 9180) in its simplest form, written
// out because Debian 12's OpenSSL 3.0 and python3-cryptography 38 have no HPKE:
// an ephemeral X25519 key agreed with the recipient's key, HKDF-SHA256 over the
// shared secret (salt: both public keys; info: a fixed label) to a 256-bit key,
// AES-256-GCM with a random 96-bit nonce. The blob is ephemeral public key (32)
// || nonce (12) || ciphertext || tag (16). The associated data is the secret's
// context ("provider/name/key"), so a sealed value moved to another destination
// or key does not open. examples/django/outbox_events/sealing.py is the same in
// Python.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace outbox::secrets {

inline constexpr std::string_view sealed_prefix = "sealed:v1:";

// An X25519 key pair (the dispatcher's) or public key (enough to seal).
class sealing_key {
 public:
  [[nodiscard]] static sealing_key generate();
  // A PKCS#8 PEM private key ("-----BEGIN PRIVATE KEY-----", as `dispatcher
  // keys generate` writes it). Throws std::invalid_argument when it is not an
  // X25519 private key.
  [[nodiscard]] static sealing_key from_private_pem(std::string_view pem);
  // 32 raw bytes. Throws std::invalid_argument for another length.
  [[nodiscard]] static sealing_key from_public_raw(std::string_view raw);

  sealing_key(sealing_key&&) noexcept;
  sealing_key& operator=(sealing_key&&) noexcept;
  ~sealing_key();

  [[nodiscard]] bool has_private() const noexcept { return has_private_; }
  [[nodiscard]] std::string private_pem() const;  // throws std::logic_error without the private key
  [[nodiscard]] const std::string& public_raw() const noexcept { return public_raw_; }
  // 16 hex digits of SHA-256(public key): names the key in every sealed value.
  [[nodiscard]] const std::string& id() const noexcept { return id_; }

  [[nodiscard]] std::string seal(std::string_view plaintext, std::string_view context) const;
  // The plaintext; or, when `sealed` is not a value sealed for this key under
  // `context` (not sealed, another key, another context, altered), why not, in
  // words for on-call (never the value).
  struct opened {
    std::optional<std::string> value;
    std::string problem;
  };
  [[nodiscard]] opened open(std::string_view sealed, std::string_view context) const;

 private:
  struct handle;
  sealing_key(std::unique_ptr<handle> key, bool has_private);
  std::unique_ptr<handle> key_;
  bool has_private_ = false;
  std::string public_raw_;
  std::string id_;
};

[[nodiscard]] bool is_sealed(std::string_view value);
// The id of the key a value was sealed for; nullopt when it is not a sealed value.
[[nodiscard]] std::optional<std::string> sealed_key_id(std::string_view value);

}  // namespace outbox::secrets
