/* eval_lm.c — `metacl eval lm` (the three evaluations of a trained language model on the
 * shifting test stream: static, dynamic, Sparse-MetaNet) and `metacl sample lm` (text from
 * a prompt). doc/lm.md shows both.
 *
 * The stream: the test (or valid) parts of the corpus's domains in blocks of --block bytes,
 * the domains in a fixed shuffled order (the corpus's stream, text.h), so the domain switches
 * sit at known positions. Dynamic evaluation's learning rate and decay, and the write
 * probability of the Sparse-MetaNet mode, are chosen on the VALID stream (a logged grid
 * search, --tune-chars bytes each) unless given; the test stream is never used to choose. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "lm_data.h"
#include "lm_text.h"
#include "ops.h"
#include "plot.h"
#include "progress.h"
#include "rng.h"
#include "util.h"

typedef struct lm_eval_opts {
    char ckpt[4096], modes[128], split[16], figures[4096], data_dir[4096], domains[512], json_out[4096];
    char backend[64], device[256];
    int64_t block, max_chars, seg, mem, tune_chars;
    float lr, decay, p, gamma, beta1, beta2;
    int seed, json, quiet, reset_every;
} lm_eval_opts;

static const mcl_key lm_eval_keys[] = {
    MCL_OPT_STR("ckpt", 0, lm_eval_opts, ckpt, NULL, "FILE", "(required) a language-model checkpoint"),
    MCL_OPT_STR("mode", 0, lm_eval_opts, modes, "static,dynamic,smn", "M,...",
                "static, dynamic, smn (fast weights only; needs a model with them)"),
    MCL_OPT_STR("split", 0, lm_eval_opts, split, "test", "test|valid", "which part of the domains makes the stream"),
    MCL_OPT_INT("block", 0, lm_eval_opts, block, 1, 1000000000, NULL, "N",
                "bytes per domain visit (default: the checkpoint's data.eval_block)"),
    MCL_OPT_INT("max-chars", 0, lm_eval_opts, max_chars, 0, 2000000000, "0", "N", "predict at most N bytes (0 = all)"),
    MCL_OPT_INT("seg", 0, lm_eval_opts, seg, 1, 65536, NULL, "N", "bytes per segment (default: smn.seg_len)"),
    MCL_OPT_INT("mem", 0, lm_eval_opts, mem, 0, 65536, "0", "N", "memory rows (0 = the model's mem_len)"),
    MCL_OPT_FLOAT("lr", 0, lm_eval_opts, lr, 0, 10, "0", "LR", "dynamic: SGD learning rate (0 = grid search on valid)"),
    MCL_OPT_FLOAT("decay", 0, lm_eval_opts, decay, -1, 1, "-1", "D",
                  "dynamic: pull toward the trained weights per segment (-1 = grid search)"),
    MCL_OPT_FLOAT("p", 0, lm_eval_opts, p, 0, 1, "0", "P", "smn: write probability (0 = grid search on valid)"),
    MCL_OPT_FLOAT("gamma", 0, lm_eval_opts, gamma, -1, 0.999999, "-1", "G",
                  "smn: decay of the gradient average (-1: the checkpoint's smn.eval_gamma)"),
    MCL_OPT_FLOAT("beta1", 0, lm_eval_opts, beta1, -1000, 100, "-1000", "B",
                  "smn: weight of G in the average (-1000: the checkpoint's smn.eval_beta1)"),
    MCL_OPT_FLOAT("beta2", 0, lm_eval_opts, beta2, -1000, 100, "-1000", "B",
                  "smn: weight of G beside the average (-1000: the checkpoint's smn.eval_beta2)"),
    MCL_OPT_INT("reset-every", 0, lm_eval_opts, reset_every, 0, 1000000000, "0", "K",
                "smn: fast weights to 0 every K segments, as in training (0 = they accumulate)"),
    MCL_OPT_INT("tune-chars", 0, lm_eval_opts, tune_chars, 1000, 1000000000, "20000", "N",
                "bytes of the valid stream per grid point"),
    MCL_OPT_INT("seed", 0, lm_eval_opts, seed, -1, 2000000000, "-1", "S",
                "the streams' domain order (default: the checkpoint's data.seed)"),
    MCL_OPT_STR("domains", 0, lm_eval_opts, domains, NULL, "D,...", "domains of the stream (default: the checkpoint's)"),
    MCL_OPT_STR("data-dir", 0, lm_eval_opts, data_dir, NULL, "DIR", "the text corpus (default: the checkpoint's)"),
    MCL_OPT_STR("figures", 0, lm_eval_opts, figures, NULL, "DIR", "write the switch curve as PNG"),
    MCL_OPT_FLAG("json", 0, lm_eval_opts, json, "print JSON instead of the Markdown tables"),
    MCL_OPT_STR("json-out", 0, lm_eval_opts, json_out, NULL, "FILE", "also write the JSON to FILE"),
    MCL_OPT_FLAG("quiet", 0, lm_eval_opts, quiet, "no progress line"),
    MCL_OPT_BACKEND(lm_eval_opts, backend),
    MCL_OPT_DEVICE(lm_eval_opts, device),
};
#define N_KEYS ((int)(sizeof lm_eval_keys / sizeof lm_eval_keys[0]))

static const char synopsis[] = "--ckpt FILE [--mode static,dynamic,smn] [--split test|valid] [--block N]\n"
                               "... [--max-chars N] [--lr LR] [--decay D] [--p P] [--figures DIR] [--json]";
static const char about[] =
    "Bits per byte of a language model on a stream whose domain changes every --block bytes:\n"
    "static (frozen), dynamic evaluation (an SGD step on the slow weights after each segment) and\n"
    "Sparse-MetaNet (fast weights written after each segment, slow weights frozen); overall, per\n"
    "domain and against the bytes since the last switch, with bytes per second of each mode.";

#define MAX_MODES 3
static const char *const mode_names[MAX_MODES] = {"static", "dynamic", "smn"};

typedef struct mode_run {
    int on;
    mcl_lm_eval_opts o;
    mcl_lm_eval_result r;
    char note[256];
} mode_run;

static void on_progress(void *arg, int64_t done, int64_t total)
{
    (void)arg, (void)total;
    mcl_progress_update(done);
}

/* One evaluation with a progress line. */
static mcl_status run_one(mcl_lm *m, const mcl_lm_stream *s, mcl_lm_eval_opts *o, const char *label,
                          mcl_lm_eval_result *r, char *err, size_t len)
{
    const int64_t total = o->max_chars > 0 && o->max_chars < s->n - 1 ? o->max_chars : s->n - 1;
    mcl_progress_start(label, total);
    o->progress = on_progress;
    mcl_status st = mcl_lm_evaluate(m, s, o, r, err, len);
    mcl_progress_finish();
    return st;
}

