/* ckpt_cmd.c — `metacl ckpt info FILE`, `metacl ckpt export IN OUT` and
 * `metacl ckpt import IN OUT`.
 *
 *   info    what a checkpoint holds: model kind, format version, writer, config, optimizer
 *           state, random state and counters (the whole file is verified); --json: one
 *           JSON object with a provenance block (tools/cli/json_out.h)
 *   export  the model alone (config + parameters, no optimizer state): what data/checkpoints/
 *           ships; written atomically. --format safetensors: an ACL model's parameters under
 *           the official PyTorch names and layouts (acl_interop.h, doc/interop.md)
 *   import  such a safetensors file (from metacl or from PyTorch) -> a model-only checkpoint;
 *           the model config from --config, --template or the file's own metadata
 * Exit: 0 ok, 1 a bad file, 2 usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "acl.h"
#include "acl_interop.h"
#include "acl_train.h"
#include "cli.h"
#include "train.h"

/* A checkpoint's model, of any family of the family table (the kind in the file's header
 * decides; each family opens its checkpoints without their data: mcl_family.ckpt_open). */
typedef struct loaded {
    const mcl_family *fam;
    void *model;
    mcl_params *params;
} loaded;

static mcl_params *loaded_params(const loaded *l) { return l->params; }

static void loaded_free(loaded *l)
{
    if (l->fam && l->model) l->fam->ckpt_close(l->model);
    memset(l, 0, sizeof *l);
}

/* Reads the whole checkpoint at path into the model it describes (a full load checks every
 * section) on a reference context, with its random state (export keeps it). 0 on success;
 * 1 after printing the error. Either way *ctx, *m and *info are to be freed. */
static int load_ckpt(const char *path, mcl_ctx **ctx, loaded *m, mcl_ckpt_info *info, char *err, size_t len)
{
    *ctx = NULL;
    memset(m, 0, sizeof *m);
    memset(info, 0, sizeof *info);
    mcl_ckpt_info head;
    memset(&head, 0, sizeof head);
    mcl_status st = mcl_ckpt_read_info(path, &head, err, len);
    if (st == MCL_OK) {
        m->fam = mcl_family_find(head.model_kind);
        if (!m->fam || !m->fam->ckpt_open) {
            int n = snprintf(err, len, "checkpoint '%s' holds a model of kind '%s', which no family of this "
                                       "metacl knows (", path, head.model_kind);
            const mcl_family *const *f = mcl_families();
            for (int i = 0; f[i] && n >= 0 && (size_t)n < len; i++)
                n += snprintf(err + n, len - (size_t)n, "%s%s", i ? ", " : "", f[i]->kind);
            if (n >= 0 && (size_t)n < len) snprintf(err + n, len - (size_t)n, ")");
            st = MCL_ERR_FORMAT;
        }
    }
    mcl_ckpt_info_free(&head);
    if (st == MCL_OK) st = mcl_ctx_create(ctx, MCL_BACKEND_REF, NULL, err, len);
    if (st == MCL_OK) st = m->fam->ckpt_open(*ctx, path, &m->model, &m->params, info, err, len);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl ckpt: %s\n", err);
        return 1;
    }
    mcl_cli_warn_nonfinite("ckpt", path, m->params);
    return 0;
}

typedef struct info_opts {
    int json;
} info_opts;
static const mcl_key info_keys[] = {
    MCL_OPT_FLAG("json", 0, info_opts, json, "print one JSON object (with provenance) instead of text"),
};
static const mcl_cli_cmd info_cmd = {
    .name = "ckpt info", .synopsis = "FILE [--json]",
    .about = "What a checkpoint holds: model kind, format version, writer, config, optimizer state,\n"
             "random state and counters (the whole file is verified). Exit: 0 ok, 1 a bad file.",
    .opts = info_keys, .n_opts = (int)(sizeof info_keys / sizeof info_keys[0]), .max_pos = 1};

