/* safetensors.c — the safetensors reader and writer (see safetensors.h for the format and
 * for everything the reader checks). */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define META_NAME "__metadata__"

/* "<what>: <message>" into err; returns st. */
static mcl_status st_fail(char *err, size_t len, mcl_status st, const char *what, const char *fmt,
                          ...) __attribute__((format(printf, 5, 6)));
static mcl_status st_fail(char *err, size_t len, mcl_status st, const char *what, const char *fmt,
                          ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mcl_errbuf(err, len, st, "%s: %s", what ? what : "safetensors", msg);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* --------------------------------------------------------------------------- the set */

mcl_safetensors *mcl_st_create(void) { return calloc(1, sizeof(mcl_safetensors)); }

void mcl_st_free(mcl_safetensors *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        free(s->t[i].name);
        free(s->t[i].data);
    }
    for (int i = 0; i < s->n_meta; i++) {
        free(s->meta_key[i]);
        free(s->meta_val[i]);
    }
    free(s->t);
    free(s->meta_key);
    free(s->meta_val);
    free(s);
}

const mcl_st_tensor *mcl_st_find(const mcl_safetensors *s, const char *name)
{
    if (!s || !name) return NULL;
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return &s->t[i];
    return NULL;
}

const char *mcl_st_meta(const mcl_safetensors *s, const char *key)
{
    if (!s || !key) return NULL;
    for (int i = 0; i < s->n_meta; i++)
        if (!strcmp(s->meta_key[i], key)) return s->meta_val[i];
    return NULL;
}

/* numel of a shape, or -1 when it exceeds INT64_MAX / 8 (no buffer holds that many) */
static int64_t shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) return 0;
    }
    for (int d = 0; d < ndim; d++) {
        if (shape[d] > (INT64_MAX / 8) / n) return -1;
        n *= shape[d];
    }
    return n;
}

mcl_status mcl_st_add(mcl_safetensors *s, const char *name, int ndim, const int64_t *shape,
                      const float *data, char *err, size_t len)
{
    if (!s || !name || (ndim > 0 && !shape))
        return mcl_errbuf(err, len, MCL_ERR_NULL, "mcl_st_add: NULL argument");
    size_t nl = strlen(name);
    if (nl == 0 || nl > MCL_ST_NAME_MAX || !strcmp(name, META_NAME))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "mcl_st_add: bad tensor name '%.64s'", name);
    if (mcl_st_find(s, name))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "mcl_st_add: tensor '%s' added twice", name);
    if (ndim < 0 || ndim > MCL_ST_MAX_DIMS)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "mcl_st_add: '%s' has %d dims (at most %d)",
                          name, ndim, MCL_ST_MAX_DIMS);
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0)
            return mcl_errbuf(err, len, MCL_ERR_INVALID, "mcl_st_add: '%s' has a negative dim", name);
    const int64_t numel = shape_numel(ndim, shape);
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / sizeof(float))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "mcl_st_add: '%s' is too large", name);
    if (numel > 0 && !data) return mcl_errbuf(err, len, MCL_ERR_NULL, "mcl_st_add: '%s': no data", name);
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        mcl_st_tensor *t = realloc(s->t, (size_t)cap * sizeof *t);
        if (!t) return mcl_errbuf(err, len, MCL_ERR_OOM, "mcl_st_add: out of memory");
        s->t = t;
        s->cap = cap;
    }
    mcl_st_tensor *t = &s->t[s->n];
    memset(t, 0, sizeof *t);
    t->name = dup_str(name);
    t->data = malloc(numel > 0 ? (size_t)numel * sizeof(float) : 1);
    if (!t->name || !t->data) {
        free(t->name);
        free(t->data);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "mcl_st_add: out of memory");
    }
    if (numel > 0) memcpy(t->data, data, (size_t)numel * sizeof(float));
    t->dtype = MCL_ST_F32;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    t->numel = numel;
    s->n++;
    return MCL_OK;
}

