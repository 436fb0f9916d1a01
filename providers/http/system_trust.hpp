#pragma once
// The system's CA certificates for a TLS client context. Where the system keeps
// them hashed, one file per CA named by its subject hash (Debian's
// /etc/ssl/certs, kept by update-ca-certificates), OpenSSL reads a CA only when
// a chain names it. SSL_CTX_set_default_verify_paths also parses the whole
// bundle file, about 140 CAs, into every context: 1.3 - 1.5 MB of RSS measured
// with bench/rss_floor (0.6 MB of it heap), for the one or two CAs a
// destination's chain uses.
//
// OpenSSL's default places and overrides: SSL_CERT_DIR (hashed directories,
// ':'-separated, all searched) and SSL_CERT_FILE (a bundle, loaded whole, and
// an error when it cannot be loaded: it was asked for). The default bundle
// (/usr/lib/ssl/cert.pem) is loaded only when no listed directory is hashed
// and SSL_CERT_FILE is unset, so a CA appended to the bundle by hand and never
// hashed is not seen (docs/operations.md, "TLS errors"). With nothing at all
// the context trusts nothing and every handshake fails verification.
#include <openssl/ssl.h>

#include <string>

namespace outbox::providers {

// Throws std::runtime_error when SSL_CERT_FILE, or the default bundle it falls
// back to, exists but cannot be loaded.
void use_system_trust(SSL_CTX* ctx);

// True when `dir` holds at least one CA file named by subject hash ("5ad8a5d6.0").
[[nodiscard]] bool is_hashed_ca_directory(const std::string& dir);

}  // namespace outbox::providers
