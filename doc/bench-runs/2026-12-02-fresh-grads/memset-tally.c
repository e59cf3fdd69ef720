#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
static unsigned long long tot, cnt;
void *memset(void *s, int c, size_t n)
{
    unsigned char *p = s;
    if (n >= 4096) { __atomic_add_fetch(&tot, n, __ATOMIC_RELAXED); __atomic_add_fetch(&cnt, 1, __ATOMIC_RELAXED); }
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)c;
    return s;
}
__attribute__((destructor)) static void rep(void) { fprintf(stderr, "MEMSET>=4K: %llu calls, %.1f MB\n", cnt, tot / 1e6); }
