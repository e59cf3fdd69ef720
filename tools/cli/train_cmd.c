/* train_cmd.c — `metacl train FAMILY`: train a model of any family on the harness
 * (src/learn/train.h; the families: src/models/families.c).
 *
 * Options: train_keys below (`metacl train FAMILY --help`).
 *   metacl train FAMILY --config FILE [--set key=value]... [--out RUN_DIR]
 *                       [--backend ref|opencl] [--device N|NAME] [--quiet]
 *   metacl train FAMILY --resume RUN_DIR [--set key=value]... [--backend ...]
 *
 * Exit: 0 done, 1 runtime error (data, config file content, NaN loss, I/O), 2 usage, 130 / 143
 * stopped by SIGINT / SIGTERM (last.ckpt written).
 */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"
#include "dist.h"
#include "cli.h"
#include "progress.h"
#include "util.h"

/* Is `name` a seed key: its last word "seed" (seed, model.seed, train.seed, wcst.seed, ...)? */
static int is_seed_key(const char *name)
{
    const size_t n = strlen(name);
    return n >= 4 && !strcmp(name + n - 4, "seed") && (n == 4 || name[n - 5] == '.' || name[n - 5] == '_');
}

/* The seeds of a run's config as JSON string members, read through the key tables (the
 * family's groups, then train.*: the order of config.txt). */
static void json_seeds(mcl_json *j, const mcl_run_cfg *rc)
{
    char name[256], v[64];
    const mcl_family *fam = rc->family;
    for (int g = 0; g < fam->n_groups; g++) {
        const mcl_key_group *gr = fam->groups[g];
        for (int i = 0; i < gr->n; i++) {
            snprintf(name, sizeof name, "%s%s", gr->prefix, gr->keys[i].name);
            if (!is_seed_key(name)) continue;
            mcl_key_format(&gr->keys[i], (const char *)rc->fcfg + gr->off, v, sizeof v);
            mcl_json_str(j, name, v);
        }
    }
    int n = 0;
    const mcl_key *tk = mcl_train_keys(&n);
    for (int i = 0; i < n; i++)
        if (is_seed_key(tk[i].name)) {
            mcl_key_format(&tk[i], &rc->train, v, sizeof v);
            mcl_json_str(j, tk[i].name, v);
        }
}

/* The data sets of a run's config: each name of data.domains (when the family has that key)
 * in data.dir, as JSON objects. */
static void json_datasets(mcl_json *j, const mcl_run_cfg *rc)
{
    const mcl_family *fam = rc->family;
    const mcl_key *doms = NULL, *dir = NULL;
    const char *dobj = NULL, *dirobj = NULL;
    for (int g = 0; g < fam->n_groups; g++) {
        const mcl_key_group *gr = fam->groups[g];
        char name[256];
        for (int i = 0; i < gr->n; i++) {
            snprintf(name, sizeof name, "%s%s", gr->prefix, gr->keys[i].name);
            const char *obj = (const char *)rc->fcfg + gr->off;
            if (!strcmp(name, "data.domains")) doms = &gr->keys[i], dobj = obj;
            if (!strcmp(name, "data.dir")) dir = &gr->keys[i], dirobj = obj;
        }
    }
    char ddir[4096] = "";
    if (dir) mcl_key_format(dir, dirobj, ddir, sizeof ddir);
    for (int i = 0; doms && i < mcl_key_list_count(doms, dobj); i++) {
        const char *d = mcl_key_str_item(doms, dobj, i);
        if (d && *d) mcl_cli_json_dataset(j, d, ddir[0] ? ddir : NULL);
    }
}

/* `train --json`: the summary and its provenance: the run directory's config.txt as written
 * (the "config" object), and its seeds and data sets through the family's key tables. */
