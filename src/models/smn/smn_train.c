/* smn_train.c — Sparse Meta Networks on the training harness (see smn_train.h): config keys,
 * the environments (WCST episodes, Online-X rounds, class batches), the window of
 * Algorithm 1, checkpoints and the family table. The online runs of the evaluation
 * protocols, which drive the same environment steps, are in smn_online.c (smn_env.h). */
#define _POSIX_C_SOURCE 200809L
#include "smn_env.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "learner.h"
#include "params.h"
#include "rng.h"
#include "sampler.h"
#include "tensor_impl.h"
#include "util.h"
#include "wcst.h"

#define fail mcl_errbuf

#define STREAM_DATA 5000000ULL          /* the Online-X stream's draw           */
#define STREAM_BATCH 6000000ULL         /* + step: the class batches            */
#define STREAM_ACT 0x534d4e4143540000ULL /* the WCST agent's actions (by card)   */
#define MAX_SNAPSHOT 65536              /* WCST snapshot values in a checkpoint  */
#define REC_FIELDS 7                    /* counts of mcl_smn_task_rec            */

/* ====================================================================== config */

#define C mcl_smn_config
static const mcl_key model_keys[] = {
    MCL_KEY_ENUM("arch", C, arch, "mlp|resnet", "mlp", "mlp: the WCST agent; resnet: the Online-X classifier"),
    MCL_KEY_INT("in_dim", C, in_dim, 1, 4096, "12", "mlp input width (WCST cards: 12)"),
    MCL_KEY_INT("hidden", C, hidden, 1, 8192, "256", "mlp hidden width"),
    MCL_KEY_INT("layers", C, layers, 1, MCL_SMN_MAX_WEIGHTS - 4, "2", "mlp hidden layers"),
    MCL_KEY_INT("width", C, width, 2, 256, "16", "resnet base width w (blocks w, 1.5w, 2w, 4w; even)"),
    MCL_KEY_INT("n_out", C, n_out, 2, 100000, "4", "actions (WCST: 4) or classes"),
    MCL_KEY_BOOL("value_head", C, value_head, "1", "mlp: a value head (A2C)"),
    MCL_KEY_BOOL("fast", C, fast, "1", "sparse fast weights (0: a plain network, the baselines)"),
    MCL_KEY_BOOL("fast_head", C, fast_head, "1", "the heads carry fast weights too"),
    MCL_KEY_INT("k", C, k, 1, MCL_METANET_MAX_K, "3", "truncation length k of Algorithm 1 (>= 2 with fast weights)"),
    MCL_KEY_FLOAT_LO_OPEN("p", C, train_h.p, 0, 1, "0.3", "training: write probability of an element"),
    MCL_KEY_FLOAT_OPEN("gamma", C, train_h.gamma, 0, 1, "0.9", "training: decay of the gradient average"),
    MCL_KEY_FLOAT("beta1", C, train_h.beta1, -100, 100, "0.5", "training: weight of G in the average"),
    MCL_KEY_FLOAT("beta2", C, train_h.beta2, -100, 100, "0.5", "training: weight of G beside the average"),
    MCL_KEY_FLOAT_LO_OPEN("eval_p", C, eval_h.p, 0, 1, "0.3", "evaluation: write probability"),
    MCL_KEY_FLOAT_OPEN("eval_gamma", C, eval_h.gamma, 0, 1, "0.9", "evaluation: decay of the gradient average"),
    MCL_KEY_FLOAT("eval_beta1", C, eval_h.beta1, -100, 100, "0.5", "evaluation: weight of G in the average"),
    MCL_KEY_FLOAT("eval_beta2", C, eval_h.beta2, -100, 100, "0.5", "evaluation: weight of G beside the average"),
    MCL_KEY_BOOL("reset", C, reset, "0", "fast weights to 0 at every truncation (else they accumulate)"),
    MCL_KEY_INT("meta_hidden", C, meta_hidden, 1, 4096, "20", "hidden units of each meta-learner g_phi"),
    MCL_KEY_U64("seed", C, seed, "1", "initialization and write masks"),
};
#undef C
#define N_MODEL_KEYS ((int)(sizeof model_keys / sizeof model_keys[0]))

#define R mcl_smn_run
static const mcl_key run_keys[] = {
    MCL_KEY_ENUM("task", R, task, "wcst|onlinex|classes", "wcst",
                 "wcst: the WCST agent; onlinex: an Online-X stream; classes: pretraining on the split's classes"),
    MCL_KEY_ENUM("optimizer", R, optimizer, "adam|rmsprop|sgd", "adam", "optimizer of the slow weights and phi"),
    MCL_KEY_U64("wcst.seed", R, env_seed, "1", "the WCST environment's cards and rules"),
    MCL_KEY_INT("wcst.episode_len", R, episode_len, 1, 4096, "16", "cards per episode"),
    MCL_KEY_INT("wcst.solve_episodes", R, solve_episodes, 1, 100, "3", "consecutive perfect episodes that solve a rule"),
    MCL_KEY_INT("wcst.switch_within", R, switch_within, 1, 100000, "50", "the rule switches 1..this many episodes after the solve"),
    MCL_KEY_FLOAT("wcst.reward_correct", R, reward_correct, -100, 100, "1", "reward of a correct sort"),
    MCL_KEY_FLOAT("wcst.reward_wrong", R, reward_wrong, -100, 100, "-1", "reward of a wrong sort"),
    MCL_KEY_FLOAT("a2c.value_coef", R, value_coef, 0, 100, "0.5", "weight of the value loss"),
    MCL_KEY_FLOAT("a2c.entropy", R, entropy_coef, 0, 100, "0.01", "weight of the entropy bonus"),
    MCL_KEY_STR("data.source", R, source, "hanzi", "data set (prepared name, pngdir:, idx:)"),
    MCL_KEY_STR("data.dir", R, data_dir, "", "prepared-data directory (\"\" = $METACL_DATA or data/cache)"),
    MCL_KEY_ENUM("data.split", R, split, "all|train|val|test", "train", "which split's classes and images"),
    MCL_KEY_BOOL("data.normalize", R, normalize, "1", "images standardized with the set's mean/std"),
    MCL_KEY_INT("stream.tasks", R, n_tasks, 1, 1 << 20, "2000", "Online-X tasks in the stream"),
    MCL_KEY_INT("stream.len_min", R, len_min, 1, 100000, "15", "rounds of a task, at least"),
    MCL_KEY_INT("stream.len_max", R, len_max, 1, 100000, "30", "rounds of a task, at most"),
    MCL_KEY_INT("stream.kept", R, n_kept, 0, 100, "2", "classes kept with their label from the previous task"),
    MCL_KEY_INT("stream.persev", R, n_persev, 0, 100, "1", "classes of the previous task under a new label"),
    MCL_KEY_U64("stream.seed", R, data_seed, "1", "the stream's draw"),
};
#undef R

