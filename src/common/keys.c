/* keys.c — typed key tables (see keys.h). */
#include "keys.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(obj, k, type) ((type *)(void *)((char *)(obj) + (k)->off))
#define CFIELD(obj, k, type) ((const type *)(const void *)((const char *)(obj) + (k)->off))

const mcl_key *mcl_keys_find(const mcl_key *keys, int n, const char *name)
{
    if (!keys || !name) return NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i].name, name) == 0) return &keys[i];
    return NULL;
}

/* Index of `v` among the '|'-separated names of `choices`, or -1. */
static int choice_index(const char *choices, const char *v)
{
    int i = 0;
    size_t vl = strlen(v);
    for (const char *p = choices; p && *p; i++) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == vl && strncmp(p, v, l) == 0) return i;
        if (!e) break;
        p = e + 1;
    }
    return -1;
}

/* The i-th name of choices into out; 0, or -1 when there is none. */
static int choice_name(const char *choices, int i, char *out, size_t cap)
{
    if (out && cap) out[0] = 0;
    const char *p = choices;
    for (int j = 0; p && j < i; j++) {
        p = strchr(p, '|');
        if (p) p++;
    }
    if (!p || i < 0) return -1;
    const char *e = strchr(p, '|');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    snprintf(out, cap, "%.*s", (int)l, p);
    return 0;
}

