/* bench_data.c — `metacl bench data`: speed of the handwriting renderer (src/data/
 * render.c) on one core, for every stroke set that is available here.
 *
 * A set is measured when its source is already on this machine: hanzi when the npm tarball is
 * in the data dir (the benchmark never downloads), kanji and hershey when their Debian
 * packages are installed. When none is, a synthetic set (random polylines, 1..10 strokes)
 * is measured instead, so the number exists on every machine. Images are rendered in the
 * calling thread (class i % C, instance i / C, seed 1), in batches, until --min-time seconds
 * have passed; distorted and clean (undistorted) images are timed separately.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "dataset.h"
#include "progress.h"
#include "strokes.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bdata_opts {
    int json;
    char data_dir[4096];
    float min_time;
} bdata_opts;

static const mcl_key bdata_keys[] = {
    MCL_OPT_FLAG("json", 0, bdata_opts, json, "print a JSON array instead of a table"),
    MCL_OPT_STR("data-dir", 0, bdata_opts, data_dir, NULL, "DIR",
                "where the hanzi tarball is (default $METACL_DATA, else ./data/cache if it exists, else $XDG_DATA_HOME/metacl)"),
    MCL_OPT_FLOAT("min-time", 0, bdata_opts, min_time, 1e-3, 600, "1.0", "S", "seconds per measurement"),
};
static const mcl_cli_cmd bdata_cmd = {
    .name = "bench data", .synopsis = "[--json] [--data-dir DIR] [--min-time S]",
    .about = "Images/s of the stroke renderer on one core, for each stroke set available\n"
             "(hanzi: its npm tarball in the data dir; kanji, hershey: Debian packages),\n"
             "or for synthetic glyphs when none is.",
    .opts = bdata_keys, .n_opts = (int)(sizeof bdata_keys / sizeof bdata_keys[0])};

/* Rendered images per second (distorted, or clean). */
static double rate(const mcl_strokeset *s, int clean, double min_time, uint64_t *checksum)
{
    uint8_t img[MCL_IMG * MCL_IMG];
    int64_t i = 0;
    double t0 = now_seconds(), t;
    do {
        for (int b = 0; b < 256; b++, i++) {
            int32_t c = (int32_t)(i % s->n);
            mcl_render_glyph(&s->glyphs[c], 1, c, i / s->n, clean, img);
            *checksum += img[(i * 37) % (MCL_IMG * MCL_IMG)];
        }
        t = now_seconds() - t0;
    } while (t < min_time);
    return (double)i / t;
}

/* Synthetic glyphs: n random polylines (1..10 strokes of 2..6 points) from Philox. */
static mcl_strokeset *synthetic_set(int n)
{
    mcl_strokeset *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    snprintf(s->name, sizeof s->name, "synthetic");
    s->glyphs = calloc((size_t)n, sizeof *s->glyphs);
    if (!s->glyphs) {
        free(s);
        return NULL;
    }
    s->n = n;
    for (int c = 0; c < n; c++) {
        mcl_rng r;
        mcl_rng_init(&r, 99, (uint64_t)c);
        mcl_glyph *g = &s->glyphs[c];
        int ns = 1 + (int)mcl_rng_next_below(&r, 10);
        g->stroke_start = malloc((size_t)(ns + 1) * sizeof *g->stroke_start);
        g->pts = malloc((size_t)ns * 6 * 2 * sizeof *g->pts);
        if (!g->stroke_start || !g->pts) {
            mcl_strokeset_free(s);
            return NULL;
        }
        int np = 0;
        g->stroke_start[0] = 0;
        for (int k = 0; k < ns; k++) {
            int m = 2 + (int)mcl_rng_next_below(&r, 5);
            for (int j = 0; j < m; j++, np++) {
                g->pts[2 * np] = mcl_rng_next_uniform(&r);
                g->pts[2 * np + 1] = mcl_rng_next_uniform(&r);
            }
            g->stroke_start[k + 1] = np;
        }
        g->n_strokes = ns;
        snprintf(g->text, sizeof g->text, "synthetic %d", c);
    }
    return s;
}

int mcl_cli_bench_data(int argc, char **argv)
{
    bdata_opts o;
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&bdata_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    const int json = o.json;
    const char *data_dir = o.data_dir[0] ? o.data_dir : NULL;
    const double min_time = o.min_time;
    if (!data_dir) data_dir = mcl_data_dir_default();
    if (!data_dir) {
        fprintf(stderr, "metacl bench data: %s\n", MCL_NO_DATA_DIR);
        return 1;
    }

    static const char *const sets[] = {"hanzi", "kanji", "hershey"};
    static const int max_strokes[] = {10, 10, 0};
    int measured = 0;
    uint64_t checksum = 0;
    if (json)
        printf("[");
    else
        printf("%-10s %8s %14s %14s %12s\n", "set", "classes", "images/s", "clean/s", "us/image");
    for (int k = 0; k < 4; k++) {
        mcl_strokeset *s = NULL;
        char err[512] = "";
        if (k < 3) {
            if (k == 0) { /* never download from a benchmark */
                char tgz[4200];
                struct stat st;
                snprintf(tgz, sizeof tgz, "%s/hanzi-writer-data-2.0.1.tgz", data_dir);
                if (stat(tgz, &st) != 0) {
                    if (!json)
                        fprintf(stderr,
                                "bench data: hanzi skipped (%s not found; "
                                "`metacl data prepare hanzi` fetches it)\n",
                                tgz);
                    continue;
                }
            }
            if (mcl_strokeset_load(sets[k], data_dir, max_strokes[k], &s, err, sizeof err) !=
                MCL_OK) {
                if (!json) fprintf(stderr, "bench data: %s skipped: %s\n", sets[k], err);
                continue;
            }
        } else {
            if (measured) break;
            s = synthetic_set(1000);
            if (!s) {
                fprintf(stderr, "bench data: out of memory\n");
                return 1;
            }
        }
        char label[96];
        snprintf(label, sizeof label, "bench data: %s", s->name);
        mcl_progress_start(label, 0);
        double r = rate(s, 0, min_time, &checksum);
        double rc = rate(s, 1, min_time * 0.5, &checksum);
        mcl_progress_finish();
        if (json)
            printf("%s{\"set\": \"%s\", \"classes\": %d, \"images_per_s\": %.0f, "
                   "\"clean_images_per_s\": %.0f, \"threads\": 1}",
                   measured ? ", " : "", s->name, s->n, r, rc);
        else
            printf("%-10s %8d %14.0f %14.0f %12.2f\n", s->name, s->n, r, rc, 1e6 / r);
        fflush(stdout);
        measured++;
        mcl_strokeset_free(s);
    }
    if (json) printf("]\n");
    if (checksum == 1) printf(" "); /* keep the renders observable */
    return 0;
}
