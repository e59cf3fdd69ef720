/* abi.c — the table behind abi.h: one row per field of every struct a binding mirrors (the
 * python package's ctypes structures), written with sizeof and offsetof so that it follows the
 * headers by construction. A struct added to a binding gets its rows here. */
#include "abi.h"

#include "backend.h"
#include "dataset.h"
#include "ops.h"
#include "rng.h"
#include "sampler.h"
#include "smn_train.h"

#include <stddef.h>
#include <string.h>

typedef struct abi_row {
    const char *type, *field;
    size_t size, offset;
} abi_row;

#define F(T, f) {#T, #f, sizeof(T), offsetof(T, f)}

static const abi_row ROWS[] = {
    F(mcl_dataset, name), F(mcl_dataset, n), F(mcl_dataset, images), F(mcl_dataset, labels),
    F(mcl_dataset, n_classes_total), F(mcl_dataset, n_classes), F(mcl_dataset, class_ids),
    F(mcl_dataset, mean), F(mcl_dataset, std), F(mcl_dataset, content_side),
    F(mcl_dataset, class_start), F(mcl_dataset, class_index),

    F(mcl_rng, seed), F(mcl_rng, stream), F(mcl_rng, index),

    F(mcl_episode_cfg, n_way), F(mcl_episode_cfg, k_shot), F(mcl_episode_cfg, n_query),
    F(mcl_episode_cfg, first_shot), F(mcl_episode_cfg, n_tasks), F(mcl_episode_cfg, share_classes),
    F(mcl_episode_cfg, class_incremental),

    F(mcl_class_pool, ds), F(mcl_class_pool, classes), F(mcl_class_pool, n_classes),

    F(mcl_stream, ds), F(mcl_stream, n_way), F(mcl_stream, n_tasks), F(mcl_stream, n), F(mcl_stream, index),
    F(mcl_stream, label), F(mcl_stream, task), F(mcl_stream, role), F(mcl_stream, prev_label),
    F(mcl_stream, task_start), F(mcl_stream, task_len), F(mcl_stream, task_class), F(mcl_stream, task_role),
    F(mcl_stream, task_prev_label),

    F(mcl_onlinex_cfg, n_tasks), F(mcl_onlinex_cfg, n_way), F(mcl_onlinex_cfg, n_kept),
    F(mcl_onlinex_cfg, n_persev), F(mcl_onlinex_cfg, len_min), F(mcl_onlinex_cfg, len_max),
    F(mcl_onlinex_cfg, round_size), F(mcl_onlinex_cfg, max_per_class), F(mcl_onlinex_cfg, code_exact),

    F(mcl_pwstream_cfg, n_tasks), F(mcl_pwstream_cfg, n_way), F(mcl_pwstream_cfg, per_task),

    F(mcl_splitx_cfg, n_tasks), F(mcl_splitx_cfg, classes_per_task), F(mcl_splitx_cfg, k_shot),
    F(mcl_splitx_cfg, run), F(mcl_splitx_cfg, mode), F(mcl_splitx_cfg, classes), F(mcl_splitx_cfg, shuffle_seed),
    F(mcl_splitx_cfg, draw_classes),

    F(mcl_splitx, cfg), F(mcl_splitx, n_outputs), F(mcl_splitx, train), F(mcl_splitx, test),
    F(mcl_splitx, task_class), F(mcl_splitx, n_ctx), F(mcl_splitx, ctx_index), F(mcl_splitx, ctx_label),
    F(mcl_splitx, ctx_task), F(mcl_splitx, task_ctx_start), F(mcl_splitx, n_query), F(mcl_splitx, query_index),
    F(mcl_splitx, query_label), F(mcl_splitx, query_task), F(mcl_splitx, task_query_start),

    F(mcl_smn_task_rec, steps), F(mcl_smn_task_rec, updates_to_solve), F(mcl_smn_task_rec, persev_errors),
    F(mcl_smn_task_rec, persev_n), F(mcl_smn_task_rec, kept_err), F(mcl_smn_task_rec, kept_n),
    F(mcl_smn_task_rec, hits), F(mcl_smn_task_rec, n),

    F(mcl_attn_opts, n), F(mcl_attn_opts, start), F(mcl_attn_opts, mask), F(mcl_attn_opts, scale),
    F(mcl_attn_opts, alibi),

    F(mcl_op_params, f), F(mcl_op_params, i), F(mcl_op_params, u),

    F(mcl_op_args, op), F(mcl_op_args, in), F(mcl_op_args, out), F(mcl_op_args, gout), F(mcl_op_args, gin),
    F(mcl_op_args, p), F(mcl_op_args, out_given),
};

#define N_ROWS ((int)(sizeof ROWS / sizeof ROWS[0]))

int64_t mcl_abi_size(const char *type)
{
    if (!type) return -1;
    for (int r = 0; r < N_ROWS; r++)
        if (!strcmp(ROWS[r].type, type)) return (int64_t)ROWS[r].size;
    return -1;
}

int64_t mcl_abi_offset(const char *type, const char *field)
{
    if (!type || !field) return -1;
    for (int r = 0; r < N_ROWS; r++)
        if (!strcmp(ROWS[r].type, type) && !strcmp(ROWS[r].field, field)) return (int64_t)ROWS[r].offset;
    return -1;
}

const char *mcl_abi_type(int k)
{
    if (k < 0) return NULL;
    for (int r = 0; r < N_ROWS; r++) /* the rows of one struct are adjacent */
        if (r == 0 || strcmp(ROWS[r].type, ROWS[r - 1].type))
            if (k-- == 0) return ROWS[r].type;
    return NULL;
}
