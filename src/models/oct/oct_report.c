/* oct_report.c — the report of an online run (oct_train.h, mcl_oct_report_load): from a run
 * directory, the stream drawn again from config.txt (the same draw as the run's, no images
 * read; oct_stream.h) and the per-example record from last.ckpt's state tensors, summed into
 * the per-task and cumulative numbers `metacl online --report` prints and plots.
 */
#define _POSIX_C_SOURCE 200809L
#include "oct_stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "util.h"

#define fail mcl_errbuf

void mcl_oct_report_free(mcl_oct_report *rep)
{
    if (!rep) return;
    free(rep->task_acc);
    free(rep->task_nll);
    free(rep->hit);
    free(rep->nll);
    free(rep->task);
    free(rep->pos);
    memset(rep, 0, sizeof *rep);
}

mcl_status mcl_oct_report_load(const char *run_dir, mcl_oct_report *rep, char *err, size_t len)
{
    memset(rep, 0, sizeof *rep);
    char path[2048];
    snprintf(path, sizeof path, "%s/config.txt", run_dir);
    mcl_run_cfg rc;
    mcl_status st = mcl_run_cfg_init(&rc, &mcl_oct_family, err, len);
    if (st != MCL_OK) return st;
    st = mcl_run_cfg_load(&rc, path, err, len);
    /* the run's config.txt is checked as `online --config` is (a stream of at most 2^26
     * examples), and what the report holds (the stream, the record) against the budget */
    if (st == MCL_OK) st = mcl_run_cfg_check(&rc, err, len);
    if (st == MCL_OK)
        st = mcl_check_budget(mcl_budget_bytes((double)mcl_oct_stream_len(rc.fcfg) * 48.0),
                              "the report of this stream", err, len);
    if (st != MCL_OK) {
        mcl_run_cfg_free(&rc);
        return st;
    }
    const mcl_oct_run *c = rc.fcfg;
    const int64_t n = mcl_oct_stream_len(c);
    /* the stream's tags: the same draw as the run's (no images are read) */
    mcl_dataset *ds = NULL;
    mcl_stream *sm = NULL;
    char e2[768];
    st = mcl_dataset_load(c->source, c->data_dir[0] ? c->data_dir : NULL, (mcl_split)c->split, &ds, e2, sizeof e2);
    if (st == MCL_OK) {
        st = mcl_oct_stream_draw(c, ds, &sm, e2, sizeof e2);
    }
    if (st != MCL_OK) fail(err, len, st, "%s", e2);
    /* the record: last.ckpt's state tensors */
    mcl_ckpt_info info;
    memset(&info, 0, sizeof info);
    float *nll = NULL, *hit = NULL;
    if (st == MCL_OK) {
        snprintf(path, sizeof path, "%s/last.ckpt", run_dir);
        st = mcl_ckpt_read_tensor(path, "state.record.nll", n, &nll, &info, err, len);
        if (st == MCL_OK) st = mcl_ckpt_read_tensor(path, "state.record.hit", n, &hit, NULL, err, len);
    }
    uint64_t sc = 0;
    if (st == MCL_OK && (!mcl_ckpt_info_counter(&info, "scored", &sc) || sc > (uint64_t)n))
        st = fail(err, len, MCL_ERR_FORMAT, "%s: counter scored missing or out of range", path);
    if (st == MCL_OK) {
        rep->n = (int64_t)sc;
        rep->n_tasks = c->n_tasks;
        rep->n_way = c->model.n_way;
        rep->model_seed = c->model.seed;
        rep->stream_seed = c->data_seed;
        rep->train_seed = rc.train.seed;
        snprintf(rep->source, sizeof rep->source, "%s", c->source);
        rep->per_task_max = 0;
        rep->task_acc = calloc((size_t)c->n_tasks, sizeof *rep->task_acc);
        rep->task_nll = calloc((size_t)c->n_tasks, sizeof *rep->task_nll);
        rep->hit = calloc((size_t)(rep->n + 1), sizeof *rep->hit);
        rep->nll = calloc((size_t)(rep->n + 1), sizeof *rep->nll);
        rep->task = calloc((size_t)(rep->n + 1), sizeof *rep->task);
        rep->pos = calloc((size_t)(rep->n + 1), sizeof *rep->pos);
        if (!rep->task_acc || !rep->task_nll || !rep->hit || !rep->nll || !rep->task || !rep->pos)
            st = fail(err, len, MCL_ERR_OOM, "out of memory");
    }
    if (st == MCL_OK) {
        double sn = 0.0, sh = 0.0;
        for (int tk = 0; tk < c->n_tasks; tk++) {
            double a = 0.0, l = 0.0;
            int64_t k = 0;
            for (int64_t i = sm->task_start[tk]; i < sm->task_start[tk + 1] && i < rep->n; i++, k++) {
                a += hit[i];
                l += nll[i];
                rep->task[i] = tk;
                rep->pos[i] = i - sm->task_start[tk];
                rep->hit[i] = hit[i];
                rep->nll[i] = nll[i];
            }
            rep->task_acc[tk] = k ? a / (double)k : NAN;
            rep->task_nll[tk] = k ? l / (double)k : NAN;
            if (sm->task_len[tk] > rep->per_task_max) rep->per_task_max = sm->task_len[tk];
        }
        for (int64_t i = 0; i < rep->n; i++) sn += nll[i], sh += hit[i];
        rep->cum_nll = rep->n ? sn / (double)rep->n : NAN;
        rep->online_acc = rep->n ? sh / (double)rep->n : NAN;
    }
    free(nll);
    free(hit);
    mcl_ckpt_info_free(&info);
    mcl_stream_free(sm);
    mcl_dataset_free(ds);
    mcl_run_cfg_free(&rc);
    if (st != MCL_OK) mcl_oct_report_free(rep);
    return st;
}

double mcl_oct_within_acc(const mcl_oct_report *rep, int t0, int t1, int64_t i, int64_t half)
{
    double s = 0.0;
    int64_t k = 0;
    for (int64_t j = 0; j < rep->n; j++)
        if (rep->task[j] >= t0 && rep->task[j] < t1 && rep->pos[j] >= i - half && rep->pos[j] <= i + half)
            s += rep->hit[j], k++;
    return k ? s / (double)k : NAN;
}
