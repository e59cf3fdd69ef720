/* strokes.h — stroke-based character sets rendered as handwriting (public API).
 *
 * A glyph is a list of strokes; a stroke is a polyline of points (x, y) in the unit square,
 * y pointing DOWN. Sources (see doc/data.md): hanzi (npm hanzi-writer-data medians),
 * kanji (Debian python3-kanjidraw segments), hershey (Debian hershey-fonts-data .jhf).
 * Rendering is deterministic per (seed, class, instance) and follows doc/data.md's recipe.
 */
#ifndef MCL_STROKES_H
#define MCL_STROKES_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"

typedef struct mcl_glyph {
    int n_strokes;
    int *stroke_start; /* n_strokes + 1 offsets into pts (in points) */
    float *pts;        /* 2 × total points: x0, y0, x1, y1, ...         */
    char text[64];     /* the character (UTF-8) or a description        */
    mcl_split split;   /* meta-train / val / test                       */
} mcl_glyph;

typedef struct mcl_strokeset {
    char name[32];
    int n;             /* glyphs = classes */
    mcl_glyph *glyphs;
} mcl_strokeset;

/* Read a stroke set from its source ("hanzi": the npm tarball in data_dir, fetched with
 * `npm pack` when missing; "kanji", "hershey": Debian package files). Missing source →
 * MCL_ERR_IO with the exact install command in err. max_strokes > 0 keeps only glyphs with
 * at most that many strokes (hanzi default 10). */
mcl_status mcl_strokeset_load(const char *name, const char *data_dir, int max_strokes,
                              mcl_strokeset **out, char *err, size_t len);
void mcl_strokeset_free(mcl_strokeset *s);

/* Render one sample into out[32*32]: clean = 1 gives the undistorted glyph (normalized box,
 * medium pen); otherwise the distortions of doc/data.md keyed by (seed, cls, instance). */
void mcl_render_glyph(const mcl_glyph *g, uint64_t seed, int32_t cls, int64_t instance, int clean,
                      uint8_t *out);

/* Progress of data preparation (mcl_strokes_prepare: images rendered; mcl_fmnist_prepare:
 * images converted): fn(arg, done, total), called from the calling thread now and then and
 * once with done == total. NULL (the default) = none: the preparation code prints nothing
 * itself; the CLI draws its progress line with it. */
typedef void (*mcl_prepare_progress_fn)(void *arg, int64_t done, int64_t total);
void mcl_prepare_set_progress(mcl_prepare_progress_fn fn, void *arg);
/* The hook set by mcl_prepare_set_progress (no-op when none). */
void mcl_prepare_progress(int64_t done, int64_t total);

/* Prepare a stroke set: load, render `instances` samples per class (default 20), write the
 * prepared directory (prepared.h). */
mcl_status mcl_strokes_prepare(const char *name, const char *data_dir, int instances,
                               uint64_t seed, char *err, size_t len);

#endif
