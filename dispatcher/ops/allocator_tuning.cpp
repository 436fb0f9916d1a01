#include "dispatcher/ops/allocator_tuning.hpp"

#include <malloc.h>

namespace outbox {
namespace {

// glibc serves blocks above its mmap threshold (128 kB at first, raised
// after each free of such a block) from a fresh mapping, and returns a free
// heap top above the trim threshold to the kernel: a batch of 1,000 Meta
// events (a body of hundreds of kB, a claim result as large) then touched new
// pages on every request, and page faults, costly under a hypervisor, were
// about a tenth of a batched row's CPU (perf, issue 13). The peak RSS is the
// same (the peak batch was resident anyway); memory freed after a burst stays
// with the process, up to the largest working set it had.
constexpr int mmap_above_bytes = 32 * 1024 * 1024;  // glibc's largest mmap threshold on 64-bit
constexpr int trim_above_bytes = 64 * 1024 * 1024;

}  // namespace

void keep_freed_memory_for_reuse() {
  // Each call fails only for an out-of-range value; the defaults then stay, which is safe.
  (void)mallopt(M_MMAP_THRESHOLD, mmap_above_bytes);
  (void)mallopt(M_TRIM_THRESHOLD, trim_above_bytes);
}

}  // namespace outbox
