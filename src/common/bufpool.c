/* bufpool.c — size classes and the "stores every element" table (generated from ops.def)
 * shared by the backends' buffer pools (see bufpool.h). */
#include "bufpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int mcl_pool_size_class(size_t nbytes, size_t *cap)
{
    size_t u = (nbytes + 63) / 64; /* 64-byte units */
    if (u == 0) u = 1;
    if (u <= 4) {
        *cap = u * 64;
        return (int)u - 1;
    }
    int m = 2; /* u in (2^m, 2^(m+1)] */
    while (m < 62 && ((size_t)1 << (m + 1)) < u) m++;
    const size_t step = (size_t)1 << (m - 2);
    const size_t j = (u - ((size_t)1 << m) + step - 1) / step; /* 1..4 */
    const int c = 4 + 4 * (m - 2) + (int)j - 1;
    if (c >= MCL_POOL_CLASSES) {
        *cap = u * 64;
        return MCL_POOL_CLASSES;
    }
    *cap = (((size_t)1 << m) + j * step) * 64;
    return c;
}

mcl_pool_block *mcl_pool_take(mcl_pool *p, size_t nbytes, int *cls, size_t *cap)
{
    *cls = mcl_pool_size_class(nbytes, cap);
    if (*cls >= MCL_POOL_CLASSES || !p->free[*cls]) return NULL;
    mcl_pool_block *b = p->free[*cls];
    p->free[*cls] = b->next;
    p->pooled -= b->cap;
    return b;
}

void mcl_pool_hand_out(mcl_pool *p, mcl_pool_block *b, size_t nbytes)
{
    b->next = NULL;
    b->size = nbytes;
    b->fresh = 1;
    p->live += b->cap;
    if (p->live > p->peak) p->peak = p->live;
}

int mcl_pool_give_back(mcl_pool *p, mcl_pool_block *b)
{
    p->live -= b->cap;
    const size_t bound = p->peaks > 1 ? p->peak * p->peaks : p->peak;
    if (b->cls >= MCL_POOL_CLASSES || p->pooled + b->cap > bound) return 0;
    b->next = p->free[b->cls];
    p->free[b->cls] = b;
    p->pooled += b->cap;
    return 1;
}

mcl_pool_block *mcl_pool_pop(mcl_pool *p)
{
    for (int c = 0; c < MCL_POOL_CLASSES; c++)
        if (p->free[c]) {
            mcl_pool_block *b = p->free[c];
            p->free[c] = b->next;
            p->pooled -= b->cap;
            return b;
        }
    return NULL;
}

/* Forward ops whose every output element is assigned, whatever the inputs, on both backends:
 * the overwrites column of ops.def (checked by running the differential tests with
 * METACL_DEBUG_POISON=1). */
static const unsigned char fwd_overwrites[MCL_OP_COUNT] = {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd) \
    [MCL_OP_##ID] = (overwrites),
#include "ops.def"
#undef MCL_OP
};

int mcl_op_fwd_overwrites(mcl_op op)
{
    return (unsigned)op < MCL_OP_COUNT ? fwd_overwrites[op] : 0;
}

mcl_op mcl_pool_test_unlisted(const char *backend)
{
#ifdef MCL_TEST_HOOKS
    const char *e = getenv("METACL_TEST_UNLIST");
    const size_t n = strlen(backend);
    if (e && strncmp(e, backend, n) == 0 && e[n] == ':') return mcl_op_by_name(e + n + 1);
#else
    (void)backend;
#endif
    return MCL_OP_COUNT;
}

int mcl_pool_poison_requested(void)
{
    const char *e = getenv("METACL_DEBUG_POISON");
    return e && *e && strcmp(e, "0") != 0;
}
