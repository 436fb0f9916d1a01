#include "dispatcher/secrets/sealed_secret.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

#include "providers/crypto.hpp"

namespace outbox::secrets {
namespace {

constexpr std::size_t key_bytes = 32;  // X25519 public key, AES-256 key
constexpr std::size_t nonce_bytes = 12;
constexpr std::size_t tag_bytes = 16;
constexpr std::string_view kdf_info = "outbox-dispatcher sealed secret v1";

using pkey_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using pkey_ctx_ptr = std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)>;
using cipher_ctx_ptr = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;
using kdf_ptr = std::unique_ptr<EVP_KDF, decltype(&EVP_KDF_free)>;
using kdf_ctx_ptr = std::unique_ptr<EVP_KDF_CTX, decltype(&EVP_KDF_CTX_free)>;
using bio_ptr = std::unique_ptr<BIO, decltype(&BIO_free)>;

unsigned char* bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }
const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

[[noreturn]] void fail(const char* what) { throw std::runtime_error(std::string{"sealing: "} + what); }

std::string raw_public(EVP_PKEY* key) {
  std::string out(key_bytes, '\0');
  std::size_t len = out.size();
  if (EVP_PKEY_get_raw_public_key(key, bytes(out), &len) != 1 || len != key_bytes) fail("no raw public key");
  return out;
}

// X25519(ours, theirs); nullopt for a peer key that gives an all-zero secret.
std::optional<std::string> agree(EVP_PKEY* ours, EVP_PKEY* theirs) {
  const pkey_ctx_ptr ctx(EVP_PKEY_CTX_new(ours, nullptr), &EVP_PKEY_CTX_free);
  std::string shared(key_bytes, '\0');
  std::size_t len = shared.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 || EVP_PKEY_derive_set_peer(ctx.get(), theirs) != 1 ||
      EVP_PKEY_derive(ctx.get(), bytes(shared), &len) != 1 || len != key_bytes) {
    return std::nullopt;
  }
  return shared;
}

std::string hkdf_sha256(std::string shared, std::string salt) {
  const kdf_ptr kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr), &EVP_KDF_free);
  const kdf_ctx_ptr ctx(kdf ? EVP_KDF_CTX_new(kdf.get()) : nullptr, &EVP_KDF_CTX_free);
  if (!ctx) fail("no HKDF");
  std::string info{kdf_info};
  char digest[] = "SHA256";
  const std::array<OSSL_PARAM, 5> params{
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, shared.data(), shared.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt.data(), salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()), OSSL_PARAM_construct_end()};
  std::string key(key_bytes, '\0');
  if (EVP_KDF_derive(ctx.get(), bytes(key), key.size(), params.data()) != 1) fail("HKDF failed");
  return key;
}

// AES-256-GCM: ciphertext || tag.
std::string encrypt(const std::string& key, std::string_view nonce, std::string_view plaintext, std::string_view aad) {
  const cipher_ctx_ptr ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  std::string out(plaintext.size() + tag_bytes, '\0');
  int len = 0;
  int tail = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, bytes(key), bytes(nonce)) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, bytes(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), bytes(out), &len, bytes(plaintext), static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), bytes(out) + len, &tail) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, tag_bytes, bytes(out) + plaintext.size()) != 1) {
    fail("AES-256-GCM failed");
  }
  return out;
}

std::optional<std::string> decrypt(const std::string& key, std::string_view nonce, std::string_view sealed,
                                   std::string_view aad) {
  const std::string_view ciphertext = sealed.substr(0, sealed.size() - tag_bytes);
  std::string tag{sealed.substr(ciphertext.size())};
  const cipher_ctx_ptr ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  std::string out(ciphertext.size(), '\0');
  int len = 0;
  int tail = 0;
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, bytes(key), bytes(nonce)) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), bytes(out), &len, bytes(ciphertext), static_cast<int>(ciphertext.size())) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, tag_bytes, tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), bytes(out) + len, &tail) != 1) {
    return std::nullopt;
  }
  return out;
}

// "sealed:v1:<id>:<base64>" split; nullopt when it is not that shape.
std::optional<std::pair<std::string_view, std::string_view>> split(std::string_view value) {
  if (!value.starts_with(sealed_prefix)) return std::nullopt;
  value.remove_prefix(sealed_prefix.size());
  const auto colon = value.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  return std::pair{value.substr(0, colon), value.substr(colon + 1)};
}

}  // namespace

