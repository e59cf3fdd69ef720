/* cli_opts.h — the one option parser of the metacl command line, and its subcommand tables.
 *
 * A command's options are a table of mcl_key rows (src/common/keys.h: the same typed rows as
 * the configs) pointing into a struct of the command:
 *
 *     typedef struct show_opts { char out[4096]; int classes; uint64_t seed; int json; } show_opts;
 *     static const mcl_key show_keys[] = {
 *         MCL_OPT_STR("out", 'o', show_opts, out, NULL, "FILE.png", "the sheet to write"),
 *         MCL_OPT_INT("classes", 0, show_opts, classes, 1, 1000, "10", "N", "rows"),
 *         MCL_OPT_U64("seed", 0, show_opts, seed, "1", "N", "which classes and samples"),
 *         MCL_OPT_FLAG("json", 0, show_opts, json, "print JSON"),
 *     };
 *
 * mcl_cli_parse sets every row to its default, then reads argv the GNU way: `--opt value`,
 * `--opt=value`, `-o value` / `-ovalue` (rows with a short_name), `--` ends the options,
 * the other words are positional arguments (kept in order). Values go through mcl_key_set:
 * integers are decimal ("010" is ten), ranges are checked, and a bad value is reported with
 * what the option accepts. Usage errors exit 2; -h / --help prints the help generated from
 * the table (synopsis, every option with its metavar, help line and default) and exits 0.
 */
#ifndef MCL_CLI_OPTS_H
#define MCL_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "keys.h"

/* CLI-only row type: a repeatable option. Each occurrence appends {option name, value} to an
 * mcl_cli_arg array in the struct (.max items, count in the int at .count_off). Several rows
 * may share one array (same field): the items then keep the command line's order. */
#define MCL_CLI_TYPE_APPEND ((mcl_key_type)(MCL_KEY_TYPE_FLAG + 32))

typedef struct mcl_cli_arg {
    const char *opt;   /* the row's long name ("ckpt") */
    const char *value; /* points into argv */
} mcl_cli_arg;

/* Row builders: long name (no dashes), short letter (0 = none), struct, field, ..., default
 * as text (NULL: a number keeps what the caller put there, a string is ""; help then shows
 * no default; a help of several lines has '\n' between them),
 * metavar (NULL = derived from the type), help line. */
#define MCL_OPT_FLAG(n, sh, st, f, h) \
    {.name = n, .type = MCL_KEY_TYPE_FLAG, .off = offsetof(st, f), .lo = 0, .hi = 1, .help = h, .short_name = sh}
#define MCL_OPT_INT(n, sh, st, f, lo_, hi_, d, mv, h)                                            \
    {.name = n, .type = MCL_KEY_TYPE_INT, .off = offsetof(st, f), .lo = lo_, .hi = hi_, .def = d, \
     .help = h, .short_name = sh, .metavar = mv}
#define MCL_OPT_U64(n, sh, st, f, d, mv, h) \
    {.name = n, .type = MCL_KEY_TYPE_U64, .off = offsetof(st, f), .def = d, .help = h, .short_name = sh, .metavar = mv}
#define MCL_OPT_FLOAT(n, sh, st, f, lo_, hi_, d, mv, h)                                            \
    {.name = n, .type = MCL_KEY_TYPE_FLOAT, .off = offsetof(st, f), .lo = lo_, .hi = hi_, .def = d, \
     .help = h, .short_name = sh, .metavar = mv}
#define MCL_OPT_ENUM(n, sh, st, f, ch, d, h)                                                      \
    {.name = n, .type = MCL_KEY_TYPE_ENUM, .off = offsetof(st, f), .choices = ch, .def = d, .help = h, \
     .short_name = sh}
#define MCL_OPT_STR(n, sh, st, f, d, mv, h)                                                      \
    {.name = n, .type = MCL_KEY_TYPE_STR, .off = offsetof(st, f), .size = sizeof(((st *)0)->f), \
     .def = d, .help = h, .short_name = sh, .metavar = mv}
