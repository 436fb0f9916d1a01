#pragma once
// How the long-running dispatcher asks glibc's malloc to keep its memory.

namespace outbox {

// Large blocks (a batch's request body, a claim's result) come from the heap
// and freed memory stays there for the next batch, instead of a fresh mmap
// whose every page faults in (see allocator_tuning.cpp). For `run` only.
void keep_freed_memory_for_reuse();

}  // namespace outbox
