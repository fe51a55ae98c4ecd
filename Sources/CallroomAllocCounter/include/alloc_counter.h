// Allocation counting for benchmarks and tests: preload libcallroom-alloc-counter.so
// (LD_PRELOAD) and every malloc-family call in the process is counted, per thread and in all,
// then passed to glibc's own allocator. Without the preload these symbols are absent.
#pragma once
#include <stdint.h>

/// Allocations (malloc, calloc, realloc, memalign, posix_memalign, aligned_alloc, valloc) made
/// by the calling thread so far.
uint64_t callroom_alloc_thread_count(void);
/// The same for every thread.
uint64_t callroom_alloc_total_count(void);
