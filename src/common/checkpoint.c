/* checkpoint.c — versioned, checksummed, atomically written model checkpoints.
 * The format and the API are described in checkpoint.h.
 *
 * Reading is strict and bounded: every length is checked against the bytes left in the file
 * before anything is allocated, every section's CRC is verified before its payload is
 * parsed, and a file is matched against the model completely before any tensor is written.
 * When a section's length runs past the end of the file, what is there is parsed anyway so
 * the message can say where the file was cut ("truncated in section params (tensor 'W1')").
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "metacl.h"
#include "util.h"
#include "tensor_impl.h"

#define CK_MAGIC_LEN 8
#define CK_FILE_HEADER_LEN 12   /* magic + version                      */
#define CK_SEC_HEADER_LEN 12    /* tag u32 + length u64                 */
#define CK_SEC_CRC_LEN 4
#define CK_TENSOR_NAME_MAX 255  /* longest tensor name accepted in a file */
#define CK_MSG_LEN 1024

static const unsigned char ck_magic[CK_MAGIC_LEN] = {'M', 'C', 'L', 'C', 'K', 'P', 'T', 0};

static const char *sec_name(uint32_t tag)
{
    switch (tag) {
    case MCL_CKPT_SEC_HEADER: return "header";
    case MCL_CKPT_SEC_CONFIG: return "config";
    case MCL_CKPT_SEC_PARAMS: return "params";
    case MCL_CKPT_SEC_OPTIM: return "optim";
    case MCL_CKPT_SEC_RNG: return "rng";
    case MCL_CKPT_SEC_COUNTERS: return "counters";
    case MCL_CKPT_SEC_END: return "end";
    default: return NULL;
    }
}

/* ------------------------------------------------------------------ errors */

typedef struct ck_err {
    mcl_ctx *ctx;
    char *buf;
    size_t len;
    const char *path;
} ck_err;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static mcl_status fail(ck_err *e, mcl_status s, const char *fmt, ...)
{
    char msg[CK_MSG_LEN];
    int k = snprintf(msg, sizeof msg, "checkpoint '%s': ", e->path ? e->path : "(null)");
    if (k < 0) k = 0;
    if ((size_t)k < sizeof msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
        va_end(ap);
    }
    if (e->buf && e->len) snprintf(e->buf, e->len, "%s", msg);
    if (e->ctx) mcl_ctx_set_error(e->ctx, s, "%s", msg);
    return s;
}

static void err_init(ck_err *e, mcl_ctx *ctx, const char *path, char *buf, size_t len)
{
    e->ctx = ctx;
    e->buf = buf;
    e->len = len;
    e->path = path;
    if (buf && len) buf[0] = '\0';
}

/* A name from a file (n bytes, not NUL-terminated) made printable for a message. */
static const char *show(const unsigned char *s, size_t n, char *out, size_t outlen)
{
    /* outlen >= 8: longer names end in "..." */
    size_t k = 0, room = n < outlen ? n : outlen - 4;
    for (size_t i = 0; i < room; i++)
        out[k++] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char)s[i] : '?';
    if (room < n) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

static void shape_str(int ndim, const int64_t *shape, char *out, size_t len)
{
    size_t k = 0;
    out[0] = '\0';
    k += (size_t)snprintf(out, len, "[");
    for (int d = 0; d < ndim && k < len; d++)
        k += (size_t)snprintf(out + k, len - k, d ? ",%lld" : "%lld", (long long)shape[d]);
    if (k < len) snprintf(out + k, len - k, "]");
}

/* Model kind and counter names: 1..MCL_CKPT_NAME_MAX bytes of 0x21..0x7e. */
static int valid_ident(const unsigned char *s, size_t n)
{
    if (n == 0 || n > MCL_CKPT_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f) return 0;
    return 1;
}

/* created-by: 0..MCL_CKPT_NAME_MAX bytes of 0x20..0x7e. */
static int valid_text_line(const unsigned char *s, size_t n)
{
    if (n > MCL_CKPT_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] >= 0x7f) return 0;
    return 1;
}

static int cmp_counter_name(const void *a, const void *b)
{
    const mcl_ckpt_counter *x = *(const mcl_ckpt_counter *const *)a;
    const mcl_ckpt_counter *y = *(const mcl_ckpt_counter *const *)b;
    return strcmp(x->name, y->name);
}

/* Index (in c) of a counter whose name appears twice, -1 if none, -2 out of memory. */
static int dup_counter(const mcl_ckpt_counter *c, int n)
{
    if (n < 2) return -1;
    const mcl_ckpt_counter **v = malloc((size_t)n * sizeof *v);
    if (!v) return -2;
    for (int i = 0; i < n; i++) v[i] = &c[i];
    qsort(v, (size_t)n, sizeof *v, cmp_counter_name);
    int dup = -1;
    for (int i = 1; i < n && dup < 0; i++)
        if (strcmp(v[i - 1]->name, v[i]->name) == 0) dup = (int)(v[i] - c);
    free(v);
    return dup;
}

/* ------------------------------------------------------------------ byte order */

static void put_u32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16);
    b[3] = (unsigned char)(v >> 24);
}

static void put_u64(unsigned char *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b + 4, (uint32_t)(v >> 32));
}

static uint32_t get_u32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get_u64(const unsigned char *b)
{
    return (uint64_t)get_u32(b) | (uint64_t)get_u32(b + 4) << 32;
}