static const mcl_key_group model_group = {"model.", model_keys, N_MODEL_KEYS, offsetof(mcl_smn_run, model)};
static const mcl_key_group run_group = {"", run_keys, (int)(sizeof run_keys / sizeof run_keys[0]), 0};
static const mcl_key_group *const smn_groups[] = {&model_group, &run_group};

static void smn_cfg_default(void *fcfg, mcl_train_cfg *t)
{
    (void)fcfg;
    t->steps = 0;
    t->batch = 32;
    t->lr = 1e-3f;
    t->val_every = 0;
    t->log_every = 10;
    t->ckpt_every = 200;
}

static int64_t smn_total_steps(const void *fcfg, const mcl_train_cfg *t)
{
    const mcl_smn_run *c = fcfg;
    (void)t;
    if (c->task != MCL_SMN_TASK_ONLINEX) return 0; /* wcst and classes: train.steps must be set */
    /* the stream's rounds are drawn at create; the fewest it can have, in whole windows */
    return (int64_t)c->n_tasks * c->len_min / mcl_smn_window_len(&c->model);
}

static mcl_status smn_cfg_check(const void *fcfg, const mcl_train_cfg *t, char *err, size_t len)
{
    const mcl_smn_run *c = fcfg;
    mcl_status st = mcl_smn_config_check(&c->model, err, len);
    if (st != MCL_OK) return st;
    if (t->parts > 1)
        return fail(err, len, MCL_ERR_INVALID,
                    "train.parts = %d: a Sparse-MetaNet run is one sequence of windows (it cannot be cut)", t->parts);
    if (c->task == MCL_SMN_TASK_WCST) {
        if (c->model.arch != MCL_SMN_MLP || !c->model.value_head || c->model.in_dim != MCL_WCST_CARD_DIM ||
            c->model.n_out != MCL_WCST_ACTIONS)
            return fail(err, len, MCL_ERR_INVALID,
                        "task = wcst needs model.arch = mlp, model.value_head = 1, model.in_dim = %d, model.n_out = %d",
                        MCL_WCST_CARD_DIM, MCL_WCST_ACTIONS);
        if (t->steps == 0) return fail(err, len, MCL_ERR_INVALID, "task = wcst: set train.steps (windows)");
    } else {
        if (c->model.arch != MCL_SMN_RESNET)
            return fail(err, len, MCL_ERR_INVALID, "task = %s needs model.arch = resnet (32x32 images)",
                        c->task == MCL_SMN_TASK_ONLINEX ? "onlinex" : "classes");
        if (c->task == MCL_SMN_TASK_CLASSES && c->model.fast)
            return fail(err, len, MCL_ERR_INVALID, "task = classes is plain pretraining: set model.fast = 0");
        if (c->task == MCL_SMN_TASK_CLASSES && t->steps == 0)
            return fail(err, len, MCL_ERR_INVALID, "task = classes: set train.steps");
        if (c->len_min > c->len_max)
            return fail(err, len, MCL_ERR_INVALID, "stream.len_min = %d is more than stream.len_max = %d", c->len_min,
                        c->len_max);
        if (c->task == MCL_SMN_TASK_ONLINEX && c->n_kept + c->n_persev >= c->model.n_out)
            return fail(err, len, MCL_ERR_INVALID, "stream.kept + stream.persev = %d leaves no new class in %d-way tasks",
                        c->n_kept + c->n_persev, c->model.n_out);
        if (c->task == MCL_SMN_TASK_ONLINEX && t->steps > smn_total_steps(c, t))
            return fail(err, len, MCL_ERR_INVALID,
                        "train.steps = %lld: the stream is sure to hold only %lld windows of %d rounds", (long long)t->steps,
                        (long long)smn_total_steps(c, t), mcl_smn_window_len(&c->model));
    }
    return MCL_OK;
}

/* ====================================================================== the family state */

void mcl_smn_fs_free(void *p)
{
    smn_fs *t = p;
    if (!t) return;
    free(t->pend);
    free(t->pend_lab);
    mcl_tensor_free(t->wc_state);
    for (int j = 0; j < MCL_METANET_MAX_K; j++) {
        mcl_tensor_free(t->wc_act[j]);
        mcl_tensor_free(t->wc_rew[j]);
    }
    free(t->wc_host);
    mcl_smn_free(t->m);
    mcl_wcst_free(t->env);
    mcl_stream_free(t->stream);
    mcl_dataset_free(t->ds);
    free(t->class_pos);
    free(t->rec);
    free(t);
}

static mcl_status load_data(smn_fs *t, mcl_train_log *log, char *err, size_t len)
{
    const mcl_smn_run *c = &t->cfg;
    char e2[768];
    mcl_status st = mcl_dataset_load(c->source, c->data_dir[0] ? c->data_dir : NULL, (mcl_split)c->split, &t->ds, e2,
                                     sizeof e2);
    if (st != MCL_OK) /* the loader's message may name the set already ("data set 'x' is not prepared") */
        return strstr(e2, c->source) ? fail(err, len, st, "%s", e2) : fail(err, len, st, "data set '%s': %s", c->source, e2);
    if (c->task == MCL_SMN_TASK_CLASSES) {
        if (c->model.n_out != t->ds->n_classes)
            return fail(err, len, MCL_ERR_INVALID, "task = classes: %s (%s split) has %d classes: set model.n_out = %d",
                        c->source, c->split == 1 ? "train" : c->split == 2 ? "val" : c->split == 3 ? "test" : "all",
                        t->ds->n_classes, t->ds->n_classes);
        t->class_pos = malloc((size_t)t->ds->n * sizeof *t->class_pos);
        if (!t->class_pos) return fail(err, len, MCL_ERR_OOM, "out of memory");
        for (int k = 0; k < t->ds->n_classes; k++)
            for (int64_t j = t->ds->class_start[k]; j < t->ds->class_start[k + 1]; j++)
                t->class_pos[t->ds->class_index[j]] = k;
        mcl_train_logf(log, "pretraining batches of %d from %s: %d classes, %lld images", t->B, c->source,
                       t->ds->n_classes, (long long)t->ds->n);
        return MCL_OK;
    }
    mcl_class_pool pool = {t->ds, NULL, 0};
    mcl_onlinex_cfg oc;
    memset(&oc, 0, sizeof oc);
    oc.n_tasks = c->n_tasks;
    oc.n_way = c->model.n_out;
    oc.n_kept = c->n_kept;
    oc.n_persev = c->n_persev;
    oc.len_min = c->len_min;
    oc.len_max = c->len_max;
    oc.round_size = t->B;
    mcl_rng rng;
    mcl_rng_init(&rng, c->data_seed, STREAM_DATA);
    st = mcl_stream_onlinex(&pool, &oc, &rng, &t->stream, e2, sizeof e2);
    if (st != MCL_OK) return fail(err, len, st, "stream: %s", e2);
    t->n_rounds = t->stream->n / t->B;
    t->rec = calloc((size_t)c->n_tasks, sizeof *t->rec);
    if (!t->rec) return fail(err, len, MCL_ERR_OOM, "out of memory");
    t->n_rec = c->n_tasks;
    const int64_t rs[2] = {c->n_tasks, REC_FIELDS};
    t->rec_t = mcl_params_add(t->m->params, "state.record", 2, rs);
    if (!t->rec_t) return fail(err, len, MCL_ERR_OOM, "record: %s", mcl_ctx_error(t->ctx));
    mcl_tensor_requires_grad(t->rec_t, 0);
    mcl_train_logf(log, "Online-X stream: %d tasks of %d-%d rounds of %d, %d-way (%d kept, %d perseveration), "
                        "%d classes of %s, %lld rounds",
                   c->n_tasks, c->len_min, c->len_max, t->B, c->model.n_out, c->n_kept, c->n_persev,
                   t->ds->n_classes, c->source, (long long)t->n_rounds);
    return MCL_OK;
}

