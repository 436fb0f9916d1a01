#include "providers/http/tls_socket_bio.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

namespace outbox::providers::detail {
namespace {

[[nodiscard]] int fd_of(BIO* bio) { return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(bio))); }

[[nodiscard]] bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

int socket_write(BIO* bio, const char* data, std::size_t size, std::size_t* written) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::send(fd_of(bio), data, size, MSG_NOSIGNAL);
  if (n >= 0) {
    *written = static_cast<std::size_t>(n);
    return 1;
  }
  if (would_block(errno)) BIO_set_retry_write(bio);
  return 0;  // errno stays for SSL_ERROR_SYSCALL
}

long socket_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;  // OpenSSL flushes after each record; send() keeps nothing back
}

int socket_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

// Made once and kept for the process, as OpenSSL's own methods are.
[[nodiscard]] const BIO_METHOD* socket_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "outbox nosignal socket");
    if (m == nullptr) return m;
    BIO_meth_set_write_ex(m, socket_write);
    BIO_meth_set_ctrl(m, socket_ctrl);
    BIO_meth_set_create(m, socket_create);
    return m;
  }();
  return method;
}

}  // namespace

BIO* new_socket_bio(int fd) {
  const BIO_METHOD* method = socket_method();
  if (method == nullptr) return nullptr;
  BIO* bio = BIO_new(method);
  if (bio != nullptr) BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  return bio;
}

}  // namespace outbox::providers::detail