/* `ckpt info --json` */
static void print_info_json(const char *path, const mcl_ckpt_info *info, const loaded *m, mcl_ctx *ctx)
{
    mcl_json j;
    mcl_json_init(&j, stdout);
    mcl_json_begin_obj(&j, NULL);
    mcl_json_str(&j, "file", path);
    mcl_json_str(&j, "model", info->model_kind);
    mcl_json_int(&j, "format", (long long)info->version);
    mcl_json_str(&j, "written_by", info->created_by);
    mcl_json_int(&j, "parameters", (long long)mcl_params_numel(loaded_params(m)));
    mcl_json_int(&j, "tensors", mcl_params_count(loaded_params(m)));
    mcl_json_bool(&j, "optimizer_state", info->has_optim);
    if (info->has_optim) mcl_json_int(&j, "optimizer_steps", (long long)info->optim_steps);
    mcl_json_begin_obj(&j, "counters");
    for (int i = 0; i < info->n_counters; i++) mcl_json_u64(&j, info->counters[i].name, info->counters[i].value);
    mcl_json_end_obj(&j);
    mcl_cli_json_provenance_begin(&j, ctx); /* of this report: the checkpoint was read on ref */
    mcl_json_config_obj(&j, "config", info->config);
    mcl_json_begin_obj(&j, "seeds");
    mcl_json_u64(&j, "rng_seed", info->rng.seed);
    mcl_json_u64(&j, "rng_next_stream", info->rng.counter);
    mcl_json_end_obj(&j);
    mcl_json_end_obj(&j);
    mcl_json_end_obj(&j);
    mcl_json_finish(&j);
}

typedef struct export_opts {
    int format; /* 0 metacl, 1 safetensors */
} export_opts;
static const mcl_key export_keys[] = {
    MCL_OPT_ENUM("format", 0, export_opts, format, "metacl|safetensors", "metacl",
                 "metacl: a model-only checkpoint; safetensors: an ACL model's parameters under\n"
                 "the official PyTorch names and layouts (doc/interop.md)"),
};
static const mcl_cli_cmd export_cmd = {
    .name = "ckpt export", .synopsis = "IN OUT [--format metacl|safetensors]",
    .about = "The model alone (config + parameters, no optimizer state; counters kept): what\n"
             "data/checkpoints/ ships; written atomically. With --format safetensors (ACL\n"
             "checkpoints): a safetensors file whose tensors are named and laid out as the\n"
             "state_dict of the authors' PyTorch model, for torch / safetensors.torch.load_file.\n"
             "Exit: 0 ok, 1 a bad file.",
    .opts = export_keys, .n_opts = (int)(sizeof export_keys / sizeof export_keys[0]), .max_pos = 2};