static mcl_status make_env(smn_fs *t, char *err, size_t len)
{
    const mcl_smn_run *c = &t->cfg;
    mcl_wcst_cfg wc;
    mcl_wcst_cfg_default(&wc);
    wc.seed = c->env_seed;
    wc.episode_len = c->episode_len;
    wc.solve_episodes = c->solve_episodes;
    wc.switch_within = c->switch_within;
    wc.reward_correct = c->reward_correct;
    wc.reward_wrong = c->reward_wrong;
    mcl_wcst_free(t->env);
    t->env = NULL;
    mcl_status st = mcl_wcst_create(&wc, &t->env);
    if (st == MCL_OK) st = mcl_wcst_reset(t->env, t->obs);
    if (st != MCL_OK) return fail(err, len, st, "WCST environment: %s", mcl_status_str(st));
    return MCL_OK;
}

mcl_status mcl_smn_fs_create(mcl_ctx *ctx, const mcl_smn_run *cfg, int batch, uint64_t seed, mcl_train_log *log,
                            smn_fs **out, char *err, size_t len)
{
    smn_fs *t = calloc(1, sizeof *t);
    if (!t) return fail(err, len, MCL_ERR_OOM, "out of memory");
    *out = t;
    t->cfg = *cfg;
    t->ctx = ctx;
    t->B = batch;
    t->seed = seed;
    t->m = mcl_smn_create(ctx, &cfg->model);
    if (!t->m) return fail(err, len, MCL_ERR_INVALID, "model: %s", mcl_ctx_error(ctx));
    mcl_status st = cfg->task == MCL_SMN_TASK_WCST ? make_env(t, err, len) : load_data(t, log, err, len);
    if (st != MCL_OK) return st;
    const mcl_smn_config *mc = &cfg->model;
    mcl_train_logf(log, "model: %s%s, %lld trainable parameters%s", mc->arch == MCL_SMN_MLP ? "mlp agent" : "resnet",
                   mc->fast ? " with sparse fast weights" : "", (long long)mcl_smn_trainable(t->m),
                   mc->fast ? "" : " (no fast weights)");
    if (mc->fast)
        mcl_train_logf(log, "Algorithm 1: k = %d, p = %g, gamma = %g, beta1 = %g, beta2 = %g, %s", mc->k,
                       (double)mc->train_h.p, (double)mc->train_h.gamma, (double)mc->train_h.beta1,
                       (double)mc->train_h.beta2, mc->reset ? "M reset at each truncation" : "M accumulates");
    return MCL_OK;
}

static mcl_status smn_create(mcl_ctx *ctx, const void *fcfg, const mcl_train_cfg *tc, mcl_train_log *log, void **out,
                             char *err, size_t len)
{
    smn_fs *t = NULL;
    mcl_status st = mcl_smn_fs_create(ctx, fcfg, tc->batch, tc->seed, log, &t, err, len);
    *out = t;
    return st;
}

static mcl_params *smn_params(void *fs) { return ((smn_fs *)fs)->m->params; }

mcl_optim_kind mcl_smn_optim_kind(int o)
{
    return o == MCL_SMN_OPT_SGD ? MCL_OPTIM_SGD : o == MCL_SMN_OPT_RMSPROP ? MCL_OPTIM_RMSPROP : MCL_OPTIM_ADAM;
}

static void smn_optim_config(void *fs, mcl_optim_config *oc)
{
    const smn_fs *t = fs;
    oc->kind = mcl_smn_optim_kind(t->cfg.optimizer);
}

static const char *const smn_metric_names[] = {"acc", "tasks", "updates", "persev"};

static double smn_chance(void *fs)
{
    const smn_fs *t = fs;
    return 1.0 / t->cfg.model.n_out;
}

/* ---------------------------------------------------------------- environment steps */

/* A read of a [rows, n] device tensor into a fresh host array. */
float *mcl_smn_read_host(mcl_tensor *x, int64_t n)
{
    float *h = malloc((size_t)n * sizeof *h);
    if (h && mcl_tensor_read(x, h, n) != MCL_OK) {
        free(h);
        return NULL;
    }
    return h;
}

static mcl_tensor *host_tensor(mcl_ctx *ctx, const float *v, int64_t r, int64_t c)
{
    const int64_t sh[2] = {r, c};
    mcl_tensor *x = mcl_tensor_create(ctx, 2, sh);
    if (x && mcl_tensor_write(x, v, r * c) != MCL_OK) {
        mcl_tensor_free(x);
        return NULL;
    }
    return x;
}

/* The next slot of queued predictions (B x n_out floats), NULL + an error when out of memory
 * or when a window holds more environment steps than slots. */
static float *pend_slot(smn_fs *t)
{
    const size_t per = (size_t)t->B * (size_t)t->cfg.model.n_out;
    if (!t->pend) t->pend = malloc((size_t)MCL_METANET_MAX_K * per * sizeof *t->pend);
    if (!t->pend_lab) t->pend_lab = malloc((size_t)MCL_METANET_MAX_K * (size_t)t->B * sizeof *t->pend_lab);
    if (!t->pend || !t->pend_lab || t->n_pend >= MCL_METANET_MAX_K) {
        mcl_ctx_set_error(t->ctx, MCL_ERR_OOM, "smn: no room for the window's predictions");
        return NULL;
    }
    return t->pend + (size_t)t->n_pend * per;
}