/* Grid search of one mode's hyperparameters on the valid stream (lowest bpc). */
static mcl_status tune(mcl_lm *m, const mcl_lm_stream *valid, mode_run *mr, int tune_lr, int tune_decay, int tune_p,
                       const mcl_metanet_hyper *alt_write, int64_t chars, FILE *log, char *err, size_t len)
{
    static const float lrs[] = {1e-4f, 1e-3f, 3e-3f, 1e-2f, 3e-2f, 1e-1f, 3e-1f}, decays[] = {0.0f, 1e-3f},
                       ps[] = {0.01f, 0.02f, 0.05f, 0.1f, 0.3f, 0.5f};
    const int nl = tune_lr ? 7 : 1, nd = tune_decay ? 2 : 1, np = tune_p ? 6 : 1, nw = alt_write ? 2 : 1;
    const int grid = nl * nd * np * nw > 1; /* everything given: no valid pass at all */
    double best = INFINITY;
    mcl_lm_eval_opts keep = mr->o;
    for (int a = 0; a < nl && grid; a++)
        for (int b = 0; b < nd * nw; b++)
            for (int c = 0; c < np; c++) {
                mcl_lm_eval_opts o = mr->o;
                if (tune_lr) o.lr = lrs[a];
                if (tune_decay) o.decay = decays[b % nd];
                if (b / nd == 1) {
                    o.h.gamma = alt_write->gamma;
                    o.h.beta1 = alt_write->beta1;
                    o.h.beta2 = alt_write->beta2;
                }
                if (tune_p) o.h.p = ps[c];
                o.max_chars = chars;
                mcl_lm_eval_result r;
                char label[96];
                snprintf(label, sizeof label, "tuning %s", mode_names[o.mode]);
                mcl_status st = run_one(m, valid, &o, label, &r, err, len);
                if (st != MCL_OK) return st;
                const double bpc = r.bits / (double)r.chars;
                if (o.mode == MCL_LM_DYNAMIC)
                    fprintf(log, "grid %s: lr %g decay %g -> valid %.4f bpc\n", mode_names[o.mode], (double)o.lr,
                            (double)o.decay, bpc);
                else
                    fprintf(log, "grid %s: p %g, gamma %g, beta %g/%g -> valid %.4f bpc\n", mode_names[o.mode],
                            (double)o.h.p, (double)o.h.gamma, (double)o.h.beta1, (double)o.h.beta2, bpc);
                if (bpc < best) best = bpc, keep = o;
                mcl_lm_eval_result_free(&r);
            }
    keep.max_chars = mr->o.max_chars;
    mr->o = keep;
    if (mr->o.mode == MCL_LM_DYNAMIC)
        snprintf(mr->note, sizeof mr->note, "lr %g, decay %g%s", (double)mr->o.lr, (double)mr->o.decay,
                 tune_lr || tune_decay ? " (chosen on valid)" : "");
    else {
        char rs[64] = "";
        if (mr->o.reset_every) snprintf(rs, sizeof rs, ", reset every %d segments", mr->o.reset_every);
        snprintf(mr->note, sizeof mr->note, "p %g, gamma %g, beta %g/%g%s%s", (double)mr->o.h.p, (double)mr->o.h.gamma,
                 (double)mr->o.h.beta1, (double)mr->o.h.beta2, rs, tune_p || alt_write ? " (chosen on valid)" : "");
    }
    return MCL_OK;
}

