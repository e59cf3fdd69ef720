/* cli_opts.c — the option parser and subcommand dispatch of the metacl CLI (cli_opts.h). */
#include "cli_opts.h"

#include <stdarg.h>
#include <string.h>

#include "util.h"

#define ARGS(obj, k) ((mcl_cli_arg *)(void *)((char *)(obj) + (k)->off))
#define COUNT(obj, k) ((int *)(void *)((char *)(obj) + (k)->count_off))

int mcl_cli_usage_error(const mcl_cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "metacl %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'metacl %s --help' for more information.\n", cmd->name);
    return 2;
}

/* --memory-limit SIZE: a row of every train, eval, ckpt, online, sample and data prepare
 * command, handled here (it sets the process-wide budget of src/common/util.h:
 * mcl_set_memory_limit). */
static const mcl_key memory_limit_row = {
    .name = "memory-limit", .type = MCL_KEY_TYPE_STR, .metavar = "SIZE",
    .help = "refuse a model or a run needing more memory than SIZE bytes (K/M/G/T\n"
            "suffixes; default $METACL_MEMORY_LIMIT, else half the physical memory)"};

static int has_memory_limit(const mcl_cli_cmd *cmd)
{
    static const char *const words[] = {"train", "eval", "ckpt", "online", "sample", "data prepare"};
    for (int i = 0; i < 6; i++) {
        size_t l = strlen(words[i]);
        if (!strncmp(cmd->name, words[i], l) && (cmd->name[l] == ' ' || !cmd->name[l])) return 1;
    }
    return 0;
}

/* "N", "FILE", "ref|opencl": what goes after the option name ("" for a flag). */
static const char *metavar(const mcl_key *k)
{
    if (k->metavar) return k->metavar;
    switch (k->type) {
    case MCL_KEY_TYPE_INT:
    case MCL_KEY_TYPE_I64:
    case MCL_KEY_TYPE_U64: return "N";
    case MCL_KEY_TYPE_FLOAT: return "X";
    case MCL_KEY_TYPE_BOOL: return "0|1";
    case MCL_KEY_TYPE_ENUM: return k->choices;
    case MCL_KEY_TYPE_STRLIST: return "NAME[,NAME...]";
    case MCL_KEY_TYPE_FLOATLIST: return "X[,X...]";
    case MCL_KEY_TYPE_FLAG: return "";
    default: return "VALUE";
    }
}

void mcl_cli_help(FILE *f, const mcl_cli_cmd *cmd)
{
    /* every form of the synopsis on its own line */
    const char *s = cmd->synopsis ? cmd->synopsis : "[options]";
    for (int first = 1; *s || first; first = 0) {
        const char *e = strchr(s, '\n');
        int l = e ? (int)(e - s) : (int)strlen(s);
        fprintf(f, "%s metacl %s %.*s\n", first ? "usage:" : "      ", cmd->name, l, s);
        s = e ? e + 1 : s + l;
    }
    if (cmd->about) fprintf(f, "%s%s", cmd->about, cmd->about[strlen(cmd->about) - 1] == '\n' ? "" : "\n");
    fprintf(f, "options:\n");
    const int ml = has_memory_limit(cmd);
    for (int i = 0; i <= cmd->n_opts + ml; i++) {
        char head[160];
        const char *help = "print this help and exit", *def = NULL;
        if (i < cmd->n_opts + ml) {
            const mcl_key *k = i < cmd->n_opts ? &cmd->opts[i] : &memory_limit_row;
            const char *mv = metavar(k);
            char sh[8] = "    ";
            if (k->short_name) snprintf(sh, sizeof sh, "-%c, ", k->short_name);
            snprintf(head, sizeof head, "%s--%s%s%s", sh, k->name, *mv ? " " : "", mv);
            help = k->help ? k->help : "";
            if (k->type != MCL_KEY_TYPE_FLAG && k->def && k->def[0]) def = k->def;
        } else {
            snprintf(head, sizeof head, "-h, --help");
        }
        if (strlen(head) > 24)
            fprintf(f, "  %s\n  %-24s  ", head, "");
        else
            fprintf(f, "  %-24s  ", head);
        for (const char *h = help; *h; h++) { /* a help of several lines: each one indented */
            if (*h == '\n')
                fprintf(f, "\n%28s", "");
            else
                fputc(*h, f);
        }
        if (i < cmd->n_opts && cmd->opts[i].type == MCL_CLI_TYPE_APPEND)
            fprintf(f, " (repeatable)");
        if (def) fprintf(f, " (default %s)", def);
        fprintf(f, "\n");
    }
    if (cmd->epilog) fprintf(f, "%s%s", cmd->epilog, cmd->epilog[strlen(cmd->epilog) - 1] == '\n' ? "" : "\n");
    if (cmd->more_help) cmd->more_help(f, cmd->more_arg);
}

