/* smn_agent.c — a trained Sparse-MetaNet model as an agent (smn_agent.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metanet.h"
#include "smn_agent.h"

struct mcl_smn_model {
    mcl_ctx *ctx;
    mcl_smn *m;
    mcl_smn_run cfg;
    char path[4096];
};

mcl_status mcl_smn_model_open(mcl_ctx *ctx, const char *path, mcl_smn_model **out, char *err, size_t len)
{
    if (out) *out = NULL;
    if (!ctx || !path || !out) return mcl_errbuf(err, len, MCL_ERR_NULL, "smn: NULL argument");
    if (strlen(path) >= sizeof((mcl_smn_model *)0)->path)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "smn: a path of %zu bytes is too long", strlen(path));
    mcl_smn_model *s = calloc(1, sizeof *s);
    if (!s) return mcl_errbuf(err, len, MCL_ERR_OOM, "smn: out of host memory");
    mcl_status st = mcl_smn_run_from_ckpt(path, &s->cfg, err, len);
    if (st == MCL_OK) st = mcl_smn_open(ctx, path, &s->m, NULL, err, len);
    if (st != MCL_OK) {
        free(s);
        return st;
    }
    s->ctx = ctx;
    snprintf(s->path, sizeof s->path, "%s", path);
    *out = s;
    return MCL_OK;
}

void mcl_smn_model_free(mcl_smn_model *s)
{
    if (!s) return;
    mcl_smn_free(s->m);
    free(s);
}

int mcl_smn_model_task(const mcl_smn_model *s) { return s ? s->cfg.task : -1; }
int mcl_smn_model_n_out(const mcl_smn_model *s) { return s ? s->m->cfg.n_out : 0; }

int64_t mcl_smn_model_obs_size(const mcl_smn_model *s)
{
    if (!s) return 0;
    return s->m->cfg.arch == MCL_SMN_RESNET ? 32 * 32 : s->m->cfg.in_dim;
}

mcl_status mcl_smn_model_act(mcl_smn_model *s, const float *obs, int64_t rows, float *logits, char *err,
                             size_t len)
{
    if (!s || !obs || !logits) return mcl_errbuf(err, len, MCL_ERR_NULL, "act: NULL argument");
    if (rows < 1 || rows > 65536)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "act: %lld observations (1..65536)", (long long)rows);
    mcl_ctx *ctx = s->ctx;
    const int64_t d = mcl_smn_model_obs_size(s);
    mcl_no_grad_begin(ctx);
    mcl_tensor *x = s->m->cfg.arch == MCL_SMN_RESNET ? mcl_tensor_new(ctx, rows, 1, 32, 32)
                                                      : mcl_tensor_new(ctx, rows, d, 0, 0);
    mcl_tensor *out = NULL;
    mcl_status st = x ? mcl_tensor_write(x, obs, rows * d) : mcl_ctx_status(ctx);
    if (st == MCL_OK) st = mcl_smn_forward(s->m, MCL_SMN_FAST_STEP, x, rows, &out, NULL);
    if (st == MCL_OK) st = mcl_tensor_read(out, logits, rows * s->m->cfg.n_out);
    if (st != MCL_OK) mcl_errbuf(err, len, st, "act: %s", mcl_ctx_error(ctx));
    mcl_tensor_free(x);
    mcl_no_grad_end(ctx);
    mcl_ctx_reset(ctx);
    return st;
}

mcl_status mcl_smn_model_reset(mcl_smn_model *s, char *err, size_t len)
{
    if (!s) return mcl_errbuf(err, len, MCL_ERR_NULL, "reset: NULL model");
    mcl_status st = s->m->mn ? mcl_metanet_clear(s->m->mn) : MCL_OK;
    if (st != MCL_OK) mcl_errbuf(err, len, st, "reset: %s", mcl_ctx_error(s->ctx));
    return st;
}

mcl_status mcl_smn_model_run(mcl_smn_model *s, mcl_smn_agent agent, uint64_t seed, int max_tasks, int64_t max_steps,
                             float lr, mcl_smn_task_rec *recs, int cap, int *n, int64_t *updates, char *err,
                             size_t len)
{
    if (!s || !recs || !n || !updates) return mcl_errbuf(err, len, MCL_ERR_NULL, "run: NULL argument");
    *n = 0;
    if (agent != MCL_SMN_AGENT_ALG1 && agent != MCL_SMN_AGENT_FAST_ONLY && agent != MCL_SMN_AGENT_FROZEN)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "run: agent %d (Algorithm 1, fast weights only or frozen)",
                          (int)agent);
    if (max_tasks < 1 || max_steps < 1 || !(lr >= 0.0f))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "run: %d tasks, %lld steps, lr %g", max_tasks,
                          (long long)max_steps, (double)lr);
    mcl_smn_online_opts o;
    memset(&o, 0, sizeof o);
    o.agent = agent;
    o.lr = lr;
    o.optimizer = s->cfg.optimizer;
    o.seed = seed;
    o.max_tasks = max_tasks;
    o.max_steps = max_steps;
    o.init = s->path;
    mcl_smn_online_result r;
    memset(&r, 0, sizeof r);
    mcl_status st = mcl_smn_online_run(s->ctx, &s->cfg, &o, &r, err, len);
    if (st == MCL_OK) {
        *n = r.n_tasks < cap ? r.n_tasks : cap;
        memcpy(recs, r.task, (size_t)*n * sizeof *recs);
        *updates = r.updates;
    }
    mcl_smn_online_result_free(&r);
    return st;
}
