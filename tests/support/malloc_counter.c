/* A libc allocation counter for tests/test_kept_memory.py, preloaded (LD_PRELOAD) into a
 * subprocess: every malloc, calloc, realloc and aligned allocation adds one to a counter that
 * enzyme_py_allocations() reads (through ctypes). glibc's own entry points do the work. */
#include <stddef.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static long count;
static void bump(void) { __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED); }
void *malloc(size_t n) { bump(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { bump(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { bump(); return __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { bump(); return __libc_memalign(a, n); }
void *memalign(size_t a, size_t n) { bump(); return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n) { bump(); *p = __libc_memalign(a, n); return *p ? 0 : 12; }
long enzyme_py_allocations(void) { return __atomic_load_n(&count, __ATOMIC_RELAXED); }