static double ratio(double a, int64_t n) { return n > 0 ? a / (double)n : NAN; }

/* The blocks an evaluation of max_chars predicted bytes reaches (0 = the whole stream). */
static int blocks_read(const mcl_lm_stream *s, int64_t max_chars)
{
    const int64_t total = max_chars > 0 && max_chars < s->n - 1 ? max_chars : s->n - 1;
    int b = 0;
    while (b < s->n_blocks && s->block_start[b] <= total) b++;
    return b;
}

static void print_tables(FILE *f, const mode_run *mr, const lm_corpus *c, const lm_stream *s, int64_t max_chars)
{
    fprintf(f, "| mode | bits per byte | bytes/s | settings |\n|---|---:|---:|---|\n");
    for (int i = 0; i < MAX_MODES; i++)
        if (mr[i].on)
            fprintf(f, "| %s | %.4f | %.0f | %s |\n", mode_names[i], ratio(mr[i].r.bits, mr[i].r.chars),
                    (double)mr[i].r.chars / mr[i].r.seconds, mr[i].note);
    fprintf(f, "\nPer domain (bits per byte):\n\n| domain | bytes |");
    for (int i = 0; i < MAX_MODES; i++)
        if (mr[i].on) fprintf(f, " %s |", mode_names[i]);
    fprintf(f, "\n|---|---:|");
    for (int i = 0; i < MAX_MODES; i++)
        if (mr[i].on) fprintf(f, "---:|");
    fprintf(f, "\n");
    const mcl_lm_eval_result *r0 = NULL;
    for (int i = 0; i < MAX_MODES && !r0; i++)
        if (mr[i].on) r0 = &mr[i].r;
    for (int d = 0; d < c->n && r0; d++) {
        if (!r0->dom_chars[d]) continue;
        fprintf(f, "| %s | %lld |", c->name[d], (long long)r0->dom_chars[d]);
        for (int i = 0; i < MAX_MODES; i++)
            if (mr[i].on) fprintf(f, " %.4f |", ratio(mr[i].r.dom_bits[d], mr[i].r.dom_chars[d]));
        fprintf(f, "\n");
    }
    fprintf(f, "\nAgainst the bytes since the last domain switch (%d blocks):\n\n| bytes since the switch | bytes |",
            blocks_read(&s->s, max_chars));
    for (int i = 0; i < MAX_MODES; i++)
        if (mr[i].on) fprintf(f, " %s |", mode_names[i]);
    fprintf(f, "\n|---|---:|");
    for (int i = 0; i < MAX_MODES; i++)
        if (mr[i].on) fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int b = 0; b < MCL_LM_CURVE_BINS && r0; b++) {
        if (!r0->curve_chars[b]) continue;
        if (r0->curve_edge[b + 1] == INT64_MAX) fprintf(f, "| %lld+ |", (long long)r0->curve_edge[b]);
        else fprintf(f, "| %lld-%lld |", (long long)r0->curve_edge[b], (long long)r0->curve_edge[b + 1] - 1);
        fprintf(f, " %lld |", (long long)r0->curve_chars[b]);
        for (int i = 0; i < MAX_MODES; i++)
            if (mr[i].on) fprintf(f, " %.4f |", ratio(mr[i].r.curve_bits[b], mr[i].r.curve_chars[b]));
        fprintf(f, "\n");
    }
}

