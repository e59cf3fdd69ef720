/* learner_api.c — learner.h's operations as plain functions (learner_api.h). */
#include <stdio.h>
#include <string.h>

#include "baseline.h"
#include "checkpoint.h"
#include "learner_api.h"
#include "protocols.h"
#include "train.h"

mcl_status mcl_learner_open_ckpt(mcl_ctx *ctx, const char *path, int max_lanes, mcl_learner **out,
                                 char *kind, size_t kind_len, char *err, size_t err_len)
{
    if (out) *out = NULL;
    if (kind && kind_len) kind[0] = '\0';
    if (!ctx || !path || !out) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "learner: NULL argument");
    if (max_lanes < 0)
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID, "learner: max_lanes %d must be >= 0", max_lanes);
    mcl_ckpt_info info;
    mcl_status s = mcl_ckpt_read_info(path, &info, err, err_len);
    if (s != MCL_OK) {
        mcl_ckpt_info_free(&info);
        return s;
    }
    if (kind && kind_len) snprintf(kind, kind_len, "%s", info.model_kind);
    const mcl_family *fam = mcl_family_find(info.model_kind);
    if (!fam)
        s = mcl_errbuf(err, err_len, MCL_ERR_FORMAT, "%s: model kind '%s' is not a family of this build",
                       path, info.model_kind);
    else if (!fam->learner_open)
        s = mcl_errbuf(err, err_len, MCL_ERR_UNSUPPORTED,
                       "%s: a '%s' model is not a learner of the evaluation protocols", path,
                       info.model_kind);
    mcl_ckpt_info_free(&info);
    if (s != MCL_OK) return s;
    return fam->learner_open(ctx, path, max_lanes, out, err, err_len);
}

mcl_status mcl_ckpt_model_kind(const char *path, char *kind, size_t len, char *err, size_t err_len)
{
    if (!path || !kind || !len) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "checkpoint kind: NULL argument");
    kind[0] = '\0';
    mcl_ckpt_info info;
    mcl_status s = mcl_ckpt_read_info(path, &info, err, err_len);
    if (s == MCL_OK) snprintf(kind, len, "%s", info.model_kind);
    mcl_ckpt_info_free(&info);
    return s;
}

mcl_status mcl_learner_open_baseline(mcl_ctx *ctx, const char *spec, uint64_t seed, mcl_learner **out,
                                     char *err, size_t err_len)
{
    if (out) *out = NULL;
    if (!ctx || !spec || !out) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "baseline: NULL argument");
    mcl_baseline_config cfg;
    mcl_status s = mcl_baseline_parse(spec, &cfg, err, err_len);
    if (s != MCL_OK) return s;
    cfg.seed = seed;
    s = mcl_baseline_learner_create(ctx, &cfg, out);
    if (s != MCL_OK) mcl_errbuf(err, err_len, s, "baseline %s: %s", spec, mcl_ctx_error(ctx));
    return s;
}

#define NEED(L) \
    do { \
        if (!(L)) return MCL_ERR_NULL; \
    } while (0)

mcl_status mcl_learner_begin(mcl_learner *L)
{
    NEED(L);
    return L->ops->begin ? L->ops->begin(L) : MCL_OK;
}

void mcl_learner_end(mcl_learner *L)
{
    if (L && L->ops->end) L->ops->end(L);
}

mcl_status mcl_learner_reset(mcl_learner *L, int lanes, int n_outputs, int64_t run, int64_t episode)
{
    NEED(L);
    if (lanes < 1 || (L->max_lanes > 0 && lanes > L->max_lanes))
        return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID, "learner: %d lanes (this learner takes 1..%d)",
                                 lanes, L->max_lanes > 0 ? L->max_lanes : lanes);
    if (n_outputs < 1 || (L->max_outputs > 0 && n_outputs > L->max_outputs))
        return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID, "learner: %d outputs (this learner gives 1..%d)",
                                 n_outputs, L->max_outputs > 0 ? L->max_outputs : n_outputs);
    return L->ops->reset(L, lanes, n_outputs, run, episode);
}

/* Rows must be given for every lane and point into the set. */
static mcl_status check_rows(mcl_learner *L, const char *what, const mcl_dataset *ds,
                             const int64_t *idx, int64_t n)
{
    if (!ds || !idx) return mcl_ctx_set_error(L->ctx, MCL_ERR_NULL, "learner %s: NULL data", what);
    if (L->lanes < 1) return mcl_ctx_set_error(L->ctx, MCL_ERR_STATE, "learner %s before reset", what);
    if (n < 1) return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID, "learner %s: %lld rows per lane", what, (long long)n);
    for (int64_t r = 0; r < n * L->lanes; r++)
        if (idx[r] < 0 || idx[r] >= ds->n)
            return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID, "learner %s: row %lld is image %lld of a set of %lld",
                                     what, (long long)r, (long long)idx[r], (long long)ds->n);
    return MCL_OK;
}

mcl_status mcl_learner_observe(mcl_learner *L, int task, const mcl_dataset *ds, const int64_t *idx,
                               const int32_t *lab, int64_t n, int normalize, int64_t ctx_chunk)
{
    NEED(L);
    mcl_status s = check_rows(L, "observe", ds, idx, n);
    if (s != MCL_OK) return s;
    if (!lab) return mcl_ctx_set_error(L->ctx, MCL_ERR_NULL, "learner observe: NULL labels");
    if (task < 0 || ctx_chunk < 0)
        return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID, "learner observe: task %d, chunk %lld", task,
                                 (long long)ctx_chunk);
    const mcl_learn_opts o = {normalize != 0, MCL_EVAL_QUERY_CHUNK, ctx_chunk};
    return L->ops->observe(L, task, ds, idx, lab, n, &o);
}

mcl_status mcl_learner_predict(mcl_learner *L, const mcl_dataset *ds, const int64_t *idx, int64_t n,
                               int normalize, int64_t query_chunk, float *logits)
{
    NEED(L);
    mcl_status s = check_rows(L, "predict", ds, idx, n);
    if (s != MCL_OK) return s;
    if (!logits) return mcl_ctx_set_error(L->ctx, MCL_ERR_NULL, "learner predict: NULL output");
    if (query_chunk < 0)
        return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID, "learner predict: chunk %lld", (long long)query_chunk);
    const mcl_learn_opts o = {normalize != 0, query_chunk ? query_chunk : MCL_EVAL_QUERY_CHUNK, 0};
    return L->ops->predict(L, ds, idx, n, &o, logits);
}

const char *mcl_learner_kind(const mcl_learner *L) { return L ? L->ops->kind : NULL; }
int mcl_learner_lanes(const mcl_learner *L) { return L ? L->lanes : 0; }
int mcl_learner_n_logits(const mcl_learner *L) { return L ? L->n_logits : 0; }
int mcl_learner_max_lanes(const mcl_learner *L) { return L ? L->max_lanes : 0; }
int mcl_learner_max_outputs(const mcl_learner *L) { return L ? L->max_outputs : 0; }