/* The first index of the largest of n logits (the prediction). */
static int argmax(const float *row, int64_t n)
{
    int best = 0;
    for (int64_t j = 1; j < n; j++)
        if (row[j] > row[best]) best = (int)j;
    return best;
}

/* The device tensors of the WCST episodes (created once): the rule's state and, per episode of
 * a window, its actions and rewards; the host array their reads land in. */
static mcl_status wcst_buffers(smn_fs *t, int L)
{
    mcl_ctx *ctx = t->ctx;
    const int64_t ns = 5 + 2 * MCL_METANET_MAX_K, nl = L;
    if (!t->wc_state) t->wc_state = mcl_tensor_create(ctx, 1, &ns);
    for (int j = 0; j < MCL_METANET_MAX_K; j++) {
        if (!t->wc_act[j]) t->wc_act[j] = mcl_tensor_create(ctx, 1, &nl);
        if (!t->wc_rew[j]) t->wc_rew[j] = mcl_tensor_create(ctx, 1, &nl);
        if (!t->wc_act[j] || !t->wc_rew[j]) return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    }
    if (!t->wc_host) t->wc_host = malloc((size_t)MCL_METANET_MAX_K * 2 * (size_t)L * sizeof *t->wc_host);
    if (!t->wc_state || !t->wc_host) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory");
    return MCL_OK;
}

/* One WCST episode, all on the device (no read-back: doc/smn.md, "The episode on the device").
 * The L cards are known before the agent acts (mcl_wcst_cards_ahead: the j-th episode of the
 * window is the j-th block of L cards ahead), so the policy's forward sees the whole episode
 * at once (W + M_{t-1}: the fast weights do not change within an episode); wcst_act draws
 * each card's action from those logits with the uniform Philox(seed, STREAM_ACT, card index),
 * scores it against the rule in force and carries the rule's state to the next episode of the
 * window. Then the A2C loss of the episode on the tape:
 *   L = −(1/L) Σ_c log π(a_c|s_c)·(r_c − V(s_c))  +  value_coef·(1/L) Σ_c (V(s_c) − r_c)²
 *       − entropy·(1/L) Σ_c H(π(·|s_c))
 * (each card is a one-step decision: its return is its own reward; the advantage's V is data,
 * computed without a gradient from the device's values). The actions and rewards are read
 * once the step is done and replayed on the host environment (mcl_smn_score_pending). */
static mcl_status wcst_episode(smn_fs *t, mcl_smn_mode mode, mcl_tensor **loss)
{
    mcl_ctx *ctx = t->ctx;
    const int L = t->cfg.episode_len, D = MCL_WCST_CARD_DIM, A = MCL_WCST_ACTIONS, j = t->wc_n;
    if (j >= MCL_METANET_MAX_K)
        return mcl_ctx_set_error(ctx, MCL_ERR_STATE, "smn: %d WCST episodes queued without a replay", j);
    mcl_status st = wcst_buffers(t, L);
    if (st != MCL_OK) return st;
    float *obs = malloc((size_t)L * D * sizeof *obs), *cf = malloc((size_t)L * 3 * sizeof *cf);
    int *cards = malloc((size_t)(j + 1) * (size_t)L * 3 * sizeof *cards);
    float ws[5 + 2 * MCL_METANET_MAX_K];
    if (!obs || !cf || !cards) st = mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory");
    if (st == MCL_OK) {
        mcl_wcst_cards_ahead(t->env, (int64_t)(j + 1) * L, cards);
        for (int c = 0; c < L; c++) {
            const int *cd = cards + ((size_t)j * L + (size_t)c) * 3;
            mcl_wcst_encode_card(cd, obs + (size_t)c * D);
            for (int a = 0; a < 3; a++) cf[c * 3 + a] = (float)cd[a];
        }
    }
    if (st == MCL_OK && j == 0) { /* the window's first episode: the rule's state from the host */
        st = mcl_wcst_device_state(t->env, 2 * MCL_METANET_MAX_K, ws);
        if (st != MCL_OK) st = mcl_ctx_set_error(ctx, st, "WCST: the environment is inside an episode");
        if (st == MCL_OK) st = mcl_tensor_write(t->wc_state, ws, 5 + 2 * MCL_METANET_MAX_K);
    }
    mcl_tensor *x = st == MCL_OK ? host_tensor(ctx, obs, L, D) : NULL;
    mcl_tensor *ct = st == MCL_OK ? host_tensor(ctx, cf, L, 3) : NULL;
    mcl_tensor *lg = NULL, *v = NULL, *act = t->wc_act[j], *rew = t->wc_rew[j];
    if (st == MCL_OK && (!x || !ct)) st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    if (st == MCL_OK) st = mcl_smn_forward(t->m, mode, x, L, &lg, &v);
    if (st == MCL_OK)
        st = mcl_wcst_act(ctx, t->wc_state, lg, ct, act, rew, t->seed, STREAM_ACT, (uint64_t)t->env_steps * (uint64_t)L,
                          t->cfg.solve_episodes, t->cfg.reward_correct, t->cfg.reward_wrong);
    if (st == MCL_OK) st = mcl_tensor_read_async(act, t->wc_host + (size_t)j * 2 * L, L);
    if (st == MCL_OK) st = mcl_tensor_read_async(rew, t->wc_host + ((size_t)j * 2 + 1) * L, L);
    if (st == MCL_OK) {
        const int64_t r2s[2] = {L, 1};
        mcl_no_grad_begin(ctx); /* data: the chosen actions and the advantages (V detached) */
        mcl_tensor *oh = mcl_one_hot(ctx, act, A), *rt = mcl_reshape(ctx, rew, 2, r2s);
        mcl_tensor *adv = mcl_scale(ctx, mcl_sub(ctx, rt, v), 1.0f / (float)L);
        mcl_no_grad_end(ctx);
        mcl_tensor *logp = mcl_log_softmax(ctx, lg), *p = mcl_softmax(ctx, lg);
        mcl_tensor *lpa = mcl_reshape(ctx, mcl_sum_last(ctx, mcl_mul(ctx, logp, oh)), 2, r2s);
        mcl_tensor *pol = mcl_scale(ctx, mcl_sum(ctx, mcl_mul(ctx, lpa, adv)), -1.0f);
        mcl_tensor *ent = mcl_scale(ctx, mcl_sum(ctx, mcl_mul(ctx, p, logp)), -1.0f / (float)L);
        mcl_tensor *dv = mcl_sub(ctx, v, rt);
        mcl_tensor *vl = mcl_mean(ctx, mcl_mul(ctx, dv, dv));
        *loss = mcl_add(ctx, mcl_add(ctx, pol, mcl_scale(ctx, vl, t->cfg.value_coef)),
                        mcl_scale(ctx, ent, -t->cfg.entropy_coef));
        if (!*loss) st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_BACKEND;
    }
    if (st == MCL_OK) t->wc_n++;
    mcl_tensor_free(x);
    mcl_tensor_free(ct);
    free(obs);
    free(cf);
    free(cards);
    return st;
}

