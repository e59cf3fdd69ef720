/* acl_interop.c — ACL parameters <-> safetensors with the official PyTorch names and layouts
 * (see acl_interop.h; the table of every name: doc/interop.md). */
#include "acl_interop.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor.h"

#define fail mcl_errbuf

/* One parameter: our name and shape, the official name, and the layout change. */
typedef struct map_row {
    char ours[48];
    char theirs[64];
    int transpose; /* linear weight: ours [in, out], theirs [out, in]             */
    int lead1;     /* SRWM tensor: theirs has a leading axis of 1                 */
    int ndim;      /* ours                                                         */
    int64_t shape[4];
} map_row;

/* Per conv block i: our suffix of "conv<i>.", the official suffix of "conv_layers.<i>." (the
 * Sequential [0 Conv2d, 1 InstanceNorm2d, 2 MaxPool2d, 3 Dropout, 4 ReLU]). */
static const char *const conv_rows[4][2] = {
    {"w", "0.weight"}, {"b", "0.bias"}, {"norm.g", "1.weight"}, {"norm.b", "1.bias"}};

/* Per layer l: our suffix of "layer<l>.", the ModuleList index 2l + sub of "layers.<2l+sub>."
 * (sub 0: the SRWM layer, 1: the feed-forward block, a Sequential [0 Linear, 1 ReLU,
 * 2 Dropout, 3 Linear, 4 Dropout] called ff_layers), the official suffix and the change. */
typedef struct layer_row {
    const char *ours;
    int sub;
    const char *theirs;
    int transpose, lead1;
} layer_row;
static const layer_row layer_rows[] = {
    {"srwm.Wy", 0, "W_y", 0, 1},
    {"srwm.Wq", 0, "W_q", 0, 1},
    {"srwm.Wk", 0, "W_k", 0, 1},
    {"srwm.wb", 0, "w_b", 0, 1},
    {"srwm.ln.g", 0, "layer_norm.weight", 0, 0},
    {"srwm.ln.b", 0, "layer_norm.bias", 0, 0},
    {"srwm.out.w", 0, "out_linear.weight", 1, 0},
    {"ff.ln.g", 1, "layer_norm.weight", 0, 0},
    {"ff.ln.b", 1, "layer_norm.bias", 0, 0},
    {"ff.w1", 1, "ff_layers.0.weight", 1, 0},
    {"ff.b1", 1, "ff_layers.0.bias", 0, 0},
    {"ff.w2", 1, "ff_layers.3.weight", 1, 0},
    {"ff.b2", 1, "ff_layers.3.bias", 0, 0},
};
#define N_LAYER_ROWS ((int)(sizeof layer_rows / sizeof layer_rows[0]))

static void set_shape(map_row *r, int ndim, int64_t a, int64_t b, int64_t c, int64_t d)
{
    r->ndim = ndim;
    r->shape[0] = a;
    r->shape[1] = b;
    r->shape[2] = c;
    r->shape[3] = d;
}