static void print_train_json(const char *run_dir, const mcl_family *fam, const mcl_train_result *res, mcl_ctx *ctx)
{
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/config.txt", run_dir);
    char *text = NULL;
    mcl_run_cfg rc;
    int parsed = 0;
    if (mcl_read_text_file(path, (size_t)1 << 20, &text, err, sizeof err) == MCL_OK &&
        mcl_run_cfg_init(&rc, fam, err, sizeof err) == MCL_OK) {
        parsed = mcl_run_cfg_parse(&rc, text, path, err, sizeof err) == MCL_OK;
        if (!parsed) mcl_run_cfg_free(&rc);
    }
    mcl_json j;
    mcl_json_init(&j, stdout);
    mcl_json_begin_obj(&j, NULL);
    mcl_json_str(&j, "run_dir", run_dir);
    mcl_json_int(&j, "steps", (long long)res->steps_done);
    mcl_json_num(&j, "last_loss", res->last_loss, 6);
    mcl_json_num(&j, "best_val", res->best_val, 6);
    mcl_json_int(&j, "chance_step", (long long)res->chance_step);
    mcl_json_num(&j, "train_seconds", res->train_seconds, 3);
    mcl_cli_json_provenance_begin(&j, ctx);
    mcl_json_config_obj(&j, "config", text);
    mcl_json_begin_obj(&j, "seeds");
    if (parsed) json_seeds(&j, &rc);
    mcl_json_end_obj(&j);
    mcl_json_begin_arr(&j, "data");
    if (parsed) json_datasets(&j, &rc);
    mcl_json_end_arr(&j);
    mcl_json_end_obj(&j);
    mcl_json_end_obj(&j);
    mcl_json_finish(&j);
    if (parsed) mcl_run_cfg_free(&rc);
    free(text);
}

/* SIGINT / SIGTERM during training: the harness ends the step, writes last.ckpt and returns. */
static volatile sig_atomic_t stop_signal;
static void on_stop_signal(int sig)
{
    if (stop_signal) { /* a second signal: stop at once */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_signal = sig;
}

#define MAX_SETS 256

typedef struct train_opts {
    char config[4096], out[4096], resume[4096], backend[64], device[256];
    mcl_cli_arg sets[MAX_SETS];
    int n_sets, quiet, json;
} train_opts;

static const mcl_key train_keys[] = {
    MCL_OPT_STR("config", 0, train_opts, config, NULL, "FILE", "training config (data/configs/*.conf; keys: doc/acl.md); a NAME\n"
               "without '/' that is not a file here is an installed config\n"
               "(" MCL_CLI_CONFIGS_HELP ", .conf optional)"),
    MCL_OPT_APPEND("set", 0, train_opts, sets, n_sets, "KEY=VALUE", "override one key (applied after the file)"),
    MCL_OPT_STR("out", 0, train_opts, out, NULL, "DIR", "run directory (default runs/<config name>); must not hold a run"),
    MCL_OPT_STR("resume", 0, train_opts, resume, NULL, "DIR", "continue the run in DIR exactly where its last checkpoint is"),
    MCL_OPT_BACKEND(train_opts, backend),
    MCL_OPT_DEVICE(train_opts, device),
    MCL_OPT_FLAG("quiet", 0, train_opts, quiet, "no progress line and no log lines on stdout"),
    MCL_OPT_FLAG("json", 0, train_opts, json,
                 "no log lines on stdout; at the end one JSON object (the summary, with\n"
                 "provenance: version, commit, backend, config, seeds, data) instead of the\n"
                 "text summary"),
};
#define N_TRAIN_KEYS ((int)(sizeof train_keys / sizeof train_keys[0]))

static void print_families(FILE *f, const void *arg)
{
    (void)arg;
    fprintf(f, "families (`metacl train FAMILY --help` lists a family's config keys):\n");
    for (const mcl_family *const *fam = mcl_families(); *fam; fam++)
        fprintf(f, "  %-24s  %s\n", (*fam)->kind, (*fam)->summary ? (*fam)->summary : "");
}

/* The keys of one family, after the options in `metacl train FAMILY --help`. */
static void print_keys(FILE *f, const void *arg)
{
    const mcl_family *fam = arg;
    fprintf(f, "\nkeys of `metacl train %s` (config files and --set; default, meaning, range):\n", fam->kind);
    mcl_run_cfg_print_help(f, fam);
}

static const char train_synopsis[] = "--config FILE [--set key=value]... [--out RUN_DIR] [--backend ref|opencl] [--device N|NAME] [--quiet] [--json]\n"
                                     "--resume RUN_DIR [--set key=value]... [--backend ...]";
static const char train_epilog[] = "A run directory gets config.txt, metrics.csv, log.txt, last.ckpt, best.ckpt.\n"
                                   "Exit: 0 done, 1 runtime error (data, config file content, NaN loss, I/O), 2 usage,\n"
                                   "130 / 143 stopped by SIGINT / SIGTERM (the step finished, last.ckpt written).";

int mcl_cli_train(int argc, char **argv) { return mcl_cli_train_with(argc, argv, NULL, NULL, NULL, NULL); }

/* The family of `metacl train FAMILY ...` (argv[1]), or NULL with *rc the exit code: no word
 * or --help (the command's help), an option first, an unknown family (2). */
static const mcl_family *train_family(int argc, char **argv, const mcl_cli_cmd *cmd, int *rc)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        mcl_cli_help(argc < 2 ? stderr : stdout, cmd);
        *rc = argc < 2 ? 2 : 0;
        return NULL;
    }
    *rc = 2;
    if (argv[1][0] == '-') {
        fprintf(stderr, "metacl train: which family? (");
        mcl_cli_print_families(stderr);
        fprintf(stderr, ") comes first: metacl train FAMILY [options]\n");
        return NULL;
    }
    const mcl_family *fam = mcl_family_find(argv[1]);
    if (!fam) {
        fprintf(stderr, "metacl train: unknown model family '%s' (available: ", argv[1]);
        mcl_cli_print_families(stderr);
        fprintf(stderr, ")\n");
        return NULL;
    }
    *rc = 0;
    return fam;
}

