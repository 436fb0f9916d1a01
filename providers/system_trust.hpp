#pragma once
// The system's CA certificates for a TLS client context. Where the system keeps
// them hashed, one file per CA named by its subject hash (Debian's
// /etc/ssl/certs, kept by update-ca-certificates), OpenSSL reads a CA only when
// a chain names it. SSL_CTX_set_default_verify_paths instead parses the whole
// bundle file, about 140 CAs, into every context: 1.4 MB of RSS measured
// (issue 13), for the one or two CAs a destination's chain uses.
//
// The same places OpenSSL's defaults use, and the same overrides:
// SSL_CERT_FILE (a bundle, loaded whole) and SSL_CERT_DIR (hashed directories,
// ':'-separated). With neither hashed directory nor bundle the context trusts
// nothing and every handshake fails verification, as before.
#include <openssl/ssl.h>

#include <string>

namespace outbox::providers {

// Throws std::runtime_error when a place that exists cannot be used.
void use_system_trust(SSL_CTX* ctx);

// True when `dir` holds at least one CA file named by subject hash ("5ad8a5d6.0").
[[nodiscard]] bool is_hashed_ca_directory(const std::string& dir);

}  // namespace outbox::providers