/* The queued WCST episodes replayed on the host environment with the device's actions (read
 * by the step's one wait): the environment's statistics, rules and switch schedule, and the
 * window's hits. The device's rewards must be the environment's (a wcst_act that scored
 * against another rule than the environment's would show here). */
static mcl_status wcst_replay(smn_fs *t)
{
    const int L = t->cfg.episode_len;
    mcl_status st = MCL_OK;
    for (int j = 0; j < t->wc_n && st == MCL_OK; j++) {
        const float *ah = t->wc_host + (size_t)j * 2 * L, *rh = ah + L;
        for (int c = 0; c < L && st == MCL_OK; c++) {
            mcl_wcst_info info;
            float r = 0.0f;
            const int a = ah[c] >= 0.0f && ah[c] < (float)MCL_WCST_ACTIONS ? (int)ah[c] : -1;
            st = mcl_wcst_step(t->env, a, &r, t->obs, &info);
            if (st != MCL_OK || r != rh[c]) {
                st = mcl_ctx_set_error(t->ctx, MCL_ERR_BACKEND,
                                       "WCST: the device's episode disagrees with the environment at card %d of "
                                       "the window (action %g, reward %g on the device, %g here)",
                                       j * L + c, (double)ah[c], (double)rh[c], (double)r);
                break;
            }
            t->win_hits += info.correct;
            t->win_n += 1;
        }
    }
    t->wc_n = 0;
    return st;
}

/* One Online-X round: predictions for the round's images before learning from them (the
 * record), then the cross-entropy on the tape. */
static mcl_status onlinex_round(smn_fs *t, mcl_smn_mode mode, mcl_tensor **loss)
{
    mcl_ctx *ctx = t->ctx;
    if (t->round >= t->n_rounds)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "the Online-X stream's %lld rounds are used up",
                                 (long long)t->n_rounds);
    const int64_t lo = t->round * t->B, B = t->B, N = t->cfg.model.n_out;
    const mcl_stream *s = t->stream;
    mcl_tensor *img = NULL, *lab = NULL, *lg = NULL;
    mcl_status st = mcl_learner_rows(ctx, "smn", t->ds, s->index + lo, s->label + lo, B, t->cfg.normalize, &img, &lab);
    if (st == MCL_OK) st = mcl_smn_forward(t->m, mode, img, B, &lg, NULL);
    float *h = st == MCL_OK ? pend_slot(t) : NULL; /* scored by smn_step_metrics */
    if (st == MCL_OK && !h) st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    if (st == MCL_OK) st = mcl_tensor_read_async(lg, h, B * N);
    if (st == MCL_OK) t->pend_lo[t->n_pend++] = lo;
    if (st == MCL_OK) {
        t->rec[s->task[lo]].steps++;
        *loss = mcl_cross_entropy(ctx, lg, lab);
        if (!*loss) st = mcl_ctx_status(ctx);
    }
    mcl_tensor_free(img);
    mcl_tensor_free(lab);
    t->round++;
    return st;
}

/* The records of one Online-X round from its predictions h [B, n_out] (the round's examples
 * lo..lo+B-1). */
static void onlinex_score(smn_fs *t, const float *h, int64_t lo)
{
    const int64_t B = t->B, N = t->cfg.model.n_out;
    const mcl_stream *s = t->stream;
    for (int64_t i = 0; i < B; i++) {
        const int best = argmax(h + i * N, N);
        const int64_t e = lo + i;
        mcl_smn_task_rec *r = &t->rec[s->task[e]];
        r->n++;
        r->hits += best == s->label[e];
        if (s->role[e] == MCL_ROLE_PERSEV) {
            r->persev_n++;
            r->persev_errors += best == s->prev_label[e];
        } else if (s->role[e] == MCL_ROLE_KEPT) {
            r->kept_n++;
            r->kept_err += best != s->label[e];
        }
        t->win_hits += best == s->label[e];
        t->win_n += 1;
    }
}

/* One pretraining batch: B images drawn uniformly (Philox(seed, STREAM_BATCH + step)) with
 * their class position as label. */
static mcl_status class_batch(smn_fs *t, mcl_tensor **loss)
{
    mcl_ctx *ctx = t->ctx;
    const int64_t B = t->B, N = t->cfg.model.n_out;
    int64_t *idx = malloc((size_t)B * sizeof *idx);
    int32_t *lab = malloc((size_t)B * sizeof *lab);
    mcl_status st = idx && lab ? MCL_OK : mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory");
    mcl_rng rng;
    mcl_rng_init(&rng, t->seed, STREAM_BATCH + (uint64_t)t->env_steps);
    for (int64_t i = 0; st == MCL_OK && i < B; i++) {
        idx[i] = (int64_t)mcl_rng_next_below(&rng, (uint32_t)t->ds->n);
        lab[i] = t->class_pos[idx[i]];
    }
    mcl_tensor *img = NULL, *lt = NULL, *lg = NULL;
    if (st == MCL_OK) st = mcl_learner_rows(ctx, "smn", t->ds, idx, lab, B, t->cfg.normalize, &img, &lt);
    if (st == MCL_OK) st = mcl_smn_forward(t->m, MCL_SMN_FAST_STEP, img, B, &lg, NULL);
    float *h = st == MCL_OK ? pend_slot(t) : NULL; /* scored by smn_step_metrics */
    if (st == MCL_OK && !h) st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    if (st == MCL_OK) st = mcl_tensor_read_async(lg, h, B * N);
    if (st == MCL_OK) {
        memcpy(t->pend_lab + (size_t)t->n_pend * (size_t)B, lab, (size_t)B * sizeof *lab);
        t->pend_lo[t->n_pend++] = -1;
        *loss = mcl_cross_entropy(ctx, lg, lt);
        if (!*loss) st = mcl_ctx_status(ctx);
    }
    mcl_tensor_free(img);
    mcl_tensor_free(lt);
    free(idx);
    free(lab);
    return st;
}

/* One environment step (an episode, a round or a batch): its loss on the tape. */
mcl_status mcl_smn_env_step(smn_fs *t, mcl_smn_mode mode, mcl_tensor **loss)
{
    *loss = NULL;
    mcl_status st = t->cfg.task == MCL_SMN_TASK_WCST      ? wcst_episode(t, mode, loss)
                    : t->cfg.task == MCL_SMN_TASK_ONLINEX ? onlinex_round(t, mode, loss)
                                                          : class_batch(t, loss);
    if (st == MCL_OK) t->env_steps++;
    return st;
}

