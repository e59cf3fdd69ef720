/* checkpoint.h — versioned, checksummed, atomically written model checkpoints (public API).
 *
 * A checkpoint holds everything needed to resume training a model exactly:
 *   - the model kind ("acl", "smn", "otf", ...) and the program that wrote the file,
 *   - the full configuration as text ("key=value\n..."), so a model can be rebuilt from the
 *     file alone (mcl_ckpt_read_info) before its values are loaded,
 *   - every tensor of a parameter registry, by name, with its shape and float32 values,
 *   - optionally the optimizer: its step count and its per-parameter state slots
 *     (SGD momentum; Adam/AdamW m and v),
 *   - the RNG state (the context's seed and a stream counter kept by the caller),
 *   - any number of named uint64 counters (training step, episode, tokens seen, ...).
 *
 * Values are read with mcl_tensor_read and written with mcl_tensor_write, so a checkpoint
 * saved from one backend loads bit-for-bit into a model on any other backend.
 *
 * ---- File format, version 1 (all integers little-endian, floats IEEE-754 binary32 LE) ----
 *
 *   magic    8 bytes  "MCLCKPT\0"
 *   version  u32      MCL_CKPT_FORMAT_VERSION (1)
 *   then sections, each:
 *     tag     u32      one of MCL_CKPT_SEC_*
 *     length  u64      payload bytes
 *     payload length bytes
 *     crc     u32      zlib crc32 of tag + length + payload (the 12 + length bytes before it)
 *
 *   A string below is "u32 n, n bytes" (no terminating NUL, no NUL inside).
 *   header   (first)  string model kind, string created-by ("metacl 0.1.0")
 *   config            the config text, raw bytes (no NUL)
 *   params            u32 count; per tensor: string name, u32 ndim (1..4), ndim x u64 dims,
 *                     numel x f32 values (row-major)
 *   optim   (optional) string kind ("sgd": 1 slot, "adam": 2 slots, Adam or AdamW),
 *                     u64 step count, u32 slots per parameter, u32 count; per parameter:
 *                     string name, u32 ndim, ndim x u64 dims, slots x numel x f32
 *   rng               u64 seed, u64 counter
 *   counters          u32 count; per counter: string name, u64 value
 *   end      (last)   u32 number of sections before it
 *
 * Each section except optim appears exactly once, header first and end last; nothing may
 * follow the end section. Unknown tags are errors (version 1 knows all of its sections).
 * Every length is checked against the bytes left in the file before anything is allocated.
 *
 * ---- Writing ----
 * mcl_ckpt_save writes "<path>.tmp.<pid>.<n>" next to path, fsyncs it, renames it over path
 * (atomic on POSIX file systems) and fsyncs the directory. On any failure the temp file is
 * removed and an existing file at path is left untouched.
 *
 * ---- Errors ----
 * Every function returns a status and writes a message to errbuf (when errbuf is not NULL)
 * and, where a context is given, records it there too (mcl_ctx_error). Messages start with
 * "checkpoint '<path>': " and then say exactly what is wrong, e.g.
 *     not a metacl checkpoint (bad magic)
 *     format version 7 (this build reads 1)
 *     truncated in section params (tensor 'W1')
 *     CRC mismatch in section optim
 *     model kind 'smn' (expected 'acl')
 *     tensor 'layer0.W' has shape [3,4] in the file, [4,4] in the model
 * Status codes:
 *     MCL_ERR_IO       the file cannot be opened, read, written, synced or renamed
 *     MCL_ERR_FORMAT   not a checkpoint, wrong format version, truncated, CRC mismatch,
 *                      malformed or unknown section, trailing data
 *     MCL_ERR_INVALID  a sound file that belongs to another model: model kind, a tensor
 *                      missing or extra, optimizer state absent or of another kind;
 *                      or an invalid argument (bad model kind or counter name, ...)
 *     MCL_ERR_SHAPE    a tensor (or optimizer state) has another shape in the file
 *     MCL_ERR_NULL     a required argument is NULL
 *     MCL_ERR_OOM      out of host memory
 *     (and whatever mcl_tensor_read / mcl_tensor_write report for the backend)
 *
 * mcl_ckpt_load checks the whole file (every section, checksum, name and shape) before it
 * writes any tensor: a file that is rejected leaves the model and the optimizer unchanged.
 * Loading holds the file's payload in host memory while it checks it.
 */
#ifndef MCL_CHECKPOINT_H
#define MCL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "optim.h"
#include "params.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_CKPT_MAGIC "MCLCKPT" /* 8 bytes with the terminating NUL */
#define MCL_CKPT_FORMAT_VERSION 1u

/* Section tags (u32). */
#define MCL_CKPT_SEC_HEADER 1u
#define MCL_CKPT_SEC_CONFIG 2u
#define MCL_CKPT_SEC_PARAMS 3u
#define MCL_CKPT_SEC_OPTIM 4u
#define MCL_CKPT_SEC_RNG 5u
#define MCL_CKPT_SEC_COUNTERS 6u
#define MCL_CKPT_SEC_END 7u

/* Longest model kind / created-by / counter name, in bytes without the NUL. Names are
 * printable ASCII (0x21..0x7e: no spaces, no control characters). */
#define MCL_CKPT_NAME_MAX 63

/* Largest optimizer step count and RNG stream counter a file may hold: larger values are
 * refused as corrupt (MCL_ERR_FORMAT) rather than resumed from. */
