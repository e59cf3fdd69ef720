/* eval_smn.c — `metacl eval smn`: the Sparse Meta Networks protocols (doc/smn-model.md §5).
 *
 *   --protocol wcst    R runs of a fresh WCST environment (seed + r) per agent; each run goes
 *                      on until T rules are solved (or the episode cap). Per task index: the
 *                      updates needed to solve it (fast and gradient updates both count, one
 *                      per episode) and the perseveration errors, mean ± 95 % CI over the runs.
 *   --protocol online  Online-X test streams of T tasks for each task-length range, R runs
 *                      each (stream seed + r): average task accuracy (prequential, each
 *                      round scored before its update), perseveration error rate,
 *                      interference error rate on the kept classes.
 * Agents: --ckpt (the Sparse-MetaNet model: Algorithm 1 on WCST, fast weights only with the
 * slow weights frozen on Online-X) and --baseline (online / offline gradient learners, through
 * the same loop, mcl_smn_online_run). A baseline without a learning rate gets one from a grid
 * search on validation runs (other seeds; Online-X: the validation classes), logged. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "metrics.h"
#include "dist.h"
#include "plot.h"
#include "progress.h"
#include "prepared.h"
#include "smn_run_cache.h"
#include "smn_train.h"
#include "util.h"

#define MAX_AGENTS 12
#define MAX_LENGTHS 8

typedef struct smn_eval_opts {
    mcl_cli_arg agents[MAX_AGENTS];
    int n_agents;
    int protocol;
    int runs, tasks, seed, round, val_runs;
    float smn_lr;
    int64_t max_steps;
    char data[256], lengths[256], figures[4096], data_dir[4096], backend[64], device[256], json_out[4096];
    char cache[4096];
    int json, quiet;
} smn_eval_opts;

static const mcl_key smn_eval_keys[] = {
    MCL_OPT_APPEND("ckpt", 0, smn_eval_opts, agents, n_agents, "[NAME=]FILE",
                   "a Sparse-MetaNet checkpoint (wcst: Algorithm 1 goes on from it;\n"
                   "online: fast weights only, slow weights frozen)"),
    MCL_OPT_ENUM("protocol", 0, smn_eval_opts, protocol, "wcst|online", NULL, "(required) wcst or online"),
    MCL_OPT_APPEND("baseline", 0, smn_eval_opts, agents, n_agents, "KIND[:CKPT][:LR]",
                   "wcst: adam, rmsprop, offline-adam, offline-rmsprop (a plain agent\n"
                   "from scratch; offline = reset at each rule, told the switches),\n"
                   "smn-scratch (Algorithm 1 from the first --ckpt's initialization);\n"
                   "online: online:CKPT (the network of CKPT fine-tuned online),\n"
                   "pretrain-online:CKPT and pretrain-reset:CKPT (a pretrained backbone\n"
                   "with a new head, fine-tuned online / reset at each task)"),
    MCL_OPT_INT("runs", 0, smn_eval_opts, runs, 1, 1000, "10", "R", "runs per agent (and per stream)"),
    MCL_OPT_INT("tasks", 0, smn_eval_opts, tasks, 1, 1 << 20, NULL, "T",
                "wcst: rules to solve per run (default 30); online: tasks per stream (default 400)"),
    MCL_OPT_INT("max-steps", 0, smn_eval_opts, max_steps, 1, 1000000000, NULL, "N",
                "wcst: episodes per run at most (default 200 per task)"),
    MCL_OPT_STR("data", 0, smn_eval_opts, data, "hanzi", "SPEC", "online: the test domain (its test classes)"),
    MCL_OPT_STR("lengths", 0, smn_eval_opts, lengths, "1-15,20-35,40-55,60-75", "A-B,...",
                "online: task-length ranges (rounds), one stream each"),
    MCL_OPT_INT("round", 0, smn_eval_opts, round, 1, 4096, "32", "N", "online: images per round"),
    MCL_OPT_INT("val-runs", 0, smn_eval_opts, val_runs, 1, 100, "3", "N", "runs per learning rate of a grid search"),
    MCL_OPT_INT("seed", 0, smn_eval_opts, seed, 0, 2000000000, "1", "S", "seed of the environments and streams"),
    MCL_OPT_FLOAT("smn-lr", 0, smn_eval_opts, smn_lr, 1e-7, 1, "3e-4", "LR",
                  "wcst: Adam's learning rate of the slow weights and meta-learners in\n"
                  "Algorithm 1 (--ckpt and smn-scratch; the shipped agent trained with 3e-4)"),
    MCL_OPT_STR("figures", 0, smn_eval_opts, figures, NULL, "DIR", "write PNG figures"),
    MCL_OPT_STR("data-dir", 0, smn_eval_opts, data_dir, NULL, "DIR", "prepared data sets"),
    MCL_OPT_STR("cache", 0, smn_eval_opts, cache, NULL, "DIR",
                "keep every finished run in DIR and read it back when the same run\n"
                "is asked again: a long evaluation stopped half-way resumes there"),
    MCL_OPT_FLAG("json", 0, smn_eval_opts, json, "print JSON instead of the Markdown tables"),
    MCL_OPT_STR("json-out", 0, smn_eval_opts, json_out, NULL, "FILE", "also write the JSON to FILE"),
    MCL_OPT_FLAG("quiet", 0, smn_eval_opts, quiet, "no progress line"),
    MCL_OPT_BACKEND(smn_eval_opts, backend),
    MCL_OPT_DEVICE(smn_eval_opts, device),
};
#define N_KEYS ((int)(sizeof smn_eval_keys / sizeof smn_eval_keys[0]))

static const char synopsis[] =
    "--protocol wcst|online --ckpt [NAME=]FILE... [--baseline KIND[:CKPT][:LR]]...\n"
    "... [--runs R] [--tasks T] [--max-steps N] [--data SPEC] [--lengths A-B,...] [--round N]\n"
    "... [--figures DIR] [--json] [--json-out FILE] [--backend ref|opencl]";
static const char about[] =
    "The Sparse-MetaNet protocols: WCST (updates to solve each rule and perseveration errors per\n"
    "task index) and Online-X streams (task accuracy, perseveration and interference error rates),\n"
    "for the checkpoints and the gradient baselines, mean +- 95 % CI half-width over runs.";

/* One agent of the comparison. */
typedef struct agent {
    char name[96];
    mcl_smn_online_opts o;
    mcl_smn_run cfg;
    char ckpt[4096];
    char src_sha[65];   /* SHA-256 of the checkpoint its weights or config come from ("default": none) */
    int lr_given;
    double grid_lr[12], grid_score[12]; /* the points of the grid search, in the order tried */
    int n_grid;
    /* results: wcst [runs][tasks]; online [lengths][runs] */
    double *upd, *per;       /* wcst: updates to solve (NaN unsolved), persev errors     */
    double *acc, *prate, *irate; /* online                                              */
    int *solved;             /* wcst: runs that solved task i                             */
    double seconds;
} agent;