struct sealing_key::handle {
  pkey_ptr key{nullptr, &EVP_PKEY_free};
};

sealing_key::sealing_key(std::unique_ptr<handle> key, bool has_private)
    : key_(std::move(key)), has_private_(has_private), public_raw_(raw_public(key_->key.get())) {
  id_ = providers::sha256_hex(public_raw_).substr(0, 16);
}
sealing_key::sealing_key(sealing_key&&) noexcept = default;
sealing_key& sealing_key::operator=(sealing_key&&) noexcept = default;
sealing_key::~sealing_key() = default;

sealing_key sealing_key::generate() {
  auto h = std::make_unique<handle>();
  h->key.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  if (!h->key) fail("cannot generate an X25519 key");
  return sealing_key(std::move(h), true);
}

sealing_key sealing_key::from_private_pem(std::string_view pem) {
  const bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  auto h = std::make_unique<handle>();
  if (bio) h->key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!h->key || EVP_PKEY_get_base_id(h->key.get()) != EVP_PKEY_X25519) {
    throw std::invalid_argument("not an X25519 private key in PEM (PKCS#8) form");
  }
  return sealing_key(std::move(h), true);
}

sealing_key sealing_key::from_public_raw(std::string_view raw) {
  if (raw.size() != key_bytes) throw std::invalid_argument("an X25519 public key is 32 bytes");
  auto h = std::make_unique<handle>();
  h->key.reset(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, bytes(raw), raw.size()));
  if (!h->key) throw std::invalid_argument("not an X25519 public key");
  return sealing_key(std::move(h), false);
}

std::string sealing_key::private_pem() const {
  if (!has_private_) throw std::logic_error("sealing: a public key has no private part");
  const bio_ptr bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key_->key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    fail("cannot write the private key");
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

std::string sealing_key::seal(std::string_view plaintext, std::string_view context) const {
  const sealing_key ephemeral = generate();
  const auto shared = agree(ephemeral.key_->key.get(), key_->key.get());
  if (!shared) fail("key agreement failed");
  const std::string key = hkdf_sha256(*shared, ephemeral.public_raw_ + public_raw_);
  std::string nonce(nonce_bytes, '\0');
  if (RAND_bytes(bytes(nonce), static_cast<int>(nonce.size())) != 1) fail("no random bytes");
  const std::string blob = ephemeral.public_raw_ + nonce + encrypt(key, nonce, plaintext, context);
  return std::string{sealed_prefix} + id_ + ":" + providers::base64_encode(blob);
}

sealing_key::opened sealing_key::open(std::string_view sealed, std::string_view context) const {
  const auto parts = split(sealed);
  if (!parts) return {std::nullopt, "not a sealed value (sealed:v1:...)"};
  if (parts->first != id_) return {std::nullopt, "sealed for key " + std::string{parts->first} + ", not key " + id_};
  if (!has_private_) return {std::nullopt, "only the public key is here"};
  const auto blob = providers::base64_decode(parts->second);
  if (!blob || blob->size() < key_bytes + nonce_bytes + tag_bytes) return {std::nullopt, "a damaged sealed value"};
  const std::string_view b{*blob};
  auto ephemeral = from_public_raw(b.substr(0, key_bytes));
  const auto shared = agree(key_->key.get(), ephemeral.key_->key.get());
  if (!shared) return {std::nullopt, "a damaged sealed value"};
  const std::string key = hkdf_sha256(*shared, ephemeral.public_raw_ + public_raw_);
  auto value = decrypt(key, b.substr(key_bytes, nonce_bytes), b.substr(key_bytes + nonce_bytes), context);
  if (!value) return {std::nullopt, "does not open: altered, or sealed for another destination or key"};
  return {std::move(value), {}};
}

bool is_sealed(std::string_view value) { return split(value).has_value(); }

std::optional<std::string> sealed_key_id(std::string_view value) {
  const auto parts = split(value);
  if (!parts) return std::nullopt;
  return std::string{parts->first};
}

}  // namespace outbox::secrets