/* Every parameter of a model of config c, in registration order (acl.c). *rows: malloc'd. */
static mcl_status build_map(const mcl_acl_config *c, map_row **rows, int *n, char *err, size_t len)
{
    *rows = NULL;
    *n = 0;
    if (c->n_way < 1 || c->hidden < 1 || c->heads < 1 || c->hidden % c->heads != 0 || c->layers < 0 ||
        c->layers > 1024 || c->ff_mult < 1 || c->conv_channels < 1 || c->in_channels < 1 ||
        c->image_size < 16 || c->image_size % 16 != 0)
        return fail(err, len, MCL_ERR_INVALID, "bad ACL config (hidden %d, heads %d, layers %d, image_size %d)",
                    c->hidden, c->heads, c->layers, c->image_size);
    const int64_t C = c->conv_channels, Hd = c->hidden, H = c->heads, D = Hd / H, N = c->n_way;
    const int64_t FF = (int64_t)c->ff_mult * Hd, sp = c->image_size / 16, F = C * sp * sp;
    const int total = 16 + 2 + N_LAYER_ROWS * c->layers + 2 + (c->feature_norm == MCL_ACL_FEATNORM_BATCH ? 2 : 0);
    map_row *r = calloc((size_t)total, sizeof *r);
    if (!r) return fail(err, len, MCL_ERR_OOM, "out of memory");
    int k = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++, k++) {
            snprintf(r[k].ours, sizeof r[k].ours, "conv%d.%s", i, conv_rows[j][0]);
            snprintf(r[k].theirs, sizeof r[k].theirs, "conv_layers.%d.%s", i, conv_rows[j][1]);
            if (j == 0) set_shape(&r[k], 4, C, i == 0 ? c->in_channels : C, 3, 3);
            else set_shape(&r[k], 1, C, 0, 0, 0);
        }
    snprintf(r[k].ours, sizeof r[k].ours, "input.w");
    snprintf(r[k].theirs, sizeof r[k].theirs, "input_proj.weight");
    r[k].transpose = 1;
    set_shape(&r[k++], 2, F + N + 1, Hd, 0, 0);
    snprintf(r[k].ours, sizeof r[k].ours, "input.b");
    snprintf(r[k].theirs, sizeof r[k].theirs, "input_proj.bias");
    set_shape(&r[k++], 1, Hd, 0, 0, 0);
    for (int l = 0; l < c->layers; l++)
        for (int j = 0; j < N_LAYER_ROWS; j++, k++) {
            const layer_row *lr = &layer_rows[j];
            snprintf(r[k].ours, sizeof r[k].ours, "layer%d.%s", l, lr->ours);
            snprintf(r[k].theirs, sizeof r[k].theirs, "layers.%d.%s", 2 * l + lr->sub, lr->theirs);
            r[k].transpose = lr->transpose;
            r[k].lead1 = lr->lead1;
            if (j < 3) set_shape(&r[k], 3, H, D, D, 0);                    /* W_y, W_q, W_k */
            else if (j == 3) set_shape(&r[k], 3, H, D, 4, 0);              /* w_b           */
            else if (j == 6) set_shape(&r[k], 2, Hd, Hd, 0, 0);            /* out_linear    */
            else if (j == 9) set_shape(&r[k], 2, Hd, FF, 0, 0);            /* ff 1          */
            else if (j == 10) set_shape(&r[k], 1, FF, 0, 0, 0);
            else if (j == 11) set_shape(&r[k], 2, FF, Hd, 0, 0);           /* ff 2          */
            else set_shape(&r[k], 1, Hd, 0, 0, 0);                         /* norms, b2     */
        }
    snprintf(r[k].ours, sizeof r[k].ours, "head.w");
    snprintf(r[k].theirs, sizeof r[k].theirs, "out_layer.weight");
    r[k].transpose = 1;
    set_shape(&r[k++], 2, Hd, N, 0, 0);
    snprintf(r[k].ours, sizeof r[k].ours, "head.b");
    snprintf(r[k].theirs, sizeof r[k].theirs, "out_layer.bias");
    set_shape(&r[k++], 1, N, 0, 0, 0);
    if (c->feature_norm == MCL_ACL_FEATNORM_BATCH) {
        snprintf(r[k].ours, sizeof r[k].ours, "featnorm.running_mean");
        snprintf(r[k].theirs, sizeof r[k].theirs, "feature_norm.running_mean");
        set_shape(&r[k++], 1, F, 0, 0, 0);
        snprintf(r[k].ours, sizeof r[k].ours, "featnorm.running_var");
        snprintf(r[k].theirs, sizeof r[k].theirs, "feature_norm.running_var");
        set_shape(&r[k++], 1, F, 0, 0, 0);
    }
    *rows = r;
    *n = k;
    return MCL_OK;
}

/* The official shape of a row. */
static int theirs_shape(const map_row *r, int64_t *s)
{
    if (r->transpose) {
        s[0] = r->shape[1];
        s[1] = r->shape[0];
        return 2;
    }
    int o = r->lead1 ? 1 : 0;
    if (o) s[0] = 1;
    for (int d = 0; d < r->ndim; d++) s[o + d] = r->shape[d];
    return r->ndim + o;
}

static int64_t row_numel(const map_row *r)
{
    int64_t n = 1;
    for (int d = 0; d < r->ndim; d++) n *= r->shape[d];
    return n;
}

static void shape_str(int ndim, const int64_t *s, char *buf, size_t n)
{
    size_t at = 0;
    at += (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && at < n; d++)
        at += (size_t)snprintf(buf + at, n - at, d ? ",%" PRId64 : "%" PRId64, s[d]);
    if (at < n) snprintf(buf + at, n - at, "]");
}