mcl_status mcl_st_set_meta(mcl_safetensors *s, const char *key, const char *value, char *err,
                           size_t len)
{
    if (!s || !key || !value) return mcl_errbuf(err, len, MCL_ERR_NULL, "mcl_st_set_meta: NULL argument");
    char *v = dup_str(value);
    if (!v) return mcl_errbuf(err, len, MCL_ERR_OOM, "mcl_st_set_meta: out of memory");
    for (int i = 0; i < s->n_meta; i++)
        if (!strcmp(s->meta_key[i], key)) {
            free(s->meta_val[i]);
            s->meta_val[i] = v;
            return MCL_OK;
        }
    if (s->n_meta == s->cap_meta) {
        int cap = s->cap_meta ? 2 * s->cap_meta : 8;
        char **k = realloc(s->meta_key, (size_t)cap * sizeof *k);
        if (k) s->meta_key = k;
        char **vv = k ? realloc(s->meta_val, (size_t)cap * sizeof *vv) : NULL;
        if (vv) s->meta_val = vv;
        if (!k || !vv) {
            free(v);
            return mcl_errbuf(err, len, MCL_ERR_OOM, "mcl_st_set_meta: out of memory");
        }
        s->cap_meta = cap;
    }
    char *k = dup_str(key);
    if (!k) {
        free(v);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "mcl_st_set_meta: out of memory");
    }
    s->meta_key[s->n_meta] = k;
    s->meta_val[s->n_meta] = v;
    s->n_meta++;
    return MCL_OK;
}

/* --------------------------------------------------------------------------- reading */

static uint64_t get_u64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

/* IEEE binary16 -> binary32: sign, 5-bit exponent (bias 15), 10-bit fraction; subnormals,
 * infinities and NaNs kept. */
static float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t e = (h >> 10) & 0x1f, f = h & 0x3ff, bits;
    if (e == 0 && f == 0) {
        bits = sign;
    } else if (e == 0) { /* subnormal: f · 2^-24 */
        float v = ldexpf((float)f, -24);
        return sign ? -v : v;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | (f << 13);
    } else {
        bits = sign | ((e - 15 + 127) << 23) | (f << 13);
    }
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static void decode(const unsigned char *p, int dtype, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++) {
        if (dtype == MCL_ST_F32) {
            const unsigned char *b = p + 4 * i;
            uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&out[i], &u, sizeof u);
        } else {
            const unsigned char *b = p + 2 * i;
            uint16_t u = (uint16_t)(b[0] | b[1] << 8);
            out[i] = dtype == MCL_ST_F16 ? half_to_float(u) : bf16_to_float(u);
        }
    }
}

/* A tensor entry of the header before its data is read. */
typedef struct entry {
    const char *name; /* into the cJSON tree */
    int dtype, ndim;
    int64_t shape[MCL_ST_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end;
} entry;

/* A JSON number that is a whole number in [0, 2^53]. */
static int json_u53(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!isfinite(d) || d < 0 || d > 9007199254740992.0 || d != floor(d)) return 0;
    *out = (uint64_t)d;
    return 1;
}

static int dtype_of(const char *s, int *dtype, int *size)
{
    if (!strcmp(s, "F32")) *dtype = MCL_ST_F32, *size = 4;
    else if (!strcmp(s, "F16")) *dtype = MCL_ST_F16, *size = 2;
    else if (!strcmp(s, "BF16")) *dtype = MCL_ST_BF16, *size = 2;
    else return 0;
    return 1;
}

