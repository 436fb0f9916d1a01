#pragma once
// must(co_await op): the value of a db::outcome, or the db::error thrown (the
// test fails with its message). GCC 12 cannot parse `(co_await op).value()`
// inside a generic lambda, hence a function.
#include <utility>

#include "db/error.hpp"

namespace outbox::test {

template <class T>
T must(db::outcome<T> r) {
  return std::move(r).value();
}

inline void must(db::outcome<void> r) { r.value(); }

}  // namespace outbox::test
