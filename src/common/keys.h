/* keys.h — typed key tables: one description per setting (name, type, range, default, help),
 * used to parse "key = value" configs, write them back as text, print --help, and parse the
 * command line's options (tools/cli/cli_opts.c). Every config of the library (the model configs,
 * the training harness, each family's task/data keys) and every CLI option is a row of such a
 * table, so parsing, config.txt and the help texts cannot drift apart.
 *
 * A row points into a C struct by offset; the table describes that struct:
 *
 *     typedef struct my_cfg { int steps; float lr; char data[64]; } my_cfg;
 *     static const mcl_key my_keys[] = {
 *         MCL_KEY_INT("train.steps", my_cfg, steps, 0, 1e9, "1000", "total training steps"),
 *         MCL_KEY_FLOAT("train.lr", my_cfg, lr, 0, 1e3, "1e-3", "learning rate"),
 *         MCL_KEY_STR("data.dir", my_cfg, data, "", "prepared-data directory"),
 *     };
 *
 * Values as text: integers are base 10 (a leading 0 is not octal: "010" is ten), floats are
 * C numbers (NaN refused), bools are 0 or 1, enums are one of the row's '|'-separated names
 * (stored as the index), strings are stored NUL-terminated in a char array of the field's size
 * (longer values refused), lists are comma-separated (spaces around items trimmed; at most
 * `max` items; the count goes to a separate int field).
 * Text output uses %.9g for floats, so a float round-trips exactly.
 */
#ifndef MCL_KEYS_H
#define MCL_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcl_key_type {
    MCL_KEY_TYPE_INT,     /* int                                                        */
    MCL_KEY_TYPE_I64,     /* int64_t                                                    */
    MCL_KEY_TYPE_U64,     /* uint64_t (seeds): 0 .. 2^64-1                              */
    MCL_KEY_TYPE_FLOAT,   /* float in [lo, hi] (hi_open: [lo, hi); lo_open: (lo, hi])   */
    MCL_KEY_TYPE_BOOL,    /* int 0 / 1                                                  */
    MCL_KEY_TYPE_ENUM,    /* int index into choices "a|b|c"                             */
    MCL_KEY_TYPE_STR,     /* char[size]                                                 */
    MCL_KEY_TYPE_STRLIST, /* char[max][size / max], count in the int at count_off       */
    MCL_KEY_TYPE_FLOATLIST, /* float[max], count at count_off, each in [lo, hi]         */
    MCL_KEY_TYPE_FLAG     /* CLI only: an option without value; sets the int to 1       */
} mcl_key_type;

typedef struct mcl_key {
    const char *name;    /* "train.steps", or for CLI options the long name "steps"    */
    mcl_key_type type;
    size_t off;          /* offset of the field in the struct                           */
    size_t size;         /* STR: the char array's size; lists: the whole array's size  */
    int max;             /* lists: most items                                           */
    size_t count_off;    /* lists: offset of the int item count                         */
    double lo, hi;       /* numeric range, inclusive (FLOAT with hi_open: hi excluded)  */
    int hi_open;
    int lo_open;         /* FLOAT: lo excluded                                          */
    const char *choices; /* ENUM: "none|batch|image"                                    */
    const char *def;     /* default, as text ("" for an empty string / list)            */
    const char *help;    /* one line                                                    */
    char short_name;     /* CLI only: 'o' for -o; 0 = none                              */
    const char *metavar; /* CLI only: "N", "FILE", ...; NULL = derived from the type    */
} mcl_key;

/* Row builders (designated initializers; st = struct type, f = field). */
#define MCL_KEY_INT(n, st, f, lo_, hi_, d, h) \
    {.name = n, .type = MCL_KEY_TYPE_INT, .off = offsetof(st, f), .lo = lo_, .hi = hi_, .def = d, .help = h}
#define MCL_KEY_I64(n, st, f, lo_, hi_, d, h) \
    {.name = n, .type = MCL_KEY_TYPE_I64, .off = offsetof(st, f), .lo = lo_, .hi = hi_, .def = d, .help = h}
#define MCL_KEY_U64(n, st, f, d, h) \
    {.name = n, .type = MCL_KEY_TYPE_U64, .off = offsetof(st, f), .def = d, .help = h}
#define MCL_KEY_FLOAT(n, st, f, lo_, hi_, d, h) \
    {.name = n, .type = MCL_KEY_TYPE_FLOAT, .off = offsetof(st, f), .lo = lo_, .hi = hi_, .def = d, .help = h}
