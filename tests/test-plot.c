/* test-plot.c — the plot module (tools/cli/plot.c, drawn with cairo).
 *
 * Draws each kind of figure into a temporary directory and checks real properties: the PNG
 * decodes with the project's reader (src/data/png_io.h) at the size the layout reports; read
 * back as RGB (libpng), heat-map cells of the maximum, minimum and a middle value have the
 * colour map's colours at the cells' centres (and the minimum cell does NOT have the maximum
 * colour: a wrong expectation is caught); NaN cells are grey; one shared colour scale across
 * the panels of a figure, or one per row of panels; the colour bar's ends; text ink in the
 * title area; line-plot points where the axes mapping puts them, and the dashed reference
 * level; the moving average; bands clipped to [0, 100] (range and pixels; unclipped they reach
 * past the limits). SVG and PDF output start with their magic; an unknown extension
 * is refused before anything is written; an atomic write leaves no temporary file behind and
 * a failed write leaves an existing file untouched; bad input is a status with a message.
 *
 * With METACL_PLOT_EXAMPLES=<dir> the example figures are also written to <dir>. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>

#include "plot.h"
#include "png_io.h"
#include "testutil.h"
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>

#include "plot.h"
#include "testutil.h"

#define SEED 0x9107ULL
#define PAD_TITLE_ROWS 34 /* the title band of the figures */
#define MAX_T 32

static char g_dir[128];
static uint64_t g_rng = SEED;

