#pragma once
// Throwaway PKI for tests, generated in memory at run time (EC P-256): a CA
// that issues server certificates, written to a temporary PEM file so a client
// (or the dispatcher executable) can trust it. Never use outside tests.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace outbox::test {

// A certificate and its private key, PEM encoded.
struct certificate_pem {
  std::string cert;
  std::string key;
};

// What a server certificate is valid for (subjectAltName).
struct subject_names {
  std::vector<std::string> dns{"localhost"};
  std::vector<std::string> ips{"127.0.0.1"};
};

class test_ca {
 public:
  // Self-signed, CA:TRUE. Throws std::runtime_error on any OpenSSL failure.
  explicit test_ca(const std::string& common_name = "outbox test CA");
  ~test_ca();  // removes the PEM file
  test_ca(test_ca&&) noexcept;
  test_ca& operator=(test_ca&&) noexcept;

  [[nodiscard]] const std::string& cert_pem() const;
  // A temporary file holding cert_pem(); it lives as long as this object.
  [[nodiscard]] const std::filesystem::path& cert_pem_file() const;
  void write_cert_pem(const std::filesystem::path& path) const;

  // A server (leaf) certificate signed by this CA, valid for `names`.
  [[nodiscard]] certificate_pem issue(const subject_names& names = {}) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// The usual pair: a CA the client trusts and one it has never heard of.
struct test_pki {
  test_ca trusted{"outbox test CA"};
  test_ca untrusted{"outbox untrusted CA"};
};

}  // namespace outbox::test