static uint32_t crc_update(uint32_t crc, const unsigned char *p, uint64_t n)
{
    uLong c = crc;
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

/* ------------------------------------------------------------------ writing */

typedef struct ck_writer {
    FILE *f;
    uint32_t crc;
    uint64_t sec_left; /* payload bytes still to write in the open section */
    int io_errno;      /* first write error (0 = none)                     */
    int failed;
} ck_writer;

static void w_raw(ck_writer *w, const void *p, size_t n)
{
    if (w->failed || n == 0) return;
    if (fwrite(p, 1, n, w->f) != n) {
        w->failed = 1;
        w->io_errno = errno ? errno : EIO;
    }
}

/* Payload bytes: counted against the section length and included in the CRC. */
static void w_bytes(ck_writer *w, const void *p, size_t n)
{
    if (w->failed) return;
    if ((uint64_t)n > w->sec_left) { /* internal invariant: lengths computed in advance */
        w->failed = 1;
        w->io_errno = 0;
        return;
    }
    w->sec_left -= n;
    w->crc = crc_update(w->crc, p, n);
    w_raw(w, p, n);
}

static void w_u32(ck_writer *w, uint32_t v)
{
    unsigned char b[4];
    put_u32(b, v);
    w_bytes(w, b, 4);
}

static void w_u64(ck_writer *w, uint64_t v)
{
    unsigned char b[8];
    put_u64(b, v);
    w_bytes(w, b, 8);
}

static void w_str(ck_writer *w, const char *s, size_t n)
{
    w_u32(w, (uint32_t)n);
    w_bytes(w, s, n);
}

static void w_begin(ck_writer *w, uint32_t tag, uint64_t len)
{
    unsigned char b[CK_SEC_HEADER_LEN];
    put_u32(b, tag);
    put_u64(b + 4, len);
    w->crc = crc_update(0, b, sizeof b);
    w->sec_left = len;
    w_raw(w, b, sizeof b);
}

static void w_end(ck_writer *w)
{
    if (w->failed) return;
    if (w->sec_left != 0) { /* internal invariant */
        w->failed = 1;
        w->io_errno = 0;
        return;
    }
    unsigned char b[4];
    put_u32(b, w->crc);
    w_raw(w, b, 4);
}

/* numel floats as little-endian bytes, through a small staging buffer. */
static void w_floats(ck_writer *w, const float *v, int64_t n)
{
    unsigned char stage[16384];
    const int64_t per = (int64_t)(sizeof stage / 4);
    for (int64_t i = 0; i < n && !w->failed; i += per) {
        int64_t m = n - i < per ? n - i : per;
        for (int64_t j = 0; j < m; j++) {
            uint32_t u;
            memcpy(&u, &v[i + j], 4);
            put_u32(stage + 4 * j, u);
        }
        w_bytes(w, stage, (size_t)m * 4);
    }
}

/* Payload size of one tensor record: name, ndim, dims, `slots` copies of the values. */
static uint64_t tensor_rec_len(const mcl_tensor *t, int slots)
{
    return 4 + strlen(t->name) + 4 + 8 * (uint64_t)t->ndim +
           (uint64_t)slots * 4 * (uint64_t)mcl_tensor_numel(t);
}

/* Number of optimizer slots of parameter i (0, 1 or 2; -1 when slot 1 exists without 0). */
static int optim_slots_of(const mcl_optim *o, int i)
{
    mcl_tensor *s0 = mcl_optim_state(o, i, 0), *s1 = mcl_optim_state(o, i, 1);
    if (!s0) return s1 ? -1 : 0;
    return s1 ? 2 : 1;
}

/* Slots per parameter of an optimizer over `p` (max over the parameters), or -1 when the
 * optimizer's states are inconsistent (some parameters with fewer slots, bad shapes). */
static int optim_slots(const mcl_optim *o, const mcl_params *p, int *bad_index)
{
    int n = mcl_params_count(p), slots = 0;
    *bad_index = -1;
    for (int i = 0; i < n; i++) {
        int s = optim_slots_of(o, i);
        if (s < 0) {
            *bad_index = i;
            return -1;
        }
        if (s > slots) slots = s;
    }
    for (int i = 0; i < n; i++) {
        int s = optim_slots_of(o, i);
        if (s == 0) continue; /* a parameter added after the optimizer was created */
        if (s != slots) {
            *bad_index = i;
            return -1;
        }
        const mcl_tensor *t = mcl_params_get(p, i);
        for (int k = 0; k < s; k++)
            if (!mcl_tensor_same_shape(mcl_optim_state(o, i, k), t)) {
                *bad_index = i;
                return -1;
            }
    }
    return slots;
}

static const char *optim_kind_name(int slots)
{
    return slots == 1 ? "sgd" : slots == 2 ? "adam" : "none";
}

static const char *optim_kind_long(int slots)
{
    return slots == 1 ? "SGD, 1 slot per parameter"
           : slots == 2 ? "Adam/AdamW, 2 slots per parameter"
                        : "no state";
}

/* Writes one tensor's values (read from its backend); returns MCL_OK or the read status. */
static mcl_status w_tensor_values(ck_writer *w, const mcl_tensor *t, float **buf,
                                  int64_t *cap)
{
    int64_t n = mcl_tensor_numel(t);
    if (n > *cap) {
        float *nb = realloc(*buf, (size_t)n * sizeof *nb);
        if (!nb) return MCL_ERR_OOM;
        *buf = nb;
        *cap = n;
    }
    mcl_status s = mcl_tensor_read(t, *buf, n);
    if (s != MCL_OK) return s;
    w_floats(w, *buf, n);
    return MCL_OK;
}

static void fsync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir) return;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return;
    (void)fsync(fd); /* best effort: some file systems refuse fsync on directories */
    close(fd);
}