/* A comma list in one value ("a,b,c"): char f[max][item], count in cnt. */
#define MCL_OPT_STRLIST(n, sh, st, f, cnt, mv, h)                                                   \
    {.name = n, .type = MCL_KEY_TYPE_STRLIST, .off = offsetof(st, f), .size = sizeof(((st *)0)->f), \
     .max = (int)(sizeof(((st *)0)->f) / sizeof(((st *)0)->f[0])), .count_off = offsetof(st, cnt),  \
     .help = h, .short_name = sh, .metavar = mv}
#define MCL_OPT_APPEND(n, sh, st, f, cnt, mv, h)                                                     \
    {.name = n, .type = MCL_CLI_TYPE_APPEND, .off = offsetof(st, f), .size = sizeof(((st *)0)->f), \
     .max = (int)(sizeof(((st *)0)->f) / sizeof(mcl_cli_arg)), .count_off = offsetof(st, cnt),      \
     .help = h, .short_name = sh, .metavar = mv}

/* The shared options of the commands that open a backend. */
#define MCL_OPT_BACKEND(st, f) \
    MCL_OPT_STR("backend", 0, st, f, NULL, "ref|opencl", "backend (default $METACL_BACKEND, else ref)")
#define MCL_OPT_DEVICE(st, f) \
    MCL_OPT_STR("device", 0, st, f, NULL, "N|NAME", "OpenCL device (default $METACL_DEVICE, else the first GPU, accelerator or CPU)")

#define MCL_CLI_MAX_POS 64
#define MCL_CLI_MAX_OPTS 64

/* A command: its option table and help text. */
typedef struct mcl_cli_cmd {
    const char *name;     /* "data show": messages start "metacl data show: "              */
    const char *synopsis; /* what follows "usage: metacl <name> "; '\n' starts another form */
    const char *about;    /* a paragraph after the synopsis, or NULL                        */
    const mcl_key *opts;
    int n_opts;           /* at most MCL_CLI_MAX_OPTS                                       */
    int max_pos;          /* most positional arguments                                      */
    const char *epilog;   /* text after the options, or NULL                                */
    void (*more_help)(FILE *f, const void *arg); /* called after the epilog, or NULL        */
    const void *more_arg;
} mcl_cli_cmd;

typedef struct mcl_cli_parsed {
    const char *pos[MCL_CLI_MAX_POS]; /* positional arguments, in order (into argv) */
    int n_pos;
    uint64_t given;                   /* bit i: cmd->opts[i] was on the command line */
} mcl_cli_parsed;

#define MCL_CLI_GO (-1)

/* Defaults into obj, then parse argv[1..argc-1] (argv[0] is the command word).
 * Returns MCL_CLI_GO when the command is to run, otherwise its exit status: 0 after --help,
 * 2 after a usage error (message and a hint to --help on stderr). */
int mcl_cli_parse(const mcl_cli_cmd *cmd, int argc, char **argv, void *obj, mcl_cli_parsed *out);

/* The help generated from the table. */
void mcl_cli_help(FILE *f, const mcl_cli_cmd *cmd);

/* Was the option `name` on the command line? */
int mcl_cli_given(const mcl_cli_cmd *cmd, const mcl_cli_parsed *p, const char *name);

/* "metacl <cmd>: <message>" and the --help hint on stderr; returns 2. */
int mcl_cli_usage_error(const mcl_cli_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A table of subcommands: used to dispatch and to list them in help texts. */
typedef int (*mcl_cli_fn)(int argc, char **argv);
typedef struct mcl_cli_sub {
    const char *name;
    const char *synopsis; /* the arguments after the name, one line ("" = none)  */
    const char *summary;  /* one line                                            */
    mcl_cli_fn fn;        /* gets argv[0] = the subcommand's name                 */
} mcl_cli_sub;

/* "  <group> <name> <synopsis>\n        <summary>" for every row. */
void mcl_cli_list(FILE *f, const char *group, const mcl_cli_sub *subs, int n);

/* `metacl <group> <sub> ...`: argv[0] is the group word. No subcommand: the list on stderr,
 * 2; -h / --help / help: the list on stdout, 0; an unknown one: 2. */
int mcl_cli_dispatch(const char *group, const mcl_cli_sub *subs, int n, int argc, char **argv);

#endif
