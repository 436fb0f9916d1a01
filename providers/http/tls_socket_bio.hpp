#pragma once
// An OpenSSL BIO that writes to a non-blocking socket directly, for
// tls_session (which feeds OpenSSL what it reads through a memory BIO).
// OpenSSL's own socket BIO writes with write(2), which raises SIGPIPE when the
// peer has gone; this one sends with MSG_NOSIGNAL, so the process needs no
// signal disposition of its own.
#include <openssl/bio.h>

namespace outbox::providers::detail {

// A BIO on `fd` that does not own it (the Asio socket closes it). Null when
// OpenSSL cannot allocate one.
[[nodiscard]] BIO* new_socket_bio(int fd);

}  // namespace outbox::providers::detail