/* One tensor's {"dtype", "shape", "data_offsets"}; dlen = buffer bytes. */
static mcl_status parse_entry(const cJSON *obj, uint64_t dlen, entry *e, const char *what, char *err,
                              size_t len)
{
    const char *nm = e->name;
    if (!cJSON_IsObject(obj))
        return st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s': not a JSON object", nm);
    const cJSON *dt = NULL, *sh = NULL, *off = NULL, *c;
    cJSON_ArrayForEach (c, obj) {
        const cJSON **slot = !strcmp(c->string, "dtype")          ? &dt
                             : !strcmp(c->string, "shape")        ? &sh
                             : !strcmp(c->string, "data_offsets") ? &off
                                                                  : NULL;
        if (!slot)
            return st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s': unknown key '%.64s'", nm,
                           c->string);
        if (*slot)
            return st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s': key '%s' given twice", nm,
                           c->string);
        *slot = c;
    }
    if (!dt || !sh || !off)
        return st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s': no \"%s\"", nm,
                       !dt ? "dtype" : !sh ? "shape" : "data_offsets");
    int esize = 0;
    if (!cJSON_IsString(dt))
        return st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s': dtype is not a string", nm);
    if (!dtype_of(dt->valuestring, &e->dtype, &esize))
        return st_fail(err, len, MCL_ERR_UNSUPPORTED, what,
                       "tensor '%s': dtype '%.16s' is not supported (F32, F16 and BF16 are; "
                       "convert the tensor to float32 first)",
                       nm, dt->valuestring);
    if (!cJSON_IsArray(sh))
        return st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s': shape is not an array", nm);
    const int nd = cJSON_GetArraySize(sh);
    if (nd > MCL_ST_MAX_DIMS)
        return st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s': %d dims (at most %d)", nm, nd,
                       MCL_ST_MAX_DIMS);
    e->ndim = 0;
    cJSON_ArrayForEach (c, sh) {
        uint64_t d;
        if (!json_u53(c, &d))
            return st_fail(err, len, MCL_ERR_FORMAT, what,
                           "tensor '%s': dim %d is not a non-negative integer", nm, e->ndim);
        e->shape[e->ndim++] = (int64_t)d;
    }
    uint64_t b, en;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !json_u53(cJSON_GetArrayItem(off, 0), &b) ||
        !json_u53(cJSON_GetArrayItem(off, 1), &en))
        return st_fail(err, len, MCL_ERR_FORMAT, what,
                       "tensor '%s': data_offsets is not two non-negative integers", nm);
    if (b > en)
        return st_fail(err, len, MCL_ERR_FORMAT, what,
                       "tensor '%s': data_offsets [%llu, %llu] are reversed (begin after end)", nm,
                       (unsigned long long)b, (unsigned long long)en);
    if (en > dlen)
        return st_fail(err, len, MCL_ERR_FORMAT, what,
                       "tensor '%s': data_offsets [%llu, %llu] outside the %llu-byte buffer", nm,
                       (unsigned long long)b, (unsigned long long)en, (unsigned long long)dlen);
    /* numel against the bytes the offsets give, without overflow: dims ≤ 2^53 each */
    uint64_t have = (en - b) / (uint64_t)esize, n = 1;
    int zero = 0;
    for (int d = 0; d < e->ndim; d++) zero |= e->shape[d] == 0;
    for (int d = 0; d < e->ndim && !zero; d++) {
        uint64_t s = (uint64_t)e->shape[d];
        if (n > have / s) { n = have + 1; break; } /* more elements than bytes allow */
        n *= s;
    }
    if (zero) n = 0;
    if ((en - b) % (uint64_t)esize != 0 || n != have)
        return st_fail(err, len, MCL_ERR_FORMAT, what,
                       "tensor '%s': its shape needs %s bytes but data_offsets [%llu, %llu] hold %llu",
                       nm, n > have ? "more" : "another number of", (unsigned long long)b,
                       (unsigned long long)en, (unsigned long long)(en - b));
    e->numel = (int64_t)n;
    e->begin = b;
    e->end = en;
    return MCL_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const entry *const *)a)->name, (*(const entry *const *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The metadata object: string values, unique keys. */
static mcl_status parse_meta(const cJSON *m, mcl_safetensors *s, const char *what, char *err, size_t len)
{
    if (!cJSON_IsObject(m))
        return st_fail(err, len, MCL_ERR_FORMAT, what, "__metadata__ is not a JSON object");
    const int n = cJSON_GetArraySize(m);
    const char **keys = malloc((size_t)(n > 0 ? n : 1) * sizeof *keys);
    if (!keys) return st_fail(err, len, MCL_ERR_OOM, what, "out of memory");
    const cJSON *c;
    int i = 0;
    mcl_status st = MCL_OK;
    cJSON_ArrayForEach (c, m) {
        if (!cJSON_IsString(c)) {
            st = st_fail(err, len, MCL_ERR_FORMAT, what, "__metadata__ key '%.64s': value is not a string",
                         c->string);
            break;
        }
        keys[i++] = c->string;
    }
    if (st == MCL_OK) {
        qsort(keys, (size_t)i, sizeof *keys, str_cmp);
        for (int k = 1; k < i; k++)
            if (!strcmp(keys[k - 1], keys[k])) {
                st = st_fail(err, len, MCL_ERR_FORMAT, what, "__metadata__ key '%.64s' given twice", keys[k]);
                break;
            }
    }
    free(keys);
    if (st != MCL_OK) return st;
    cJSON_ArrayForEach (c, m)
        if ((st = mcl_st_set_meta(s, c->string, c->valuestring, err, len)) != MCL_OK) return st;
    return MCL_OK;
}

/* Bytes of the JSON tree that cJSON builds per value (its node, allocator overhead), on top
 * of the strings (at most the header's bytes). */
#define TREE_NODE_BYTES (sizeof(cJSON) + 32)

/* Before the header is parsed into a tree: walk its text (strings skipped with their escapes),
 * counting the values the tree would hold (*nodes, a bound), and refuse what no safetensors
 * header holds, which would only cost memory: nesting deeper than the top object, an entry
 * and its shape or offsets array, or an object or array inside __metadata__ (whose values are
 * strings). */
static mcl_status header_prescan(const char *h, size_t n, uint64_t *nodes, const char *what, char *err, size_t len)
{
    int depth = 0, in_meta = 0;
    const char *key = NULL;
    size_t key_len = 0;
    uint64_t count = 1;
    for (size_t i = 0; i < n; i++) {
        const char ch = h[i];
        if (ch == '"') {
            const size_t s = ++i;
            while (i < n && h[i] != '"') i += h[i] == '\\' ? 2 : 1;
            if (depth == 1) { /* a key of the top object (or a malformed value: cJSON says so) */
                key = h + s;
                key_len = i - s;
            }
            count++;
        } else if (ch == '{' || ch == '[') {
            depth++;
            count++;
            if (depth == 2) in_meta = key_len == 12 && key && !memcmp(key, "__metadata__", 12);
            if (depth == 3 && in_meta)
                return st_fail(err, len, MCL_ERR_FORMAT, what,
                               "__metadata__ holds a value that is not a string (its values are strings)");
            if (depth > 3)
                return st_fail(err, len, MCL_ERR_FORMAT, what,
                               "the header nests %d levels deep (a safetensors header has 3)", depth);
        } else if (ch == '}' || ch == ']') {
            depth--;
        } else if (ch == ',' || ch == ':') {
            count++;
        }
    }
    *nodes = count;
    return MCL_OK;
}

/* Everything after the parsed JSON must be padding (JSON whitespace). */
static int only_space(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') return 0;
    return 1;
}

mcl_status mcl_st_parse(const void *buf, size_t n, const char *what, mcl_safetensors **out, char *err,
                        size_t len)
{
    if (out) *out = NULL;
    if (!buf || !out) return mcl_errbuf(err, len, MCL_ERR_NULL, "mcl_st_parse: NULL argument");
    const unsigned char *b = buf;
    if (n < 8)
        return st_fail(err, len, MCL_ERR_FORMAT, what,
                       "%zu bytes: too short for a safetensors file (8-byte header length first)", n);
    const uint64_t hl = get_u64(b);
    if (hl < 2 || hl > MCL_ST_HEADER_MAX || hl > n - 8)
        return st_fail(err, len, MCL_ERR_FORMAT, what,
                       "header length %llu is absurd (2 .. %u, and the file has %zu bytes after "
                       "it): not a safetensors file",
                       (unsigned long long)hl, MCL_ST_HEADER_MAX, n - 8);
    const char *hdr = (const char *)b + 8;
    const unsigned char *data = b + 8 + hl;
    const uint64_t dlen = (uint64_t)(n - 8 - hl);
    if (hdr[0] != '{')
        return st_fail(err, len, MCL_ERR_FORMAT, what, "the header does not start with '{'");
    uint64_t nodes = 0;
    mcl_status pst = header_prescan(hdr, (size_t)hl, &nodes, what, err, len);
    if (pst != MCL_OK) return pst;
    char eb[512];
    if (mcl_check_budget(nodes * TREE_NODE_BYTES + hl, "the header's JSON tree", eb, sizeof eb) != MCL_OK)
        return st_fail(err, len, MCL_ERR_OOM, what, "%s", eb);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hl, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long pos = at && at >= hdr && at <= hdr + hl ? (long)(at - hdr) : -1;
        return st_fail(err, len, MCL_ERR_FORMAT, what, "the header is not valid JSON (near byte %ld)", pos);
    }
    mcl_status st = MCL_OK;
    entry *ent = NULL, **ord = NULL;
    mcl_safetensors *s = NULL;
    int total = 0, nt = 0, n_meta = 0;
    uint64_t at = 0, floats = 0;
    const cJSON *c;
    char e2[512];
    if (!end || end < hdr || end > hdr + hl || !only_space(end, hdr + hl)) {
        st = st_fail(err, len, MCL_ERR_FORMAT, what, "text after the header's JSON object");
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        st = st_fail(err, len, MCL_ERR_FORMAT, what, "the header is not a JSON object");
        goto done;
    }
    total = cJSON_GetArraySize(root);
    ent = calloc((size_t)(total > 0 ? total : 1), sizeof *ent);
    ord = calloc((size_t)(total > 0 ? total : 1), sizeof *ord);
    s = mcl_st_create();
    if (!ent || !ord || !s) {
        st = st_fail(err, len, MCL_ERR_OOM, what, "out of memory");
        goto done;
    }
    cJSON_ArrayForEach (c, root) {
        if (!strcmp(c->string, META_NAME)) {
            if (n_meta++) {
                st = st_fail(err, len, MCL_ERR_FORMAT, what, "__metadata__ given twice");
                goto done;
            }
            if ((st = parse_meta(c, s, what, err, len)) != MCL_OK) goto done;
            continue;
        }
        size_t nl = strlen(c->string);
        if (nl == 0 || nl > MCL_ST_NAME_MAX) {
            st = st_fail(err, len, MCL_ERR_FORMAT, what, "a tensor name of %zu bytes (1 .. %d)", nl,
                         MCL_ST_NAME_MAX);
            goto done;
        }
        ent[nt].name = c->string;
        if ((st = parse_entry(c, dlen, &ent[nt], what, err, len)) != MCL_OK) goto done;
        ord[nt] = &ent[nt];
        nt++;
    }
    /* unique names */
    qsort(ord, (size_t)nt, sizeof *ord, by_name);
    for (int i = 1; i < nt; i++)
        if (!strcmp(ord[i - 1]->name, ord[i]->name)) {
            st = st_fail(err, len, MCL_ERR_FORMAT, what, "tensor '%s' given twice", ord[i]->name);
            goto done;
        }
    /* the tensors tile the buffer: no gap, no overlap, nothing after the last */
    qsort(ord, (size_t)nt, sizeof *ord, by_offset);
    for (int i = 0; i < nt; i++) {
        if (ord[i]->begin != at) {
            st = st_fail(err, len, MCL_ERR_FORMAT, what,
                         ord[i]->begin > at ? "tensor '%s' starts at byte %llu of the buffer, leaving a "
                                              "gap after byte %llu"
                                            : "tensor '%s' starts at byte %llu of the buffer, "
                                              "overlapping data that ends at byte %llu",
                         ord[i]->name, (unsigned long long)ord[i]->begin, (unsigned long long)at);
            goto done;
        }
        at = ord[i]->end;
        floats += (uint64_t)ord[i]->numel;
    }
    if (at != dlen) {
        st = st_fail(err, len, MCL_ERR_FORMAT, what,
                     "the tensors cover %llu of the buffer's %llu bytes (trailing data)",
                     (unsigned long long)at, (unsigned long long)dlen);
        goto done;
    }
    if (mcl_check_budget(floats * sizeof(float), "its tensors as float32", e2, sizeof e2) != MCL_OK) {
        st = st_fail(err, len, MCL_ERR_OOM, what, "%s", e2);
        goto done;
    }
    /* the tensors, in buffer order */
    s->t = calloc((size_t)(nt > 0 ? nt : 1), sizeof *s->t);
    if (!s->t) {
        st = st_fail(err, len, MCL_ERR_OOM, what, "out of memory");
        goto done;
    }
    s->cap = nt > 0 ? nt : 1;
    for (int i = 0; i < nt; i++) {
        const entry *e = ord[i];
        mcl_st_tensor *t = &s->t[i];
        t->name = dup_str(e->name);
        t->data = malloc(e->numel > 0 ? (size_t)e->numel * sizeof(float) : 1);
        s->n = i + 1;
        if (!t->name || !t->data) {
            st = st_fail(err, len, MCL_ERR_OOM, what, "out of memory");
            goto done;
        }
        t->dtype = e->dtype;
        t->ndim = e->ndim;
        memcpy(t->shape, e->shape, sizeof t->shape);
        t->numel = e->numel;
        decode(data + e->begin, e->dtype, e->numel, t->data);
    }
done:
    cJSON_Delete(root);
    free(ent);
    free(ord);
    if (st != MCL_OK) {
        mcl_st_free(s);
        return st;
    }
    *out = s;
    return MCL_OK;
}

mcl_status mcl_st_read(const char *path, mcl_safetensors **out, char *err, size_t len)
{
    if (out) *out = NULL;
    if (!path || !out) return mcl_errbuf(err, len, MCL_ERR_NULL, "mcl_st_read: NULL argument");
    FILE *f = NULL;
    uint64_t size = 0;
    mcl_status st = mcl_fopen_regular(path, &f, &size, err, len);
    if (st != MCL_OK) return st;
    char e2[512];
    /* the file, then its tensors as float32 (at most twice its bytes for 16-bit dtypes) */
    if (size > SIZE_MAX / 4 || mcl_check_budget(size * 3, "reading it", e2, sizeof e2) != MCL_OK) {
        fclose(f);
        return st_fail(err, len, MCL_ERR_OOM, path, "%s", size > SIZE_MAX / 4 ? "file too large" : e2);
    }
    unsigned char *buf = malloc(size > 0 ? (size_t)size : 1);
    if (!buf) {
        fclose(f);
        return st_fail(err, len, MCL_ERR_OOM, path, "out of memory");
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    int bad = ferror(f) || got != (size_t)size;
    fclose(f);
    if (bad) {
        free(buf);
        return st_fail(err, len, MCL_ERR_IO, path, "read error");
    }
    st = mcl_st_parse(buf, (size_t)size, path, out, err, len);
    free(buf);
    return st;
}

/* --------------------------------------------------------------------------- writing */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* a JSON string: quotes, backslashes and control characters escaped, other bytes as they are */
static void sb_json_str(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            sb_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            sb_put(b, esc, 6);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static void sb_u64(sbuf *b, uint64_t v)
{
    char t[32];
    snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    sb_str(b, t);
}

mcl_status mcl_st_serialize(const mcl_safetensors *s, unsigned char **buf, size_t *n, char *err,
                            size_t len)
{
    if (buf) *buf = NULL;
    if (n) *n = 0;
    if (!s || !buf || !n) return mcl_errbuf(err, len, MCL_ERR_NULL, "mcl_st_serialize: NULL argument");
    sbuf h = {0};
    sb_str(&h, "{");
    if (s->n_meta > 0) {
        sb_json_str(&h, META_NAME);
        sb_str(&h, ":{");
        for (int i = 0; i < s->n_meta; i++) {
            if (i) sb_str(&h, ",");
            sb_json_str(&h, s->meta_key[i]);
            sb_str(&h, ":");
            sb_json_str(&h, s->meta_val[i]);
        }
        sb_str(&h, "}");
    }
    uint64_t off = 0;
    for (int i = 0; i < s->n; i++) {
        const mcl_st_tensor *t = &s->t[i];
        if (i || s->n_meta > 0) sb_str(&h, ",");
        sb_json_str(&h, t->name);
        sb_str(&h, ":{\"dtype\":\"F32\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            if (d) sb_str(&h, ",");
            sb_u64(&h, (uint64_t)t->shape[d]);
        }
        sb_str(&h, "],\"data_offsets\":[");
        sb_u64(&h, off);
        sb_str(&h, ",");
        off += (uint64_t)t->numel * 4u;
        sb_u64(&h, off);
        sb_str(&h, "]}");
    }
    sb_str(&h, "}");
    while (!h.oom && h.n % 8 != 0) sb_str(&h, " ");
    if (h.oom || h.n > MCL_ST_HEADER_MAX || off > SIZE_MAX - 8 - h.n) {
        free(h.p);
        return mcl_errbuf(err, len, h.oom ? MCL_ERR_OOM : MCL_ERR_INVALID,
                          "mcl_st_serialize: %s", h.oom ? "out of memory" : "too large");
    }
    const size_t total = 8 + h.n + (size_t)off;
    unsigned char *o = malloc(total);
    if (!o) {
        free(h.p);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "mcl_st_serialize: out of memory");
    }
    for (int i = 0; i < 8; i++) o[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    memcpy(o + 8, h.p, h.n);
    unsigned char *p = o + 8 + h.n;
    for (int i = 0; i < s->n; i++)
        for (int64_t k = 0; k < s->t[i].numel; k++) {
            uint32_t u;
            memcpy(&u, &s->t[i].data[k], sizeof u);
            p[0] = (unsigned char)u;
            p[1] = (unsigned char)(u >> 8);
            p[2] = (unsigned char)(u >> 16);
            p[3] = (unsigned char)(u >> 24);
            p += 4;
        }
    free(h.p);
    *buf = o;
    *n = total;
    return MCL_OK;
}

mcl_status mcl_st_write(const mcl_safetensors *s, const char *path, char *err, size_t len)
{
    if (!s || !path) return mcl_errbuf(err, len, MCL_ERR_NULL, "mcl_st_write: NULL argument");
    unsigned char *buf;
    size_t n;
    mcl_status st = mcl_st_serialize(s, &buf, &n, err, len);
    if (st != MCL_OK) return st;
    st = mcl_write_file_atomic(path, buf, n, err, len);
    free(buf);
    return st;
}
