// The system trust store (providers/http/system_trust.hpp) against a real local TLS
// server: a CA found lazily in a hashed directory (the first of a list or a
// later one), a hashed directory without it, and SSL_CERT_FILE.
#include "providers/http/system_trust.hpp"

#include <doctest/doctest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tests/providers/http/https_test_helpers.hpp"

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace system_trust_test {

namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using outbox::providers::https_client;
using outbox::providers::https_client_options;
using outbox::test::test_https_server;
using namespace outbox::test::https;

// Sets (or, with nullopt, unsets) an environment variable for one scope, then
// puts back what was there.
class scoped_env {
 public:
  scoped_env(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

struct temp_dir {
  fs::path path =
      fs::temp_directory_path() / ("outbox-trust-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  temp_dir() { fs::create_directories(path); }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The name `openssl rehash` gives a CA certificate: its subject hash, ".0".
std::string hashed_name(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  REQUIRE(cert != nullptr);
  char name[16];
  std::snprintf(name, sizeof name, "%08lx.0", X509_subject_name_hash(cert));
  X509_free(cert);
  return name;
}

https_client_options system_trust_only() {
  auto opts = client_options();
  opts.extra_ca_file.clear();  // only what use_system_trust finds
  return opts;
}

outbox::providers::http_result send_once() {
  asio::io_context io;
  test_https_server server{io.get_executor(), trusted_tls()};
  https_client client{io.get_executor(), system_trust_only()};
  return run_on(io, client.async_send(post(server.url("/"))));
}

}  // namespace

TEST_CASE("system trust: a directory is hashed when it holds a file named by subject hash") {
  temp_dir dir;
  CHECK_FALSE(outbox::providers::is_hashed_ca_directory(dir.path.string()));
  std::ofstream(dir.path / "README") << "not a certificate";
  std::ofstream(dir.path / "ca.pem") << "";
  CHECK_FALSE(outbox::providers::is_hashed_ca_directory(dir.path.string()));
  std::ofstream(dir.path / "5ad8a5d6.0") << "";
  CHECK(outbox::providers::is_hashed_ca_directory(dir.path.string()));
  CHECK_FALSE(outbox::providers::is_hashed_ca_directory((dir.path / "missing").string()));
}

TEST_CASE("system trust: a CA in the hashed directory SSL_CERT_DIR names is found when the chain needs it") {
  temp_dir dir;
  pki().trusted.write_cert_pem(dir.path / hashed_name(pki().trusted.cert_pem()));
  const scoped_env no_file{"SSL_CERT_FILE", std::nullopt};
  SUBCASE("the only directory") {
    const scoped_env cert_dir{"SSL_CERT_DIR", dir.path.string()};
    const auto result = send_once();
    REQUIRE(result.ok());
    CHECK(result.response->status == 200);
  }
  SUBCASE("after a missing directory in the list") {
    const scoped_env cert_dir{"SSL_CERT_DIR", (dir.path / "missing").string() + ":" + dir.path.string()};
    const auto result = send_once();
    REQUIRE(result.ok());
    CHECK(result.response->status == 200);
  }
}

TEST_CASE("system trust: a hashed directory without the chain's CA: the handshake is refused") {
  temp_dir dir;
  pki().untrusted.write_cert_pem(dir.path / hashed_name(pki().untrusted.cert_pem()));  // some other CA
  const scoped_env no_file{"SSL_CERT_FILE", std::nullopt};
  const scoped_env cert_dir{"SSL_CERT_DIR", dir.path.string()};
  const auto result = send_once();
  CHECK_FALSE(result.ok());
  CHECK(contains(result.error_message, "certificate verify failed"));
}

TEST_CASE("system trust: SSL_CERT_FILE is loaded whole, beside an unhashed directory") {
  temp_dir dir;
  const fs::path bundle = dir.path / "bundle.pem";
  pki().trusted.write_cert_pem(bundle);
  const scoped_env cert_file{"SSL_CERT_FILE", bundle.string()};
  const scoped_env cert_dir{"SSL_CERT_DIR", (dir.path / "empty").string()};
  const auto result = send_once();
  REQUIRE(result.ok());
  CHECK(result.response->status == 200);

  const scoped_env missing{"SSL_CERT_FILE", (dir.path / "no-such.pem").string()};
  asio::io_context io;
  CHECK_THROWS_WITH_AS(https_client(io.get_executor(), system_trust_only()),
                       doctest::Contains("cannot use the system trust store"), std::runtime_error);
}

}  // namespace system_trust_test