mcl_status mcl_ckpt_save(mcl_ctx *ctx, const char *path, const mcl_ckpt_save_desc *d,
                         char *errbuf, size_t errbuf_len)
{
    ck_err e;
    err_init(&e, ctx, path, errbuf, errbuf_len);
    if (!path || !path[0]) return fail(&e, MCL_ERR_NULL, "save: no path given");
    if (!d) return fail(&e, MCL_ERR_NULL, "save: no description given");
    if (!d->params) return fail(&e, MCL_ERR_NULL, "save: no parameter registry given");
    if (!d->model_kind || !valid_ident((const unsigned char *)d->model_kind, strlen(d->model_kind))) {
        char kb[80];
        return fail(&e, MCL_ERR_INVALID,
                    "save: model kind '%s' is not 1..%d printable characters without spaces",
                    d->model_kind ? show((const unsigned char *)d->model_kind,
                                         strlen(d->model_kind), kb, sizeof kb)
                                  : "(null)",
                    MCL_CKPT_NAME_MAX);
    }
    if (d->n_counters < 0 || (d->n_counters > 0 && !d->counters))
        return fail(&e, MCL_ERR_INVALID, "save: %d counters but no counter array",
                    d->n_counters);
    for (int i = 0; i < d->n_counters; i++) {
        const char *nm = d->counters[i].name;
        size_t n = strnlen(nm, sizeof d->counters[i].name);
        if (n == sizeof d->counters[i].name || !valid_ident((const unsigned char *)nm, n))
            return fail(&e, MCL_ERR_INVALID,
                        "save: counter %d has an invalid name (need 1..%d printable characters "
                        "without spaces)", i, MCL_CKPT_NAME_MAX);
    }
    int dup = dup_counter(d->counters, d->n_counters);
    if (dup == -2) return fail(&e, MCL_ERR_OOM, "save: out of memory");
    if (dup >= 0)
        return fail(&e, MCL_ERR_INVALID, "save: counter '%s' appears twice",
                    d->counters[dup].name);

    const mcl_params *P = d->params;
    int np = mcl_params_count(P);
    for (int i = 0; i < np; i++) {
        const mcl_tensor *t = mcl_params_get(P, i);
        if (!t || !t->name[0])
            return fail(&e, MCL_ERR_INVALID, "save: parameter %d has no name", i);
    }
    int slots = 0, n_states = 0;
    if (d->optim) {
        int bad;
        slots = optim_slots(d->optim, P, &bad);
        if (slots < 0)
            return fail(&e, MCL_ERR_INVALID,
                        "save: the optimizer's state of '%s' does not fit the registry (was the "
                        "optimizer created over these parameters?)",
                        mcl_params_get(P, bad)->name);
        if (mcl_optim_steps(d->optim) < 0)
            return fail(&e, MCL_ERR_INVALID, "save: negative optimizer step count");
        for (int i = 0; i < np; i++)
            if (optim_slots_of(d->optim, i) > 0) n_states++;
    }

    const char *config = d->config ? d->config : "";
    size_t config_len = strlen(config);
    char created_by[MCL_CKPT_NAME_MAX + 1];
    snprintf(created_by, sizeof created_by, "metacl %s", METACL_VERSION_STRING);
    size_t kind_len = strlen(d->model_kind), cb_len = strlen(created_by);

    /* Section lengths, computed in advance (the writer checks them as it goes). */
    uint64_t len_header = 4 + (uint64_t)kind_len + 4 + (uint64_t)cb_len;
    uint64_t len_params = 4;
    for (int i = 0; i < np; i++) len_params += tensor_rec_len(mcl_params_get(P, i), 1);
    uint64_t len_optim = 4 + (uint64_t)strlen(optim_kind_name(slots)) + 8 + 4 + 4;
    for (int i = 0; i < np && d->optim; i++)
        if (optim_slots_of(d->optim, i) > 0)
            len_optim += tensor_rec_len(mcl_params_get(P, i), slots);
    uint64_t len_counters = 4;
    for (int i = 0; i < d->n_counters; i++) len_counters += 4 + strlen(d->counters[i].name) + 8;

    char tmp[4200], why[4400];
    int fd;
    mcl_status cst = mcl_tmp_create(path, tmp, sizeof tmp, &fd, why, sizeof why);
    if (cst != MCL_OK) return fail(&e, cst, "save: %s", why);
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int er = errno;
        close(fd);
        unlink(tmp);
        return fail(&e, MCL_ERR_IO, "cannot open the temporary file '%s': %s", tmp, strerror(er));
    }

    setvbuf(f, NULL, _IOFBF, (size_t)1 << 16);

    mcl_status st = MCL_OK;
    const mcl_tensor *bad_t = NULL; /* the tensor being read when the backend failed */
    const char *what = NULL;        /* and the parameter it belongs to               */
    int bad_is_state = 0;
    float *buf = NULL;
    int64_t cap = 0;
    ck_writer w;
    memset(&w, 0, sizeof w);
    w.f = f;
    {
        unsigned char fh[CK_FILE_HEADER_LEN];
        memcpy(fh, ck_magic, CK_MAGIC_LEN);
        put_u32(fh + CK_MAGIC_LEN, MCL_CKPT_FORMAT_VERSION);
        w_raw(&w, fh, sizeof fh);
    }
    uint32_t nsec = 0;

    w_begin(&w, MCL_CKPT_SEC_HEADER, len_header);
    w_str(&w, d->model_kind, kind_len);
    w_str(&w, created_by, cb_len);
    w_end(&w);
    nsec++;

    w_begin(&w, MCL_CKPT_SEC_CONFIG, config_len);
    w_bytes(&w, config, config_len);
    w_end(&w);
    nsec++;

    w_begin(&w, MCL_CKPT_SEC_PARAMS, len_params);
    w_u32(&w, (uint32_t)np);
    for (int i = 0; i < np && st == MCL_OK && !w.failed; i++) {
        const mcl_tensor *t = mcl_params_get(P, i);
        w_str(&w, t->name, strlen(t->name));
        w_u32(&w, (uint32_t)t->ndim);
        for (int k = 0; k < t->ndim; k++) w_u64(&w, (uint64_t)t->shape[k]);
        st = w_tensor_values(&w, t, &buf, &cap);
        if (st != MCL_OK) {
            what = t->name;
            bad_t = t;
        }
    }
    w_end(&w);
    nsec++;

    if (d->optim && st == MCL_OK) {
        const char *kn = optim_kind_name(slots);
        w_begin(&w, MCL_CKPT_SEC_OPTIM, len_optim);
        w_str(&w, kn, strlen(kn));
        w_u64(&w, (uint64_t)mcl_optim_steps(d->optim));
        w_u32(&w, (uint32_t)slots);
        w_u32(&w, (uint32_t)n_states);
        for (int i = 0; i < np && st == MCL_OK && !w.failed; i++) {
            if (optim_slots_of(d->optim, i) == 0) continue;
            const mcl_tensor *t = mcl_params_get(P, i);
            w_str(&w, t->name, strlen(t->name));
            w_u32(&w, (uint32_t)t->ndim);
            for (int k = 0; k < t->ndim; k++) w_u64(&w, (uint64_t)t->shape[k]);
            for (int k = 0; k < slots && st == MCL_OK; k++) {
                const mcl_tensor *sk = mcl_optim_state(d->optim, i, k);
                st = w_tensor_values(&w, sk, &buf, &cap);
                if (st != MCL_OK) {
                    what = t->name;
                    bad_t = sk;
                    bad_is_state = 1;
                }
            }
        }
        w_end(&w);
        nsec++;
    }

    if (st == MCL_OK) {
        w_begin(&w, MCL_CKPT_SEC_RNG, 16);
        w_u64(&w, d->rng.seed);
        w_u64(&w, d->rng.counter);
        w_end(&w);
        nsec++;

        w_begin(&w, MCL_CKPT_SEC_COUNTERS, len_counters);
        w_u32(&w, (uint32_t)d->n_counters);
        for (int i = 0; i < d->n_counters; i++) {
            w_str(&w, d->counters[i].name, strlen(d->counters[i].name));
            w_u64(&w, d->counters[i].value);
        }
        w_end(&w);
        nsec++;

        w_begin(&w, MCL_CKPT_SEC_END, 4);
        w_u32(&w, nsec);
        w_end(&w);
    }
    free(buf);

    if (st == MCL_OK && !w.failed && fflush(f) != 0) {
        w.failed = 1;
        w.io_errno = errno;
    }
    if (st == MCL_OK && !w.failed && fsync(fileno(f)) != 0) {
        w.failed = 1;
        w.io_errno = errno;
    }
    if (fclose(f) != 0 && st == MCL_OK && !w.failed) {
        w.failed = 1;
        w.io_errno = errno;
    }
    if (st != MCL_OK) {
        unlink(tmp);
        if (st == MCL_ERR_OOM) return fail(&e, st, "save: out of memory");
        return fail(&e, st, "save: cannot read %s '%s' from the %s backend: %s",
                    bad_is_state ? "the optimizer state of" : "tensor", what,
                    mcl_ctx_backend_name(bad_t->ctx), mcl_ctx_error(bad_t->ctx));
    }
    if (w.failed) {
        unlink(tmp);
        if (w.io_errno == 0)
            return fail(&e, MCL_ERR_STATE, "save: internal error: section length mismatch");
        return fail(&e, MCL_ERR_IO, "cannot write the temporary file '%s': %s", tmp,
                    strerror(w.io_errno));
    }
    if (rename(tmp, path) != 0) {
        int er = errno;
        unlink(tmp);
        return fail(&e, MCL_ERR_IO, "cannot rename '%s' to it: %s", tmp, strerror(er));
    }
    fsync_parent_dir(path);
    return MCL_OK;
}

/* ------------------------------------------------------------------ reading: files, sections */

typedef struct ck_file {
    FILE *f;
    uint64_t size, pos;
} ck_file;

typedef struct ck_section {
    uint32_t tag;
    uint64_t len;
    unsigned char *data; /* the payload (len bytes), malloc'd */
} ck_section;

static mcl_status file_open(ck_file *cf, ck_err *e, const char *path)
{
    memset(cf, 0, sizeof *cf);
    if (!path || !path[0]) return fail(e, MCL_ERR_NULL, "no path given");
    /* a regular file only, checked before anything blocks (a FIFO) or reads without end (a
     * device); every read below is bounded by the size seen here */
    char msg[CK_MSG_LEN];
    mcl_status s = mcl_fopen_regular(path, &cf->f, &cf->size, msg, sizeof msg);
    if (s != MCL_OK) {
        const char *why = strncmp(msg, path, strlen(path)) == 0 && msg[strlen(path)] == ':'
                              ? msg + strlen(path) + 2 : msg;
        return fail(e, s, "%s", why);
    }
    return MCL_OK;
}

static void file_close(ck_file *cf)
{
    if (cf->f) fclose(cf->f);
    cf->f = NULL;
}

static mcl_status file_read(ck_file *cf, ck_err *e, void *dst, uint64_t n)
{
    if (n == 0) return MCL_OK;
    if (fread(dst, 1, (size_t)n, cf->f) != (size_t)n) {
        if (ferror(cf->f)) return fail(e, MCL_ERR_IO, "read error: %s", strerror(errno));
        return fail(e, MCL_ERR_FORMAT, "truncated: the file shrank while being read");
    }
    cf->pos += n;
    return MCL_OK;
}

