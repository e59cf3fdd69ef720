/* json_out.c — the JSON writer of the metacl CLI (json_out.h). */
#include "json_out.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void mcl_json_init(mcl_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

void mcl_json_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* The comma and the key before a value. */
static void pre(mcl_json *j, const char *key)
{
    if (j->n[j->depth]++) fputc(',', j->f);
    if (key && j->depth > 0) {
        mcl_json_write_string(j->f, key);
        fputc(':', j->f);
    }
}

static void open_(mcl_json *j, const char *key, int c)
{
    pre(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < MCL_JSON_MAX_DEPTH) j->depth++;
    j->n[j->depth] = 0;
}

static void close_(mcl_json *j, int c)
{
    fputc(c, j->f);
    if (j->depth > 0) j->depth--;
}

void mcl_json_begin_obj(mcl_json *j, const char *key) { open_(j, key, '{'); }
void mcl_json_end_obj(mcl_json *j) { close_(j, '}'); }
void mcl_json_begin_arr(mcl_json *j, const char *key) { open_(j, key, '['); }
void mcl_json_end_arr(mcl_json *j) { close_(j, ']'); }

void mcl_json_str(mcl_json *j, const char *key, const char *v)
{
    pre(j, key);
    if (v)
        mcl_json_write_string(j->f, v);
    else
        fputs("null", j->f);
}

void mcl_json_int(mcl_json *j, const char *key, long long v)
{
    pre(j, key);
    fprintf(j->f, "%lld", v);
}

void mcl_json_u64(mcl_json *j, const char *key, uint64_t v)
{
    pre(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void mcl_json_num(mcl_json *j, const char *key, double v, int digits)
{
    pre(j, key);
    if (!isfinite(v))
        fputs("null", j->f);
    else
        fprintf(j->f, "%.*f", digits, v);
}

void mcl_json_bool(mcl_json *j, const char *key, int v)
{
    pre(j, key);
    fputs(v ? "true" : "false", j->f);
}

void mcl_json_null(mcl_json *j, const char *key)
{
    pre(j, key);
    fputs("null", j->f);
}

void mcl_json_num_array(mcl_json *j, const char *key, const double *v, int n, int digits)
{
    mcl_json_begin_arr(j, key);
    for (int i = 0; i < n; i++) mcl_json_num(j, NULL, v[i], digits);
    mcl_json_end_arr(j);
}

void mcl_json_config_obj(mcl_json *j, const char *key, const char *text)
{
    mcl_json_begin_obj(j, key);
    for (const char *p = text ? text : ""; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char line[4096];
        if (n >= sizeof line) n = sizeof line - 1;
        memcpy(line, p, n);
        line[n] = 0;
        p = e ? e + 1 : p + strlen(p);
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        char *eq = strchr(s, '=');
        if (!*s || *s == '#' || !eq) continue;
        char *k_end = eq;
        while (k_end > s && (k_end[-1] == ' ' || k_end[-1] == '\t')) k_end--;
        *k_end = 0;
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t') v++;
        size_t vl = strlen(v);
        while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r')) v[--vl] = 0;
        mcl_json_str(j, s, v);
    }
    mcl_json_end_obj(j);
}

void mcl_json_finish(mcl_json *j)
{
    fputc('\n', j->f);
    fflush(j->f);
}