static void write_json(FILE *f, const mode_run *mr, const lm_corpus *c, const lm_stream *s, const lm_eval_opts *o,
                       const mcl_ctx *ctx)
{
    mcl_json j;
    mcl_json_init(&j, f);
    mcl_json_begin_obj(&j, NULL);
    mcl_cli_json_provenance_begin(&j, ctx);
    mcl_json_str(&j, "ckpt", o->ckpt);
    mcl_json_str(&j, "split", o->split);
    mcl_json_int(&j, "stream_bytes", (long long)s->s.n);
    mcl_json_int(&j, "blocks", s->s.n_blocks);
    mcl_json_int(&j, "blocks_read", blocks_read(&s->s, o->max_chars));
    mcl_json_end_obj(&j);
    mcl_json_begin_arr(&j, "domains");
    for (int d = 0; d < c->n; d++) mcl_json_str(&j, NULL, c->name[d]);
    mcl_json_end_arr(&j);
    mcl_json_begin_arr(&j, "curve_edges");
    for (int b = 0; b < MCL_LM_CURVE_BINS; b++) mcl_json_int(&j, NULL, (long long)mr[0].r.curve_edge[b]);
    mcl_json_end_arr(&j);
    mcl_json_begin_obj(&j, "modes");
    for (int i = 0; i < MAX_MODES; i++) {
        if (!mr[i].on) continue;
        const mcl_lm_eval_result *r = &mr[i].r;
        mcl_json_begin_obj(&j, mode_names[i]);
        mcl_json_num(&j, "bpc", ratio(r->bits, r->chars), 5);
        mcl_json_int(&j, "bytes", (long long)r->chars);
        mcl_json_num(&j, "seconds", r->seconds, 2);
        mcl_json_num(&j, "bytes_per_s", (double)r->chars / r->seconds, 1);
        mcl_json_str(&j, "settings", mr[i].note);
        if (i == MCL_LM_DYNAMIC) {
            mcl_json_num(&j, "lr", mr[i].o.lr, 8);
            mcl_json_num(&j, "decay", mr[i].o.decay, 6);
        }
        if (i == MCL_LM_SMN) mcl_json_num(&j, "p", mr[i].o.h.p, 3);
        mcl_json_begin_obj(&j, "domain_bpc");
        for (int d = 0; d < c->n; d++)
            if (r->dom_chars[d]) mcl_json_num(&j, c->name[d], ratio(r->dom_bits[d], r->dom_chars[d]), 5);
        mcl_json_end_obj(&j);
        double v[MCL_LM_CURVE_BINS];
        for (int b = 0; b < MCL_LM_CURVE_BINS; b++) v[b] = ratio(r->curve_bits[b], r->curve_chars[b]);
        mcl_json_num_array(&j, "curve_bpc", v, MCL_LM_CURVE_BINS, 5);
        mcl_json_end_obj(&j);
    }
    mcl_json_end_obj(&j);
    mcl_json_end_obj(&j);
    mcl_json_finish(&j);
}