int mcl_cli_given(const mcl_cli_cmd *cmd, const mcl_cli_parsed *p, const char *name)
{
    for (int i = 0; i < cmd->n_opts && i < MCL_CLI_MAX_OPTS; i++)
        if (!strcmp(cmd->opts[i].name, name)) return (int)((p->given >> i) & 1u);
    return 0;
}

/* Defaults: a row without one keeps the caller's value (flags: 0, strings: "", lists: empty). */
static int set_defaults(const mcl_cli_cmd *cmd, void *obj)
{
    for (int i = 0; i < cmd->n_opts; i++) {
        const mcl_key *k = &cmd->opts[i];
        char err[256];
        if (k->type == MCL_CLI_TYPE_APPEND ||
            ((k->type == MCL_KEY_TYPE_STRLIST || k->type == MCL_KEY_TYPE_FLOATLIST) && !k->def)) {
            *COUNT(obj, k) = 0;
        } else if (k->type == MCL_KEY_TYPE_FLAG) {
            *(int *)(void *)((char *)obj + k->off) = 0;
        } else if (k->type == MCL_KEY_TYPE_STR && !k->def) {
            *((char *)obj + k->off) = 0;
        } else if (k->def && mcl_key_set(k, obj, k->def, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl %s: internal error: default of --%s: %s\n", cmd->name, k->name, err);
            return 1;
        }
    }
    return 0;
}

int mcl_cli_parse(const mcl_cli_cmd *cmd, int argc, char **argv, void *obj, mcl_cli_parsed *out)
{
    memset(out, 0, sizeof *out);
    if (cmd->n_opts > MCL_CLI_MAX_OPTS || set_defaults(cmd, obj)) return 1;
    int only_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && !strcmp(a, "--")) {
            only_pos = 1;
            continue;
        }
        if (only_pos || a[0] != '-' || a[1] == 0) { /* "-" alone is an argument (stdin) */
            if (out->n_pos >= cmd->max_pos || out->n_pos == MCL_CLI_MAX_POS)
                return cmd->max_pos ? mcl_cli_usage_error(cmd, "unexpected argument '%s' (at most %d)", a, cmd->max_pos)
                                    : mcl_cli_usage_error(cmd, "unexpected argument '%s'", a);
            out->pos[out->n_pos++] = a;
            continue;
        }
        const mcl_key *k = NULL;
        const char *value = NULL;
        char shown[128]; /* the option as written, without any "=value" */
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t l = eq ? (size_t)(eq - name) : strlen(name);
            snprintf(shown, sizeof shown, "--%.*s", (int)l, name);
            if (l == 4 && !strncmp(name, "help", 4) && !eq) {
                mcl_cli_help(stdout, cmd);
                return 0;
            }
            for (int j = 0; j < cmd->n_opts && !k; j++)
                if (strlen(cmd->opts[j].name) == l && !strncmp(cmd->opts[j].name, name, l)) k = &cmd->opts[j];
            if (eq) value = eq + 1;
        } else {
            snprintf(shown, sizeof shown, "-%c", a[1]);
            if (a[1] == 'h' && a[2] == 0) {
                mcl_cli_help(stdout, cmd);
                return 0;
            }
            for (int j = 0; j < cmd->n_opts && !k; j++)
                if (cmd->opts[j].short_name == a[1]) k = &cmd->opts[j];
            if (a[2]) value = a + 2;
        }
        if (!k && has_memory_limit(cmd) && !strcmp(shown, "--memory-limit")) {
            if (!value) {
                if (i + 1 >= argc) return mcl_cli_usage_error(cmd, "option '%s' needs a value (SIZE)", shown);
                value = argv[++i];
            }
            uint64_t bytes = 0;
            if (mcl_parse_size(value, &bytes) != 0 || bytes == 0)
                return mcl_cli_usage_error(cmd, "--memory-limit = '%s': not a size (e.g. 512M, 64G)", value);
            mcl_set_memory_limit(bytes);
            continue;
        }
        if (!k) return mcl_cli_usage_error(cmd, "unknown option '%s'", shown);
        if (k->type == MCL_KEY_TYPE_FLAG) {
            if (value) return mcl_cli_usage_error(cmd, "option '%s' takes no value", shown);
            *(int *)(void *)((char *)obj + k->off) = 1;
        } else {
            if (!value) {
                if (i + 1 >= argc)
                    return mcl_cli_usage_error(cmd, "option '%s' needs a value (%s)", shown, metavar(k));
                value = argv[++i];
            }
            if (!*value && k->type == MCL_KEY_TYPE_STR && !strcmp(k->name, "device"))
                return mcl_cli_usage_error(cmd, "option '%s' needs a device, not '' (N or NAME; "
                                           "`metacl devices` lists them)", shown);
            if (k->type == MCL_CLI_TYPE_APPEND) {
                int *n = COUNT(obj, k);
                if (*n >= k->max) return mcl_cli_usage_error(cmd, "%s: at most %d of these", shown, k->max);
                ARGS(obj, k)[*n].opt = k->name;
                ARGS(obj, k)[*n].value = value;
                (*n)++;
            } else {
                char err[512], dashed[128];
                mcl_key row = *k; /* messages name the option as written: "--seed = 'x': ..." */
                snprintf(dashed, sizeof dashed, "--%s", k->name);
                row.name = dashed;
                if (mcl_key_set(&row, obj, value, err, sizeof err) != MCL_OK)
                    return mcl_cli_usage_error(cmd, "%s", err);
            }
        }
        out->given |= (uint64_t)1 << (k - cmd->opts);
    }
    return MCL_CLI_GO;
}