void mcl_key_describe(const mcl_key *k, char *out, size_t cap)
{
    switch (k->type) {
    case MCL_KEY_TYPE_INT:
    case MCL_KEY_TYPE_I64: snprintf(out, cap, "an integer in [%.0f, %.0f]", k->lo, k->hi); break;
    case MCL_KEY_TYPE_U64: snprintf(out, cap, "an unsigned integer"); break;
    case MCL_KEY_TYPE_FLOAT:
        snprintf(out, cap, "a number in %c%g, %g%c", k->lo_open ? '(' : '[', k->lo, k->hi, k->hi_open ? ')' : ']');
        break;
    case MCL_KEY_TYPE_BOOL: snprintf(out, cap, "0 or 1"); break;
    case MCL_KEY_TYPE_ENUM: { /* "a, b or c" */
        size_t w = 0;
        char name[64];
        int n = 0;
        while (choice_name(k->choices, n, name, sizeof name) == 0) n++;
        if (cap) out[0] = 0;
        for (int i = 0; i < n && w < cap; i++) {
            choice_name(k->choices, i, name, sizeof name);
            int r = snprintf(out + w, cap - w, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", name);
            w += (size_t)(r > 0 ? r : 0);
        }
        break;
    }
    case MCL_KEY_TYPE_STR: snprintf(out, cap, "a string of at most %zu bytes", k->size - 1); break;
    case MCL_KEY_TYPE_STRLIST: snprintf(out, cap, "a list of 1..%d names separated by , or ; (idx:IMAGES,LABELS is one)", k->max); break;
    case MCL_KEY_TYPE_FLOATLIST:
        snprintf(out, cap, "a list of 1..%d numbers in [%g, %g] separated by , or ;", k->max, k->lo, k->hi);
        break;
    case MCL_KEY_TYPE_FLAG: snprintf(out, cap, "no value"); break;
    }
}

static mcl_status bad(const mcl_key *k, const char *value, char *err, size_t len)
{
    char want[160];
    mcl_key_describe(k, want, sizeof want);
    return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s = '%s': want %s", k->name, value, want);
}

static int parse_u64(const char *v, uint64_t *out)
{
    if (!v[0] || v[0] == '-' || v[0] == '+' || v[0] == ' ') return 1;
    for (const char *p = v; *p; p++)
        if (*p < '0' || *p > '9') return 1;
    errno = 0;
    unsigned long long u = strtoull(v, NULL, 10);
    if (errno) return 1;
    *out = (uint64_t)u;
    return 0;
}

/* The next item of a list *p (spaces trimmed) into out[cap]; 0 ok, -1 bad. Items are separated
 * by ',' or ';'. In a name list (names != 0) an item starting with "idx:" is a user data set of
 * two files, idx:IMAGES,LABELS: it takes the next comma-separated part too, so
 * "idx:a.idx,b.idx,hershey" is two items (a ';' always ends an item). */
static int next_item(const char **p, char *out, size_t cap, int *last, int names)
{
    const char *s = *p;
    while (*s == ' ') s++;
    size_t sep = strcspn(s, ",;");
    if (names && !strncmp(s, "idx:", 4) && s[sep] == ',') sep += 1 + strcspn(s + sep + 1, ",;");
    const char *q = s[sep] ? s + sep : NULL;
    size_t l = sep;
    while (l && s[l - 1] == ' ') l--;
    if (l == 0 || l >= cap) return -1;
    memcpy(out, s, l);
    out[l] = 0;
    char *c = names && !strncmp(out, "idx:", 4) ? strchr(out, ',') : NULL;
    if (c) { /* "idx:A , B" -> "idx:A,B" */
        char *a = c, *b = c + 1;
        while (a > out + 4 && a[-1] == ' ') a--;
        while (*b == ' ') b++;
        if (a == out + 4 || !*b) return -1; /* idx: wants both files */
        *a = ',';
        memmove(a + 1, b, strlen(b) + 1);
    }
    *last = !q;
    *p = q ? q + 1 : s + l;
    return 0;
}

mcl_status mcl_key_set(const mcl_key *k, void *obj, const char *v, char *err, size_t len)
{
    if (!k || !obj || !v) return mcl_errbuf(err, len, MCL_ERR_NULL, "NULL argument");
    int64_t x = 0;
    float f = 0.0f;
    switch (k->type) {
    case MCL_KEY_TYPE_INT:
    case MCL_KEY_TYPE_I64:
        if (mcl_parse_i64(v, (int64_t)k->lo, (int64_t)k->hi, &x)) return bad(k, v, err, len);
        if (k->type == MCL_KEY_TYPE_INT) *FIELD(obj, k, int) = (int)x;
        else *FIELD(obj, k, int64_t) = x;
        return MCL_OK;
    case MCL_KEY_TYPE_U64: {
        uint64_t u;
        if (parse_u64(v, &u)) return bad(k, v, err, len);
        *FIELD(obj, k, uint64_t) = u;
        return MCL_OK;
    }
    case MCL_KEY_TYPE_FLOAT:
        if (mcl_parse_f32(v, (float)k->lo, (float)k->hi, &f) || (k->hi_open && !(f < k->hi)) ||
            (k->lo_open && !(f > k->lo)))
            return bad(k, v, err, len);
        *FIELD(obj, k, float) = f;
        return MCL_OK;
    case MCL_KEY_TYPE_BOOL:
    case MCL_KEY_TYPE_FLAG:
        if (strcmp(v, "0") && strcmp(v, "1")) return bad(k, v, err, len);
        *FIELD(obj, k, int) = v[0] == '1';
        return MCL_OK;
    case MCL_KEY_TYPE_ENUM: {
        int i = choice_index(k->choices, v);
        if (i < 0) return bad(k, v, err, len);
        *FIELD(obj, k, int) = i;
        return MCL_OK;
    }
    case MCL_KEY_TYPE_STR:
        if (strlen(v) >= k->size)
            return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: value too long (at most %zu bytes)",
                              k->name, k->size - 1);
        strcpy(FIELD(obj, k, char), v);
        return MCL_OK;
    case MCL_KEY_TYPE_STRLIST:
    case MCL_KEY_TYPE_FLOATLIST: {
        const int is_str = k->type == MCL_KEY_TYPE_STRLIST;
        const size_t item = is_str ? k->size / (size_t)k->max : sizeof(float);
        char *tmp = calloc((size_t)k->max, is_str ? item : 64);
        if (!tmp) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
        const size_t cap = is_str ? item : 64;
        int n = 0, last = 0;
        const char *p = v;
        mcl_status st = MCL_OK;
        while (st == MCL_OK && !last) {
            if (n == k->max || next_item(&p, tmp + (size_t)n * cap, cap, &last, is_str)) st = MCL_ERR_INVALID;
            else n++;
        }
        float vals[256];
        for (int i = 0; st == MCL_OK && !is_str && i < n; i++)
            if (n > 256 || mcl_parse_f32(tmp + (size_t)i * cap, (float)k->lo, (float)k->hi, &vals[i]))
                st = MCL_ERR_INVALID;
        if (st == MCL_OK) {
            if (is_str) memcpy(FIELD(obj, k, char), tmp, (size_t)n * item);
            else memcpy(FIELD(obj, k, float), vals, (size_t)n * sizeof(float));
            *(int *)(void *)((char *)obj + k->count_off) = n;
        }
        free(tmp);
        return st == MCL_OK ? MCL_OK : bad(k, v, err, len);
    }
    }
    return bad(k, v, err, len);
}

