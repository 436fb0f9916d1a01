#include "dispatcher/ops/allocator_tuning.hpp"

#include <doctest/doctest.h>

#include <malloc.h>

#include <cstdlib>

// A sanitizer brings its own allocator; these are glibc's settings.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define OUTBOX_OWN_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OUTBOX_OWN_ALLOCATOR 1
#endif

#if !defined(OUTBOX_OWN_ALLOCATOR)

// One namespace per file: test programs are unity builds (CMakeLists.txt).
namespace allocator_tuning_test {
TEST_CASE("after keep_freed_memory_for_reuse a block as large as a batch comes from the heap, not a fresh mapping") {
  // glibc's default maps anything this large on its own (its dynamic threshold
  // stops at 32 MB; ctest runs each case in a process of its own).
  constexpr std::size_t block = 16 * 1024 * 1024;
  outbox::keep_freed_memory_for_reuse();
  const auto mapped_before = mallinfo2().hblks;
  void* p = std::malloc(block);
  REQUIRE(p != nullptr);
  CHECK(mallinfo2().hblks == mapped_before);
  std::free(p);
  // Freed, the block stays with the process for the next batch instead of going back to the kernel.
  CHECK(mallinfo2().fordblks >= block);
}

}  // namespace allocator_tuning_test
#endif