void mcl_cli_list(FILE *f, const char *group, const mcl_cli_sub *subs, int n)
{
    for (int i = 0; i < n; i++) {
        char head[256];
        snprintf(head, sizeof head, "%s%s%s%s%s", group ? group : "", group ? " " : "", subs[i].name,
                 subs[i].synopsis[0] ? " " : "", subs[i].synopsis);
        if (strlen(head) > 30)
            fprintf(f, "  %s\n  %-30s  %s\n", head, "", subs[i].summary);
        else
            fprintf(f, "  %-30s  %s\n", head, subs[i].summary);
    }
}

int mcl_cli_dispatch(const char *group, const mcl_cli_sub *subs, int n, int argc, char **argv)
{
    const int help = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
                                   !strcmp(argv[1], "help"));
    if (argc < 2 || help) {
        FILE *f = help ? stdout : stderr;
        fprintf(f, "usage: metacl %s <subcommand> [options]   (metacl %s <subcommand> --help for its options)\n",
                group, group);
        mcl_cli_list(f, group, subs, n);
        return help ? 0 : 2;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(argv[1], subs[i].name)) return subs[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "metacl %s: unknown subcommand '%s' (", group, argv[1]);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? ", " : "", subs[i].name);
    fprintf(stderr, ")\nTry 'metacl %s --help' for more information.\n", group);
    return 2;
}