static const char *cmd = "eval smn";

static int fail_usage(const char *what)
{
    fprintf(stderr, "metacl %s: %s\n", cmd, what);
    return 2;
}

/* "KIND[:CKPT][:LR]" (the last field is the lr when it parses as a number). */
static int parse_baseline(const char *v, int online, agent *a, const mcl_smn_run *smn_cfg, int have_smn,
                          char *err, size_t len)
{
    char buf[4400];
    snprintf(buf, sizeof buf, "%s", v);
    char *f[3] = {buf, NULL, NULL};
    int nf = 1;
    for (char *p = buf; *p && nf < 3; p++)
        if (*p == ':') {
            *p = 0;
            f[nf++] = p + 1;
        }
    char *end = NULL;
    if (nf > 1) {
        double lr = strtod(f[nf - 1], &end);
        if (end && *end == 0 && lr > 0) {
            a->o.lr = (float)lr;
            a->lr_given = 1;
            nf--;
        }
    }
    const char *kind = f[0], *ck = nf > 1 ? f[1] : NULL;
    a->o.optimizer = MCL_SMN_OPT_ADAM;
    if (!online) {
        if (ck) return snprintf(err, len, "--baseline %.200s: a wcst baseline takes no checkpoint", v), 2;
        if (!strcmp(kind, "adam") || !strcmp(kind, "rmsprop")) a->o.agent = MCL_SMN_AGENT_ONLINE;
        else if (!strcmp(kind, "offline-adam") || !strcmp(kind, "offline-rmsprop")) a->o.agent = MCL_SMN_AGENT_OFFLINE;
        else if (!strcmp(kind, "smn-scratch")) a->o.agent = MCL_SMN_AGENT_ALG1;
        else return snprintf(err, len, "--baseline %.200s: unknown wcst baseline '%.60s'", v, kind), 2;
        if (strstr(kind, "rmsprop")) a->o.optimizer = MCL_SMN_OPT_RMSPROP;
        if (a->o.agent == MCL_SMN_AGENT_ALG1 && !have_smn)
            return snprintf(err, len, "--baseline smn-scratch needs a --ckpt (its config)"), 2;
        if (have_smn) a->cfg = *smn_cfg;
        else {
            mcl_run_cfg rc;
            char e2[256];
            if (mcl_run_cfg_init(&rc, &mcl_smn_family, e2, sizeof e2) != MCL_OK)
                return snprintf(err, len, "%s", e2), 1;
            a->cfg = *(const mcl_smn_run *)rc.fcfg;
            mcl_run_cfg_free(&rc);
        }
        if (a->o.agent == MCL_SMN_AGENT_ALG1 && !a->lr_given) {
            a->o.lr = -1.0f; /* --smn-lr, set once the options are known */
            a->lr_given = 1;
        }
        snprintf(a->name, sizeof a->name, "%.60s", kind);
        return 0;
    }
    if (!ck) return snprintf(err, len, "--baseline %.200s: an online baseline needs KIND:CKPT", v), 2;
    if (!strcmp(kind, "online")) a->o.agent = MCL_SMN_AGENT_ONLINE;
    else if (!strcmp(kind, "pretrain-online")) a->o.agent = MCL_SMN_AGENT_ONLINE, a->o.new_head = 1;
    else if (!strcmp(kind, "pretrain-reset")) a->o.agent = MCL_SMN_AGENT_OFFLINE, a->o.new_head = 1;
    else return snprintf(err, len, "--baseline %.200s: unknown online baseline '%.60s'", v, kind), 2;
    snprintf(a->ckpt, sizeof a->ckpt, "%s", ck);
    if (mcl_smn_run_from_ckpt(ck, &a->cfg, err, len) != MCL_OK) return 1;
    snprintf(a->name, sizeof a->name, "%.60s", kind);
    return 0;
}

/* ---------------------------------------------------------------- running agents */

typedef struct len_range {
    int lo, hi;
} len_range;