/* Magic and version. */
static mcl_status read_file_header(ck_file *cf, ck_err *e, uint32_t *version)
{
    unsigned char fh[CK_FILE_HEADER_LEN];
    uint64_t have = cf->size < CK_FILE_HEADER_LEN ? cf->size : CK_FILE_HEADER_LEN;
    if (cf->size == 0)
        return fail(e, MCL_ERR_FORMAT, "empty file (0 bytes): not a metacl checkpoint");
    mcl_status s = file_read(cf, e, fh, have);
    if (s != MCL_OK) return s;
    uint64_t m = have < CK_MAGIC_LEN ? have : CK_MAGIC_LEN;
    if (memcmp(fh, ck_magic, (size_t)m) != 0)
        return fail(e, MCL_ERR_FORMAT, "not a metacl checkpoint (bad magic)");
    if (have < CK_FILE_HEADER_LEN)
        return fail(e, MCL_ERR_FORMAT, "truncated in the file header (%s) after %llu bytes",
                    have < CK_MAGIC_LEN ? "magic" : "format version", (unsigned long long)have);
    *version = get_u32(fh + CK_MAGIC_LEN);
    if (*version != MCL_CKPT_FORMAT_VERSION)
        return fail(e, MCL_ERR_FORMAT, "format version %u (this build reads %u)", *version,
                    MCL_CKPT_FORMAT_VERSION);
    return MCL_OK;
}

/* ---- payload parsing (shared by strict parsing and by the diagnosis of truncation) ---- */

enum { PR_OK = 0, PR_TRUNC, PR_BAD, PR_OOM };

typedef struct ck_cur {
    const unsigned char *p;
    uint64_t n, at;
} ck_cur;

typedef struct ck_parse {
    int code;
    char msg[512]; /* PR_TRUNC: where ("tensor 'W1'"); PR_BAD: what is wrong */
} ck_parse;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int pr_set(ck_parse *pr, int code, const char *fmt, ...)
{
    pr->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pr->msg, sizeof pr->msg, fmt, ap);
    va_end(ap);
    return code;
}

static int c_has(const ck_cur *c, uint64_t n) { return c->n - c->at >= n; }

static uint32_t c_u32(ck_cur *c)
{
    uint32_t v = get_u32(c->p + c->at);
    c->at += 4;
    return v;
}

static uint64_t c_u64(ck_cur *c)
{
    uint64_t v = get_u64(c->p + c->at);
    c->at += 8;
    return v;
}

/* A tensor record: name, shape, and where its values start. */
typedef struct ck_trec {
    const unsigned char *name;
    uint32_t name_len;
    int ndim;
    int64_t shape[MCL_MAX_DIMS];
    int64_t numel;
    const unsigned char *data; /* slots x numel little-endian floats */
} ck_trec;

typedef struct ck_tlist {
    ck_trec *v;
    size_t n, cap;
} ck_tlist;

static int tlist_push(ck_tlist *l, const ck_trec *r)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        ck_trec *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) return 0;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = *r;
    return 1;
}

/* One tensor record with `slots` copies of its values (what = "tensor" or "optimizer state"). */
static int parse_trec(ck_cur *c, ck_parse *pr, const char *what, uint32_t index, int slots,
                      ck_trec *r)
{
    char nb[80], sb[128];
    memset(r, 0, sizeof *r);
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "name of %s %u", what, index);
    r->name_len = c_u32(c);
    if (r->name_len == 0 || r->name_len > CK_TENSOR_NAME_MAX)
        return pr_set(pr, PR_BAD, "%s %u has a name of %u bytes (must be 1..%d)", what, index,
                      r->name_len, CK_TENSOR_NAME_MAX);
    if (!c_has(c, r->name_len)) return pr_set(pr, PR_TRUNC, "name of %s %u", what, index);
    r->name = c->p + c->at;
    c->at += r->name_len;
    show(r->name, r->name_len, nb, sizeof nb);
    if (memchr(r->name, 0, r->name_len))
        return pr_set(pr, PR_BAD, "%s %u has a NUL byte in its name", what, index);
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "%s '%s'", what, nb);
    uint32_t nd = c_u32(c);
    if (nd < 1 || nd > MCL_MAX_DIMS)
        return pr_set(pr, PR_BAD, "%s '%s' has %u dims (must be 1..%d)", what, nb, nd,
                      MCL_MAX_DIMS);
    r->ndim = (int)nd;
    if (!c_has(c, 8 * (uint64_t)nd)) return pr_set(pr, PR_TRUNC, "%s '%s'", what, nb);
    r->numel = 1;
    for (int k = 0; k < r->ndim; k++) {
        uint64_t dk = c_u64(c);
        /* numel * dk <= MCL_MAX_ELEMS, tested without overflow */
        if (dk < 1 || dk > (uint64_t)MCL_MAX_ELEMS / (uint64_t)r->numel)
            return pr_set(pr, PR_BAD, "%s '%s' has an absurd dim %d: %llu", what, nb, k,
                          (unsigned long long)dk);
        r->shape[k] = (int64_t)dk;
        r->numel *= (int64_t)dk;
    }
    uint64_t bytes = (uint64_t)slots * 4 * (uint64_t)r->numel;
    if (!c_has(c, bytes)) {
        shape_str(r->ndim, r->shape, sb, sizeof sb);
        return pr_set(pr, PR_TRUNC, "%s '%s' %s", what, nb, sb);
    }
    r->data = c->p + c->at;
    c->at += bytes;
    return PR_OK;
}

static int parse_trailing(const ck_cur *c, ck_parse *pr, int partial)
{
    if (!partial && c->at != c->n)
        return pr_set(pr, PR_BAD, "%llu bytes of unexpected data at the end of the section",
                      (unsigned long long)(c->n - c->at));
    return PR_OK;
}

typedef struct ck_header {
    char model_kind[MCL_CKPT_NAME_MAX + 1];
    char created_by[MCL_CKPT_NAME_MAX + 1];
} ck_header;

static int parse_header(ck_cur *c, ck_parse *pr, int partial, ck_header *h)
{
    char nb[80];
    memset(h, 0, sizeof *h);
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "model kind");
    uint32_t n = c_u32(c);
    if (n > MCL_CKPT_NAME_MAX)
        return pr_set(pr, PR_BAD, "model kind of %u bytes (at most %d)", n, MCL_CKPT_NAME_MAX);
    if (!c_has(c, n)) return pr_set(pr, PR_TRUNC, "model kind");
    if (!valid_ident(c->p + c->at, n))
        return pr_set(pr, PR_BAD, "invalid model kind '%s'", show(c->p + c->at, n, nb, sizeof nb));
    memcpy(h->model_kind, c->p + c->at, n);
    c->at += n;
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "created-by");
    n = c_u32(c);
    if (n > MCL_CKPT_NAME_MAX)
        return pr_set(pr, PR_BAD, "created-by string of %u bytes (at most %d)", n,
                      MCL_CKPT_NAME_MAX);
    if (!c_has(c, n)) return pr_set(pr, PR_TRUNC, "created-by");
    if (!valid_text_line(c->p + c->at, n))
        return pr_set(pr, PR_BAD, "invalid created-by string '%s'",
                      show(c->p + c->at, n, nb, sizeof nb));
    memcpy(h->created_by, c->p + c->at, n);
    c->at += n;
    return parse_trailing(c, pr, partial);
}

