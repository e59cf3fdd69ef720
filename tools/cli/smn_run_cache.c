/* smn_run_cache.c — finished `metacl eval smn` runs on disk (smn_run_cache.h). */
#define _POSIX_C_SOURCE 200809L
#include "smn_run_cache.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "util.h"

#define CACHE_MAGIC "metacl smn run 1"
#define CACHE_MAX_TASKS (1 << 20) /* --tasks' own limit: a larger count is a damaged file */

void mcl_smn_cache_key(const char *key_text, char hex[65]) { mcl_sha256_buf_hex(key_text, strlen(key_text), hex); }

static void cache_path(char *out, size_t n, const char *dir, const char key[65])
{
    snprintf(out, n, "%s/%s.run", dir, key);
}

int mcl_smn_cache_get(const char *dir, const char key[65], mcl_smn_online_result *res)
{
    char path[4200], line[128], got[65];
    cache_path(path, sizeof path, dir, key);
    memset(res, 0, sizeof *res);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = 0, n = -1;
    int64_t steps = 0, updates = 0;
    double seconds = 0.0;
    if (fgets(line, sizeof line, f) && !strcmp(line, CACHE_MAGIC "\n") && fscanf(f, "key %64s\n", got) == 1 &&
        !strcmp(got, key) &&
        fscanf(f, "tasks %d steps %" SCNd64 " updates %" SCNd64 " seconds %lf\n", &n, &steps, &updates, &seconds) == 4 &&
        n >= 0 && n <= CACHE_MAX_TASKS) {
        res->task = calloc(n > 0 ? (size_t)n : 1, sizeof *res->task);
        ok = res->task != NULL;
        for (int i = 0; ok && i < n; i++) {
            mcl_smn_task_rec *t = &res->task[i];
            ok = fscanf(f, "%" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64
                           " %" SCNd64,
                        &t->steps, &t->updates_to_solve, &t->persev_errors, &t->persev_n, &t->kept_err, &t->kept_n,
                        &t->hits, &t->n) == 8;
        }
        if (ok) {
            int c;
            while ((c = fgetc(f)) == '\n' || c == ' ') {}
            ok = c == EOF; /* nothing after the last task: a cut-off or padded file is a miss */
        }
    }
    fclose(f);
    if (!ok) {
        free(res->task);
        memset(res, 0, sizeof *res);
        return 0;
    }
    res->n_tasks = n;
    res->steps = steps;
    res->updates = updates;
    res->seconds = seconds;
    return 1;
}

mcl_status mcl_smn_cache_put(const char *dir, const char key[65], const mcl_smn_online_result *res, char *err,
                             size_t len)
{
    mcl_status st = mcl_mkdir_p(dir, err, len);
    if (st != MCL_OK) return st;
    char path[4200];
    cache_path(path, sizeof path, dir, key);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    if (!m) {
        snprintf(err, len, "out of memory");
        return MCL_ERR_OOM;
    }
    fprintf(m, CACHE_MAGIC "\nkey %s\ntasks %d steps %" PRId64 " updates %" PRId64 " seconds %.17g\n", key,
            res->n_tasks, res->steps, res->updates, res->seconds);
    for (int i = 0; i < res->n_tasks; i++) {
        const mcl_smn_task_rec *t = &res->task[i];
        fprintf(m, "%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
                t->steps, t->updates_to_solve, t->persev_errors, t->persev_n, t->kept_err, t->kept_n, t->hits, t->n);
    }
    if (fclose(m) != 0 || !buf) {
        free(buf);
        snprintf(err, len, "out of memory");
        return MCL_ERR_OOM;
    }
    st = mcl_write_file_atomic(path, buf, n, err, len);
    free(buf);
    return st;
}