/* The window of Algorithm 1 up to the loss of its gradient step (left on the tape): with fast
 * weights, k − 1 fast steps (predict, loss, G by a partial backward, write) then the k-th
 * step's forward through M_{k-1} rebuilt from the window's writes. */
mcl_status mcl_smn_window_loss(smn_fs *t, mcl_tensor **loss)
{
    mcl_smn *m = t->m;
    const int k = mcl_smn_window_len(&t->cfg.model);
    mcl_status st = MCL_OK;
    if (m->mn) st = mcl_metanet_window_begin(m->mn);
    for (int j = 0; j < k - 1 && st == MCL_OK; j++) {
        const size_t mark = mcl_tape_mark(t->ctx);
        mcl_tensor *l = NULL;
        st = mcl_smn_env_step(t, MCL_SMN_FAST_STEP, &l);
        if (st == MCL_OK) st = mcl_metanet_write(m->mn, l, mark, &t->cfg.model.train_h, 1);
        if (st == MCL_OK) t->updates++;
    }
    if (st == MCL_OK) st = mcl_smn_env_step(t, m->mn ? MCL_SMN_WINDOW_END : MCL_SMN_FAST_STEP, loss);
    if (st == MCL_OK) t->updates++;
    t->in_window = st == MCL_OK;
    return st;
}

/* After the backward of the window's gradient step (before the optimizer step). */
mcl_status mcl_smn_window_end(smn_fs *t)
{
    if (!t->in_window) return MCL_OK;
    t->in_window = 0;
    return t->m->mn ? mcl_metanet_window_end(t->m->mn, &t->cfg.model.train_h) : MCL_OK;
}

/* Tasks solved so far (wcst) or reached (onlinex). */
int mcl_smn_fs_tasks_done(const smn_fs *t)
{
    if (t->cfg.task == MCL_SMN_TASK_WCST) {
        int n = 0;
        for (int i = 0; i < mcl_wcst_num_tasks(t->env); i++) n += mcl_wcst_task(t->env, i)->cards_to_solve >= 0;
        return n;
    }
    if (t->cfg.task == MCL_SMN_TASK_ONLINEX)
        return t->round > 0 ? t->stream->task[(t->round - 1) * t->B] + 1 : 0;
    return 0;
}

static double persev_metric(const smn_fs *t)
{
    if (t->cfg.task == MCL_SMN_TASK_WCST) {
        int64_t s = 0;
        for (int i = 0; i < mcl_wcst_num_tasks(t->env); i++) s += mcl_wcst_task(t->env, i)->persev_errors;
        return (double)s;
    }
    if (t->cfg.task == MCL_SMN_TASK_ONLINEX) {
        int64_t e = 0, n = 0;
        for (int i = 0; i < t->n_rec; i++) e += t->rec[i].persev_errors, n += t->rec[i].persev_n;
        return n ? (double)e / (double)n : NAN;
    }
    return NAN;
}

static mcl_status smn_step_loss(void *fs, int64_t s, const mcl_train_part *part, mcl_tensor **loss, double *metrics,
                                char *err, size_t len)
{
    smn_fs *t = fs;
    if (t->end_status != MCL_OK)
        return fail(err, len, t->end_status, "step %lld: the fast-weight update after the step before failed: %s",
                    (long long)s, t->end_err);
    if (part->count > 1)
        return fail(err, len, MCL_ERR_INVALID, "a Sparse-MetaNet run cannot be cut into %d parts: use train.parts = 1",
                    part->count);
    t->win_hits = t->win_n = 0.0;
    t->n_pend = 0;
    mcl_status st = mcl_smn_window_loss(t, loss);
    if (st != MCL_OK) return fail(err, len, st, "step %lld: %s", (long long)s, mcl_ctx_error(t->ctx));
    (void)metrics; /* smn_step_metrics */
    return MCL_OK;
}

/* The window's queued predictions scored, in order (Online-X rounds, WCST hits), and the
 * queue emptied: after each step of the harness (smn_step_metrics) and of the online runs
 * (smn_online.c). */
mcl_status mcl_smn_score_pending(smn_fs *t)
{
    const int64_t B = t->B, N = t->cfg.model.n_out;
    if (t->wc_n > 0) return wcst_replay(t);
    for (int i = 0; i < t->n_pend; i++) {
        const float *h = t->pend + (size_t)i * (size_t)(B * N);
        if (t->pend_lo[i] >= 0) {
            onlinex_score(t, h, t->pend_lo[i]);
            continue;
        }
        for (int64_t r = 0; r < B; r++) {
            t->win_hits += argmax(h + r * N, N) == t->pend_lab[(size_t)i * (size_t)B + (size_t)r];
            t->win_n += 1;
        }
    }
    t->n_pend = 0;
    return MCL_OK;
}

/* Once the step is done: the window's queued predictions scored (in order), the metrics. A
 * failed replay fails the next step (t->end_status). */
static void smn_step_metrics(void *fs, double *metrics)
{
    smn_fs *t = fs;
    if (mcl_smn_score_pending(t) != MCL_OK && t->end_status == MCL_OK) {
        t->end_status = MCL_ERR_BACKEND;
        snprintf(t->end_err, sizeof t->end_err, "%s", mcl_ctx_error(t->ctx));
    }
    metrics[0] = t->win_n > 0 ? t->win_hits / t->win_n : NAN;
    metrics[1] = mcl_smn_fs_tasks_done(t);
    metrics[2] = (double)t->updates;
    metrics[3] = persev_metric(t);
}

static void smn_step_end(void *fs)
{
    smn_fs *t = fs;
    t->end_status = mcl_smn_window_end(t);
    if (t->end_status != MCL_OK) snprintf(t->end_err, sizeof t->end_err, "%s", mcl_ctx_error(t->ctx));
}

static mcl_status smn_validate(void *fs, int64_t batches, double *score, char *err, size_t len)
{
    (void)fs, (void)batches, (void)err, (void)len;
    *score = NAN; /* online runs are scored as they go */
    return MCL_OK;
}

/* ---------------------------------------------------------------- checkpoints */

/* Counters: env_steps, updates, round, metanet steps, and the WCST snapshot wcst.<i>. */
/* The record <-> its state tensor (counts < 2^24 are exact in float). */
static mcl_status record_io(smn_fs *t, int save)
{
    if (!t->rec_t) return MCL_OK;
    const int64_t n = (int64_t)t->n_rec * REC_FIELDS;
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return MCL_ERR_OOM;
    mcl_status st = MCL_OK;
    if (!save) st = mcl_tensor_read(t->rec_t, v, n);
    for (int i = 0; st == MCL_OK && i < t->n_rec; i++) {
        int64_t *f[REC_FIELDS] = {&t->rec[i].steps, &t->rec[i].persev_errors, &t->rec[i].persev_n, &t->rec[i].kept_err,
                                  &t->rec[i].kept_n, &t->rec[i].hits, &t->rec[i].n};
        for (int j = 0; j < REC_FIELDS; j++) {
            if (save) v[i * REC_FIELDS + j] = (float)*f[j];
            else *f[j] = (int64_t)v[i * REC_FIELDS + j];
        }
        t->rec[i].updates_to_solve = -1;
    }
    if (st == MCL_OK && save) st = mcl_tensor_write(t->rec_t, v, n);
    free(v);
    return st;
}

