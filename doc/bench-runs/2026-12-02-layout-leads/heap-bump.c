/* LD_PRELOAD: the $HEAP_BUMP_AT-th malloc/calloc of the process asks for $HEAP_BUMP more bytes,
 * so that the heap objects allocated after it move relative to those before it */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
static long at = -2, by, count;
static size_t bump(size_t n)
{
    if (at == -2) {
        const char *a = getenv("HEAP_BUMP_AT"), *b = getenv("HEAP_BUMP");
        at = a ? atol(a) : -1;
        by = b ? atol(b) : 0;
    }
    return __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) == at ? n + (size_t)by : n;
}
void *malloc(size_t n) { return __libc_malloc(bump(n)); }
void *calloc(size_t a, size_t b)
{
    size_t n = a * b, m = bump(n);
    if (m == n) return __libc_calloc(a, b);
    void *p = __libc_malloc(m);
    if (p) memset(p, 0, m);
    return p;
}