static int parse_config(ck_cur *c, ck_parse *pr, int partial)
{
    if (partial) return pr_set(pr, PR_TRUNC, "config text");
    if (memchr(c->p, 0, (size_t)c->n))
        return pr_set(pr, PR_BAD, "the config text contains a NUL byte");
    c->at = c->n;
    return PR_OK;
}

static int parse_params(ck_cur *c, ck_parse *pr, int partial, ck_tlist *out)
{
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "tensor count");
    uint32_t count = c_u32(c);
    for (uint32_t i = 0; i < count; i++) {
        ck_trec r;
        int code = parse_trec(c, pr, "tensor", i, 1, &r);
        if (code != PR_OK) return code;
        if (!tlist_push(out, &r)) return pr_set(pr, PR_OOM, "out of memory");
    }
    return parse_trailing(c, pr, partial);
}

typedef struct ck_optim {
    char kind[16];
    int64_t steps;
    int slots;
    ck_tlist recs;
} ck_optim;

static int parse_optim(ck_cur *c, ck_parse *pr, int partial, ck_optim *o)
{
    char nb[80];
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "optimizer kind");
    uint32_t n = c_u32(c);
    if (n == 0 || n >= sizeof o->kind)
        return pr_set(pr, PR_BAD, "optimizer kind of %u bytes", n);
    if (!c_has(c, n)) return pr_set(pr, PR_TRUNC, "optimizer kind");
    memcpy(o->kind, c->p + c->at, n);
    o->kind[n] = '\0';
    c->at += n;
    if (!c_has(c, 8)) return pr_set(pr, PR_TRUNC, "step count");
    uint64_t steps = c_u64(c);
    if (steps > MCL_CKPT_MAX_STEPS)
        return pr_set(pr, PR_BAD, "optimizer step count %llu is out of range (at most %llu)",
                      (unsigned long long)steps, (unsigned long long)MCL_CKPT_MAX_STEPS);
    o->steps = (int64_t)steps;
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "slot count");
    uint32_t slots = c_u32(c);
    if (slots > 2) return pr_set(pr, PR_BAD, "%u state slots per parameter (at most 2)", slots);
    o->slots = (int)slots;
    if (strcmp(o->kind, optim_kind_name(o->slots)) != 0)
        return pr_set(pr, PR_BAD, "optimizer kind '%s' with %d slots per parameter",
                      show((const unsigned char *)o->kind, strlen(o->kind), nb, sizeof nb),
                      o->slots);
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "state count");
    uint32_t count = c_u32(c);
    if (slots == 0 && count != 0)
        return pr_set(pr, PR_BAD, "%u states but 0 slots per parameter", count);
    for (uint32_t i = 0; i < count; i++) {
        ck_trec r;
        int code = parse_trec(c, pr, "state of tensor", i, o->slots, &r);
        if (code != PR_OK) return code;
        if (!tlist_push(&o->recs, &r)) return pr_set(pr, PR_OOM, "out of memory");
    }
    return parse_trailing(c, pr, partial);
}

static int parse_rng(ck_cur *c, ck_parse *pr, int partial, mcl_ckpt_rng *rng)
{
    if (!c_has(c, 16)) return pr_set(pr, PR_TRUNC, "seed and counter");
    rng->seed = c_u64(c);
    rng->counter = c_u64(c);
    if (rng->counter > MCL_CKPT_MAX_RNG_COUNTER)
        return pr_set(pr, PR_BAD, "rng counter %llu is out of range (at most %llu)",
                      (unsigned long long)rng->counter,
                      (unsigned long long)MCL_CKPT_MAX_RNG_COUNTER);
    return parse_trailing(c, pr, partial);
}

static int parse_counters(ck_cur *c, ck_parse *pr, int partial, mcl_ckpt_counter **out,
                          int *nout)
{
    char nb[80];
    *out = NULL;
    *nout = 0;
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "counter count");
    uint32_t count = c_u32(c);
    /* each counter takes at least 4 + 1 + 8 bytes: bound the count by what is there */
    if (count > (c->n - c->at) / 13) {
        if (partial) return pr_set(pr, PR_TRUNC, "counter list");
        return pr_set(pr, PR_BAD, "%u counters do not fit in %llu bytes", count,
                      (unsigned long long)(c->n - c->at));
    }
    if (count > (uint32_t)(INT32_MAX / (int)sizeof(mcl_ckpt_counter)))
        return pr_set(pr, PR_BAD, "absurd counter count %u", count);
    mcl_ckpt_counter *v = calloc(count ? count : 1, sizeof *v);
    if (!v) return pr_set(pr, PR_OOM, "out of memory");
    *out = v;
    for (uint32_t i = 0; i < count; i++) {
        if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "name of counter %u", i);
        uint32_t n = c_u32(c);
        if (n == 0 || n > MCL_CKPT_NAME_MAX)
            return pr_set(pr, PR_BAD, "counter %u has a name of %u bytes (must be 1..%d)", i, n,
                          MCL_CKPT_NAME_MAX);
        if (!c_has(c, n)) return pr_set(pr, PR_TRUNC, "name of counter %u", i);
        if (!valid_ident(c->p + c->at, n))
            return pr_set(pr, PR_BAD, "counter %u has an invalid name '%s'", i,
                          show(c->p + c->at, n, nb, sizeof nb));
        memcpy(v[i].name, c->p + c->at, n);
        c->at += n;
        if (!c_has(c, 8)) return pr_set(pr, PR_TRUNC, "counter '%s'", v[i].name);
        v[i].value = c_u64(c);
        *nout = (int)i + 1;
    }
    int dup = dup_counter(v, (int)count);
    if (dup == -2) return pr_set(pr, PR_OOM, "out of memory");
    if (dup >= 0) return pr_set(pr, PR_BAD, "counter '%s' appears twice", v[dup].name);
    return parse_trailing(c, pr, partial);
}

static int parse_end(ck_cur *c, ck_parse *pr, int partial, uint32_t *nsec)
{
    if (!c_has(c, 4)) return pr_set(pr, PR_TRUNC, "section count");
    *nsec = c_u32(c);
    return parse_trailing(c, pr, partial);
}

/* Everything parsed from a file. */
typedef struct ck_parsed {
    ck_header header;
    char *config;
    size_t config_len;
    ck_tlist params;
    int has_optim;
    ck_optim optim;
    mcl_ckpt_rng rng;
    mcl_ckpt_counter *counters;
    int n_counters;
    uint32_t end_nsec;
    uint64_t params_len; /* info_only: the params section's length (0 = not seen) */
    ck_section sec[8]; /* payloads by tag (data NULL = not seen) */
} ck_parsed;

static void parsed_free(ck_parsed *p)
{
    free(p->config);
    free(p->params.v);
    free(p->optim.recs.v);
    free(p->counters);
    for (int i = 0; i < 8; i++) free(p->sec[i].data);
    memset(p, 0, sizeof *p);
}

