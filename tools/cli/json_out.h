/* json_out.h — the one JSON writer of the metacl CLI (every --json output goes through it).
 *
 *   mcl_json j;
 *   mcl_json_init(&j, stdout);
 *   mcl_json_begin_obj(&j, NULL);
 *   mcl_json_str(&j, "name", "fmnist");          keys are NULL inside arrays and at the top
 *   mcl_json_begin_arr(&j, "files"); ... mcl_json_end_arr(&j);
 *   mcl_json_end_obj(&j);
 *   mcl_json_finish(&j);                           a newline after the top-level value
 *
 * Compact output (no spaces), commas placed by the writer, strings escaped (", \, control
 * characters; other bytes, UTF-8 included, pass through). Numbers: NaN / Inf are written as
 * null; mcl_json_num takes the digits after the point (printf %.Nf). */
#ifndef MCL_CLI_JSON_OUT_H
#define MCL_CLI_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

#define MCL_JSON_MAX_DEPTH 32

typedef struct mcl_json {
    FILE *f;
    int depth;
    int n[MCL_JSON_MAX_DEPTH]; /* values written so far at each level */
} mcl_json;

void mcl_json_init(mcl_json *j, FILE *f);
void mcl_json_begin_obj(mcl_json *j, const char *key);
void mcl_json_end_obj(mcl_json *j);
void mcl_json_begin_arr(mcl_json *j, const char *key);
void mcl_json_end_arr(mcl_json *j);
/* v == NULL: null */
void mcl_json_str(mcl_json *j, const char *key, const char *v);
void mcl_json_int(mcl_json *j, const char *key, long long v);
void mcl_json_u64(mcl_json *j, const char *key, uint64_t v);
void mcl_json_num(mcl_json *j, const char *key, double v, int digits);
void mcl_json_bool(mcl_json *j, const char *key, int v);
void mcl_json_null(mcl_json *j, const char *key);
/* An array of n numbers (NaN: null). */
void mcl_json_num_array(mcl_json *j, const char *key, const double *v, int n, int digits);
/* "key = value" lines (a config file's text; '#' comments and blank lines skipped) as an
 * object of key -> string value, in the order of the text. */
void mcl_json_config_obj(mcl_json *j, const char *key, const char *text);
void mcl_json_finish(mcl_json *j);
/* A JSON string literal of s (quotes included) on f. */
void mcl_json_write_string(FILE *f, const char *s);

#endif