/* One `metacl train` run: the family, the options, the config and where the run goes. */
typedef struct train_run {
    const mcl_family *fam;
    train_opts *opt;
    const char **sets; /* the --set values */
    const char *config, *out, *resume;
    mcl_run_cfg cfg;
    char dir[1024], config_path[4096];
} train_run;

/* The arguments: each --set is key=value, one of --config / --resume, no --out with --resume
 * (2 on a usage error). */
static int train_check_args(train_run *r)
{
    const train_opts *opt = r->opt;
    r->config = opt->config[0] ? opt->config : NULL;
    r->out = opt->out[0] ? opt->out : NULL;
    r->resume = opt->resume[0] ? opt->resume : NULL;
    for (int i = 0; i < opt->n_sets; i++) {
        r->sets[i] = opt->sets[i].value;
        if (!strchr(r->sets[i], '=')) {
            fprintf(stderr, "metacl train %s: --set '%s': want key=value\n", r->fam->kind, r->sets[i]);
            return 2;
        }
    }
    if (!r->config == !r->resume) {
        fprintf(stderr, "metacl train %s: give exactly one of --config FILE or --resume RUN_DIR\n", r->fam->kind);
        return 2;
    }
    if (r->resume && r->out) {
        fprintf(stderr, "metacl train %s: --out does not go with --resume (the run stays in its directory)\n",
                r->fam->kind);
        return 2;
    }
    return 0;
}

/* The config: --config's file with the --set overrides, checked, the run directory defaulting
 * to runs/<config name>; with --resume only the overrides, checked here before anything runs
 * (an unknown key or a bad value is a usage error, 2) and applied to the run's config.txt by
 * the harness. */
