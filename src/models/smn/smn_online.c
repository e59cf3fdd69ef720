/* smn_online.c — the online runs of `metacl eval smn` (smn_train.h, mcl_smn_online_run):
 * one agent learns a WCST rule sequence or an Online-X stream as it goes, and the per-task
 * record is the result. The agents (mcl_smn_agent):
 *   alg1       Algorithm 1 going on: the window's fast steps and its gradient step into θ, φ
 *   fast-only  the fast-weight writes only (no gradient into θ, φ)
 *   online     a plain network trained by one optimizer step per environment step
 *   offline    the same, reset to its initial weights (and a new optimizer) at every task
 *              switch (it is told the switch)
 *   frozen     forward only (no learning at all)
 *
 * Why this loop does not run on the training harness (src/learn/train.c): the harness's
 * step is one shape (step_loss -> backward -> optimizer step, every step, a fixed number of
 * them) around a run directory with a log, checkpoints, validation and resume. The online
 * agents need what that shape does not have: steps without a backward or an optimizer
 * (fast-only, frozen), a parameter reset and a new optimizer at a task switch (offline),
 * a stop on tasks done rather than on a step count, and no files at all (thousands of short
 * runs per table). What it shares with the harness's step is the family's own step: the
 * environment steps and the window of Algorithm 1 (smn_env.h), the same code the adapter's
 * step_loss / step_end callbacks run.
 */
#define _POSIX_C_SOURCE 200809L
#include "smn_env.h"

#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "tensor_impl.h"
#include "util.h"

#define fail mcl_errbuf

void mcl_smn_online_result_free(mcl_smn_online_result *r)
{
    if (!r) return;
    free(r->task);
    memset(r, 0, sizeof *r);
}

/* The per-task record of a finished run. */
static mcl_status collect(const smn_fs *t, mcl_smn_online_result *out, int max_tasks)
{
    if (t->env) {
        int n = mcl_wcst_num_tasks(t->env);
        out->task = calloc((size_t)(n > 0 ? n : 1), sizeof *out->task);
        if (!out->task) return MCL_ERR_OOM;
        for (int i = 0; i < n; i++) {
            const mcl_wcst_task_stats *s = mcl_wcst_task(t->env, i);
            mcl_smn_task_rec *r = &out->task[i];
            r->steps = (s->cards + t->cfg.episode_len - 1) / t->cfg.episode_len;
            r->updates_to_solve = s->episodes_to_solve; /* one update (fast or gradient) per episode */
            r->persev_errors = s->persev_errors;
            r->hits = s->cards - s->errors;
            r->n = s->cards;
            r->persev_n = r->kept_err = r->kept_n = 0;
        }
        out->n_tasks = n;
    } else {
        int n = mcl_smn_fs_tasks_done(t);
        if (n > max_tasks) n = max_tasks;
        out->task = calloc((size_t)(n > 0 ? n : 1), sizeof *out->task);
        if (!out->task) return MCL_ERR_OOM;
        memcpy(out->task, t->rec, (size_t)n * sizeof *out->task);
        for (int i = 0; i < n; i++) out->task[i].updates_to_solve = -1;
        out->n_tasks = n;
    }
    out->steps = t->env_steps;
    out->updates = t->updates;
    return MCL_OK;
}

/* Host copies of every parameter (the offline agents' reset point). */
static float **params_snapshot(mcl_params *p)
{
    const int n = mcl_params_count(p);
    float **v = calloc((size_t)n, sizeof *v);
    for (int i = 0; v && i < n; i++) {
        mcl_tensor *x = mcl_params_get(p, i);
        v[i] = mcl_smn_read_host(x, mcl_tensor_numel(x));
        if (!v[i]) {
            for (int j = 0; j < i; j++) free(v[j]);
            free(v);
            return NULL;
        }
    }
    return v;
}

