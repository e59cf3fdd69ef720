/* status.c — names of status codes; error-buffer and key = value helpers. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mcl_status_str(mcl_status s)
{
    switch (s) {
    case MCL_OK: return "ok";
    case MCL_ERR_NULL: return "null argument";
    case MCL_ERR_INVALID: return "invalid argument";
    case MCL_ERR_SHAPE: return "shape mismatch";
    case MCL_ERR_OOM: return "out of memory";
    case MCL_ERR_BACKEND: return "backend error";
    case MCL_ERR_UNSUPPORTED: return "unsupported";
    case MCL_ERR_STATE: return "invalid state";
    case MCL_ERR_IO: return "i/o error";
    case MCL_ERR_FORMAT: return "bad file format";
    case MCL_STATUS_COUNT: break;
    }
    return "unknown status";
}

mcl_status mcl_errbuf(char *err, size_t len, mcl_status st, const char *fmt, ...)
{
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return st;
}

static char *kv_trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

typedef struct kv_line {
    const char *key, *value;
    int line;
} kv_line;

static int kv_cmp(const void *a, const void *b)
{
    const kv_line *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Every key at most once: with a duplicate, *first and *second are the lines of the pair whose
 * second line comes first in the text. 0 none, 1 found, -1 out of memory. */
static int kv_duplicate(const kv_line *v, int n, int *first, int *second, const char **key)
{
    if (n < 2) return 0;
    kv_line *s = malloc((size_t)n * sizeof *s);
    if (!s) return -1;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, kv_cmp);
    int found = 0;
    for (int i = 1; i < n; i++)
        if (!strcmp(s[i - 1].key, s[i].key) && (!found || s[i].line < *second)) {
            int j = i - 1;
            while (j > 0 && !strcmp(s[j - 1].key, s[i].key)) j--;
            *first = s[j].line;
            *second = s[i].line;
            *key = s[i].key;
            found = 1;
        }
    free(s);
    return found;
}

mcl_status mcl_kv_parse(const char *text, const char *what, mcl_kv_setter set, void *obj,
                        char *err, size_t len)
{
    if (!text || !set) return mcl_errbuf(err, len, MCL_ERR_NULL, "NULL argument");
    char *copy = malloc(strlen(text) + 1);
    if (!copy) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    strcpy(copy, text);
    if (!what) what = "config";
    /* at most one key per two bytes ("k=" and a newline at least) */
    size_t cap = strlen(text) / 2 + 1;
    kv_line *kv = malloc(cap * sizeof *kv);
    if (!kv) {
        free(copy);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    }
    mcl_status st = MCL_OK;
    int line = 0, n = 0;
    for (char *ln = copy, *next; st == MCL_OK && ln; ln = next) {
        line++;
        char *nl = strchr(ln, '\n');
        next = nl ? nl + 1 : NULL;
        if (nl) *nl = 0;
        char *t = kv_trim(ln);
        if (!*t || *t == '#') continue;
        char *eq = strchr(t, '=');
        if (!eq) {
            st = mcl_errbuf(err, len, MCL_ERR_INVALID, "%s:%d: '%s' is not key = value", what, line, t);
            break;
        }
        *eq = 0;
        kv[n].key = kv_trim(t);
        kv[n].value = kv_trim(eq + 1);
        kv[n].line = line;
        n++;
    }
    /* a key given twice in one text is a mistake, never "the last one wins" */
    int l1 = 0, l2 = 0;
    const char *dk = NULL;
    int dup = st == MCL_OK ? kv_duplicate(kv, n, &l1, &l2, &dk) : 0;
    if (dup < 0) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    else if (dup > 0)
        st = mcl_errbuf(err, len, MCL_ERR_INVALID, "%s:%d: key '%s' is set twice (lines %d and %d)",
                        what, l2, dk, l1, l2);
    for (int i = 0; st == MCL_OK && i < n; i++) {
        char msg[512];
        msg[0] = 0;
        st = set(obj, kv[i].key, kv[i].value, msg, sizeof msg);
        if (st != MCL_OK) mcl_errbuf(err, len, st, "%s:%d: %s", what, kv[i].line, msg);
    }
    free(kv);
    free(copy);
    return st;
}

mcl_status mcl_kv_list_add(void *list, const char *key, const char *value, char *msg, size_t msg_len)
{
    mcl_kv_list *m = list;
    if (m->n == m->cap) {
        int nc = m->cap ? m->cap * 2 : 64;
        if (nc > 100000) return mcl_errbuf(msg, msg_len, MCL_ERR_FORMAT, "too many keys");
        mcl_kv_pair *nk = realloc(m->kv, sizeof *nk * (size_t)nc);
        if (!nk) return mcl_errbuf(msg, msg_len, MCL_ERR_OOM, "out of memory");
        m->kv = nk;
        m->cap = nc;
    }
    m->kv[m->n].key = strdup(key);
    m->kv[m->n].value = strdup(value);
    if (!m->kv[m->n].key || !m->kv[m->n].value) {
        free(m->kv[m->n].key);
        free(m->kv[m->n].value);
        return mcl_errbuf(msg, msg_len, MCL_ERR_OOM, "out of memory");
    }
    m->n++;
    return MCL_OK;
}

const char *mcl_kv_list_get(const mcl_kv_list *m, const char *key)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->kv[i].key, key) == 0) return m->kv[i].value;
    return NULL;
}

void mcl_kv_list_free(mcl_kv_list *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->kv[i].key);
        free(m->kv[i].value);
    }
    free(m->kv);
    memset(m, 0, sizeof *m);
}

int mcl_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    const long long x = strtoll(s, &end, 10);
    if (end == s || *end || errno || x < lo || x > hi) return 1;
    *out = x;
    return 0;
}

int mcl_parse_f32(const char *s, float lo, float hi, float *out)
{
    char *end = NULL;
    errno = 0;
    const float x = strtof(s, &end);
    if (end == s || *end || errno || !(x >= lo && x <= hi)) return 1;
    *out = x;
    return 0;
}

/* ------------------------------------------------------------------ notices */

static mcl_notice_fn notice_fn;
static void *notice_arg;

void mcl_set_notice_sink(mcl_notice_fn fn, void *arg)
{
    notice_fn = fn;
    notice_arg = arg;
}

void mcl_notice(const char *fmt, ...)
{
    if (!notice_fn) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    notice_fn(notice_arg, msg);
}