static int train_load_config(train_run *r)
{
    char err[2048];
    const char *kind = r->fam->kind;
    if (r->config) {
        r->config = mcl_cli_installed_file(r->config, "configs", ".conf", r->config_path, sizeof r->config_path);
        if (mcl_run_cfg_load(&r->cfg, r->config, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl train %s: %s\n", kind, err);
            return 1;
        }
    }
    for (int i = 0; i < r->opt->n_sets; i++)
        if (mcl_run_cfg_parse(&r->cfg, r->sets[i], "--set", err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl train %s: %s\n", kind, err);
            return 2;
        }
    if (!r->config) return 0;
    if (mcl_run_cfg_check(&r->cfg, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl train %s: %s\n", kind, err);
        return 1;
    }
    if (!r->out) { /* runs/<config file name without directory and .conf> */
        const char *base = strrchr(r->config, '/');
        base = base ? base + 1 : r->config;
        size_t n = strlen(base);
        if (n > 5 && !strcmp(base + n - 5, ".conf")) n -= 5;
        snprintf(r->dir, sizeof r->dir, "runs/%.*s", (int)n, base);
        r->out = r->dir;
    }
    return 0;
}

/* The last line of a run on stdout (not with --json or --quiet). */
static void print_train_summary(const char *run_dir, const mcl_train_result *res)
{
    char best[64] = "", chance[64] = "";
    if (!isnan(res->best_val)) snprintf(best, sizeof best, ", best validation %.4f", res->best_val);
    if (res->chance_step > 0) snprintf(chance, sizeof chance, ", left chance at step %lld", (long long)res->chance_step);
    printf("run %s: %lld steps, last loss %.4f%s%s, %.1f s of training\n", run_dir, (long long)res->steps_done,
           res->last_loss, best, chance, res->train_seconds);
}

/* Train: the context, the harness's run with SIGINT / SIGTERM ending it cleanly, the report
 * (rank 0 under MPI), then `after` on the run directory. */
static int train_go(train_run *r, int (*after)(const char *run_dir, int quiet, int json))
{
    const int quiet = r->opt->quiet, json = r->opt->json, n_set = r->opt->n_sets;
    const char *kind = r->fam->kind;
    mcl_ctx *ctx = NULL;
    int rc = mcl_cli_open_ctx(r->opt->backend, r->opt->device, &ctx);
    if (rc) return rc;
    mcl_train_opts o;
    memset(&o, 0, sizeof o);
    o.run_dir = r->resume ? r->resume : r->out;
    o.resume = r->resume != NULL;
    o.progress = mcl_progress_enabled();
    o.log = quiet || json ? NULL : stdout;
    o.overrides = r->sets;
    o.n_overrides = r->resume ? n_set : 0;
    o.stop = &stop_signal;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    mcl_train_result res;
    char err[2048];
    mcl_status st = mcl_train_run(ctx, r->fam, r->config ? &r->cfg : NULL, &o, &res, err, sizeof err);
    if (st != MCL_OK) {
        /* MPI: an error of this rank alone names the rank (main then stops the job); one
         * that every rank saw is printed once, by rank 0 */
        if (mcl_dist_size() > 1 && res.error_scope == MCL_TRAIN_ERR_LOCAL)
            fprintf(stderr, "metacl train %s: %s: %s\n", kind, mcl_dist_where(), err);
        else if (res.error_scope != MCL_TRAIN_ERR_OTHER && mcl_dist_rank() == 0)
            fprintf(stderr, "metacl train %s: %s\n", kind, err);
        rc = stop_signal ? 128 + stop_signal : 1; /* the shell's convention for a signal */
    } else if (json && mcl_dist_rank() == 0) { /* MPI: rank 0 reports */
        print_train_json(o.run_dir, r->fam, &res, ctx);
    } else if (!json && !quiet && mcl_dist_rank() == 0) {
        print_train_summary(o.run_dir, &res);
    }
    mcl_ctx_free(ctx);
    /* restored after the teardown: a signal that comes once training has ended only sets the
     * flag, the run is complete and saved (exit 0); after this point it ends the process the
     * default way (exit 128 + signal, log.txt's last line "done: ...") */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc == 0 && after && mcl_dist_rank() == 0) rc = after(o.run_dir, quiet, json);
    return rc;
}

int mcl_cli_train_with(int argc, char **argv, const char *cmd_name, const char *about,
                       const char *epilog, int (*after)(const char *run_dir, int quiet, int json))
{
    mcl_cli_cmd cmd = {.name = "train FAMILY", .synopsis = train_synopsis, .about = "Train a model of a family on the harness.",
                       .opts = train_keys, .n_opts = N_TRAIN_KEYS, .epilog = train_epilog,
                       .more_help = print_families};
    int rc;
    const mcl_family *fam = train_family(argc, argv, &cmd, &rc);
    if (!fam) return rc;
    char name[64];
    if (about) cmd.about = about;
    if (epilog) cmd.epilog = epilog;
    if (cmd_name)
        snprintf(name, sizeof name, "%s", cmd_name);
    else
        snprintf(name, sizeof name, "train %s", fam->kind);
    cmd.name = name;
    cmd.more_help = print_keys;
    cmd.more_arg = fam;
    train_run *r = calloc(1, sizeof *r);
    train_opts *opt = calloc(1, sizeof *opt);
    const char **sets = calloc(MAX_SETS, sizeof *sets);
    if (!r || !opt || !sets) {
        free(r);
        free(opt);
        free(sets);
        return 1;
    }
    r->fam = fam;
    r->opt = opt;
    r->sets = sets;
    mcl_cli_parsed parsed;
    rc = mcl_cli_parse(&cmd, argc - 1, argv + 1, opt, &parsed);
    if (rc == MCL_CLI_GO) {
        if (opt->quiet) mcl_progress_set_quiet(1);
        rc = train_check_args(r);
        char err[2048];
        if (mcl_run_cfg_init(&r->cfg, fam, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl train %s: %s\n", fam->kind, err);
            rc = 1;
        } else {
            if (rc == 0) rc = train_load_config(r);
            if (rc == 0) rc = train_go(r, after);
            mcl_run_cfg_free(&r->cfg);
        }
    }
    free(sets);
    free(opt);
    free(r);
    return rc;
}