mcl_status mcl_keys_defaults(const mcl_key *keys, int n, void *obj, char *err, size_t len)
{
    for (int i = 0; i < n; i++) {
        if (keys[i].type == MCL_KEY_TYPE_STRLIST || keys[i].type == MCL_KEY_TYPE_FLOATLIST) {
            if (!keys[i].def || !keys[i].def[0]) { /* empty list */
                *(int *)(void *)((char *)obj + keys[i].count_off) = 0;
                continue;
            }
        }
        if (keys[i].type == MCL_KEY_TYPE_FLAG && !keys[i].def) {
            *FIELD(obj, &keys[i], int) = 0;
            continue;
        }
        mcl_status st = mcl_key_set(&keys[i], obj, keys[i].def ? keys[i].def : "", err, len);
        if (st != MCL_OK) return st;
    }
    return MCL_OK;
}

mcl_status mcl_keys_set(const mcl_key *keys, int n, void *obj, const char *name,
                        const char *value, char *err, size_t len)
{
    const mcl_key *k = mcl_keys_find(keys, n, name);
    if (!k) return mcl_errbuf(err, len, MCL_ERR_INVALID, "unknown key '%s'", name ? name : "(null)");
    return mcl_key_set(k, obj, value, err, len);
}

int mcl_key_format(const mcl_key *k, const void *obj, char *out, size_t cap)
{
    switch (k->type) {
    case MCL_KEY_TYPE_INT:
    case MCL_KEY_TYPE_BOOL:
    case MCL_KEY_TYPE_FLAG: return snprintf(out, cap, "%d", *CFIELD(obj, k, int));
    case MCL_KEY_TYPE_I64: return snprintf(out, cap, "%" PRId64, *CFIELD(obj, k, int64_t));
    case MCL_KEY_TYPE_U64: return snprintf(out, cap, "%" PRIu64, *CFIELD(obj, k, uint64_t));
    case MCL_KEY_TYPE_FLOAT: return snprintf(out, cap, "%.9g", (double)*CFIELD(obj, k, float));
    case MCL_KEY_TYPE_ENUM: {
        char name[64];
        if (choice_name(k->choices, *CFIELD(obj, k, int), name, sizeof name)) strcpy(name, "?");
        return snprintf(out, cap, "%s", name);
    }
    case MCL_KEY_TYPE_STR: return snprintf(out, cap, "%s", CFIELD(obj, k, char));
    case MCL_KEY_TYPE_STRLIST:
    case MCL_KEY_TYPE_FLOATLIST: {
        const int cnt = *(const int *)(const void *)((const char *)obj + k->count_off);
        size_t w = 0;
        if (!out || !cap) return 0; /* lists need a buffer */
        out[0] = 0;
        /* a name list with an idx: item is joined with ';' so that it reads back item for
         * item ("idx:A,B" keeps its comma; "idx:" followed by ',' would take the next item) */
        const char *sep = ",";
        for (int i = 0; k->type == MCL_KEY_TYPE_STRLIST && i < cnt; i++)
            if (!strncmp(CFIELD(obj, k, char) + (size_t)i * (k->size / (size_t)k->max), "idx:", 4)) sep = ";";
        for (int i = 0; i < cnt && w < cap; i++) {
            int r;
            if (k->type == MCL_KEY_TYPE_STRLIST)
                r = snprintf(out + w, cap - w, "%s%s", i ? sep : "",
                             CFIELD(obj, k, char) + (size_t)i * (k->size / (size_t)k->max));
            else
                r = snprintf(out + w, cap - w, "%s%.9g", i ? "," : "",
                             (double)CFIELD(obj, k, float)[i]);
            w += (size_t)(r > 0 ? r : 0);
        }
        return (int)w;
    }
    }
    return 0;
}

