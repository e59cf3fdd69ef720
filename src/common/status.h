/* status.h — status codes returned by every library function. */
#ifndef MCL_STATUS_H
#define MCL_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcl_status {
    MCL_OK = 0,
    MCL_ERR_NULL,        /* a required pointer/tensor was NULL                */
    MCL_ERR_INVALID,     /* an argument value is invalid                      */
    MCL_ERR_SHAPE,       /* shapes do not match what the op requires          */
    MCL_ERR_OOM,         /* out of memory (host or device)                    */
    MCL_ERR_BACKEND,     /* the backend failed (OpenCL/CLBlast error, ...)    */
    MCL_ERR_UNSUPPORTED, /* the backend or build does not provide this        */
    MCL_ERR_STATE,       /* called in the wrong state (e.g. no tape to walk)  */
    MCL_ERR_IO,          /* file could not be read/written                    */
    MCL_ERR_FORMAT,      /* file contents are corrupt, truncated or foreign   */
    MCL_STATUS_COUNT
} mcl_status;

/* Short, static description of a status code ("shape mismatch", ...). */
const char *mcl_status_str(mcl_status s);

/* Format a message into a caller's error buffer (nothing when err is NULL or len 0) and
 * return st: `return mcl_errbuf(err, len, MCL_ERR_IO, "%s: ...", path);`. */
mcl_status mcl_errbuf(char *err, size_t len, mcl_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Parse "key = value" lines (blank lines and lines starting with '#' skipped, spaces, tabs
 * and a trailing CR trimmed) and call set(obj, key, value, msg, msg_len) for each; stop at the
 * first malformed line or failing set, with "<what>:<line>: <message>" in err. what NULL =
 * "config". */
/* Whole-string number parsing for config values and flags: 0 and *out set when s is a base-10
 * integer in [lo, hi] (mcl_parse_i64) or a float in [lo, hi] (mcl_parse_f32; NaN is refused);
 * 1 otherwise (empty, trailing text, out of range, overflow), *out untouched. */
int mcl_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int mcl_parse_f32(const char *s, float lo, float hi, float *out);

typedef mcl_status (*mcl_kv_setter)(void *obj, const char *key, const char *value, char *msg,
                                    size_t msg_len);
/* key = value lines ("#" comments, blank lines); each key at most once per text (a second
 * one is refused naming both lines); set() is called for each in order. */
mcl_status mcl_kv_parse(const char *text, const char *what, mcl_kv_setter set, void *obj,
                        char *err, size_t len);

/* The pairs of a "key = value" text in file order: mcl_kv_parse(text, what, mcl_kv_list_add,
 * &list, ...) fills a zeroed list (at most 100 000 keys); mcl_kv_list_get gives a key's value
 * (NULL when absent); mcl_kv_list_free frees the strings and zeroes the list. */
typedef struct mcl_kv_pair {
    char *key, *value;
} mcl_kv_pair;
typedef struct mcl_kv_list {
    mcl_kv_pair *kv;
    int n, cap;
} mcl_kv_list;
mcl_status mcl_kv_list_add(void *list, const char *key, const char *value, char *msg, size_t msg_len);
const char *mcl_kv_list_get(const mcl_kv_list *list, const char *key);
void mcl_kv_list_free(mcl_kv_list *list);

/* Notices for a person watching (e.g. "compiling the OpenCL kernels ..." before a build that
 * takes minutes). The library never prints: a program that wants them installs a sink, which
 * gets each message without a trailing newline. NULL (the default) drops them. Not
 * thread-safe: set it once at start. */
typedef void (*mcl_notice_fn)(void *arg, const char *msg);
void mcl_set_notice_sink(mcl_notice_fn fn, void *arg);
/* Send a notice to the sink (printf format). */
void mcl_notice(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