/* One run of agent a; wcst fills upd/per rows, online the summary numbers. */
static mcl_status run_one(mcl_ctx *ctx, const char *cache_dir, agent *a, const mcl_smn_run *cfg, uint64_t seed,
                          int tasks, int64_t max_steps, int round, mcl_smn_online_result *res, char *err, size_t len)
{
    mcl_smn_online_opts o = a->o;
    o.seed = seed;
    o.max_tasks = tasks;
    o.max_steps = max_steps;
    o.round_size = round;
    o.init = a->ckpt[0] ? a->ckpt : NULL;
    char key[65];
    if (cache_dir) {
        /* everything the run depends on (smn_run_cache.h); the model's config and weights
         * through the checkpoint's hash, the prepared data through its directory */
        char text[4096];
        const char *commit = mcl_cli_git_commit();
        snprintf(text, sizeof text,
                 "commit %s\nbackend %s\nagent %s kind %d optimizer %d new_head %d lr %a\nsource %s\n"
                 "task %d data %s dir %s split %d normalize %d tasks %d lengths %d-%d kept %d persev %d n_out %d "
                 "data_seed %llu env_seed %llu\nseed %llu max_tasks %d max_steps %lld round %d\n",
                 commit ? commit : "none", mcl_ctx_backend_name(ctx), a->name, (int)o.agent, o.optimizer, o.new_head,
                 (double)o.lr, a->src_sha, cfg->task, cfg->source, cfg->data_dir, cfg->split, cfg->normalize,
                 cfg->n_tasks, cfg->len_min, cfg->len_max, cfg->n_kept, cfg->n_persev, cfg->model.n_out,
                 (unsigned long long)cfg->data_seed, (unsigned long long)cfg->env_seed, (unsigned long long)seed,
                 tasks, (long long)max_steps, round);
        mcl_smn_cache_key(text, key);
        if (mcl_smn_cache_get(cache_dir, key, res)) return MCL_OK;
    }
    mcl_status st = mcl_smn_online_run(ctx, cfg, &o, res, err, len);
    if (st == MCL_OK && cache_dir) {
        char e2[512];
        if (mcl_smn_cache_put(cache_dir, key, res, e2, sizeof e2) != MCL_OK)
            fprintf(stderr, "metacl eval smn: warning: run not kept in --cache: %s\n", e2); /* the run itself is fine */
    }
    return st;
}

/* Online summary of a result: mean task accuracy, perseveration and interference rates. */
static void online_summary(const mcl_smn_online_result *r, double *acc, double *prate, double *irate)
{
    double s = 0.0;
    int64_t pe = 0, pn = 0, ke = 0, kn = 0;
    int k = 0;
    for (int i = 0; i < r->n_tasks; i++) {
        const mcl_smn_task_rec *t = &r->task[i];
        if (t->n > 0) s += (double)t->hits / (double)t->n, k++;
        pe += t->persev_errors, pn += t->persev_n, ke += t->kept_err, kn += t->kept_n;
    }
    *acc = k ? s / k : NAN;
    *prate = pn ? (double)pe / (double)pn : NAN;
    *irate = kn ? (double)ke / (double)kn : NAN;
}

/* The config an agent runs on for one online stream. */
static mcl_smn_run online_cfg(const agent *a, const char *data, const char *data_dir, int split, int tasks,
                              len_range L)
{
    mcl_smn_run c = a->cfg;
    c.task = MCL_SMN_TASK_ONLINEX;
    snprintf(c.source, sizeof c.source, "%s", data);
    if (data_dir) snprintf(c.data_dir, sizeof c.data_dir, "%s", data_dir);
    c.split = split;
    c.n_tasks = tasks;
    c.len_min = L.lo;
    c.len_max = L.hi;
    c.model.n_out = 5;
    if (a->cfg.model.n_out != 5) c.model.n_out = 5; /* a pretrained classifier: a new 5-way head */
    return c;
}

/* The learning rates a grid search may try, half decades; it starts at 1e-4 .. 3e-3 and grows
 * at an edge (below) */
static const float grid_ladder[] = {1e-6f, 3e-6f, 1e-5f, 3e-5f, 1e-4f, 3e-4f, 1e-3f, 3e-3f, 1e-2f, 3e-2f, 0.1f, 0.3f};
#define GRID_LADDER ((int)(sizeof grid_ladder / sizeof grid_ladder[0]))
#define GRID_FIRST 4 /* 1e-4 */
#define GRID_START 4 /* points of the first grid: 1e-4, 3e-4, 1e-3, 3e-3 */
_Static_assert(sizeof ((agent *)0)->grid_lr / sizeof(double) >= GRID_LADDER, "a grid_lr per ladder point");

/* The validation score of one learning rate (higher is better). wcst: minus the mean updates to
 * solve (an unsolved task counts the cap); online: the mean task accuracy on the first range. */
static mcl_status grid_score(mcl_ctx *ctx, agent *a, int online, const smn_eval_opts *op, const len_range *L,
                             int vt, int64_t max_steps, float lr, double *score_out, char *err, size_t len)
{
    a->o.lr = lr;
    double score = 0.0;
    for (int r = 0; r < op->val_runs; r++) {
        mcl_smn_online_result res;
        const uint64_t seed = (uint64_t)op->seed + 100000u + (uint64_t)r;
        mcl_smn_run c = online ? online_cfg(a, op->data, op->data_dir[0] ? op->data_dir : NULL, 2, vt, L[0]) : a->cfg;
        mcl_status st = run_one(ctx, op->cache[0] ? op->cache : NULL, a, &c, seed, vt, online ? 0 : max_steps,
                                op->round, &res, err, len);
        if (st != MCL_OK) return st;
        if (online) {
            double acc, pr, ir;
            online_summary(&res, &acc, &pr, &ir);
            score += acc;
        } else {
            for (int i = 0; i < vt; i++) {
                const int64_t u = i < res.n_tasks ? res.task[i].updates_to_solve : -1;
                score -= u >= 0 ? (double)u : (double)max_steps;
            }
        }
        mcl_smn_online_result_free(&res);
    }
    *score_out = score / op->val_runs;
    mcl_progress_note("grid %s: lr %g: %s %.4g", a->name, (double)lr, online ? "val task accuracy" : "-updates",
                      *score_out);
    return MCL_OK;
}