static mcl_status smn_save(void *fs, const char *path, const mcl_optim *opt, const mcl_ckpt_counter *cn, int n_cn,
                           char *err, size_t len)
{
    smn_fs *t = fs;
    int64_t nsnap = t->env ? mcl_wcst_snapshot(t->env, NULL, 0) : 0;
    if (nsnap > MAX_SNAPSHOT)
        return fail(err, len, MCL_ERR_INVALID, "the WCST state (%lld values) is too big for a checkpoint",
                    (long long)nsnap);
    mcl_ckpt_counter *all = calloc((size_t)(n_cn + 4 + nsnap), sizeof *all);
    int64_t *snap = calloc((size_t)(nsnap + 1), sizeof *snap);
    /* the whole family config (model.* and the task, data and stream keys): evaluation
     * protocols rebuild the run from it (mcl_smn_run_from_ckpt) */
    char *mt = mcl_keys_to_text(model_keys, N_MODEL_KEYS, &t->cfg.model, "model.");
    char *rt = mcl_keys_to_text(run_keys, (int)(sizeof run_keys / sizeof run_keys[0]), &t->cfg, "");
    char *text = mt && rt ? malloc(strlen(mt) + strlen(rt) + 1) : NULL;
    if (text) strcat(strcpy(text, mt), rt);
    free(mt);
    free(rt);
    mcl_status st = all && snap && text ? MCL_OK : fail(err, len, MCL_ERR_OOM, "out of memory");
    if (st == MCL_OK && record_io(t, 1) != MCL_OK) st = fail(err, len, MCL_ERR_BACKEND, "record: %s", mcl_ctx_error(t->ctx));
    if (st == MCL_OK && nsnap) mcl_wcst_snapshot(t->env, snap, nsnap);
    if (st == MCL_OK) {
        memcpy(all, cn, (size_t)n_cn * sizeof *all);
        int n = n_cn;
        const uint64_t v[4] = {(uint64_t)t->env_steps, (uint64_t)t->updates, (uint64_t)t->round,
                               mcl_metanet_steps(t->m->mn)};
        static const char *const nm[4] = {"smn.env_steps", "smn.updates", "smn.round", "smn.fast_steps"};
        for (int i = 0; i < 4; i++) {
            snprintf(all[n].name, sizeof all[n].name, "%s", nm[i]);
            all[n++].value = v[i];
        }
        for (int64_t i = 0; i < nsnap; i++) {
            snprintf(all[n].name, sizeof all[n].name, "wcst.%lld", (long long)i);
            all[n++].value = (uint64_t)snap[i];
        }
        mcl_ckpt_save_desc d;
        memset(&d, 0, sizeof d);
        d.model_kind = MCL_SMN_CKPT_KIND;
        d.config = text;
        d.params = t->m->params;
        d.optim = opt;
        d.rng.seed = mcl_ctx_seed(t->ctx);
        d.rng.counter = mcl_ctx_stream(t->ctx);
        d.counters = all;
        d.n_counters = n;
        st = mcl_ckpt_save(t->ctx, path, &d, err, len);
    }
    free(all);
    free(snap);
    free(text);
    return st;
}

static mcl_status smn_load(void *fs, const char *path, mcl_optim *opt, mcl_ckpt_info *info, char *err, size_t len)
{
    smn_fs *t = fs;
    mcl_status st = mcl_ckpt_load(t->ctx, path, MCL_SMN_CKPT_KIND, t->m->params, opt, info, err, len);
    if (st != MCL_OK) return st;
    uint64_t v[4];
    static const char *const nm[4] = {"smn.env_steps", "smn.updates", "smn.round", "smn.fast_steps"};
    for (int i = 0; i < 4; i++)
        if (!mcl_ckpt_info_counter(info, nm[i], &v[i]))
            return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': counter %s missing", path, nm[i]);
    if (t->stream && v[2] > (uint64_t)t->n_rounds)
        return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': round %llu is beyond this stream (%lld rounds)", path,
                    (unsigned long long)v[2], (long long)t->n_rounds);
    t->env_steps = (int64_t)v[0];
    t->updates = (int64_t)v[1];
    t->round = (int64_t)v[2];
    mcl_metanet_set_steps(t->m->mn, v[3]);
    if (t->env) {
        int64_t n = 0;
        uint64_t x;
        char cn[32];
        for (;; n++) {
            snprintf(cn, sizeof cn, "wcst.%lld", (long long)n);
            if (!mcl_ckpt_info_counter(info, cn, &x) || n > MAX_SNAPSHOT) break;
        }
        int64_t *snap = malloc((size_t)(n + 1) * sizeof *snap);
        if (!snap) return fail(err, len, MCL_ERR_OOM, "out of memory");
        for (int64_t i = 0; i < n; i++) {
            snprintf(cn, sizeof cn, "wcst.%lld", (long long)i);
            mcl_ckpt_info_counter(info, cn, &x);
            snap[i] = (int64_t)x;
        }
        st = mcl_wcst_restore(t->env, snap, n);
        free(snap);
        if (st != MCL_OK)
            return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': the WCST environment's state is missing or invalid",
                        path);
        /* the next card's observation */
        int card[MCL_WCST_ATTRS], rule, old, solved;
        mcl_wcst_peek(t->env, card, &rule, &old, &solved);
        mcl_wcst_encode_card(card, t->obs);
    }
    if (record_io(t, 0) != MCL_OK) return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': the record: %s", path,
                                                mcl_ctx_error(t->ctx));
    return MCL_OK;
}

static mcl_status add_family_state(mcl_smn *m, const mcl_smn_run *cfg);