/* Parse a payload by tag into p. */
static int parse_payload(uint32_t tag, const unsigned char *data, uint64_t len, int partial,
                         ck_parse *pr, ck_parsed *p)
{
    ck_cur c = {data, len, 0};
    pr->code = PR_OK;
    pr->msg[0] = '\0';
    switch (tag) {
    case MCL_CKPT_SEC_HEADER: return parse_header(&c, pr, partial, &p->header);
    case MCL_CKPT_SEC_CONFIG: return parse_config(&c, pr, partial);
    case MCL_CKPT_SEC_PARAMS: return parse_params(&c, pr, partial, &p->params);
    case MCL_CKPT_SEC_OPTIM: return parse_optim(&c, pr, partial, &p->optim);
    case MCL_CKPT_SEC_RNG: return parse_rng(&c, pr, partial, &p->rng);
    case MCL_CKPT_SEC_COUNTERS:
        free(p->counters);
        return parse_counters(&c, pr, partial, &p->counters, &p->n_counters);
    case MCL_CKPT_SEC_END: return parse_end(&c, pr, partial, &p->end_nsec);
    }
    return pr_set(pr, PR_BAD, "unknown section");
}

/* Explains a section whose length runs past the end of the file: parse what is there. */
static mcl_status diagnose_short_section(ck_file *cf, ck_err *e, uint32_t tag, uint64_t len)
{
    const char *nm = sec_name(tag);
    uint64_t avail = cf->size - cf->pos;
    if ((uint64_t)(size_t)avail != avail) return fail(e, MCL_ERR_OOM, "file too large for memory");
    unsigned char *data = malloc(avail ? (size_t)avail : 1);
    if (!data) return fail(e, MCL_ERR_OOM, "out of memory");
    mcl_status s = file_read(cf, e, data, avail);
    if (s != MCL_OK) {
        free(data);
        return s;
    }
    ck_parsed scratch;
    memset(&scratch, 0, sizeof scratch);
    ck_parse pr;
    int code = parse_payload(tag, data, avail, 1, &pr, &scratch);
    parsed_free(&scratch);
    free(data);
    if (code == PR_TRUNC)
        return fail(e, MCL_ERR_FORMAT, "truncated in section %s (%s): the section needs %llu "
                    "bytes, the file has %llu left", nm, pr.msg, (unsigned long long)len,
                    (unsigned long long)avail);
    if (code == PR_OOM) return fail(e, MCL_ERR_OOM, "out of memory");
    if (code == PR_BAD)
        return fail(e, MCL_ERR_FORMAT, "section %s is corrupt (%s) and its length %llu points "
                    "beyond the end of the file (%llu bytes left)", nm, pr.msg,
                    (unsigned long long)len, (unsigned long long)avail);
    return fail(e, MCL_ERR_FORMAT, "section %s: length field %llu points beyond the end of "
                "the file (%llu bytes left)", nm, (unsigned long long)len,
                (unsigned long long)avail);
}

/* Read the next section: tag, length, payload and CRC, checked. `prev` names the section
 * before (NULL at the first). */
static mcl_status read_section(ck_file *cf, ck_err *e, int index, const char *prev,
                               ck_section *out)
{
    memset(out, 0, sizeof *out);
    uint64_t left = cf->size - cf->pos;
    char after[64];
    if (prev) snprintf(after, sizeof after, "after section '%s'", prev);
    else snprintf(after, sizeof after, "after the file header");
    if (left == 0)
        return fail(e, MCL_ERR_FORMAT, "truncated %s (the file ends where section %d should "
                    "start; no end section)", after, index + 1);
    if (left < CK_SEC_HEADER_LEN)
        return fail(e, MCL_ERR_FORMAT, "truncated in the header of section %d (%s)", index + 1,
                    after);
    unsigned char h[CK_SEC_HEADER_LEN];
    mcl_status s = file_read(cf, e, h, sizeof h);
    if (s != MCL_OK) return s;
    left -= CK_SEC_HEADER_LEN;
    uint32_t tag = get_u32(h);
    uint64_t len = get_u64(h + 4);
    const char *nm = sec_name(tag);
    if (!nm && (len > left || left - len < CK_SEC_CRC_LEN))
        return fail(e, MCL_ERR_FORMAT, "section %d (%s) has an unknown tag 0x%08x and a length "
                    "%llu beyond the end of the file: corrupt file", index + 1, after, tag,
                    (unsigned long long)len);
    if (len > left) return diagnose_short_section(cf, e, tag, len);
    if (left - len < CK_SEC_CRC_LEN)
        return fail(e, MCL_ERR_FORMAT, "truncated in section %s (checksum)", nm);
    if ((uint64_t)(size_t)len != len) return fail(e, MCL_ERR_OOM, "section too large for memory");
    unsigned char *data = malloc(len ? (size_t)len : 1);
    if (!data) return fail(e, MCL_ERR_OOM, "out of memory for section %s (%llu bytes)",
                           nm ? nm : "?", (unsigned long long)len);
    unsigned char cb[CK_SEC_CRC_LEN];
    s = file_read(cf, e, data, len);
    if (s == MCL_OK) s = file_read(cf, e, cb, sizeof cb);
    if (s != MCL_OK) {
        free(data);
        return s;
    }
    uint32_t want = get_u32(cb);
    uint32_t got = crc_update(crc_update(0, h, sizeof h), data, len);
    if (got != want) {
        free(data);
        if (!nm)
            return fail(e, MCL_ERR_FORMAT, "CRC mismatch in section %d (%s; unknown tag 0x%08x)",
                        index + 1, after, tag);
        return fail(e, MCL_ERR_FORMAT, "CRC mismatch in section %s", nm);
    }
    if (!nm) {
        free(data);
        return fail(e, MCL_ERR_FORMAT, "unknown section tag 0x%08x in section %d (%s; format "
                    "version %u has no such section)", tag, index + 1, after,
                    MCL_CKPT_FORMAT_VERSION);
    }
    out->tag = tag;
    out->len = len;
    out->data = data;
    return MCL_OK;
}

/* Read sections into p. With info_only, stop once header and config are in (their payloads
 * parsed); otherwise read up to and including the end section and parse everything. */