/* bpc against log10(bytes since the switch), one curve per mode (bins with bytes only). */
static int write_figure(const char *dir, const mode_run *mr, char *err, size_t len)
{
    double x[MAX_MODES][MCL_LM_CURVE_BINS], y[MAX_MODES][MCL_LM_CURVE_BINS];
    mcl_series sr[MAX_MODES];
    int ns = 0;
    for (int i = 0; i < MAX_MODES; i++) {
        if (!mr[i].on) continue;
        const mcl_lm_eval_result *r = &mr[i].r;
        int n = 0;
        for (int b = 0; b < MCL_LM_CURVE_BINS; b++) {
            if (!r->curve_chars[b]) continue;
            const double lo = (double)r->curve_edge[b] + 1.0;
            const double hi = r->curve_edge[b + 1] == INT64_MAX ? 2.0 * lo : (double)r->curve_edge[b + 1];
            x[ns][n] = log10(sqrt(lo * hi));
            y[ns][n++] = ratio(r->curve_bits[b], r->curve_chars[b]);
        }
        sr[ns] = (mcl_series){mode_names[i], x[ns], y[ns], n, NULL};
        ns++;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/lm-switch-curve.png", dir);
    /* the x axis is log10(bytes); dotted lines at 100 B and 1 kB say so in bytes */
    static const double marks[] = {2.0, 3.0};
    static const char *const mark_labels[] = {"100 B", "1 kB"};
    mcl_lines_spec spec = {.title = "Bits per byte after a domain switch",
                           .xlabel = "bytes since the switch (log10; each point = one bin of the table)",
                           .ylabel = "bits per byte",
                           .ref_y = NAN,
                           .n_markers = 2,
                           .marker_x = marks,
                           .marker_labels = mark_labels};
    if (mcl_plot_lines_ex(path, &spec, ns, sr, NULL, err, len) != MCL_OK) return 1;
    fprintf(stderr, "metacl eval lm: wrote %s\n", path);
    return 0;
}

/* Why this function is long (~135 lines): one straight pass of `eval lm` (options and
 * modes, the checkpoint, the stream, the evaluations asked for, the report); it is the
 * next candidate for the phases over one run struct that eval_acl.c, eval_smn.c and
 * train_cmd.c use. */
int mcl_cli_eval_lm(const mcl_family *fam, int argc, char **argv)
{
    (void)fam;
    const mcl_cli_cmd cmd = {.name = "eval lm", .synopsis = synopsis, .about = about, .opts = lm_eval_keys,
                             .n_opts = N_KEYS};
    static lm_eval_opts o;
    mcl_cli_parsed p;
    int rc = mcl_cli_parse(&cmd, argc, argv, &o, &p);
    if (rc != MCL_CLI_GO) return rc;
    if (!o.ckpt[0]) return mcl_cli_usage_error(&cmd, "--ckpt FILE is required");
    if (strcmp(o.split, "test") && strcmp(o.split, "valid"))
        return mcl_cli_usage_error(&cmd, "--split %s: test or valid", o.split);
    mode_run mr[MAX_MODES];
    memset(mr, 0, sizeof mr);
    {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", o.modes);
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            int k = -1;
            for (int i = 0; i < MAX_MODES; i++)
                if (!strcmp(t, mode_names[i])) k = i;
            if (k < 0) return mcl_cli_usage_error(&cmd, "--mode: unknown mode '%s' (static, dynamic, smn)", t);
            mr[k].on = 1;
        }
    }
    char path[4200], err[1024];
    if (o.figures[0] && mcl_mkdir_p(o.figures, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl eval lm: %s\n", err);
        return 1;
    }
    mcl_progress_set_quiet(o.quiet);
    const char *ck = mcl_cli_installed_file(o.ckpt, "checkpoints", ".ckpt", path, sizeof path);
    mcl_ctx *ctx = NULL;
    if ((rc = mcl_cli_open_ctx(o.backend, o.device, &ctx)) != 0) return rc;
    mcl_lm *m = NULL;
    mcl_lm_run cfg;
    lm_corpus corpus;
    lm_stream test, valid;
    memset(&corpus, 0, sizeof corpus);
    memset(&test, 0, sizeof test);
    memset(&valid, 0, sizeof valid);
    mcl_status st = mcl_lm_open(ctx, ck, &m, &cfg, NULL, err, sizeof err);
    if (st == MCL_OK && mr[MCL_LM_SMN].on && !m->mn) {
        if (mcl_cli_given(&cmd, &p, "mode")) {
            fprintf(stderr, "metacl eval lm: %s has no fast weights: mode smn is not possible\n", ck);
            rc = 2;
            goto out;
        }
        mr[MCL_LM_SMN].on = 0; /* the default list on a plain model */
    }
    const uint64_t seed = o.seed >= 0 ? (uint64_t)o.seed : cfg.data_seed;
    const int64_t block = o.block > 0 ? o.block : cfg.eval_block;
    if (st == MCL_OK)
        st = lm_corpus_open(o.data_dir[0] ? o.data_dir : cfg.data_dir, o.domains[0] ? o.domains : cfg.domains, &corpus,
                            err, sizeof err);
    if (st == MCL_OK) st = lm_corpus_stream(&corpus, o.split, block, seed, &test, err, sizeof err);
    if (st == MCL_OK) st = lm_corpus_stream(&corpus, "valid", block, seed, &valid, err, sizeof err);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl eval lm: %s\n", err);
        rc = 1;
        goto out;
    }
    FILE *log = o.json ? stderr : stdout;
    fprintf(log, "stream: the %s parts of %d domains, blocks of %lld bytes, %lld bytes in %d blocks", o.split,
            corpus.n, (long long)block, (long long)test.s.n, test.s.n_blocks);
    if (o.max_chars) fprintf(log, "; --max-chars %lld reads %d of them", (long long)o.max_chars,
                             blocks_read(&test.s, o.max_chars));
    fprintf(log, "\n");
    for (int i = 0; i < MAX_MODES && st == MCL_OK; i++) {
        if (!mr[i].on) continue;
        mcl_lm_eval_opts_default(&mr[i].o);
        mr[i].o.mode = (mcl_lm_mode)i;
        mr[i].o.seg_len = o.seg > 0 ? o.seg : cfg.seg_len;
        mr[i].o.mem_rows = o.mem;
        mr[i].o.max_chars = o.max_chars;
        mr[i].o.h = cfg.eval_h;
        if (i == MCL_LM_DYNAMIC) {
            mr[i].o.lr = o.lr;
            mr[i].o.decay = o.decay >= 0 ? o.decay : 0;
            st = tune(m, &valid.s, &mr[i], o.lr == 0, o.decay < 0, 0, NULL, o.tune_chars, log, err, sizeof err);
        } else if (i == MCL_LM_SMN) {
            if (o.p > 0) mr[i].o.h.p = o.p;
            if (o.gamma >= 0) mr[i].o.h.gamma = o.gamma;
            if (o.beta1 > -1000) mr[i].o.h.beta1 = o.beta1;
            if (o.beta2 > -1000) mr[i].o.h.beta2 = o.beta2;
            mr[i].o.reset_every = o.reset_every;
            /* without --gamma/--beta1/--beta2 the grid also tries training's write (the
             * meta-learner's own input distribution) beside the checkpoint's evaluation write */
            const int w_given = o.gamma >= 0 || o.beta1 > -1000 || o.beta2 > -1000;
            st = tune(m, &valid.s, &mr[i], 0, 0, o.p == 0, w_given ? NULL : &cfg.train_h, o.tune_chars, log, err,
                      sizeof err);
        } else {
            snprintf(mr[i].note, sizeof mr[i].note, "frozen weights");
        }
        if (st == MCL_OK) st = run_one(m, &test.s, &mr[i].o, mode_names[i], &mr[i].r, err, sizeof err);
        if (st == MCL_OK)
            fprintf(log, "%s: %.4f bits per byte over %lld bytes (%.0f bytes/s)\n", mode_names[i],
                    ratio(mr[i].r.bits, mr[i].r.chars), (long long)mr[i].r.chars,
                    (double)mr[i].r.chars / mr[i].r.seconds);
    }
    if (st != MCL_OK) {
        fprintf(stderr, "metacl eval lm: %s\n", err);
        rc = 1;
        goto out;
    }
    if (o.json) write_json(stdout, mr, &corpus, &test, &o, ctx);
    else print_tables(stdout, mr, &corpus, &test, o.max_chars);
    if (o.json_out[0]) {
        char *buf = NULL;
        size_t n = 0;
        FILE *mf = open_memstream(&buf, &n);
        if (mf) {
            write_json(mf, mr, &corpus, &test, &o, ctx);
            fclose(mf);
            if (mcl_write_file_atomic(o.json_out, buf, n, err, sizeof err) != MCL_OK) {
                fprintf(stderr, "metacl eval lm: %s\n", err);
                rc = 1;
            }
        }
        free(buf);
    }
    if (rc == 0 && o.figures[0] && write_figure(o.figures, mr, err, sizeof err)) {
        fprintf(stderr, "metacl eval lm: %s\n", err);
        rc = 1;
    }
out:
    for (int i = 0; i < MAX_MODES; i++) mcl_lm_eval_result_free(&mr[i].r);
    lm_stream_free(&test);
    lm_stream_free(&valid);
    lm_corpus_close(&corpus);
    mcl_lm_free(m);
    mcl_ctx_free(ctx);
    return rc;
}