#define MCL_CKPT_MAX_STEPS UINT64_C(1000000000000)   /* 10^12 */
#define MCL_CKPT_MAX_RNG_COUNTER (UINT64_C(1) << 62)

/* RNG state: the context's seed (mcl_ctx_seed) and a stream counter the caller keeps
 * (typically the value it next passes as a stream id). */
typedef struct mcl_ckpt_rng {
    uint64_t seed;
    uint64_t counter;
} mcl_ckpt_rng;

/* A named counter. */
typedef struct mcl_ckpt_counter {
    char name[MCL_CKPT_NAME_MAX + 1];
    uint64_t value;
} mcl_ckpt_counter;

/* What to save. Borrowed: nothing here is freed or modified by mcl_ckpt_save. */
typedef struct mcl_ckpt_save_desc {
    const char *model_kind;            /* required, 1..MCL_CKPT_NAME_MAX printable chars  */
    const char *config;                /* the full config text; NULL is saved as ""       */
    const mcl_params *params;          /* required; every tensor is saved (may be empty)  */
    const mcl_optim *optim;            /* NULL = no optimizer section; else it must have
                                          been created over `params`                      */
    mcl_ckpt_rng rng;
    const mcl_ckpt_counter *counters;  /* n_counters entries, names unique (may be NULL
                                          when n_counters is 0)                           */
    int n_counters;
} mcl_ckpt_save_desc;

/* What a file says about itself. Filled by mcl_ckpt_read_info (header and config only:
 * has_optim, optim_steps, rng and counters stay zero) and by mcl_ckpt_load (everything).
 * Owns config and counters: release with mcl_ckpt_info_free. */
typedef struct mcl_ckpt_info {
    uint32_t version;                         /* format version of the file              */
    char model_kind[MCL_CKPT_NAME_MAX + 1];
    char created_by[MCL_CKPT_NAME_MAX + 1];
    char *config;                             /* NUL-terminated config text              */
    size_t config_len;                        /* strlen(config)                          */
    int has_optim;                            /* the file has an optimizer section       */
    int64_t optim_steps;                      /* its step count                          */
    mcl_ckpt_rng rng;
    mcl_ckpt_counter *counters;
    int n_counters;
    uint64_t params_len;                      /* mcl_ckpt_read_info: payload bytes of the
                                                 params section after config (unread;
                                                 0 = none there)                          */
} mcl_ckpt_info;

/* Write a checkpoint to `path` (atomically, see above). ctx (may be NULL) receives the error
 * message as well as errbuf (may be NULL). */
mcl_status mcl_ckpt_save(mcl_ctx *ctx, const char *path, const mcl_ckpt_save_desc *desc,
                         char *errbuf, size_t errbuf_len);

/* Read only the file header, the header section and the config section (checksums
 * included): enough to rebuild the model before loading it. *info is overwritten; free it
 * with mcl_ckpt_info_free (also after a failure: it is then empty). */
mcl_status mcl_ckpt_read_info(const char *path, mcl_ckpt_info *info, char *errbuf,
                              size_t errbuf_len);

/* Load a checkpoint into an existing model of kind `model_kind` (required).
 *   params: every tensor of the registry must be in the file with the same shape and every
 *           tensor of the file must be in the registry (matched by name); values are written
 *           with mcl_tensor_write on the registry's backend.
 *   optim:  NULL ignores the file's optimizer section (it is still checked). Otherwise it must
 *           have been created over `params`, the file must have an optimizer section with the
 *           same number of state slots, every state of the optimizer is restored by name, and
 *           its step count is set with mcl_optim_set_steps.
 *   info:   may be NULL; otherwise filled as described at mcl_ckpt_info (free it with
 *           mcl_ckpt_info_free, also after a failure). The RNG state and the counters are
 *           returned there; the caller applies them (mcl_ctx_set_seed, its stream counter,
 *           its step counters).
 * ctx (may be NULL) and errbuf (may be NULL) receive the error message. Nothing is written
 * to the model unless the whole file checks out. */
mcl_status mcl_ckpt_load(mcl_ctx *ctx, const char *path, const char *model_kind,
                         mcl_params *params, mcl_optim *optim, mcl_ckpt_info *info,
                         char *errbuf, size_t errbuf_len);

/* One tensor of the params section by name, without a model: the whole file is checked as
 * mcl_ckpt_load checks it, then *out = a malloc'd copy of its `numel` values (a different
 * count is MCL_ERR_SHAPE). info (may be NULL) is filled as by mcl_ckpt_load. */
mcl_status mcl_ckpt_read_tensor(const char *path, const char *name, int64_t numel, float **out,
                                mcl_ckpt_info *info, char *errbuf, size_t errbuf_len);

/* Save `params` under `model_kind` with the config, RNG state and counters of `info` (as
 * mcl_ckpt_load filled it) and no optimizer state: `metacl ckpt export`'s write. */
mcl_status mcl_ckpt_export(mcl_ctx *ctx, const char *path, const char *model_kind, const mcl_params *params,
                           const mcl_ckpt_info *info, char *errbuf, size_t errbuf_len);

/* Release what an mcl_ckpt_info owns and zero it. NULL is ignored. */
void mcl_ckpt_info_free(mcl_ckpt_info *info);

/* Value of the counter `name`: 1 and *value set when present, else 0. */
int mcl_ckpt_info_counter(const mcl_ckpt_info *info, const char *name, uint64_t *value);

#ifdef __cplusplus
}
#endif
#endif