/* [a, b] row-major -> [b, a] */
static void transpose2(const float *src, int64_t a, int64_t b, float *dst)
{
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++) dst[j * a + i] = src[i * b + j];
}

mcl_status mcl_acl_official_name(const mcl_acl_config *cfg, const char *ours, char *official,
                                 size_t official_len, int *transpose, int *lead1)
{
    if (!cfg || !ours) return MCL_ERR_NULL;
    map_row *rows;
    int n;
    mcl_status st = build_map(cfg, &rows, &n, NULL, 0);
    if (st != MCL_OK) return st;
    st = MCL_ERR_INVALID;
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].ours, ours)) {
            if (official && official_len) snprintf(official, official_len, "%s", rows[i].theirs);
            if (transpose) *transpose = rows[i].transpose;
            if (lead1) *lead1 = rows[i].lead1;
            st = MCL_OK;
            break;
        }
    free(rows);
    return st;
}

/* The rows of m's config, each checked against the model's registry (name and shape), and the
 * registry holding no other tensor: the table above and acl.c cannot drift apart silently. */
static mcl_status model_map(mcl_acl *m, map_row **rows, int *n, char *err, size_t len)
{
    mcl_status st = build_map(&m->cfg, rows, n, err, len);
    if (st != MCL_OK) return st;
    for (int i = 0; i < *n; i++) {
        const map_row *r = &(*rows)[i];
        const mcl_tensor *t = mcl_params_find(m->params, r->ours);
        int same = t && mcl_tensor_ndim(t) == r->ndim;
        for (int d = 0; same && d < r->ndim; d++) same = mcl_tensor_shape(t)[d] == r->shape[d];
        if (!same) {
            free(*rows);
            *rows = NULL;
            return fail(err, len, MCL_ERR_STATE, "ACL interop map: parameter '%s' %s", r->ours,
                        t ? "has another shape in the model" : "is not in the model");
        }
    }
    if (mcl_params_count(m->params) != *n) {
        free(*rows);
        *rows = NULL;
        return fail(err, len, MCL_ERR_STATE, "ACL interop map: the model has %d parameters, the map %d",
                    mcl_params_count(m->params), *n);
    }
    return MCL_OK;
}

mcl_status mcl_acl_to_safetensors(mcl_acl *m, mcl_safetensors **out, char *err, size_t len)
{
    if (out) *out = NULL;
    if (!m || !out) return fail(err, len, MCL_ERR_NULL, "mcl_acl_to_safetensors: NULL argument");
    map_row *rows;
    int n;
    mcl_status st = model_map(m, &rows, &n, err, len);
    if (st != MCL_OK) return st;
    int64_t most = 1;
    for (int i = 0; i < n; i++)
        if (row_numel(&rows[i]) > most) most = row_numel(&rows[i]);
    float *a = malloc((size_t)most * sizeof *a), *b = malloc((size_t)most * sizeof *b);
    mcl_safetensors *s = mcl_st_create();
    char *cfg = mcl_acl_config_to_text(&m->cfg);
    if (!a || !b || !s || !cfg) st = fail(err, len, MCL_ERR_OOM, "mcl_acl_to_safetensors: out of memory");
    if (st == MCL_OK) st = mcl_st_set_meta(s, "format", "pt", err, len);
    if (st == MCL_OK) st = mcl_st_set_meta(s, MCL_ACL_ST_META_MODEL, MCL_ACL_CKPT_KIND, err, len);
    if (st == MCL_OK) st = mcl_st_set_meta(s, MCL_ACL_ST_META_CONFIG, cfg, err, len);
    for (int i = 0; i < n && st == MCL_OK; i++) {
        const map_row *r = &rows[i];
        const int64_t numel = row_numel(r);
        if ((st = mcl_tensor_read(mcl_params_find(m->params, r->ours), a, numel)) != MCL_OK) {
            fail(err, len, st, "reading parameter '%s' failed", r->ours);
            break;
        }
        if (r->transpose) transpose2(a, r->shape[0], r->shape[1], b);
        int64_t ts[MCL_ST_MAX_DIMS];
        int tn = theirs_shape(r, ts);
        st = mcl_st_add(s, r->theirs, tn, ts, r->transpose ? b : a, err, len);
    }
    free(a);
    free(b);
    free(cfg);
    free(rows);
    if (st != MCL_OK) {
        mcl_st_free(s);
        return st;
    }
    *out = s;
    return MCL_OK;
}

