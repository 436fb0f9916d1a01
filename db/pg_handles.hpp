#pragma once
// Owning handles for libpq objects: every C handle is freed by its own function.
#include <memory>

#include <libpq-fe.h>

namespace outbox::db {

struct pgconn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct pgresult_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
struct pgnotify_deleter {
  void operator()(PGnotify* n) const noexcept { PQfreemem(n); }
};

using pgconn_ptr = std::unique_ptr<PGconn, pgconn_deleter>;
using pgresult_ptr = std::unique_ptr<PGresult, pgresult_deleter>;
using pgnotify_ptr = std::unique_ptr<PGnotify, pgnotify_deleter>;

}  // namespace outbox::db