static mcl_status read_all(const char *path, ck_err *e, int info_only, uint32_t *version,
                           ck_parsed *p)
{
    ck_file cf;
    mcl_status s = file_open(&cf, e, path);
    if (s != MCL_OK) return s;
    s = read_file_header(&cf, e, version);
    const char *prev = NULL;
    for (int k = 0; s == MCL_OK; k++) {
        if (info_only && p->sec[MCL_CKPT_SEC_HEADER].data && p->sec[MCL_CKPT_SEC_CONFIG].data) {
            /* the length of the params section that follows, unread: lets a caller compare
             * it with what the config needs before it builds the model */
            unsigned char h[CK_SEC_HEADER_LEN];
            if (cf.size - cf.pos >= CK_SEC_HEADER_LEN && file_read(&cf, e, h, sizeof h) == MCL_OK &&
                get_u32(h) == MCL_CKPT_SEC_PARAMS)
                p->params_len = get_u64(h + 4);
            break;
        }
        ck_section sec;
        s = read_section(&cf, e, k, prev, &sec);
        if (s != MCL_OK) break;
        const char *nm = sec_name(sec.tag);
        if (k == 0 && sec.tag != MCL_CKPT_SEC_HEADER) {
            free(sec.data);
            s = fail(e, MCL_ERR_FORMAT, "the first section is %s, not header", nm);
            break;
        }
        if (p->sec[sec.tag].data) {
            free(sec.data);
            s = fail(e, MCL_ERR_FORMAT, "section %s appears twice", nm);
            break;
        }
        p->sec[sec.tag] = sec;
        prev = nm;
        ck_parse pr;
        int code = parse_payload(sec.tag, sec.data, sec.len, 0, &pr, p);
        if (code == PR_OOM) {
            s = fail(e, MCL_ERR_OOM, "out of memory");
        } else if (code == PR_TRUNC) {
            s = fail(e, MCL_ERR_FORMAT, "section %s is shorter than its contents (ends inside "
                     "%s)", nm, pr.msg);
        } else if (code == PR_BAD) {
            s = fail(e, MCL_ERR_FORMAT, "section %s: %s", nm, pr.msg);
        }
        if (s != MCL_OK) break;
        if (sec.tag == MCL_CKPT_SEC_CONFIG) {
            p->config = malloc((size_t)sec.len + 1);
            if (!p->config) {
                s = fail(e, MCL_ERR_OOM, "out of memory");
                break;
            }
            memcpy(p->config, sec.data, (size_t)sec.len);
            p->config[sec.len] = '\0';
            p->config_len = (size_t)sec.len;
        }
        if (sec.tag == MCL_CKPT_SEC_OPTIM) p->has_optim = 1;
        if (sec.tag == MCL_CKPT_SEC_END) {
            if (p->end_nsec != (uint32_t)k)
                s = fail(e, MCL_ERR_FORMAT, "the end section counts %u sections, the file has %d",
                         p->end_nsec, k);
            else if (cf.pos != cf.size)
                s = fail(e, MCL_ERR_FORMAT, "%llu bytes of unexpected data after the end section",
                         (unsigned long long)(cf.size - cf.pos));
            if (s != MCL_OK) break;
            static const uint32_t required[] = {MCL_CKPT_SEC_CONFIG, MCL_CKPT_SEC_PARAMS,
                                                MCL_CKPT_SEC_RNG, MCL_CKPT_SEC_COUNTERS};
            for (size_t i = 0; i < sizeof required / sizeof required[0] && s == MCL_OK; i++)
                if (!p->sec[required[i]].data)
                    s = fail(e, MCL_ERR_FORMAT, "section %s is missing", sec_name(required[i]));
            break;
        }
    }
    file_close(&cf);
    return s;
}

/* ------------------------------------------------------------------ public: reading */

mcl_status mcl_ckpt_export(mcl_ctx *ctx, const char *path, const char *model_kind, const mcl_params *params,
                           const mcl_ckpt_info *info, char *errbuf, size_t errbuf_len)
{
    if (!info) return MCL_ERR_NULL;
    mcl_ckpt_save_desc d;
    memset(&d, 0, sizeof d);
    d.model_kind = model_kind;
    d.config = info->config ? info->config : "";
    d.params = params;
    d.rng = info->rng;
    d.counters = info->counters;
    d.n_counters = info->n_counters;
    return mcl_ckpt_save(ctx, path, &d, errbuf, errbuf_len);
}

void mcl_ckpt_info_free(mcl_ckpt_info *info)
{
    if (!info) return;
    free(info->config);
    free(info->counters);
    memset(info, 0, sizeof *info);
}

int mcl_ckpt_info_counter(const mcl_ckpt_info *info, const char *name, uint64_t *value)
{
    if (!info || !name) return 0;
    for (int i = 0; i < info->n_counters; i++)
        if (strcmp(info->counters[i].name, name) == 0) {
            if (value) *value = info->counters[i].value;
            return 1;
        }
    return 0;
}

/* Moves what p holds into info (p's config and counters become info's). */
static void fill_info(mcl_ckpt_info *info, uint32_t version, ck_parsed *p)
{
    memset(info, 0, sizeof *info);
    info->version = version;
    memcpy(info->model_kind, p->header.model_kind, sizeof info->model_kind);
    memcpy(info->created_by, p->header.created_by, sizeof info->created_by);
    info->config = p->config;
    info->config_len = p->config_len;
    p->config = NULL;
    info->has_optim = p->has_optim;
    info->optim_steps = p->has_optim ? p->optim.steps : 0;
    info->rng = p->rng;
    info->counters = p->counters;
    info->n_counters = p->n_counters;
    p->counters = NULL;
    p->n_counters = 0;
}

mcl_status mcl_ckpt_read_info(const char *path, mcl_ckpt_info *info, char *errbuf,
                              size_t errbuf_len)
{
    ck_err e;
    err_init(&e, NULL, path, errbuf, errbuf_len);
    if (info) memset(info, 0, sizeof *info);
    if (!info) return fail(&e, MCL_ERR_NULL, "read_info: info is NULL");
    ck_parsed p;
    memset(&p, 0, sizeof p);
    uint32_t version = 0;
    mcl_status s = read_all(path, &e, 1, &version, &p);
    if (s == MCL_OK && (!p.sec[MCL_CKPT_SEC_HEADER].data || !p.sec[MCL_CKPT_SEC_CONFIG].data))
        s = fail(&e, MCL_ERR_FORMAT, "section config is missing");
    if (s == MCL_OK) {
        fill_info(info, version, &p);
        /* only header and config were read */
        info->has_optim = 0;
        info->optim_steps = 0;
        memset(&info->rng, 0, sizeof info->rng);
        info->params_len = p.params_len;
    }
    parsed_free(&p);
    return s;
}

static int rec_is(const ck_trec *r, const char *name)
{
    size_t n = strlen(name);
    return n == r->name_len && memcmp(r->name, name, n) == 0;
}

mcl_status mcl_ckpt_read_tensor(const char *path, const char *name, int64_t numel, float **out,
                                mcl_ckpt_info *info, char *errbuf, size_t errbuf_len)
{
    ck_err e;
    err_init(&e, NULL, path, errbuf, errbuf_len);
    if (info) memset(info, 0, sizeof *info);
    if (!name || !out) return fail(&e, MCL_ERR_NULL, "read_tensor: NULL argument");
    *out = NULL;
    ck_parsed p;
    memset(&p, 0, sizeof p);
    uint32_t version = 0;
    mcl_status s = read_all(path, &e, 0, &version, &p);
    const ck_trec *r = NULL;
    for (size_t k = 0; s == MCL_OK && k < p.params.n && !r; k++)
        if (rec_is(&p.params.v[k], name)) r = &p.params.v[k];
    if (s == MCL_OK && !r) s = fail(&e, MCL_ERR_INVALID, "no tensor '%s'", name);
    if (s == MCL_OK && r->numel != numel)
        s = fail(&e, MCL_ERR_SHAPE, "tensor '%s' has %lld values, %lld expected", name,
                 (long long)r->numel, (long long)numel);
    if (s == MCL_OK) {
        float *v = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *v);
        if (!v) s = fail(&e, MCL_ERR_OOM, "out of memory");
        for (int64_t i = 0; s == MCL_OK && i < numel; i++) {
            uint32_t u = get_u32(r->data + 4 * i);
            memcpy(&v[i], &u, 4);
        }
        if (s == MCL_OK) *out = v;
    }
    if (s == MCL_OK && info) fill_info(info, version, &p);
    parsed_free(&p);
    return s;
}

/* Index in P of the tensor named like r, or -1. */
static int find_param(const mcl_params *P, const ck_trec *r)
{
    int np = mcl_params_count(P);
    for (int i = 0; i < np; i++)
        if (rec_is(r, mcl_params_get(P, i)->name)) return i;
    return -1;
}

static int rec_same_shape(const ck_trec *r, const mcl_tensor *t)
{
    if (r->ndim != t->ndim) return 0;
    for (int k = 0; k < r->ndim; k++)
        if (r->shape[k] != t->shape[k]) return 0;
    return 1;
}