static int row_by_theirs(const void *x, const void *y)
{
    return strcmp((*(const map_row *const *)x)->theirs, (*(const map_row *const *)y)->theirs);
}

/* A word on why an official-looking name is not in our model. */
static const char *extra_hint(const char *name)
{
    if (!strncmp(name, "conv_layers.", 12) &&
        (strstr(name, "running_mean") || strstr(name, "running_var") || strstr(name, "num_batches_tracked")))
        return " (a BatchNorm2d statistic: our Conv-4 uses affine InstanceNorm2d, the official "
               "model's use_instance_norm)";
    if (strstr(name, "y_lnorm")) return " (the official model's no_softmax_on_y variant: not ours)";
    if (!strncmp(name, "feature_norm.", 13))
        return " (only a model with feature_norm = batch has it)";
    return "";
}

/* The set holds exactly the rows' official names with the official shapes. */
static mcl_status check_set(const map_row *rows, int n, const mcl_safetensors *s, char *err, size_t len)
{
    char a[96], b[96];
    for (int i = 0; i < n; i++) {
        const map_row *r = &rows[i];
        const mcl_st_tensor *t = mcl_st_find(s, r->theirs);
        if (!t)
            return fail(err, len, MCL_ERR_INVALID, "no tensor '%s' (our %s) in the file%s", r->theirs, r->ours,
                        !strncmp(r->theirs, "feature_norm.", 13)
                            ? ": the config has feature_norm = batch, the file's model has no feature "
                              "normalization statistics"
                            : "");
        int64_t ts[MCL_ST_MAX_DIMS];
        int tn = theirs_shape(r, ts), same = t->ndim == tn;
        for (int d = 0; same && d < tn; d++) same = t->shape[d] == ts[d];
        if (!same) {
            shape_str(t->ndim, t->shape, a, sizeof a);
            shape_str(tn, ts, b, sizeof b);
            const int no_extra = !strcmp(r->theirs, "input_proj.weight") && t->ndim == 2 &&
                                 t->shape[0] == ts[0] && t->shape[1] == ts[1] - 1;
            return fail(err, len, MCL_ERR_SHAPE, "tensor '%s' has shape %s in the file, the config needs %s%s",
                        r->theirs, a, b,
                        no_extra ? " (one label input fewer: the official model without extra_label; "
                                   "ours has n_way + 1 label inputs)"
                                 : "");
        }
    }
    if (s->n == n) return MCL_OK; /* names are unique in a set: all matched, none extra */
    const map_row **ord = malloc((size_t)(n > 0 ? n : 1) * sizeof *ord);
    if (!ord) return fail(err, len, MCL_ERR_OOM, "out of memory");
    for (int i = 0; i < n; i++) ord[i] = &rows[i];
    qsort(ord, (size_t)n, sizeof *ord, row_by_theirs);
    mcl_status st = MCL_OK;
    for (int i = 0; i < s->n && st == MCL_OK; i++) {
        map_row key;
        snprintf(key.theirs, sizeof key.theirs, "%s", s->t[i].name);
        const map_row *kp = &key;
        if (strlen(s->t[i].name) >= sizeof key.theirs ||
            !bsearch(&kp, ord, (size_t)n, sizeof *ord, row_by_theirs))
            st = fail(err, len, MCL_ERR_INVALID, "tensor '%s' of the file is not a parameter of this model%s",
                      s->t[i].name, extra_hint(s->t[i].name));
    }
    free(ord);
    return st;
}