/* Grid search of a baseline's lr on validation runs (other seeds; Online-X: the val classes):
 * 1e-4, 3e-4, 1e-3, 3e-3, then, while the grid's largest (smallest) point scores better than
 * every other, the next half decade above (below) of grid_ladder, so that a chosen value is
 * on the edge of the grid only when it ties with another point or ends the ladder. The points in the order tried and their scores go to
 * a->grid_lr / grid_score (the JSON). Ties: the smallest learning rate. */
static mcl_status grid_search(mcl_ctx *ctx, agent *a, int online, const smn_eval_opts *op, const len_range *L,
                              int tasks, int64_t max_steps, char *err, size_t len)
{
    const int vt = online ? (tasks < 50 ? tasks : 50) : (tasks < 10 ? tasks : 10);
    double sc[GRID_LADDER]; /* by ladder index */
    int lo = GRID_FIRST, hi = GRID_FIRST; /* the ladder points tried: [lo, hi) */
    a->n_grid = 0;
    for (;;) {
        int next;
        if (hi - lo < GRID_START) {
            next = hi;
        } else {
            /* an edge point better than every other point (a tie says nothing of the direction) */
            int top = 1, bottom = 1;
            for (int g = lo; g < hi; g++) {
                top &= g == hi - 1 || sc[hi - 1] > sc[g];
                bottom &= g == lo || sc[lo] > sc[g];
            }
            if (top && hi < GRID_LADDER) next = hi;
            else if (bottom && lo > 0) next = lo - 1;
            else break;
        }
        mcl_status st = grid_score(ctx, a, online, op, L, vt, max_steps, grid_ladder[next], &sc[next], err, len);
        if (st != MCL_OK) return st;
        a->grid_lr[a->n_grid] = grid_ladder[next];
        a->grid_score[a->n_grid++] = sc[next];
        if (next == hi) hi++;
        else lo--;
    }
    int best = lo;
    for (int g = lo; g < hi; g++)
        if (sc[g] > sc[best]) best = g;
    a->o.lr = grid_ladder[best];
    mcl_progress_note("grid %s: chose lr %g%s", a->name, (double)grid_ladder[best],
                      (best == 0 && lo == 0) || (best == GRID_LADDER - 1 && hi == GRID_LADDER)
                          ? " (the end of the ladder: still an edge)" : "");
    return MCL_OK;
}

/* ---------------------------------------------------------------- output */

/* " m +- h" (scaled): the mean over the runs v[0], v[stride], ... and the half-width of its
 * 95 % interval (metrics.h); " m" alone with one run, " -" when nothing was measured. */
static void put_ci(FILE *f, const double *v, int n, int stride, double scale)
{
    double m, h;
    mcl_ci95(v, n, stride, &m, &h, NULL);
    if (isnan(m)) fprintf(f, " -");
    else if (isnan(h)) fprintf(f, " %.1f", scale * m);
    else fprintf(f, " %.1f +- %.1f", scale * m, scale * h);
}

/* The header's words for n runs. */
/* out[r] = the mean of v[r*T + i] over the tasks i0 <= i < i1 that run r reached (NaN: none);
 * the summary table's cells are the mean and interval of out[0..runs-1] */
static void part_means(const double *v, int runs, int T, int i0, int i1, double *out)
{
    for (int r = 0; r < runs; r++) {
        double s = 0.0;
        int c = 0;
        for (int i = i0; i < i1; i++)
            if (isfinite(v[r * T + i])) s += v[r * T + i], c++;
        out[r] = c ? s / c : NAN;
    }
}

/* The first tasks and the rest, as in the summary table: the paper's "after ~10 tasks", or half */
static int summary_cut(int T) { return T > 10 ? 10 : (T + 1) / 2; }

static const char *ci_words(int n) { return n > 1 ? "mean +- 95 % CI half-width" : "mean, no interval"; }

static void wcst_tables(FILE *f, agent *ag, int na, int runs, int T)
{
    static const char *const what[2] = {"Updates to solve each rule", "Perseveration errors per rule"};
    for (int w = 0; w < 2; w++) {
        fprintf(f, "\n### %s (%s over %d run%s%s)\n\n| task |", what[w], ci_words(runs), runs, runs == 1 ? "" : "s",
                w == 0 ? "; [k]: k runs reached the rule without solving it, counted with the updates "
                         "they spent on it (a lower bound); - : no run reached it" : "");
        for (int k = 0; k < na; k++) fprintf(f, " %s |", ag[k].name);
        fprintf(f, "\n|---|");
        for (int k = 0; k < na; k++) fprintf(f, "---|");
        fprintf(f, "\n");
        for (int i = 0; i < T; i++) {
            fprintf(f, "| %d |", i + 1);
            for (int k = 0; k < na; k++) {
                put_ci(f, (w == 0 ? ag[k].upd : ag[k].per) + i, runs, T, 1.0);
                int reached = 0;
                for (int r = 0; r < runs; r++) reached += isfinite(ag[k].upd[r * T + i]);
                if (w == 0 && ag[k].solved[i] < reached) fprintf(f, " [%d]", reached - ag[k].solved[i]);
                fprintf(f, " |");
            }
            fprintf(f, "\n");
        }
    }
    const int cut = summary_cut(T);
    fprintf(f, "\n### Summary (mean over task indices; %s over the runs)\n\n| agent | updates, tasks 1-%d | "
               "updates, tasks %d-%d | persev. errors, tasks 1-%d | persev. errors, tasks %d-%d | seconds |\n"
               "|---|---|---|---|---|---|\n",
            ci_words(runs), cut, cut + 1, T, cut, cut + 1, T);
    for (int k = 0; k < na; k++) {
        fprintf(f, "| %s |", ag[k].name);
        for (int w = 0; w < 2; w++)
            for (int part = 0; part < 2; part++) {
                const int i0 = part == 0 ? 0 : cut, i1 = part == 0 ? cut : T;
                double *pr = malloc((size_t)runs * sizeof *pr);
                if (pr) part_means(w == 0 ? ag[k].upd : ag[k].per, runs, T, i0, i1, pr);
                if (i0 < i1 && pr) put_ci(f, pr, runs, 1, 1.0);
                else fprintf(f, " -");
                fprintf(f, " |");
                free(pr);
            }
        fprintf(f, " %.0f |\n", ag[k].seconds);
    }
}