/* xorshift64*: uniform in [0, 1) (test data only). */
static double urand(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (double)((g_rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* ---- reading PNGs back ---- */

typedef struct image {
    int w, h;
    uint8_t *px; /* RGB */
} image;

/* Read an image as 8-bit RGB with libpng's simplified API; 0 on success. */
static int read_rgb(const char *path, image *im)
{
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    im->px = NULL;
    if (!png_image_begin_read_from_file(&pi, path)) return -1;
    pi.format = PNG_FORMAT_RGB;
    im->w = (int)pi.width;
    im->h = (int)pi.height;
    im->px = malloc(PNG_IMAGE_SIZE(pi));
    if (!im->px || !png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
        png_image_free(&pi);
        free(im->px);
        im->px = NULL;
        return -1;
    }
    return 0;
}

/* Pixel (x, y) of an image; black outside. */
static mcl_rgb pix(const image *im, int x, int y)
{
    mcl_rgb c = {0, 0, 0};
    if (x < 0 || y < 0 || x >= im->w || y >= im->h) return c;
    const uint8_t *p = im->px + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
    c.r = p[0];
    c.g = p[1];
    c.b = p[2];
    return c;
}

/* Colours equal within tol per channel. */
static int same(mcl_rgb a, mcl_rgb b, int tol)
{
    return abs(a.r - b.r) <= tol && abs(a.g - b.g) <= tol && abs(a.b - b.b) <= tol;
}

/* Pixels in [x0, x1) x [y0, y1) equal to (match = 1) or differing from (match = 0) col. */
static int count_px(const image *im, int x0, int y0, int x1, int y1, mcl_rgb col, int match)
{
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            if (same(pix(im, x, y), col, 0) == match) n++;
    return n;
}

static const mcl_rgb WHITE = {255, 255, 255};

/* A path in the temporary directory. */
static const char *tmp_path(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

/* Also copy a figure to $METACL_PLOT_EXAMPLES/<name> when that is set. */
static void keep_example(const char *name)
{
    const char *dir = getenv("METACL_PLOT_EXAMPLES");
    if (!dir || !dir[0]) return;
    char dst[512];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    FILE *in = fopen(tmp_path(name), "rb"), *out = fopen(dst, "wb");
    if (in && out) {
        char b[8192];
        size_t n;
        while ((n = fread(b, 1, sizeof b, in)) > 0) fwrite(b, 1, n, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
}

/* Temporary files ("*.tmp.*") in the temporary directory. */
static int temp_files_left(void) { return tu_count_entries(g_dir, ".tmp."); }


/* The first bytes of a file, NUL-terminated (empty when unreadable). */
static const char *file_head(const char *path, size_t n)
{
    static char buf[256];
    FILE *f = fopen(path, "rb");
    size_t got = 0;
    if (f) {
        got = fread(buf, 1, n < sizeof buf - 1 ? n : sizeof buf - 1, f);
        fclose(f);
    }
    buf[got] = 0;
    return buf;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The PNG decodes with the project's reader at w x h. */
static void check_png_size(const char *path, int w, int h)
{
    uint8_t *g = NULL;
    int pw = 0, ph = 0;
    char err[256];
    mcl_status st = mcl_png_read(path, MCL_PNG_MAX_PIXELS, &g, &pw, &ph, err, sizeof err);
    CHECK(st == MCL_OK, "%s decodes with mcl_png_read: %s", path, st == MCL_OK ? "" : err);
    CHECK(pw == w && ph == h, "%s is %dx%d, the layout says %dx%d", path, pw, ph, w, h);
    free(g);
}

/* ---- formats ---- */

static void test_formats(void)
{
    CHECK(mcl_plot_format_of("a/b.png") == MCL_PLOT_PNG, ".png");
    CHECK(mcl_plot_format_of("B.SVG") == MCL_PLOT_SVG, ".SVG");
    CHECK(mcl_plot_format_of("x.y/c.pdf") == MCL_PLOT_PDF, ".pdf");
    CHECK(mcl_plot_format_of("x.png/c") == MCL_PLOT_UNKNOWN, "dot in a directory name only");
    CHECK(mcl_plot_format_of("c.svgz") == MCL_PLOT_UNKNOWN, ".svgz");
    CHECK(mcl_plot_format_of(".png") == MCL_PLOT_UNKNOWN, "a hidden file named .png");
    char err[256] = "";
    CHECK(mcl_plot_check_path("fig.jpg", err, sizeof err) == MCL_ERR_INVALID && strstr(err, "'.jpg'") &&
              strstr(err, ".png, .svg or .pdf"),
          "unknown extension refused with a clear message: %s", err);
    CHECK(mcl_plot_check_path("fig", err, sizeof err) == MCL_ERR_INVALID && strstr(err, ".png"),
          "no extension refused: %s", err);

    /* every figure refuses it, and writes nothing */
    float v[4] = {0, 1, 2, 3};
    const char *bad = tmp_path("m.svgz");
    CHECK(mcl_plot_heatmap(bad, "t", v, 2, 2, NULL, NULL, 0, 0, 1, err, sizeof err) == MCL_ERR_INVALID &&
              strstr(err, "unknown figure format"),
          "heatmap to .svgz refused: %s", err);
    double x[3] = {0, 1, 2}, y[3] = {1, 2, 3};
    mcl_series s = {"a", x, y, 3, NULL};
    CHECK(mcl_plot_lines(bad, "t", "x", "y", 1, &s, err, sizeof err) == MCL_ERR_INVALID,
          "lines to .svgz refused: %s", err);
    CHECK(!file_exists(bad), "nothing written for an unknown extension");

    /* SVG and PDF */
    CHECK(mcl_plot_heatmap(tmp_path("m.svg"), "an SVG", v, 2, 2, NULL, NULL, 0, 0, 1, err, sizeof err) == MCL_OK,
          "heatmap SVG: %s", err);
    const char *h = file_head(tmp_path("m.svg"), 64);
    CHECK(!strncmp(h, "<?xml", 5) || !strncmp(h, "<svg", 4), "SVG magic: '%.12s'", h);
    CHECK(strstr(file_head(tmp_path("m.svg"), 200), "<svg") != NULL, "an <svg element near the start");
    keep_example("m.svg");
    CHECK(mcl_plot_lines(tmp_path("l.pdf"), "a PDF", "x", "y", 1, &s, err, sizeof err) == MCL_OK, "lines PDF: %s", err);
    CHECK(!strncmp(file_head(tmp_path("l.pdf"), 8), "%PDF", 4), "PDF magic");
    keep_example("l.pdf");
    /* a wrong expectation is caught: the PDF is not an SVG */
    CHECK(strncmp(file_head(tmp_path("l.pdf"), 8), "<?xml", 5) != 0, "the PDF does not pass as SVG");
    CHECK(mcl_plot_lines(tmp_path("l.PNG"), "upper-case extension", "x", "y", 1, &s, err, sizeof err) == MCL_OK,
          "lines .PNG: %s", err);
    CHECK(!memcmp(file_head(tmp_path("l.PNG"), 8), "\x89PNG", 4), "PNG magic");
}

/* ---- atomic writes ---- */

static void test_atomic(void)
{
    char err[256] = "";
    float v[4] = {0, 1, 2, 3};
    const char *p = tmp_path("atomic.png");
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs("old", f);
        fclose(f);
    }
    CHECK(mcl_plot_heatmap(p, "replace", v, 2, 2, NULL, NULL, 0, 0, 0, err, sizeof err) == MCL_OK,
          "replace an existing file: %s", err);
    CHECK(!memcmp(file_head(p, 8), "\x89PNG", 4), "the file was replaced by the PNG");
    CHECK(temp_files_left() == 0, "no temporary file after a write");
    /* a directory that does not exist: a status, no file, no temporary file */
    const char *q = tmp_path("no/such/dir/x.png");
    CHECK(mcl_plot_heatmap(q, "t", v, 2, 2, NULL, NULL, 0, 0, 0, err, sizeof err) != MCL_OK && err[0],
          "write into a missing directory fails with a message: %s", err);
    CHECK(!file_exists(q), "no file written");
    /* bad data: refused before writing, the existing file is untouched */
    CHECK(mcl_plot_heatmap(p, "t", v, 0, 2, NULL, NULL, 0, 0, 0, err, sizeof err) == MCL_ERR_INVALID &&
              strstr(err, "rows and columns"),
          "0 rows refused: %s", err);
    CHECK(mcl_plot_heatmap(p, "t", v, 2, 2, NULL, NULL, 2, 1, 0, err, sizeof err) == MCL_ERR_INVALID &&
              strstr(err, "above"),
          "vmin > vmax refused: %s", err);
    CHECK(mcl_plot_heatmap(p, "t", NULL, 2, 2, NULL, NULL, 0, 0, 0, err, sizeof err) == MCL_ERR_NULL,
          "null values refused: %s", err);
    CHECK(!memcmp(file_head(p, 8), "\x89PNG", 4), "the existing file is untouched");
    CHECK(temp_files_left() == 0, "no temporary file after failures");
}

/* ---- heat-maps ---- */

/* The colour at the centre of cell (r, c) of panel p is col. */
static int cell_is(const image *im, const mcl_heatmap_geom *g, int p, int r, int c, mcl_rgb col,
                   int tol)
{
    double x, y;
    mcl_heatmap_cell_xy(g, p, r, c, &x, &y);
    /* a corner of the cell, away from any text in it */
    return same(pix(im, (int)x + 2, (int)y + 2), col, tol);
}

static void test_heatmaps(void)
{
    char err[256] = "";
    /* 3x4 accuracy-like matrix with errors, NaN in the upper triangle */
    float v[12], e[12];
    for (int i = 0; i < 12; i++) {
        v[i] = (float)(0.1 + 0.8 * urand());
        e[i] = 0.05f;
    }
    v[0] = 1.0f; /* the maximum */
    v[5] = 0.0f; /* the minimum */
    v[3] = NAN;
    v[10] = 0.5f;
    mcl_heatmap_panel pn[2] = {{"model A", v, e, 3, 4}, {"model B with a long name", v, NULL, 3, 4}};
    mcl_heatmap_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.title = "accuracy matrices";
    sp.xlabel = "accuracy on task j";
    sp.ylabel = "after learning task i";
    sp.index_base = 1;
    sp.bar_label = "accuracy (%)";
    sp.vmin = 0.0f;
    sp.vmax = 1.0f;
    sp.annotate = 1;
    sp.annot_mul = 100.0;
    sp.annot_decimals = 1;
    mcl_heatmap_geom g;
    CHECK(mcl_heatmap_layout(&sp, 2, pn, &g, err, sizeof err) == MCL_OK, "layout: %s", err);
    const char *path = tmp_path("acc.png");
    CHECK(mcl_plot_heatmaps(path, &sp, 2, pn, err, sizeof err) == MCL_OK, "draw: %s", err);
    keep_example("acc.png");
    check_png_size(path, g.width, g.height);
    image im;
    if (!CHECK(read_rgb(path, &im) == 0, "read %s back", path)) return;
    mcl_rgb top = mcl_cmap_color(MCL_CMAP_VIRIDIS, 1.0), bottom = mcl_cmap_color(MCL_CMAP_VIRIDIS, 0.0);
    mcl_rgb mid = mcl_cmap_color(MCL_CMAP_VIRIDIS, 0.5), nan = mcl_cmap_color(MCL_CMAP_VIRIDIS, NAN);
    for (int p = 0; p < 2; p++) {
        CHECK(cell_is(&im, &g, p, 0, 0, top, 2), "panel %d: the maximum has the top colour", p);
        CHECK(cell_is(&im, &g, p, 1, 1, bottom, 2), "panel %d: the minimum has the bottom colour", p);
        CHECK(cell_is(&im, &g, p, 2, 2, mid, 2), "panel %d: 0.5 has the middle colour", p);
        CHECK(cell_is(&im, &g, p, 0, 3, nan, 2), "panel %d: NaN is grey", p);
        /* a deliberately wrong expectation is caught */
        CHECK(!cell_is(&im, &g, p, 1, 1, top, 2), "panel %d: the minimum is NOT the top colour", p);
    }
    CHECK(same(nan, (mcl_rgb){MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY}, 0), "NaN grey");
    /* ONE colour bar, its ends the ends of the map */
    int bx = (int)(g.bar_x + g.bar_w / 2);
    CHECK(same(pix(&im, bx, (int)g.bar_y), top, 3), "colour bar top = vmax colour");
    CHECK(same(pix(&im, bx, (int)(g.bar_y + g.bar_h) - 1), bottom, 3), "colour bar bottom = vmin colour");
    CHECK(g.bar_x > g.x0 + g.slot_w + 4 * g.cell, "the bar is right of the last panel");
    /* text: ink in the title band and in the annotated maximum cell */
    int ink = count_px(&im, 0, 0, im.w, PAD_TITLE_ROWS, WHITE, 0);
    CHECK(ink > 100, "title drawn (%d non-white pixels)", ink);
    double x, y;
    mcl_heatmap_cell_xy(&g, 0, 0, 0, &x, &y);
    int txt = count_px(&im, (int)x + 4, (int)y + 4, (int)(x + g.cell) - 4, (int)(y + g.cell) - 4, top, 0);
    CHECK(txt > 20, "the value is printed in the cell (%d pixels)", txt);
    CHECK(g.scale_lo == 0.0 && g.scale_hi == 1.0, "the given scale is used");
    free(im.px);

    /* one colour scale per row of panels (SRWM dW): symmetric autoscale, diverging map */
    float a[16], b[16];
    for (int i = 0; i < 16; i++) {
        a[i] = (float)(urand() - 0.5) * 0.1f;
        b[i] = (float)(urand() - 0.5) * 10.0f;
    }
    a[0] = 0.2f; /* row 0's maximum |v| */
    b[0] = -8.0f;
    b[1] = 8.0f; /* row 1's */
    mcl_heatmap_panel rp[4] = {{"a1", a, NULL, 4, 4}, {"a2", a, NULL, 4, 4}, {"b1", b, NULL, 4, 4}, {"b2", b, NULL, 4, 4}};
    memset(&sp, 0, sizeof sp);
    sp.title = "per-row scales";
    sp.xlabel = "output index m";
    sp.ylabel = "input index e";
    sp.per_row_scale = 1;
    sp.panels_per_row = 2;
    path = tmp_path("rows.png");
    CHECK(mcl_heatmap_layout(&sp, 4, rp, &g, err, sizeof err) == MCL_OK, "layout: %s", err);
    CHECK(mcl_plot_heatmaps(path, &sp, 4, rp, err, sizeof err) == MCL_OK, "draw: %s", err);
    keep_example("rows.png");
    check_png_size(path, g.width, g.height);
    if (!CHECK(read_rgb(path, &im) == 0, "read %s back", path)) return;
    mcl_rgb red = mcl_cmap_color(MCL_CMAP_DIVERGING, 1.0), blue = mcl_cmap_color(MCL_CMAP_DIVERGING, 0.0);
    CHECK(cell_is(&im, &g, 0, 0, 0, red, 2) && cell_is(&im, &g, 1, 0, 0, red, 2), "row 0: its maximum is red");
    CHECK(cell_is(&im, &g, 2, 0, 0, blue, 2) && cell_is(&im, &g, 3, 0, 1, red, 2), "row 1: its own ends");
    /* with one shared scale row 0's 0.2 would be near white: caught */
    CHECK(!cell_is(&im, &g, 0, 0, 1, red, 2), "a small value is not the end colour");
    CHECK(same(pix(&im, (int)(g.bar_x + 4), (int)(g.bar_y + g.slot_h)), red, 3), "a second colour bar for row 1");
    free(im.px);

    /* autoscale: all equal and all NaN do not fail */
    float same4[4] = {3, 3, 3, 3}, nan4[4] = {NAN, NAN, NAN, NAN};
    CHECK(mcl_plot_heatmap(tmp_path("flat.png"), NULL, same4, 2, 2, NULL, NULL, 0, 0, 1, err, sizeof err) == MCL_OK,
          "flat matrix: %s", err);
    CHECK(mcl_plot_heatmap(tmp_path("nan.png"), "", nan4, 2, 2, NULL, NULL, 0, 0, 1, err, sizeof err) == MCL_OK,
          "all-NaN matrix: %s", err);
    /* invalid UTF-8 in a label is drawn as '?' rather than breaking the figure */
    CHECK(mcl_plot_heatmap(tmp_path("utf.png"), "bad \xff\xfe text \xE2\x88", same4, 2, 2, NULL, NULL, 0, 0, 1, err,
                           sizeof err) == MCL_OK,
          "invalid UTF-8 title: %s", err);
}

/* ---- line plots ---- */

static void test_lines(void)
{
    char err[256] = "";
    enum { N = 200 };
    double x[N], y[N], y2[N];
    for (int i = 0; i < N; i++) {
        x[i] = i * 10;
        y[i] = 0.2 + 0.6 * (1 - exp(-i / 50.0)) + 0.05 * (urand() - 0.5);
        y2[i] = 0.3 + 0.001 * i;
    }
    y[100] = NAN; /* breaks the line */
    mcl_series s[2] = {{"run a", x, y, N, NULL}, {NULL, x, y2, N, NULL}};
    double mx[1] = {1000};
    const char *ml[1] = {"stage 2"};
    mcl_lines_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.title = "learning curves";
    sp.xlabel = "step";
    sp.ylabel = "accuracy";
    sp.ref_y = 0.1;
    sp.ref_label = "chance";
    sp.smooth = 9;
    sp.n_markers = 1;
    sp.marker_x = mx;
    sp.marker_labels = ml;
    mcl_plot_axes a;
    const char *path = tmp_path("lines.png");
    CHECK(mcl_plot_lines_ex(path, &sp, 2, s, &a, err, sizeof err) == MCL_OK, "lines: %s", err);
    keep_example("lines.png");
    check_png_size(path, a.width, a.height);
    CHECK(a.ymin < 0.1 && a.ymax > 0.8, "y range holds the reference and the data: [%g, %g]", a.ymin, a.ymax);
    CHECK(a.xmin < 0 && a.xmax > 1990, "x range holds the data: [%g, %g]", a.xmin, a.xmax);
    image im;
    if (!CHECK(read_rgb(path, &im) == 0, "read back")) return;
    /* series 1 (a straight line, no noise): its smoothed curve passes through its points */
    mcl_rgb c1 = mcl_plot_series_color(1);
    int hits = 0, tried = 0;
    for (int i = 20; i < N - 20; i += 15, tried++) {
        int px = (int)lround(mcl_axes_px(&a, x[i])), py = (int)lround(mcl_axes_py(&a, y2[i]));
        int ok = 0;
        for (int dy = -1; dy <= 1 && !ok; dy++)
            for (int dx = -1; dx <= 1 && !ok; dx++) ok = same(pix(&im, px + dx, py + dy), c1, 40);
        hits += ok;
    }
    CHECK(hits == tried, "series 1 drawn where the axes put it (%d of %d)", hits, tried);
    /* a wrong expectation is caught: series 1 is not at y + 0.2 */
    int px = (int)lround(mcl_axes_px(&a, x[50])), py = (int)lround(mcl_axes_py(&a, y2[50] + 0.2));
    CHECK(!same(pix(&im, px, py), c1, 40), "series 1 is not drawn 0.2 higher");
    /* the dashed reference line: dark grey pixels along y = 0.1, with gaps */
    int ry = (int)floor(mcl_axes_py(&a, 0.1)), on = 0, off = 0;
    for (int xx = (int)a.left + 2; xx < (int)a.right - 2; xx++) {
        mcl_rgb c = pix(&im, xx, ry);
        if (c.r < 140 && c.r == c.g && c.g == c.b) on++;
        else off++;
    }
    CHECK(on > 100 && off > 50, "dashed reference line (%d on, %d off)", on, off);
    int ink = count_px(&im, 0, 0, im.w, PAD_TITLE_ROWS, WHITE, 0);
    CHECK(ink > 100, "title drawn (%d non-white pixels)", ink);
    free(im.px);

    /* moving average */
    double in[7] = {1, 2, 3, NAN, 10, 20, 30}, out[7];
    mcl_moving_average(in, 7, 3, out);
    CHECK(tu_near(out[0], 1.5, 1e-12, 0) && tu_near(out[1], 2, 1e-12, 0) && tu_near(out[2], 2.5, 1e-12, 0),
          "moving average before the gap: %g %g %g", out[0], out[1], out[2]);
    CHECK(isnan(out[3]) && tu_near(out[4], 15, 1e-12, 0) && tu_near(out[6], 25, 1e-12, 0),
          "the gap stays and is not crossed: %g %g %g", out[3], out[4], out[6]);
    CHECK(!tu_near(out[2], 2.0, 1e-12, 0), "a wrong expectation is caught");

    /* bad input */
    CHECK(mcl_plot_lines(tmp_path("x.png"), "t", "x", "y", 0, s, err, sizeof err) == MCL_ERR_INVALID, "0 series: %s", err);
    mcl_series bad = {"b", NULL, y, 3, NULL};
    CHECK(mcl_plot_lines(tmp_path("x.png"), "t", "x", "y", 1, &bad, err, sizeof err) == MCL_ERR_NULL, "null x: %s", err);
    CHECK(mcl_plot_lines_ref(tmp_path("x.png"), "t", "x", "y", 1, s, INFINITY, NULL, NULL, err, sizeof err) ==
              MCL_ERR_INVALID,
          "infinite reference: %s", err);
    CHECK(!file_exists(tmp_path("x.png")), "nothing written for bad input");
}

/* Bands clipped to [0, 100] (accuracies in %): a band that reaches 112 and -9 must end at the
 * limits — in the axes' range and in the pixels between the limit and the unclipped edge —
 * and the same band without the clipping must reach past them (the check can fail). */
static void test_band_clip(void)
{
    char err[256] = "";
    enum { N = 4 };
    double x[N] = {10, 20, 30, 40}, y[N] = {97, 98, 5, 6}, b[N] = {15, 14, 14, 9};
    mcl_series s = {"accuracy", x, y, N, b};
    mcl_lines_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.title = "band clipped to [0, 100]";
    sp.ref_y = NAN;
    mcl_plot_axes free_a, a;
    CHECK(mcl_plot_lines_ex(tmp_path("band-free.png"), &sp, 1, &s, &free_a, err, sizeof err) == MCL_OK, "band: %s",
          err);
    CHECK(free_a.ymax > 112 && free_a.ymin < -9, "unclipped band reaches past [0, 100]: [%g, %g]", free_a.ymin,
          free_a.ymax);
    sp.band_floor0 = 1;
    sp.band_ceil_on = 1;
    sp.band_ceil = 100.0;
    /* a title wider than the plot area: it must start inside the figure, not be cut at its left */
    sp.title = "Online-hanzi test streams: average task accuracy (%) (band: 95% CI, 5 runs, clipped to [0, 100])";
    const char *path = tmp_path("band-clip.png");
    CHECK(mcl_plot_lines_ex(path, &sp, 1, &s, &a, err, sizeof err) == MCL_OK, "clipped band: %s", err);
    keep_example("band-clip.png");
    /* the range is [0, 100] plus the 4 % margin each way */
    CHECK(tu_near(a.ymax, 104.0, 1e-9, 0) && tu_near(a.ymin, -4.0, 1e-9, 0), "clipped range [%g, %g]", a.ymin,
          a.ymax);
    image im;
    if (!CHECK(read_rgb(path, &im) == 0, "read back")) return;
    /* at x = 17 (between the first two points, off the grid lines) the band covers 99 but
     * not 102 */
    int px = (int)lround(mcl_axes_px(&a, 17.0));
    int in = (int)lround(mcl_axes_py(&a, 99.0)), out = (int)lround(mcl_axes_py(&a, 102.0));
    CHECK(!same(pix(&im, px, in), WHITE, 0), "the band is drawn below 100");
    CHECK(same(pix(&im, px, out), WHITE, 0), "nothing is drawn above 100");
    /* at x = 33 (y about 5 +- 13) nothing below 0 */
    px = (int)lround(mcl_axes_px(&a, 33.0));
    CHECK(same(pix(&im, px, (int)lround(mcl_axes_py(&a, -2.0))), WHITE, 0), "nothing is drawn below 0");
    CHECK(!same(pix(&im, px, (int)lround(mcl_axes_py(&a, 2.0))), WHITE, 0), "the band is drawn above 0");
    int left_ink = count_px(&im, 0, 0, 4, PAD_TITLE_ROWS, WHITE, 0), ink = count_px(&im, 0, 0, im.w, PAD_TITLE_ROWS, WHITE, 0);
    CHECK(ink > 100 && left_ink == 0, "a long title lies inside the figure (%d ink pixels, %d at the left edge)", ink,
          left_ink);
    free(im.px);
    sp.band_ceil = INFINITY;
    CHECK(mcl_plot_lines_ex(tmp_path("x.png"), &sp, 1, &s, NULL, err, sizeof err) == MCL_ERR_INVALID,
          "infinite ceiling refused: %s", err);
}

static void test_ticks(void)
{
    double t[MAX_T];
    int n = mcl_nice_ticks(0.0, 1.0, 5, t, MAX_T);
    CHECK(n == 6 && t[0] == 0.0 && fabs(t[5] - 1.0) < 1e-12, "ticks of [0, 1]: %d", n);
    n = mcl_nice_ticks(-0.13, 0.13, 5, t, MAX_T);
    CHECK(n == 5 && t[2] == 0.0, "ticks of [-0.13, 0.13] include 0: %d", n);
    CHECK(mcl_nice_ticks(1.0, 1.0, 5, t, MAX_T) == 0, "an empty range has no ticks");
}

/* Run everything in a temporary directory, then check nothing temporary is left. */
int main(void)
{
    tu_begin("test-plot", SEED);
    snprintf(g_dir, sizeof g_dir, "test-plot-%ld.d", (long)getpid());
    if (mkdir(g_dir, 0755) != 0) {
        fprintf(stderr, "test-plot: cannot create %s in the current directory\n", g_dir);
        return 1;
    }
    test_formats();
    test_atomic();
    test_heatmaps();
    test_lines();
    test_band_clip();
    test_ticks();
    CHECK(temp_files_left() == 0, "no temporary files left by the writer");
    CHECK(tu_rm_rf(g_dir) == 0, "remove %s", g_dir);
    return tu_summary();
}