#define MCL_KEY_FLOAT_OPEN(n, st, f, lo_, hi_, d, h)                                               \
    {.name = n, .type = MCL_KEY_TYPE_FLOAT, .off = offsetof(st, f), .lo = lo_, .hi = hi_, .hi_open = 1, \
     .def = d, .help = h}
#define MCL_KEY_FLOAT_LO_OPEN(n, st, f, lo_, hi_, d, h)                                           \
    {.name = n, .type = MCL_KEY_TYPE_FLOAT, .off = offsetof(st, f), .lo = lo_, .hi = hi_, .lo_open = 1, \
     .def = d, .help = h}
#define MCL_KEY_BOOL(n, st, f, d, h) \
    {.name = n, .type = MCL_KEY_TYPE_BOOL, .off = offsetof(st, f), .lo = 0, .hi = 1, .def = d, .help = h}
#define MCL_KEY_ENUM(n, st, f, ch, d, h) \
    {.name = n, .type = MCL_KEY_TYPE_ENUM, .off = offsetof(st, f), .choices = ch, .def = d, .help = h}
#define MCL_KEY_STR(n, st, f, d, h)                                                            \
    {.name = n, .type = MCL_KEY_TYPE_STR, .off = offsetof(st, f), .size = sizeof(((st *)0)->f), \
     .def = d, .help = h}
#define MCL_KEY_STRLIST(n, st, f, cnt, mx, d, h)                                                   \
    {.name = n, .type = MCL_KEY_TYPE_STRLIST, .off = offsetof(st, f), .size = sizeof(((st *)0)->f), \
     .max = mx, .count_off = offsetof(st, cnt), .def = d, .help = h}
#define MCL_KEY_FLOATLIST(n, st, f, cnt, mx, lo_, hi_, d, h)                                         \
    {.name = n, .type = MCL_KEY_TYPE_FLOATLIST, .off = offsetof(st, f), .size = sizeof(((st *)0)->f), \
     .max = mx, .count_off = offsetof(st, cnt), .lo = lo_, .hi = hi_, .def = d, .help = h}

/* The row named `name` among n rows, or NULL. */
const mcl_key *mcl_keys_find(const mcl_key *keys, int n, const char *name);

/* Parse `value` into obj's field of row k. MCL_ERR_INVALID with "<name> = '<value>': want ..."
 * in err on a bad value (the field is then untouched). */
mcl_status mcl_key_set(const mcl_key *k, void *obj, const char *value, char *err, size_t len);

/* Set every row of the table to its default. MCL_ERR_INVALID only for a broken table. */
mcl_status mcl_keys_defaults(const mcl_key *keys, int n, void *obj, char *err, size_t len);

/* Set the row called `name`. Unknown name: MCL_ERR_INVALID and "unknown key '<name>'" in err
 * (callers with several tables look the name up with mcl_keys_find first). */
mcl_status mcl_keys_set(const mcl_key *keys, int n, void *obj, const char *name,
                        const char *value, char *err, size_t len);

/* The value of row k in obj as text (the form mcl_key_set reads back). Returns the length
 * written (snprintf rules: truncated when >= cap). */
int mcl_key_format(const mcl_key *k, const void *obj, char *out, size_t cap);

/* Every row as "prefix + name = value\n" lines, malloc'd (NULL when out of memory). */
char *mcl_keys_to_text(const mcl_key *keys, int n, const void *obj, const char *prefix);

/* Did row k's field differ between a and b? */
int mcl_key_differs(const mcl_key *k, const void *a, const void *b);

/* Help lines: "  name = DEFAULT   help [range or choices]" for every row. */
void mcl_keys_print_help(FILE *f, const mcl_key *keys, int n, const char *prefix);

/* "integer in [1, 64]", "one of none|batch|image", ...: what a row accepts. */
void mcl_key_describe(const mcl_key *k, char *out, size_t cap);

/* The i-th name of an enum's choices ("none|batch|image", 1 -> "batch") into out: 0, or -1
 * (out empty) when there is none. The one way from an enum's value to its name: the CLI's
 * messages and JSON use it with the same choices string as the key row. */
int mcl_key_choice_name(const char *choices, int i, char *out, size_t cap);

/* Lists: the number of items of row k in obj (0 for a row that is not a list), and item i of
 * a STRLIST row (NULL when out of range or not a STRLIST). */
int mcl_key_list_count(const mcl_key *k, const void *obj);
const char *mcl_key_str_item(const mcl_key *k, const void *obj, int i);

#ifdef __cplusplus
}
#endif
#endif