static void online_tables(FILE *f, agent *ag, int na, int runs, const len_range *L, int nl)
{
    static const char *const what[3] = {"Average task accuracy (%)", "Perseveration error rate (%)",
                                        "Interference error rate on kept classes (%)"};
    for (int w = 0; w < 3; w++) {
        fprintf(f, "\n### %s, %s over %d run%s\n\n| agent |", what[w], ci_words(runs), runs, runs == 1 ? "" : "s");
        for (int l = 0; l < nl; l++) fprintf(f, " lengths %d-%d |", L[l].lo, L[l].hi);
        fprintf(f, "\n|---|");
        for (int l = 0; l < nl; l++) fprintf(f, "---|");
        fprintf(f, "\n");
        for (int k = 0; k < na; k++) {
            fprintf(f, "| %s |", ag[k].name);
            const double *v = w == 0 ? ag[k].acc : w == 1 ? ag[k].prate : ag[k].irate;
            for (int l = 0; l < nl; l++) {
                put_ci(f, v + l * runs, runs, 1, 100.0);
                fprintf(f, " |");
            }
            fprintf(f, "\n");
        }
    }
}

static void json_out(FILE *fp, mcl_ctx *ctx, agent *ag, int na, int online, int runs, int T, const len_range *L, int nl)
{
    mcl_json j;
    mcl_json_init(&j, fp);
    mcl_json_begin_obj(&j, NULL);
    mcl_cli_json_provenance_begin(&j, ctx);
    mcl_json_end_obj(&j);
    mcl_json_str(&j, "protocol", online ? "online" : "wcst");
    mcl_json_int(&j, "runs", runs);
    mcl_json_int(&j, "tasks", T);
    mcl_json_begin_arr(&j, "agents");
    for (int k = 0; k < na; k++) {
        mcl_json_begin_obj(&j, NULL);
        mcl_json_str(&j, "name", ag[k].name);
        mcl_json_num(&j, "lr", ag[k].o.lr, 6);
        mcl_json_num(&j, "seconds", ag[k].seconds, 4);
        if (ag[k].n_grid) {
            mcl_json_num_array(&j, "grid_lr", ag[k].grid_lr, ag[k].n_grid, 6);
            mcl_json_num_array(&j, "grid_score", ag[k].grid_score, ag[k].n_grid, 6);
        }
        if (!online) {
            /* [run][task]; null = the run never reached the task; a task reached but not
             * solved holds the updates spent on it (a lower bound) */
            mcl_json_begin_arr(&j, "updates_to_solve");
            for (int r = 0; r < runs; r++) mcl_json_num_array(&j, NULL, ag[k].upd + (size_t)r * T, T, 6);
            mcl_json_end_arr(&j);
            mcl_json_begin_arr(&j, "persev_errors");
            for (int r = 0; r < runs; r++) mcl_json_num_array(&j, NULL, ag[k].per + (size_t)r * T, T, 6);
            mcl_json_end_arr(&j);
            /* the summary table's per-run values: the mean over tasks 1..cut and cut+1..T */
            const int cut = summary_cut(T);
            double *pr = malloc((size_t)runs * sizeof *pr);
            mcl_json_begin_obj(&j, "summary");
            mcl_json_int(&j, "cut", cut);
            static const char *const key[4] = {"updates_first", "updates_rest", "persev_first", "persev_rest"};
            for (int q = 0; pr && q < 4; q++) {
                part_means(q < 2 ? ag[k].upd : ag[k].per, runs, T, q % 2 ? cut : 0, q % 2 ? T : cut, pr);
                mcl_json_num_array(&j, key[q], pr, runs, 6);
            }
            mcl_json_end_obj(&j);
            free(pr);
        } else {
            mcl_json_begin_arr(&j, "streams");
            for (int l = 0; l < nl; l++) {
                mcl_json_begin_obj(&j, NULL);
                mcl_json_int(&j, "len_min", L[l].lo);
                mcl_json_int(&j, "len_max", L[l].hi);
                mcl_json_num_array(&j, "task_acc", ag[k].acc + l * runs, runs, 6);
                mcl_json_num_array(&j, "persev_rate", ag[k].prate + l * runs, runs, 6);
                mcl_json_num_array(&j, "interference_rate", ag[k].irate + l * runs, runs, 6);
                mcl_json_end_obj(&j);
            }
            mcl_json_end_arr(&j);
        }
        mcl_json_end_obj(&j);
    }
    mcl_json_end_arr(&j);
    mcl_json_end_obj(&j);
    mcl_json_finish(&j);
}