static int run(int is_export, int argc, char **argv)
{
    const mcl_cli_cmd *spec = is_export ? &export_cmd : &info_cmd;
    mcl_cli_parsed p;
    info_opts o = {0};
    export_opts eo = {0};
    int rc = mcl_cli_parse(spec, argc, argv, is_export ? (void *)&eo : (void *)&o, &p);
    if (rc != MCL_CLI_GO) return rc;
    if (p.n_pos != spec->max_pos)
        return mcl_cli_usage_error(spec, "want %s", spec->synopsis);
    const char *in = p.pos[0], *outp = is_export ? p.pos[1] : NULL;
    char err[1024];
    mcl_ctx *ctx;
    loaded lm;
    const loaded *m = &lm;
    mcl_ckpt_info info;
    rc = load_ckpt(in, &ctx, &lm, &info, err, sizeof err);
    if (rc == 0 && !is_export && o.json) {
        print_info_json(in, &info, m, ctx);
    } else if (rc == 0 && !is_export) {
        printf("%s: model %s, format %u, written by %s\n", in, info.model_kind, info.version,
               info.created_by);
        printf("parameters: %lld in %d tensors\n", (long long)mcl_params_numel(loaded_params(m)),
               mcl_params_count(loaded_params(m)));
        printf("optimizer state: %s", info.has_optim ? "yes" : "no");
        if (info.has_optim) printf(" (%" PRId64 " steps)", info.optim_steps);
        printf("\nrandom state: seed %" PRIu64 ", next stream %" PRIu64 "\n", info.rng.seed,
               info.rng.counter);
        for (int i = 0; i < info.n_counters; i++) {
            const uint64_t v = info.counters[i].value;
            /* the training harness stores the best validation score, a signed number
             * (bits per byte are negated: higher is better), as two's complement; none = all ones */
            if (!strncmp(info.counters[i].name, "chance.", 7)) { /* doubles: one line for all */
                if (strcmp(info.counters[i].name, "chance.0") != 0) continue;
                printf("counter chance.* (accuracies of the chance window, oldest first) =");
                for (int k = i; k < info.n_counters && !strncmp(info.counters[k].name, "chance.", 7); k++) {
                    double d;
                    memcpy(&d, &info.counters[k].value, sizeof d);
                    printf(" %.6g", d);
                }
                printf("\n");
            } else if (!strcmp(info.counters[i].name, "best_val_ppm") && v == UINT64_MAX)
                printf("counter best_val_ppm = none\n");
            else if (!strcmp(info.counters[i].name, "best_val_ppm"))
                printf("counter best_val_ppm = %" PRId64 " (score %.6f)\n", (int64_t)v, (double)(int64_t)v * 1e-6);
            else
                printf("counter %s = %" PRIu64 "\n", info.counters[i].name, v);
        }
        printf("config:\n%s", info.config);
    } else if (rc == 0 && eo.format == 1) {
        if (strcmp(lm.fam->kind, "acl") != 0) {
            fprintf(stderr, "metacl ckpt export: --format safetensors is for ACL models; '%s' holds a '%s' model\n",
                    in, info.model_kind);
            rc = 1;
        } else if (mcl_acl_export_safetensors(lm.model, outp, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl ckpt export: %s\n", err);
            rc = 1;
        } else {
            printf("wrote %s (safetensors: %d tensors, %lld values, official PyTorch names)\n", outp,
                   mcl_params_count(loaded_params(m)), (long long)mcl_params_numel(loaded_params(m)));
        }
    } else if (rc == 0) {
        if (lm.fam->ckpt_export(lm.model, outp, &info, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl ckpt: %s\n", err);
            rc = 1;
        } else {
            printf("wrote %s (model only, counters kept)\n", outp);
        }
    }
    mcl_ckpt_info_free(&info);
    loaded_free(&lm);
    mcl_ctx_free(ctx);
    return rc;
}

static int cmd_info(int argc, char **argv) { return run(0, argc, argv); }
static int cmd_export(int argc, char **argv) { return run(1, argc, argv); }

typedef struct import_opts {
    int format; /* 0 safetensors */
    char config[4096], tmpl[4096];
} import_opts;
static const mcl_key import_keys[] = {
    MCL_OPT_ENUM("format", 0, import_opts, format, "safetensors", "safetensors", "the format of IN"),
    MCL_OPT_STR("config", 0, import_opts, config, NULL, "FILE",
                "the model config: a training config of the ACL family (its model.* keys;\n"
                "an installed config's name works too, as for `metacl train acl --config`)"),
    MCL_OPT_STR("template", 0, import_opts, tmpl, NULL, "CKPT", "the model config: that of this ACL checkpoint"),
};
static const mcl_cli_cmd import_cmd = {
    .name = "ckpt import", .synopsis = "IN OUT [--format safetensors] [--config FILE | --template CKPT]",
    .about = "An ACL model's parameters from a safetensors file with the official PyTorch names\n"
             "and layouts (what `ckpt export --format safetensors` writes, or the authors' model's\n"
             "state_dict saved with safetensors.torch.save_file) -> a model-only metacl checkpoint,\n"
             "written atomically. The model config comes from --config or --template, else from\n"
             "the file's metadata (metacl's exports carry it). Every tensor the config needs must be\n"
             "in the file with its shape, and nothing else. Exit: 0 ok, 1 a bad file, 2 usage.",
    .opts = import_keys, .n_opts = (int)(sizeof import_keys / sizeof import_keys[0]), .max_pos = 2};

static int cmd_import(int argc, char **argv)
{
    mcl_cli_parsed p;
    import_opts o;
    memset(&o, 0, sizeof o);
    int rc = mcl_cli_parse(&import_cmd, argc, argv, &o, &p);
    if (rc != MCL_CLI_GO) return rc;
    if (p.n_pos != 2) return mcl_cli_usage_error(&import_cmd, "want IN OUT");
    if (o.config[0] && o.tmpl[0]) return mcl_cli_usage_error(&import_cmd, "give at most one of --config and --template");
    const char *in = p.pos[0], *outp = p.pos[1];
    char err[2048];
    mcl_acl_task_cfg tc;
    const mcl_acl_config *cfg = NULL;
    if (o.config[0]) {
        char path[4096];
        const char *cp = mcl_cli_installed_file(o.config, "configs", ".conf", path, sizeof path);
        mcl_run_cfg rcfg;
        if (mcl_run_cfg_init(&rcfg, &mcl_acl_family, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl ckpt import: %s\n", err);
            return 1;
        }
        if (mcl_run_cfg_load(&rcfg, cp, err, sizeof err) != MCL_OK) rc = 1;
        else tc = *(const mcl_acl_task_cfg *)rcfg.fcfg;
        mcl_run_cfg_free(&rcfg);
        if (rc == 1) {
            fprintf(stderr, "metacl ckpt import: --config: %s\n", err);
            return 1;
        }
        cfg = &tc.model;
    } else if (o.tmpl[0]) { /* the config section of an ACL checkpoint (its header is checked) */
        char e2[512] = "";
        mcl_ckpt_info info;
        if (mcl_ckpt_read_info(o.tmpl, &info, err, sizeof err) != MCL_OK) rc = 1;
        else if (strcmp(info.model_kind, MCL_ACL_CKPT_KIND) != 0)
            snprintf(err, sizeof err, "'%.1000s' holds a '%s' model, not acl", o.tmpl, info.model_kind), rc = 1;
        mcl_acl_config_default(&tc.model);
        if (rc == MCL_CLI_GO && mcl_acl_config_parse(&tc.model, info.config, e2, sizeof e2) != MCL_OK)
            snprintf(err, sizeof err, "'%.1000s': config: %.500s", o.tmpl, e2), rc = 1;
        mcl_ckpt_info_free(&info);
        if (rc == 1) {
            fprintf(stderr, "metacl ckpt import: --template: %s\n", err);
            return 1;
        }
        cfg = &tc.model;
    }
    mcl_ctx *ctx = NULL;
    mcl_acl *m = NULL;
    rc = 0;
    if (mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err) != MCL_OK ||
        mcl_acl_import_safetensors(ctx, in, cfg, &m, err, sizeof err) != MCL_OK ||
        mcl_acl_save(m, outp, NULL, NULL, 0, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl ckpt import: %s\n", err);
        rc = 1;
    } else {
        mcl_cli_warn_nonfinite("ckpt import", in, mcl_acl_params(m));
        printf("wrote %s (model acl: %d tensors, %lld values, from %s)\n", outp, mcl_params_count(mcl_acl_params(m)),
               (long long)mcl_params_numel(mcl_acl_params(m)), in);
    }
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
    return rc;
}

const mcl_cli_sub mcl_cli_ckpt_subs[] = {
    {"info", "FILE", "show a checkpoint (the whole file is verified)", cmd_info},
    {"export", "IN OUT", "copy its model without optimizer state; an ACL model also to safetensors", cmd_export},
    {"import", "IN OUT", "an ACL model from safetensors (official PyTorch names)", cmd_import},
};
const int mcl_cli_n_ckpt_subs = (int)(sizeof mcl_cli_ckpt_subs / sizeof mcl_cli_ckpt_subs[0]);

int mcl_cli_ckpt(int argc, char **argv)
{
    return mcl_cli_dispatch("ckpt", mcl_cli_ckpt_subs, mcl_cli_n_ckpt_subs, argc, argv);
}
