/* fresh_spans.h — the written parts of a partly fresh buffer (the reference backend's lazy
 * zeroing, ref_backend.c). Internal to the reference backend.
 *
 * A fresh buffer stands for zeros it has not written. When an op stores a view into it (a
 * parameter's slot of the optimizer's flat gradient, say) the rest of the buffer can stay
 * unwritten: the buffer keeps the byte ranges that now hold their values, and everything
 * outside them still stands for zeros. A span list is that set of ranges: sorted, disjoint,
 * and no two touching (touching ranges are merged).
 *
 *   mcl_spans_disjoint   [lo, hi) meets no written range (an op may store it whole)
 *   mcl_spans_add        mark [lo, hi) written (it may meet written ranges)
 *   mcl_spans_zero_gaps  write zeros on the parts of [lo, hi) not written yet, then mark it
 *   mcl_spans_covers     the list is exactly [0, size): nothing stands for zeros any more
 *
 * Every function that may grow the list returns 0 when it cannot (out of memory); the caller
 * then zero-fills the whole buffer's gaps and forgets the list. */
#ifndef MCL_REF_FRESH_SPANS_H
#define MCL_REF_FRESH_SPANS_H

#include <stddef.h>

typedef struct mcl_spans {
    size_t n, cap; /* ranges in use, room for */
    size_t *lo, *hi;
} mcl_spans;

/* An empty list (NULL when out of memory); free with mcl_spans_free. */
mcl_spans *mcl_spans_create(void);
void mcl_spans_free(mcl_spans *s);

int mcl_spans_disjoint(const mcl_spans *s, size_t lo, size_t hi);
int mcl_spans_add(mcl_spans *s, size_t lo, size_t hi);
/* base: the buffer's first byte; zero(p, n) writes n zero bytes at p */
int mcl_spans_zero_gaps(mcl_spans *s, char *base, size_t lo, size_t hi, void (*zero)(char *, size_t));
int mcl_spans_covers(const mcl_spans *s, size_t size);

#endif