/* Copy the tensors of another smn checkpoint that have the same name and shape. */
mcl_status mcl_smn_fs_copy_matching(smn_fs *t, const char *path, int skip_head, int *copied, char *err, size_t len)
{
    mcl_smn_run src_cfg;
    mcl_status st = mcl_smn_run_from_ckpt(path, &src_cfg, err, len);
    if (st != MCL_OK) return st;
    mcl_smn *src = mcl_smn_create(t->ctx, &src_cfg.model);
    if (!src) return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': %s", path, mcl_ctx_error(t->ctx));
    st = add_family_state(src, &src_cfg); /* the family's record, as mcl_smn_fs_create adds it */
    if (st != MCL_OK) fail(err, len, st, "%s", mcl_ctx_error(t->ctx));
    if (st == MCL_OK) st = mcl_ckpt_load(t->ctx, path, MCL_SMN_CKPT_KIND, src->params, NULL, NULL, err, len);
    static const char *const heads[] = {"head.", "policy.", "value."};
    *copied = 0;
    if (st == MCL_OK) {
        st = mcl_params_copy_matching(t->m->params, src->params, heads, skip_head ? 3 : 0, copied);
        if (st != MCL_OK) fail(err, len, st, "%s", mcl_ctx_error(t->ctx));
    }
    mcl_smn_free(src);
    return st;
}

static mcl_status smn_init_from(void *fs, const char *path, char *note, size_t note_len, char *err, size_t len)
{
    smn_fs *t = fs;
    int copied = 0;
    mcl_status st = mcl_smn_fs_copy_matching(t, path, 0, &copied, err, len);
    if (st == MCL_OK) {
        if (t->m->mn) st = mcl_metanet_clear(t->m->mn);
        snprintf(note, note_len, "%d tensors of the same name and shape copied from %s", copied, path);
    }
    return st;
}

/* Memory from the config: the model (mcl_smn_param_floats, exact) and the Online-X record in
 * the checkpoint; in training also the gradients and Adam moments of the trained floats, the
 * activations of a window of k steps of the batch (mlp: each layer's output; resnet: each
 * conv's output, norm and ReLU at its resolution, from a 32-pixel side), each with its
 * gradient, and a copy of the fast-weight state per step of the window. */
static double smn_ckpt_floats(const void *fcfg, const mcl_train_cfg *t)
{
    (void)t;
    const mcl_smn_run *c = fcfg;
    return mcl_smn_param_floats(&c->model, NULL) + (c->task == MCL_SMN_TASK_ONLINEX ? (double)c->n_tasks * REC_FIELDS : 0);
}

static double smn_train_bytes(const void *fcfg, const mcl_train_cfg *t)
{
    const mcl_smn_run *c = fcfg;
    const mcl_smn_config *m = &c->model;
    double fast = 0;
    const double P = mcl_smn_param_floats(m, &fast), all = smn_ckpt_floats(fcfg, t);
    double per = 0; /* floats of one example's activations */
    if (m->arch == MCL_SMN_MLP) {
        per = m->layers * 4.0 * m->hidden + 4.0 * m->n_out + 4;
    } else {
        double side = 32;
        static const int num[4] = {2, 3, 4, 8};
        for (int b = 0; b < 4; b++) {
            per += (double)m->width * num[b] / 2 * side * side * 8;
            side = side / 2;
        }
    }
    const double k = m->k > 1 ? m->k : 1;
    return 4 * (all + 3 * (P - fast) + 2 * (double)t->batch * k * per + k * fast);
}

static mcl_status smn_ckpt_open(mcl_ctx *ctx, const char *path, void **model, mcl_params **params,
                                mcl_ckpt_info *info, char *err, size_t len)
{
    mcl_smn *m = NULL;
    mcl_status st = mcl_smn_open(ctx, path, &m, info, err, len);
    *model = m;
    if (m) *params = m->params;
    return st;
}

static mcl_status smn_ckpt_export(void *model, const char *path, const mcl_ckpt_info *info, char *err, size_t len)
{
    return mcl_smn_export(model, path, info, err, len);
}

static void smn_ckpt_close(void *model) { mcl_smn_free(model); }

const mcl_family mcl_smn_family = {
    .kind = "smn",
    .summary = "Sparse Meta Networks: sparse fast weights written from gradients (WCST agent, Online-X)",
    .cfg_size = sizeof(mcl_smn_run),
    .groups = smn_groups,
    .n_groups = 2,
    .cfg_default = smn_cfg_default,
    .cfg_check = smn_cfg_check,
    .total_steps = smn_total_steps,
    .create = smn_create,
    .free = mcl_smn_fs_free,
    .params = smn_params,
    .optim_config = smn_optim_config,
    .n_metrics = 4,
    .metric_names = smn_metric_names,
    .chance = smn_chance,
    .step_loss = smn_step_loss,
    .step_metrics = smn_step_metrics,
    .step_end = smn_step_end,
    .validate = smn_validate,
    .save = smn_save,
    .load = smn_load,
    .init_from = smn_init_from,
    .ckpt_floats = smn_ckpt_floats,
    .train_bytes = smn_train_bytes,
    .ckpt_open = smn_ckpt_open,
    .ckpt_export = smn_ckpt_export,
    .ckpt_close = smn_ckpt_close,
};

/* ====================================================================== online runs */

mcl_status mcl_smn_run_from_ckpt(const char *path, mcl_smn_run *cfg, char *err, size_t len)
{
    return mcl_family_cfg_from_ckpt(&mcl_smn_family, path, cfg, NULL, err, len);
}

/* The family's state tensors that a model of cfg carries in its checkpoints besides the
 * model's own (the Online-X record). */
static mcl_status add_family_state(mcl_smn *m, const mcl_smn_run *cfg)
{
    if (cfg->task != MCL_SMN_TASK_ONLINEX) return MCL_OK;
    const int64_t rs[2] = {cfg->n_tasks, REC_FIELDS};
    mcl_tensor *r = mcl_params_add(m->params, "state.record", 2, rs);
    if (!r) return mcl_ctx_status(m->ctx);
    mcl_tensor_requires_grad(r, 0);
    return MCL_OK;
}

mcl_status mcl_smn_open(mcl_ctx *ctx, const char *path, mcl_smn **out, mcl_ckpt_info *info, char *err, size_t len)
{
    *out = NULL;
    mcl_smn_run cfg;
    mcl_status st = mcl_smn_run_from_ckpt(path, &cfg, err, len);
    if (st != MCL_OK) return st;
    mcl_smn *m = mcl_smn_create(ctx, &cfg.model);
    if (!m) return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': %s", path, mcl_ctx_error(ctx));
    st = add_family_state(m, &cfg);
    if (st != MCL_OK) fail(err, len, st, "%s", mcl_ctx_error(ctx));
    if (st == MCL_OK) st = mcl_ckpt_load(ctx, path, MCL_SMN_CKPT_KIND, m->params, NULL, info, err, len);
    if (st != MCL_OK) {
        mcl_smn_free(m);
        return st;
    }
    *out = m;
    return MCL_OK;
}

mcl_status mcl_smn_export(mcl_smn *m, const char *path, const mcl_ckpt_info *info, char *err, size_t len)
{
    return mcl_ckpt_export(m->ctx, path, MCL_SMN_CKPT_KIND, m->params, info, err, len);
}