mcl_status mcl_acl_from_safetensors(mcl_acl *m, const mcl_safetensors *s, char *err, size_t len)
{
    if (!m || !s) return fail(err, len, MCL_ERR_NULL, "mcl_acl_from_safetensors: NULL argument");
    map_row *rows;
    int n;
    mcl_status st = model_map(m, &rows, &n, err, len);
    if (st == MCL_OK) st = check_set(rows, n, s, err, len);
    int64_t most = 1;
    for (int i = 0; st == MCL_OK && i < n; i++)
        if (row_numel(&rows[i]) > most) most = row_numel(&rows[i]);
    float *b = st == MCL_OK ? malloc((size_t)most * sizeof *b) : NULL;
    if (st == MCL_OK && !b) st = fail(err, len, MCL_ERR_OOM, "mcl_acl_from_safetensors: out of memory");
    for (int i = 0; i < n && st == MCL_OK; i++) {
        const map_row *r = &rows[i];
        const mcl_st_tensor *t = mcl_st_find(s, r->theirs);
        if (r->transpose) transpose2(t->data, r->shape[1], r->shape[0], b);
        st = mcl_tensor_write(mcl_params_find(m->params, r->ours), r->transpose ? b : t->data, t->numel);
        if (st != MCL_OK) fail(err, len, st, "writing parameter '%s' failed", r->ours);
    }
    free(b);
    free(rows);
    return st;
}

mcl_status mcl_acl_config_from_safetensors(const mcl_safetensors *s, mcl_acl_config *cfg, char *err,
                                           size_t len)
{
    if (!s || !cfg) return fail(err, len, MCL_ERR_NULL, "mcl_acl_config_from_safetensors: NULL argument");
    const char *kind = mcl_st_meta(s, MCL_ACL_ST_META_MODEL), *text = mcl_st_meta(s, MCL_ACL_ST_META_CONFIG);
    if (kind && strcmp(kind, MCL_ACL_CKPT_KIND) != 0)
        return fail(err, len, MCL_ERR_INVALID, "the file's metadata says model '%.32s', not '%s'", kind,
                    MCL_ACL_CKPT_KIND);
    if (!text)
        return fail(err, len, MCL_ERR_INVALID,
                    "the file has no \"%s\" metadata (not written by metacl): give the model config "
                    "(--config FILE or --template CKPT)",
                    MCL_ACL_ST_META_CONFIG);
    char e2[512];
    mcl_acl_config_default(cfg);
    if (mcl_acl_config_parse(cfg, text, e2, sizeof e2) != MCL_OK)
        return fail(err, len, MCL_ERR_FORMAT, "the config in the file's metadata: %s", e2);
    return MCL_OK;
}

mcl_status mcl_acl_export_safetensors(mcl_acl *m, const char *path, char *err, size_t len)
{
    if (!m || !path) return fail(err, len, MCL_ERR_NULL, "mcl_acl_export_safetensors: NULL argument");
    mcl_safetensors *s;
    mcl_status st = mcl_acl_to_safetensors(m, &s, err, len);
    if (st != MCL_OK) return st;
    st = mcl_st_write(s, path, err, len);
    mcl_st_free(s);
    return st;
}

mcl_status mcl_acl_import_safetensors(mcl_ctx *ctx, const char *path, const mcl_acl_config *cfg,
                                      mcl_acl **out, char *err, size_t len)
{
    if (out) *out = NULL;
    if (!ctx || !path || !out) return fail(err, len, MCL_ERR_NULL, "mcl_acl_import_safetensors: NULL argument");
    mcl_safetensors *s;
    char e2[768];
    mcl_status st = mcl_st_read(path, &s, err, len);
    if (st != MCL_OK) return st;
    mcl_acl_config c;
    if (cfg) c = *cfg;
    else st = mcl_acl_config_from_safetensors(s, &c, e2, sizeof e2);
    /* the names and shapes the config asks for, against the file, before any model exists */
    map_row *rows = NULL;
    int n = 0;
    if (st == MCL_OK) st = build_map(&c, &rows, &n, e2, sizeof e2);
    if (st == MCL_OK) st = check_set(rows, n, s, e2, sizeof e2);
    free(rows);
    mcl_acl *m = NULL;
    if (st == MCL_OK && !(m = mcl_acl_create(ctx, &c))) {
        st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_INVALID;
        snprintf(e2, sizeof e2, "%s", mcl_ctx_error(ctx));
    }
    if (st == MCL_OK) st = mcl_acl_from_safetensors(m, s, e2, sizeof e2);
    if (st != MCL_OK) fail(err, len, st, "%s: %s", path, e2);
    mcl_st_free(s);
    if (st != MCL_OK) {
        mcl_acl_free(m);
        return st;
    }
    *out = m;
    return MCL_OK;
}