int mcl_key_differs(const mcl_key *k, const void *a, const void *b)
{
    switch (k->type) {
    case MCL_KEY_TYPE_I64: return *CFIELD(a, k, int64_t) != *CFIELD(b, k, int64_t);
    case MCL_KEY_TYPE_U64: return *CFIELD(a, k, uint64_t) != *CFIELD(b, k, uint64_t);
    case MCL_KEY_TYPE_FLOAT: return memcmp(CFIELD(a, k, float), CFIELD(b, k, float), sizeof(float)) != 0;
    case MCL_KEY_TYPE_STR: return strcmp(CFIELD(a, k, char), CFIELD(b, k, char)) != 0;
    case MCL_KEY_TYPE_STRLIST:
    case MCL_KEY_TYPE_FLOATLIST: {
        const int na = *(const int *)(const void *)((const char *)a + k->count_off);
        const int nb = *(const int *)(const void *)((const char *)b + k->count_off);
        if (na != nb) return 1;
        const size_t item = k->type == MCL_KEY_TYPE_STRLIST ? k->size / (size_t)k->max : sizeof(float);
        for (int i = 0; i < na; i++) {
            const char *x = CFIELD(a, k, char) + (size_t)i * item, *y = CFIELD(b, k, char) + (size_t)i * item;
            if (k->type == MCL_KEY_TYPE_STRLIST ? strcmp(x, y) != 0 : memcmp(x, y, item) != 0) return 1;
        }
        return 0;
    }
    default: return *CFIELD(a, k, int) != *CFIELD(b, k, int); /* int, bool, enum, flag */
    }
}

char *mcl_keys_to_text(const mcl_key *keys, int n, const void *obj, const char *prefix)
{
    const size_t vcap = 1 << 16; /* the longest value: 8 paths of 1 KiB */
    size_t cap = 1024, len = 0;
    char *s = malloc(cap), *val = malloc(vcap);
    if (!s || !val) {
        free(s);
        free(val);
        return NULL;
    }
    s[0] = 0;
    if (!prefix) prefix = "";
    for (int i = 0; i < n; i++) {
        if (keys[i].type == MCL_KEY_TYPE_FLAG) continue;
        mcl_key_format(&keys[i], obj, val, vcap);
        size_t need = len + strlen(prefix) + strlen(keys[i].name) + strlen(val) + 8;
        if (need > cap) {
            while (cap < need) cap *= 2;
            char *t = realloc(s, cap);
            if (!t) {
                free(s);
                free(val);
                return NULL;
            }
            s = t;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s%s = %s\n", prefix, keys[i].name, val);
    }
    free(val);
    return s;
}

void mcl_keys_print_help(FILE *f, const mcl_key *keys, int n, const char *prefix)
{
    for (int i = 0; i < n; i++) {
        char want[160], name[160];
        mcl_key_describe(&keys[i], want, sizeof want);
        snprintf(name, sizeof name, "%s%s = %s", prefix ? prefix : "", keys[i].name,
                 keys[i].def && keys[i].def[0] ? keys[i].def : "\"\"");
        fprintf(f, "  %-34s %s (%s)\n", name, keys[i].help ? keys[i].help : "", want);
    }
}

int mcl_key_choice_name(const char *choices, int i, char *out, size_t cap)
{
    return choice_name(choices, i, out, cap);
}

int mcl_key_list_count(const mcl_key *k, const void *obj)
{
    if (k->type != MCL_KEY_TYPE_STRLIST && k->type != MCL_KEY_TYPE_FLOATLIST) return 0;
    return *(const int *)(const void *)((const char *)obj + k->count_off);
}

const char *mcl_key_str_item(const mcl_key *k, const void *obj, int i)
{
    if (k->type != MCL_KEY_TYPE_STRLIST || i < 0 || i >= mcl_key_list_count(k, obj)) return NULL;
    return CFIELD(obj, k, char) + (size_t)i * (k->size / (size_t)k->max);
}