static void params_snapshot_free(float **v, int n)
{
    for (int i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

static mcl_status params_restore(mcl_params *p, float **v)
{
    mcl_status st = MCL_OK;
    for (int i = 0; i < mcl_params_count(p) && st == MCL_OK; i++) {
        mcl_tensor *x = mcl_params_get(p, i);
        st = mcl_tensor_write(x, v[i], mcl_tensor_numel(x));
    }
    return st;
}

static mcl_status make_optim(smn_fs *t, const mcl_smn_online_opts *o, mcl_optim **opt)
{
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = mcl_smn_optim_kind(o->optimizer);
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = o->lr;
    mcl_optim_free(*opt);
    *opt = NULL;
    return mcl_optim_create(t->ctx, &oc, t->m->params, opt);
}

/* The current task index (onlinex: of the next round; wcst: of the next card). */
static int current_task(const smn_fs *t)
{
    if (t->env) return mcl_wcst_num_tasks(t->env) - 1;
    return t->round < t->n_rounds ? t->stream->task[t->round * t->B] : t->cfg.n_tasks;
}

mcl_status mcl_smn_online_run(mcl_ctx *ctx, const mcl_smn_run *cfg_in, const mcl_smn_online_opts *o,
                              mcl_smn_online_result *out, char *err, size_t len)
{
    memset(out, 0, sizeof *out);
    mcl_smn_run cfg = *cfg_in;
    cfg.env_seed = o->seed;
    cfg.data_seed = o->seed;
    const int fast_agent = o->agent == MCL_SMN_AGENT_ALG1 || o->agent == MCL_SMN_AGENT_FAST_ONLY;
    if (fast_agent && !cfg.model.fast)
        return fail(err, len, MCL_ERR_INVALID, "this agent needs a model with fast weights (model.fast = 1)");
    if (!fast_agent) {
        cfg.model.fast = 0;
        cfg.model.k = 1;
    }
    const int grad_agent = o->agent == MCL_SMN_AGENT_ALG1 || o->agent == MCL_SMN_AGENT_ONLINE ||
                           o->agent == MCL_SMN_AGENT_OFFLINE;
    if (grad_agent && !(o->lr > 0.0f)) return fail(err, len, MCL_ERR_INVALID, "lr = %g must be > 0", (double)o->lr);
    smn_fs *t = NULL;
    mcl_optim *opt = NULL;
    float **init = NULL;
    const double t0 = mcl_now_s();
    mcl_status st = mcl_smn_fs_create(ctx, &cfg, o->round_size > 0 ? o->round_size : 32, o->seed, NULL, &t, err, len);
    if (st == MCL_OK && o->init) {
        int copied = 0;
        st = mcl_smn_fs_copy_matching(t, o->init, o->new_head, &copied, err, len);
        if (st == MCL_OK && copied == 0)
            st = fail(err, len, MCL_ERR_INVALID, "nothing in '%s' fits this model", o->init);
    }
    if (st == MCL_OK && t->m->mn && mcl_metanet_clear(t->m->mn) != MCL_OK)
        st = fail(err, len, mcl_ctx_status(ctx), "%s", mcl_ctx_error(ctx));
    if (st == MCL_OK && grad_agent && make_optim(t, o, &opt) != MCL_OK)
        st = fail(err, len, mcl_ctx_status(ctx), "optimizer: %s", mcl_ctx_error(ctx));
    if (st == MCL_OK && o->agent == MCL_SMN_AGENT_OFFLINE && !(init = params_snapshot(t->m->params)))
        st = fail(err, len, MCL_ERR_OOM, "out of memory");
    int last_task = st == MCL_OK ? current_task(t) : 0;
    const int k = mcl_smn_window_len(&t->cfg.model);
    while (st == MCL_OK) {
        if (t->env ? mcl_smn_fs_tasks_done(t) >= o->max_tasks : current_task(t) >= o->max_tasks) break;
        if (o->max_steps > 0 && t->env_steps >= o->max_steps) break;
        if (t->stream && t->round + k > t->n_rounds) break;
        if (o->agent == MCL_SMN_AGENT_OFFLINE && current_task(t) != last_task) { /* told the switch */
            last_task = current_task(t);
            st = params_restore(t->m->params, init);
            if (st == MCL_OK) st = make_optim(t, o, &opt);
        }
        mcl_tensor *loss = NULL;
        t->win_hits = t->win_n = 0.0;
        if (st == MCL_OK && grad_agent) {
            mcl_optim_zero_grad(opt);
            st = mcl_smn_window_loss(t, &loss);
            if (st == MCL_OK) st = mcl_backward(ctx, loss);
            if (st == MCL_OK) st = mcl_smn_window_end(t);
            if (st == MCL_OK) st = mcl_optim_step(opt);
        } else if (st == MCL_OK && o->agent == MCL_SMN_AGENT_FAST_ONLY) {
            const size_t mark = mcl_tape_mark(ctx);
            st = mcl_smn_env_step(t, MCL_SMN_FAST_STEP, &loss);
            if (st == MCL_OK) st = mcl_metanet_write(t->m->mn, loss, mark, &t->cfg.model.eval_h, 0);
            if (st == MCL_OK) t->updates++;
        } else if (st == MCL_OK) {
            mcl_no_grad_begin(ctx);
            st = mcl_smn_env_step(t, MCL_SMN_FAST_STEP, &loss);
            mcl_no_grad_end(ctx);
        }
        if (st == MCL_OK) { /* the step's predictions, as the harness's step scores them: one wait */
            st = mcl_ctx_finish(ctx);
            if (st == MCL_OK) st = mcl_smn_score_pending(t);
        }
        if (st != MCL_OK) st = fail(err, len, st, "step %lld: %s", (long long)t->env_steps, mcl_ctx_error(ctx));
        mcl_ctx_reset(ctx);
    }
    if (st == MCL_OK && collect(t, out, o->max_tasks) != MCL_OK) st = fail(err, len, MCL_ERR_OOM, "out of memory");
    out->seconds = mcl_now_s() - t0;
    if (t) params_snapshot_free(init, mcl_params_count(t->m->params));
    mcl_optim_free(opt);
    mcl_smn_fs_free(t);
    if (st != MCL_OK) mcl_smn_online_result_free(out);
    return st;
}
