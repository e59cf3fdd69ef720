/* LD_PRELOAD: every malloc/calloc 64-byte aligned with its size rounded up to 64 bytes,
 * so that no two heap objects share a cache line (a layout experiment). */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>
extern void *__libc_memalign(size_t, size_t);
void *malloc(size_t n) { return __libc_memalign(64, (n + 63) & ~(size_t)63); }
void *calloc(size_t a, size_t b)
{
    size_t n = a * b;
    void *p = __libc_memalign(64, (n + 63) & ~(size_t)63);
    if (p) memset(p, 0, n);
    return p;
}