/* Per task index, one line per agent with the 95 % interval of its mean over the runs that
 * reached the rule (Student's t, metrics.h; none with one run) as a band, clamped at 0 (counts). */
static int wcst_figures(const char *dir, agent *ag, int na, int runs, int T)
{
    static const char *const file[2] = {"wcst-updates.png", "wcst-persev.png"};
    static const char *const ylab[2] = {"updates to solve (unsolved: spent)", "perseveration errors"};
    double *x = malloc((size_t)T * sizeof *x), *y = malloc((size_t)(na * T) * sizeof *y),
           *b = malloc((size_t)(na * T) * sizeof *b);
    int rc = x && y && b ? 0 : 1;
    for (int w = 0; w < 2 && !rc; w++) {
        mcl_series se[MAX_AGENTS];
        for (int k = 0; k < na; k++) {
            for (int i = 0; i < T; i++) {
                x[i] = i + 1;
                mcl_ci95((w == 0 ? ag[k].upd : ag[k].per) + i, runs, T, &y[k * T + i], &b[k * T + i], NULL);
            }
            se[k] = (mcl_series){ag[k].name, x, y + k * T, T, b + k * T};
        }
        char path[4200], err[256], title[192];
        snprintf(path, sizeof path, "%s/%s", dir, file[w]);
        snprintf(title, sizeof title, "WCST: %s per rule (mean, band: 95%% CI, %d runs, clipped at 0)", ylab[w], runs);
        mcl_lines_spec ls;
        memset(&ls, 0, sizeof ls);
        ls.title = title;
        ls.xlabel = "task (rule) index";
        ls.ylabel = ylab[w];
        ls.ref_y = NAN;
        ls.band_floor0 = 1;
        if (mcl_plot_lines_ex(path, &ls, na, se, NULL, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl %s: %s\n", cmd, err);
            rc = 1;
        } else {
            printf("wrote %s\n", path);
        }
    }
    free(x);
    free(y);
    free(b);
    return rc;
}

/* The paper's Fig. 4: one panel (file) per metric, x = the stream's mean task length. */
static int online_figures(const char *dir, const char *domain, agent *ag, int na, int runs, const len_range *L, int nl)
{
    static const char *const file[3] = {"online-accuracy.png", "online-persev.png", "online-interference.png"};
    static const char *const ylab[3] = {"average task accuracy (%)", "perseveration error rate (%)",
                                        "interference error rate (%)"};
    double x[MAX_LENGTHS], y[MAX_AGENTS][MAX_LENGTHS], b[MAX_AGENTS][MAX_LENGTHS];
    int rc = 0;
    for (int l = 0; l < nl; l++) x[l] = 0.5 * (L[l].lo + L[l].hi);
    for (int w = 0; w < 3; w++) {
        mcl_series se[MAX_AGENTS];
        for (int k = 0; k < na; k++) {
            const double *v = w == 0 ? ag[k].acc : w == 1 ? ag[k].prate : ag[k].irate;
            for (int l = 0; l < nl; l++) {
                mcl_ci95(v + l * runs, runs, 1, &y[k][l], &b[k][l], NULL);
                y[k][l] *= 100;
                b[k][l] *= 100;
            }
            se[k] = (mcl_series){ag[k].name, x, y[k], nl, b[k]};
        }
        char path[4200], err[256], title[512];
        snprintf(path, sizeof path, "%s/%s", dir, file[w]);
        if (runs > 1)
            snprintf(title, sizeof title, "Online-%s test streams: %s (band: 95%% CI, %d runs, clipped to [0, 100])",
                     domain, ylab[w], runs);
        else
            snprintf(title, sizeof title, "Online-%s test streams: %s (1 run: no interval)", domain, ylab[w]);
        mcl_lines_spec ls;
        memset(&ls, 0, sizeof ls);
        ls.title = title;
        ls.xlabel = "mean task length of the stream (rounds)";
        ls.ylabel = ylab[w];
        ls.ref_y = w == 0 ? 20.0 : NAN;
        ls.ref_label = "chance (5-way)";
        ls.band_floor0 = 1; /* rates in %: an interval past 0 or 100 is drawn to the limit */
        ls.band_ceil_on = 1;
        ls.band_ceil = 100.0;
        if (mcl_plot_lines_ex(path, &ls, na, se, NULL, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl %s: %s\n", cmd, err);
            rc = 1;
        } else {
            printf("wrote %s\n", path);
        }
    }
    return rc;
}

/* ---------------------------------------------------------------- main */

static int parse_lengths(const char *s, len_range *L, int *n)
{
    *n = 0;
    while (*s) {
        int a, b, used = 0;
        if (sscanf(s, "%d-%d%n", &a, &b, &used) != 2 || a < 1 || b < a || b > 100000 || *n >= MAX_LENGTHS) return -1;
        L[(*n)++] = (len_range){a, b};
        s += used;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return *n > 0 ? 0 : -1;
}

/* One `metacl eval smn` run: the options, the agents, the protocol's sizes, the context. */
typedef struct smn_eval_run {
    smn_eval_opts o;
    agent ag[MAX_AGENTS];
    int na;
    int online;             /* the Online-X protocol (else WCST) */
    len_range L[MAX_LENGTHS];
    int nl;                 /* length ranges (online; 1 for WCST) */
    int T, runs;
    int64_t max_steps;
    mcl_ctx *ctx;
    char err[1024];
} smn_eval_run;

/* The agents, in command-line order (--ckpt: a Sparse-MetaNet checkpoint; --baseline: a
 * baseline, which sees the first checkpoint's config). 0, or the exit code after a message. */
static int read_agents(smn_eval_run *r)
{
    const smn_eval_opts *o = &r->o;
    mcl_smn_run smn_cfg;
    int have_smn = 0;
    const char *smn_path = NULL; /* the first --ckpt: the wcst baselines' config */
    for (int i = 0; i < o->n_agents; i++)
        if (!strcmp(o->agents[i].opt, "ckpt") && !have_smn) {
            const char *v = o->agents[i].value, *eq = strchr(v, '=');
            smn_path = eq ? eq + 1 : v;
            if (mcl_smn_run_from_ckpt(smn_path, &smn_cfg, r->err, sizeof r->err) != MCL_OK) {
                fprintf(stderr, "metacl %s: %s\n", cmd, r->err);
                return 1;
            }
            have_smn = 1;
        }
    for (int i = 0; i < o->n_agents; i++) {
        agent *a = &r->ag[r->na++];
        const char *v = o->agents[i].value;
        if (!strcmp(o->agents[i].opt, "baseline")) {
            int rc = parse_baseline(v, r->online, a, &smn_cfg, have_smn, r->err, sizeof r->err);
            if (rc) {
                fprintf(stderr, "metacl %s: %s\n", cmd, r->err);
                return rc;
            }
            continue;
        }
        const char *eq = strchr(v, '=');
        const char *path = eq && eq != v ? eq + 1 : v;
        snprintf(a->ckpt, sizeof a->ckpt, "%s", path);
        if (mcl_smn_run_from_ckpt(path, &a->cfg, r->err, sizeof r->err) != MCL_OK) {
            fprintf(stderr, "metacl %s: %s\n", cmd, r->err);
            return 1;
        }
        if (!a->cfg.model.fast) {
            fprintf(stderr, "metacl %s: --ckpt %s has no fast weights (model.fast = 0): give it as a --baseline\n", cmd, path);
            return 2;
        }
        if (eq && eq != v) snprintf(a->name, sizeof a->name, "%.*s", (int)(eq - v), v);
        else snprintf(a->name, sizeof a->name, "Sparse-MetaNet");
        a->o.agent = r->online ? MCL_SMN_AGENT_FAST_ONLY : MCL_SMN_AGENT_ALG1;
        a->o.optimizer = a->cfg.optimizer;
        a->o.lr = o->smn_lr; /* wcst: Algorithm 1 goes on (online: unused) */
        a->lr_given = 1;
    }
    /* --cache keys name the checkpoint each agent's weights or config come from by its hash */
    for (int k = 0; o->cache[0] && k < r->na; k++) {
        agent *a = &r->ag[k];
        const char *src = a->ckpt[0] ? a->ckpt : smn_path;
        snprintf(a->src_sha, sizeof a->src_sha, "default");
        if (src && mcl_sha256_file(src, a->src_sha, r->err, sizeof r->err) != MCL_OK) {
            fprintf(stderr, "metacl %s: %s\n", cmd, r->err);
            return 1;
        }
    }
    return 0;
}

/* Phase 1: the arguments and the agents; every agent fits the protocol (2 otherwise). */
static int smn_check_args(smn_eval_run *r, int argc, char **argv, int *done)
{
    const mcl_cli_cmd c = {.name = cmd, .synopsis = synopsis, .about = about, .opts = smn_eval_keys, .n_opts = N_KEYS};
    smn_eval_opts *o = &r->o;
    o->protocol = -1;
    mcl_cli_parsed parsed;
    int rc = mcl_cli_parse(&c, argc, argv, o, &parsed);
    if (rc != MCL_CLI_GO) {
        *done = 1;
        return rc;
    }
    if (o->protocol < 0) return fail_usage("--protocol is required (wcst or online)");
    r->online = o->protocol == 1;
    if (o->quiet) mcl_progress_set_quiet(1);
    r->nl = 1;
    if (r->online && parse_lengths(o->lengths, r->L, &r->nl))
        return fail_usage("--lengths: want A-B[,C-D...] with 1 <= A <= B");
    r->T = o->tasks ? o->tasks : r->online ? 400 : 30;
    r->runs = o->runs;
    r->max_steps = o->max_steps ? o->max_steps : (int64_t)200 * r->T;
    rc = read_agents(r);
    if (rc) return rc;
    if (r->na == 0) return fail_usage("give at least one --ckpt or --baseline");
    for (int k = 0; k < r->na; k++)
        if (r->ag[k].o.lr < 0.0f) r->ag[k].o.lr = o->smn_lr;
    for (int k = 0; k < r->na; k++) {
        const agent *a = &r->ag[k];
        if ((a->cfg.task == MCL_SMN_TASK_WCST) == r->online && a->o.agent != MCL_SMN_AGENT_ONLINE &&
            a->o.agent != MCL_SMN_AGENT_OFFLINE) {
            fprintf(stderr, "metacl %s: agent '%s' was trained for %s, not for this protocol\n", cmd, a->name,
                    a->cfg.task == MCL_SMN_TASK_WCST ? "wcst" : "images");
            return 2;
        }
    }
    if (!r->online)
        for (int k = 0; k < r->na; k++) r->ag[k].cfg.task = MCL_SMN_TASK_WCST;
    return 0;
}

/* Phase 2, one agent: its result arrays, the grid search of its learning rate when none was
 * given, then every run (online: every length range) recorded. */
static mcl_status evaluate_agent(smn_eval_run *r, agent *a)
{
    const int online = r->online, runs = r->runs, T = r->T, nl = r->nl;
    const smn_eval_opts *o = &r->o;
    const size_t nres = online ? (size_t)(nl * runs) : (size_t)(runs * T);
    a->upd = malloc(nres * sizeof *a->upd);
    a->per = malloc(nres * sizeof *a->per);
    a->acc = malloc(nres * sizeof *a->acc);
    a->prate = malloc(nres * sizeof *a->prate);
    a->irate = malloc(nres * sizeof *a->irate);
    a->solved = calloc((size_t)T, sizeof *a->solved);
    if (!a->upd || !a->per || !a->acc || !a->prate || !a->irate || !a->solved) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return MCL_ERR_OOM;
    }
    mcl_status st = MCL_OK;
    if (!a->lr_given && a->o.agent != MCL_SMN_AGENT_FAST_ONLY)
        st = grid_search(r->ctx, a, online, o, r->L, T, r->max_steps, r->err, sizeof r->err);
    char label[160];
    snprintf(label, sizeof label, "%s", a->name);
    mcl_progress_start(label, (int64_t)(online ? nl * runs : runs));
    for (int l = 0; l < nl && st == MCL_OK; l++)
        for (int k = 0; k < runs && st == MCL_OK; k++) {
            mcl_smn_online_result res;
            mcl_smn_run cfg = online ? online_cfg(a, o->data, o->data_dir[0] ? o->data_dir : NULL, 3, T, r->L[l]) : a->cfg;
            st = run_one(r->ctx, o->cache[0] ? o->cache : NULL, a, &cfg, (uint64_t)o->seed + (uint64_t)k, T,
                         online ? 0 : r->max_steps, o->round, &res, r->err, sizeof r->err);
            if (st != MCL_OK) break;
            a->seconds += res.seconds; /* the runs' own time: the same whether a run was kept in --cache or not */
            if (online) {
                online_summary(&res, &a->acc[l * runs + k], &a->prate[l * runs + k], &a->irate[l * runs + k]);
            } else {
                for (int i = 0; i < T; i++) {
                    const int ok = i < res.n_tasks && res.task[i].updates_to_solve >= 0;
                    /* a rule reached but not solved when the run ended: the updates spent
                     * on it, a lower bound (counted in the table's brackets) */
                    a->upd[k * T + i] = ok ? (double)res.task[i].updates_to_solve
                                        : i < res.n_tasks ? (double)res.task[i].steps : NAN;
                    a->per[k * T + i] = i < res.n_tasks ? (double)res.task[i].persev_errors : NAN;
                    a->solved[i] += ok;
                }
            }
            mcl_smn_online_result_free(&res);
            mcl_progress_update((int64_t)(l * runs + k + 1));
        }
    mcl_progress_finish();
    return st;
}

/* Phase 3: the tables (or --json) on stdout, --json-out's file (atomically: temp + fsync +
 * rename), --figures (rank 0). */
static int smn_report(smn_eval_run *r)
{
    const smn_eval_opts *o = &r->o;
    int rc = 0;
    if (o->json) json_out(stdout, r->ctx, r->ag, r->na, r->online, r->runs, r->T, r->L, r->nl);
    else if (r->online) online_tables(stdout, r->ag, r->na, r->runs, r->L, r->nl);
    else wcst_tables(stdout, r->ag, r->na, r->runs, r->T);
    if (o->json_out[0]) {
        char *buf = NULL;
        size_t blen = 0;
        FILE *mf = open_memstream(&buf, &blen);
        if (mf) {
            json_out(mf, r->ctx, r->ag, r->na, r->online, r->runs, r->T, r->L, r->nl);
            fclose(mf);
        }
        if (!mf || !buf || mcl_write_file_atomic(o->json_out, buf, blen, r->err, sizeof r->err) != MCL_OK) {
            fprintf(stderr, "metacl %s: cannot write %s: %s\n", cmd, o->json_out, mf ? r->err : "out of memory");
            rc = 1;
        }
        free(buf);
    }
    if (o->figures[0] && mcl_dist_rank() == 0) {
        if (mcl_mkdir_p(o->figures, r->err, sizeof r->err) != MCL_OK) {
            fprintf(stderr, "metacl %s: %s\n", cmd, r->err);
            rc = 1;
        } else if (r->online ? online_figures(o->figures, o->data, r->ag, r->na, r->runs, r->L, r->nl)
                             : wcst_figures(o->figures, r->ag, r->na, r->runs, r->T)) {
            rc = 1;
        }
    }
    return rc;
}

/* `metacl eval smn`: check arguments and read the agents -> evaluate each agent -> report. */
int mcl_cli_eval_smn(const mcl_family *fam, int argc, char **argv)
{
    (void)fam;
    smn_eval_run *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "metacl %s: out of memory\n", cmd);
        return 1;
    }
    int done = 0, rc = smn_check_args(r, argc, argv, &done);
    if (!done && rc == 0) rc = mcl_cli_open_ctx(r->o.backend, r->o.device, &r->ctx);
    if (!done && rc == 0) {
        mcl_status st = MCL_OK;
        for (int k = 0; k < r->na && st == MCL_OK; k++) st = evaluate_agent(r, &r->ag[k]);
        if (st != MCL_OK) {
            fprintf(stderr, "metacl %s: %s\n", cmd, r->err);
            rc = 1;
        } else {
            rc = smn_report(r);
        }
    }
    for (int k = 0; k < r->na; k++) {
        free(r->ag[k].upd);
        free(r->ag[k].per);
        free(r->ag[k].acc);
        free(r->ag[k].prate);
        free(r->ag[k].irate);
        free(r->ag[k].solved);
    }
    mcl_ctx_free(r->ctx);
    free(r);
    return rc;
}