/* Write n little-endian floats from the file into t. */
static mcl_status put_values(mcl_tensor *t, const unsigned char *src, int64_t n, float **buf,
                             int64_t *cap)
{
    if (n > *cap) {
        float *nb = realloc(*buf, (size_t)n * sizeof *nb);
        if (!nb) return MCL_ERR_OOM;
        *buf = nb;
        *cap = n;
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = get_u32(src + 4 * i);
        memcpy(&(*buf)[i], &u, 4);
    }
    return mcl_tensor_write(t, *buf, n);
}

/* Match the file against the model (nothing is written). map[k] = registry index of file
 * tensor k; omap[k] = registry index of optimizer record k. */
static mcl_status match_model(ck_err *e, const ck_parsed *p, const char *model_kind,
                              const mcl_params *P, const mcl_optim *opt, int *map, int *omap)
{
    char nb[80], s1[128], s2[128];
    if (strcmp(p->header.model_kind, model_kind) != 0)
        return fail(e, MCL_ERR_INVALID, "model kind '%s' (expected '%s')", p->header.model_kind,
                    model_kind);
    int np = mcl_params_count(P);
    char *used = calloc((size_t)np + 1, 1);
    if (!used) return fail(e, MCL_ERR_OOM, "out of memory");
    mcl_status s = MCL_OK;
    for (size_t k = 0; k < p->params.n && s == MCL_OK; k++) {
        const ck_trec *r = &p->params.v[k];
        show(r->name, r->name_len, nb, sizeof nb);
        int i = find_param(P, r);
        if (i < 0) {
            s = fail(e, MCL_ERR_INVALID, "tensor '%s' in the file is not in the model", nb);
        } else if (used[i]) {
            s = fail(e, MCL_ERR_FORMAT, "tensor '%s' appears twice in the file", nb);
        } else {
            const mcl_tensor *t = mcl_params_get(P, i);
            if (!rec_same_shape(r, t)) {
                shape_str(r->ndim, r->shape, s1, sizeof s1);
                shape_str(t->ndim, t->shape, s2, sizeof s2);
                s = fail(e, MCL_ERR_SHAPE, "tensor '%s' has shape %s in the file, %s in the model",
                         nb, s1, s2);
            }
            used[i] = 1;
            map[k] = i;
        }
    }
    for (int i = 0; i < np && s == MCL_OK; i++)
        if (!used[i])
            s = fail(e, MCL_ERR_INVALID, "tensor '%s' of the model is missing from the file",
                     mcl_params_get(P, i)->name);
    if (s != MCL_OK || !opt) {
        free(used);
        return s;
    }

    /* the optimizer */
    int bad;
    int slots = optim_slots(opt, P, &bad);
    if (slots < 0)
        s = fail(e, MCL_ERR_INVALID, "the optimizer's state of '%s' does not fit the registry "
                 "(was the optimizer created over these parameters?)",
                 mcl_params_get(P, bad)->name);
    else if (!p->has_optim)
        s = fail(e, MCL_ERR_INVALID, "the file has no optimizer state (an optimizer was given "
                 "to restore)");
    else if (slots > 0 && p->optim.slots != slots)
        s = fail(e, MCL_ERR_INVALID, "optimizer state in the file is %s (%s), the optimizer is "
                 "%s (%s)", p->optim.kind, optim_kind_long(p->optim.slots), optim_kind_name(slots),
                 optim_kind_long(slots));
    memset(used, 0, (size_t)np + 1);
    for (size_t k = 0; k < p->optim.recs.n && s == MCL_OK; k++) {
        const ck_trec *r = &p->optim.recs.v[k];
        show(r->name, r->name_len, nb, sizeof nb);
        int i = find_param(P, r);
        if (i < 0 || optim_slots_of(opt, i) == 0) {
            s = fail(e, MCL_ERR_INVALID, "the file has optimizer state for '%s', the optimizer "
                     "has none for it", nb);
        } else if (used[i]) {
            s = fail(e, MCL_ERR_FORMAT, "optimizer state of '%s' appears twice in the file", nb);
        } else {
            const mcl_tensor *t = mcl_optim_state(opt, i, 0);
            if (!rec_same_shape(r, t)) {
                shape_str(r->ndim, r->shape, s1, sizeof s1);
                shape_str(t->ndim, t->shape, s2, sizeof s2);
                s = fail(e, MCL_ERR_SHAPE, "optimizer state of '%s' has shape %s in the file, %s "
                         "in the optimizer", nb, s1, s2);
            }
            used[i] = 1;
            omap[k] = i;
        }
    }
    for (int i = 0; i < np && s == MCL_OK; i++)
        if (!used[i] && optim_slots_of(opt, i) > 0)
            s = fail(e, MCL_ERR_INVALID, "optimizer state of '%s' is missing from the file",
                     mcl_params_get(P, i)->name);
    free(used);
    return s;
}

mcl_status mcl_ckpt_load(mcl_ctx *ctx, const char *path, const char *model_kind,
                         mcl_params *params, mcl_optim *opt, mcl_ckpt_info *info,
                         char *errbuf, size_t errbuf_len)
{
    ck_err e;
    err_init(&e, ctx, path, errbuf, errbuf_len);
    if (info) memset(info, 0, sizeof *info);
    if (!model_kind) return fail(&e, MCL_ERR_NULL, "load: no model kind given");
    if (!params) return fail(&e, MCL_ERR_NULL, "load: no parameter registry given");
    ck_parsed p;
    memset(&p, 0, sizeof p);
    uint32_t version = 0;
    int *map = NULL, *omap = NULL;
    float *buf = NULL;
    int64_t cap = 0;
    mcl_status s = read_all(path, &e, 0, &version, &p);
    if (s == MCL_OK) {
        map = calloc(p.params.n + 1, sizeof *map);
        omap = calloc(p.optim.recs.n + 1, sizeof *omap);
        if (!map || !omap) s = fail(&e, MCL_ERR_OOM, "out of memory");
    }
    if (s == MCL_OK) s = match_model(&e, &p, model_kind, params, opt, map, omap);

    /* The file fits: write the values. */
    const char *what = NULL;
    for (size_t k = 0; k < p.params.n && s == MCL_OK; k++) {
        const ck_trec *r = &p.params.v[k];
        s = put_values(mcl_params_get(params, map[k]), r->data, r->numel, &buf, &cap);
        if (s != MCL_OK) what = mcl_params_get(params, map[k])->name;
    }
    if (opt && s == MCL_OK) {
        for (size_t k = 0; k < p.optim.recs.n && s == MCL_OK; k++) {
            const ck_trec *r = &p.optim.recs.v[k];
            for (int sl = 0; sl < p.optim.slots && s == MCL_OK; sl++) {
                const unsigned char *src = r->data + 4 * (size_t)r->numel * (size_t)sl;
                s = put_values(mcl_optim_state(opt, omap[k], sl), src, r->numel, &buf, &cap);
                if (s != MCL_OK) what = mcl_params_get(params, omap[k])->name;
            }
        }
        if (s == MCL_OK) mcl_optim_set_steps(opt, p.optim.steps);
    }
    if (s != MCL_OK && what) {
        if (s == MCL_ERR_OOM) fail(&e, s, "load: out of memory");
        else fail(&e, s, "load: cannot write tensor '%s' to the backend", what);
    }
    if (s == MCL_OK && info) fill_info(info, version, &p);
    free(buf);
    free(map);
    free(omap);
    parsed_free(&p);
    return s;
}
