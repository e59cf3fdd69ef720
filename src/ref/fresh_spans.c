/* fresh_spans.c — the written parts of a partly fresh buffer (fresh_spans.h).
 *
 * Two sorted arrays of range ends; a list stays short (the optimizer's flat gradient is written
 * slot by slot, and neighbouring slots merge), so every search is a linear walk. */
#include <stdlib.h>
#include <string.h>

#include "fresh_spans.h"

mcl_spans *mcl_spans_create(void) { return calloc(1, sizeof(mcl_spans)); }

void mcl_spans_free(mcl_spans *s)
{
    if (!s) return;
    free(s->lo);
    free(s->hi);
    free(s);
}

int mcl_spans_disjoint(const mcl_spans *s, size_t lo, size_t hi)
{
    for (size_t i = 0; i < s->n && s->lo[i] < hi; i++)
        if (s->hi[i] > lo) return 0;
    return 1;
}

/* Room for one more range. */
static int grow(mcl_spans *s)
{
    if (s->n < s->cap) return 1;
    const size_t cap = s->cap ? 2 * s->cap : 8;
    size_t *lo = realloc(s->lo, cap * sizeof *lo);
    if (!lo) return 0;
    s->lo = lo;
    size_t *hi = realloc(s->hi, cap * sizeof *hi);
    if (!hi) return 0;
    s->hi = hi;
    s->cap = cap;
    return 1;
}

int mcl_spans_add(mcl_spans *s, size_t lo, size_t hi)
{
    if (lo >= hi) return 1;
    size_t i = 0;
    while (i < s->n && s->hi[i] < lo) i++; /* ranges wholly before [lo, hi), not touching it */
    size_t j = i, nlo = lo, nhi = hi;
    for (; j < s->n && s->lo[j] <= hi; j++) { /* ranges [i, j) meet or touch it: one range */
        if (s->lo[j] < nlo) nlo = s->lo[j];
        if (s->hi[j] > nhi) nhi = s->hi[j];
    }
    if (j == i) { /* a range of its own at i */
        if (!grow(s)) return 0;
        memmove(s->lo + i + 1, s->lo + i, (s->n - i) * sizeof *s->lo);
        memmove(s->hi + i + 1, s->hi + i, (s->n - i) * sizeof *s->hi);
        s->n++;
    } else { /* [i, j) become range i */
        memmove(s->lo + i + 1, s->lo + j, (s->n - j) * sizeof *s->lo);
        memmove(s->hi + i + 1, s->hi + j, (s->n - j) * sizeof *s->hi);
        s->n -= j - i - 1;
    }
    s->lo[i] = nlo;
    s->hi[i] = nhi;
    return 1;
}

int mcl_spans_zero_gaps(mcl_spans *s, char *base, size_t lo, size_t hi, void (*zero)(char *, size_t))
{
    if (lo >= hi) return 1;
    size_t at = lo;
    for (size_t i = 0; i < s->n && s->lo[i] < hi; i++) {
        if (s->hi[i] <= at) continue;
        if (s->lo[i] > at) zero(base + at, s->lo[i] - at);
        at = s->hi[i];
    }
    if (at < hi) zero(base + at, hi - at);
    return mcl_spans_add(s, lo, hi);
}

int mcl_spans_covers(const mcl_spans *s, size_t size)
{
    return s->n == 1 && s->lo[0] == 0 && s->hi[0] >= size;
}
