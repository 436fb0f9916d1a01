#include "tests/support/test_tls.hpp"

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace outbox::test {
namespace {

// Every OpenSSL handle is owned by a unique_ptr that calls its free function.
template <class T, auto Free>
struct free_with {
  void operator()(T* p) const noexcept { Free(p); }
};
template <class T, auto Free>
using owned = std::unique_ptr<T, free_with<T, Free>>;

using pkey_ptr = owned<EVP_PKEY, &EVP_PKEY_free>;
using x509_ptr = owned<X509, &X509_free>;
using name_ptr = owned<X509_NAME, &X509_NAME_free>;
using extension_ptr = owned<X509_EXTENSION, &X509_EXTENSION_free>;
using bignum_ptr = owned<BIGNUM, &BN_free>;
using bio_ptr = owned<BIO, &BIO_free_all>;

void check(bool ok, const char* what) {
  if (ok) return;
  char text[256] = "no OpenSSL error queued";
  if (const unsigned long code = ERR_get_error(); code != 0) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  throw std::runtime_error(std::string("test_tls: ") + what + ": " + text);
}

[[nodiscard]] pkey_ptr make_key() {
  pkey_ptr key{EVP_EC_gen("P-256")};
  check(key != nullptr, "EC key generation");
  return key;
}

[[nodiscard]] std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  check(RAND_bytes(raw.data(), static_cast<int>(raw.size())) == 1, "RAND_bytes");
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char b : raw) {
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

void add_extension(X509* cert, X509V3_CTX& ctx, int nid, const std::string& value) {
  extension_ptr ext{X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str())};
  check(ext != nullptr, "X509V3_EXT_nconf_nid");
  check(X509_add_ext(cert, ext.get(), -1) == 1, "X509_add_ext");
}

struct cert_spec {
  std::string common_name;
  EVP_PKEY* key = nullptr;         // subject key
  X509* issuer = nullptr;          // null: self-signed
  EVP_PKEY* issuer_key = nullptr;  // signs the certificate
  bool is_ca = false;
  std::string subject_alt_names;  // "DNS:a,IP:1.2.3.4"; empty for none
};

[[nodiscard]] x509_ptr make_certificate(const cert_spec& spec) {
  x509_ptr cert{X509_new()};
  check(cert != nullptr, "X509_new");
  check(X509_set_version(cert.get(), X509_VERSION_3) == 1, "X509_set_version");

  // Random serials: two CAs in one process must never issue look-alike certificates.
  bignum_ptr serial{BN_new()};
  check(serial != nullptr && BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1, "BN_rand");
  check(BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr, "serial number");

  // Backdated an hour so clock skew between processes cannot make it "not yet valid".
  check(X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr, "notBefore");
  check(X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7L * 24 * 3600) != nullptr, "notAfter");
  check(X509_set_pubkey(cert.get(), spec.key) == 1, "X509_set_pubkey");

  name_ptr name{X509_NAME_new()};
  check(name != nullptr, "X509_NAME_new");
  check(X509_NAME_add_entry_by_txt(name.get(), "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1, -1, 0) == 1,
        "common name");
  check(X509_set_subject_name(cert.get(), name.get()) == 1, "subject name");
  X509* issuer = spec.issuer != nullptr ? spec.issuer : cert.get();
  check(X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer)) == 1, "issuer name");

  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert.get(), nullptr, nullptr, 0);
  if (spec.is_ca) {
    add_extension(cert.get(), ctx, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(cert.get(), ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_extension(cert.get(), ctx, NID_subject_key_identifier, "hash");
  } else {
    add_extension(cert.get(), ctx, NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert.get(), ctx, NID_key_usage, "critical,digitalSignature");
    add_extension(cert.get(), ctx, NID_ext_key_usage, "serverAuth");
    add_extension(cert.get(), ctx, NID_subject_key_identifier, "hash");
    add_extension(cert.get(), ctx, NID_authority_key_identifier, "keyid:always");
    if (!spec.subject_alt_names.empty()) add_extension(cert.get(), ctx, NID_subject_alt_name, spec.subject_alt_names);
  }
  check(X509_sign(cert.get(), spec.issuer_key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

template <class Write>
[[nodiscard]] std::string to_pem(Write write) {
  bio_ptr bio{BIO_new(BIO_s_mem())};
  check(bio != nullptr, "BIO_new");
  check(write(bio.get()) == 1, "PEM write");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

[[nodiscard]] std::string cert_to_pem(X509* cert) {
  return to_pem([cert](BIO* bio) { return PEM_write_bio_X509(bio, cert); });
}

[[nodiscard]] std::string key_to_pem(EVP_PKEY* key) {
  return to_pem([key](BIO* bio) { return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr); });
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error("test_tls: cannot write " + path.string());
}

}  // namespace

struct test_ca::impl {
  pkey_ptr key;
  x509_ptr cert;
  std::string cert_pem;
  std::filesystem::path pem_file;

  ~impl() {
    // Best effort: a leftover file in the temp directory harms nothing.
    std::error_code ignored;
    std::filesystem::remove(pem_file, ignored);
  }
};

test_ca::test_ca(const std::string& common_name) : impl_(std::make_unique<impl>()) {
  impl_->key = make_key();
  impl_->cert = make_certificate({.common_name = common_name,
                                  .key = impl_->key.get(),
                                  .issuer = nullptr,
                                  .issuer_key = impl_->key.get(),
                                  .is_ca = true,
                                  .subject_alt_names = {}});
  impl_->cert_pem = cert_to_pem(impl_->cert.get());
  impl_->pem_file = std::filesystem::temp_directory_path() / ("outbox-test-ca-" + random_hex(8) + ".pem");
  write_file(impl_->pem_file, impl_->cert_pem);
}

test_ca::~test_ca() = default;
test_ca::test_ca(test_ca&&) noexcept = default;
test_ca& test_ca::operator=(test_ca&&) noexcept = default;

const std::string& test_ca::cert_pem() const { return impl_->cert_pem; }

const std::filesystem::path& test_ca::cert_pem_file() const { return impl_->pem_file; }

void test_ca::write_cert_pem(const std::filesystem::path& path) const { write_file(path, impl_->cert_pem); }

certificate_pem test_ca::issue(const subject_names& names) const {
  std::string alt_names;
  for (const auto& dns : names.dns) alt_names += (alt_names.empty() ? "DNS:" : ",DNS:") + dns;
  for (const auto& ip : names.ips) alt_names += (alt_names.empty() ? "IP:" : ",IP:") + ip;
  const std::string common_name =
      !names.dns.empty() ? names.dns.front() : (!names.ips.empty() ? names.ips.front() : "outbox test server");

  const pkey_ptr key = make_key();
  const x509_ptr cert = make_certificate({.common_name = common_name,
                                          .key = key.get(),
                                          .issuer = impl_->cert.get(),
                                          .issuer_key = impl_->key.get(),
                                          .is_ca = false,
                                          .subject_alt_names = alt_names});
  return {cert_to_pem(cert.get()), key_to_pem(key.get())};
}

}  // namespace outbox::test
