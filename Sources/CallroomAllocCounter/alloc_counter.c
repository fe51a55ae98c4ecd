// Counts every allocation, then hands it to glibc's allocator through its public __libc_*
// entry points (glibc documents replacing malloc this way). Measurement only: it is built as
// a separate shared library and used only when preloaded.
#define _GNU_SOURCE
#include "alloc_counter.h"
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread uint64_t thread_count;
static _Atomic uint64_t total_count;

static inline void counted(void) {
    thread_count++;
    atomic_fetch_add_explicit(&total_count, 1, memory_order_relaxed);
}

uint64_t callroom_alloc_thread_count(void) { return thread_count; }
uint64_t callroom_alloc_total_count(void) { return atomic_load_explicit(&total_count, memory_order_relaxed); }

void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t n, size_t size) { counted(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t n) { counted(); return __libc_memalign(alignment, n); }
void *aligned_alloc(size_t alignment, size_t n) { counted(); return __libc_memalign(alignment, n); }
void *valloc(size_t n) { counted(); return __libc_memalign(4096, n); }

int posix_memalign(void **out, size_t alignment, size_t n) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    counted();
    void *p = __libc_memalign(alignment, n);
    if (!p && n) return ENOMEM;
    *out = p;
    return 0;
}