/* ------------------------------------------------------------------ sample */

typedef struct lm_sample_opts {
    char ckpt[4096], prompt[4096], backend[64], device[256];
    int64_t chars;
    float temperature;
    int seed;
} lm_sample_opts;

static const mcl_key lm_sample_keys[] = {
    MCL_OPT_STR("ckpt", 0, lm_sample_opts, ckpt, NULL, "FILE", "(required) a language-model checkpoint"),
    MCL_OPT_STR("prompt", 0, lm_sample_opts, prompt, "The ", "TEXT", "text the model continues"),
    MCL_OPT_INT("chars", 'n', lm_sample_opts, chars, 1, 1000000, "400", "N", "bytes to generate"),
    MCL_OPT_FLOAT("temperature", 't', lm_sample_opts, temperature, 0, 100, "0.8", "T",
                  "softmax temperature (0 = always the likeliest byte)"),
    MCL_OPT_INT("seed", 0, lm_sample_opts, seed, 0, 2000000000, "1", "S", "seed of the draws"),
    MCL_OPT_BACKEND(lm_sample_opts, backend),
    MCL_OPT_DEVICE(lm_sample_opts, device),
};

int mcl_cli_sample_lm(int argc, char **argv)
{
    const mcl_cli_cmd cmd = {.name = "sample lm",
                             .synopsis = "--ckpt FILE [--prompt TEXT] [-n N] [-t T] [--seed S]",
                             .about = "Text from a language model: the prompt, then N bytes drawn one at a time.",
                             .opts = lm_sample_keys,
                             .n_opts = (int)(sizeof lm_sample_keys / sizeof lm_sample_keys[0])};
    static lm_sample_opts o;
    mcl_cli_parsed p;
    int rc = mcl_cli_parse(&cmd, argc, argv, &o, &p);
    if (rc != MCL_CLI_GO) return rc;
    if (!o.ckpt[0]) return mcl_cli_usage_error(&cmd, "--ckpt FILE is required");
    if (!o.prompt[0]) return mcl_cli_usage_error(&cmd, "--prompt: give at least one byte");
    char path[4200], err[1024];
    const char *ck = mcl_cli_installed_file(o.ckpt, "checkpoints", ".ckpt", path, sizeof path);
    mcl_ctx *ctx = NULL;
    if ((rc = mcl_cli_open_ctx(o.backend, o.device, &ctx)) != 0) return rc;
    mcl_lm *m = NULL;
    mcl_lm_run cfg;
    uint8_t *out = malloc((size_t)o.chars);
    err[0] = 0;
    mcl_status st = out ? mcl_lm_open(ctx, ck, &m, &cfg, NULL, err, sizeof err) : MCL_ERR_OOM;
    if (st == MCL_OK && strlen(o.prompt) > 0)
        st = mcl_lm_sample(m, (const uint8_t *)o.prompt, (int64_t)strlen(o.prompt), o.chars, o.temperature,
                           (uint64_t)o.seed, out, err, sizeof err);
    if (st == MCL_OK) {
        fputs(o.prompt, stdout);
        fwrite(out, 1, (size_t)o.chars, stdout);
        putchar('\n');
    }
    if (st != MCL_OK) {
        fprintf(stderr, "metacl sample lm: %s\n", err[0] ? err : mcl_ctx_error(ctx));
        rc = 1;
    }
    free(out);
    mcl_lm_free(m);
    mcl_ctx_free(ctx);
    return rc;
}
