/* test-plot.c — the plot module (tools/plot.c, plot_font.c).
 *
 * Draws each kind of figure into a temporary directory, reads the PNG back with libpng
 * (as 8-bit RGB) and checks real properties against the published layout (plot.h's
 * geometry functions and axes mapping): image sizes; heat-map cells of the maximum,
 * minimum, a middle value and NaN have the colour-map's colours at the cells' pixels (and
 * the minimum cell does NOT have the maximum colour: a wrong expectation is caught); the
 * colour bar's ends; annotations; text ink in the title area; a shared colour scale across
 * the panels of a grid; line-plot points on the pixels the axes mapping gives, a NaN point
 * breaking the line, the dashed reference level. Also the canvas primitives, the font, nice
 * ticks, a PNG round trip, and bad input: every error is a status with a message naming the
 * problem, and a failed write leaves no temporary file behind.
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
#include "testutil.h"

#define SEED 0x9107ULL

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
static const mcl_rgb BLACK = {0, 0, 0};

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

/* ---- the font ---- */

/* The font: blank space, ink in every printable glyph, all glyphs distinct, '?' for the
 * rest, descenders where they belong. */
static void test_font(void)
{
    int blank_ok = 1, ink_ok = 1, distinct = 1;
    for (int y = 0; y < MCL_FONT_H; y++)
        for (int x = 0; x < MCL_FONT_W; x++)
            if (mcl_font_pixel(' ', x, y)) blank_ok = 0;
    for (int ch = 33; ch <= 126; ch++) {
        int ink = 0;
        for (int y = 0; y < MCL_FONT_H; y++)
            for (int x = 0; x < MCL_FONT_W; x++) ink += mcl_font_pixel(ch, x, y);
        if (!ink) {
            ink_ok = 0;
            printf("  glyph %c has no ink\n", ch);
        }
        for (int other = 32; other < ch; other++) {
            int diff = 0;
            for (int y = 0; y < MCL_FONT_H && !diff; y++)
                for (int x = 0; x < MCL_FONT_W && !diff; x++)
                    diff = mcl_font_pixel(ch, x, y) != mcl_font_pixel(other, x, y);
            if (!diff) {
                distinct = 0;
                printf("  glyphs %c and %c are identical\n", ch, other);
            }
        }
    }
    CHECK(blank_ok, "space has no ink");
    CHECK(ink_ok, "every printable glyph has ink");
    CHECK(distinct, "all 95 glyphs are distinct");
    int q = 1;
    for (int y = 0; y < MCL_FONT_H; y++)
        for (int x = 0; x < MCL_FONT_W; x++)
            if (mcl_font_pixel(200, x, y) != mcl_font_pixel('?', x, y) ||
                mcl_font_pixel(7, x, y) != mcl_font_pixel('?', x, y))
                q = 0;
    CHECK(q, "characters outside 32..126 use the '?' glyph");
    CHECK(!mcl_font_pixel('A', -1, 0) && !mcl_font_pixel('A', 5, 0) &&
              !mcl_font_pixel('A', 0, 9),
          "pixels outside the glyph box are blank");
    /* descenders live in rows 7..8; capitals do not reach them */
    int g_desc = 0, e_desc = 0;
    for (int x = 0; x < MCL_FONT_W; x++) {
        g_desc += mcl_font_pixel('g', x, 8);
        e_desc += mcl_font_pixel('E', x, 7) + mcl_font_pixel('E', x, 8);
    }
    CHECK(g_desc > 0 && e_desc == 0, "g has a descender, E does not");
}

/* ---- canvas primitives ---- */

/* Canvas primitives: fill, clip, lines (exact pixel counts, both directions, far-off ends,
 * dashes), text (widths, alignment, '?' for non-ASCII, vertical), size errors. */
static void test_canvas(void)
{
    char err[256] = "";
    mcl_canvas *c = NULL;
    mcl_rgb bg = {10, 20, 30}, red = {255, 0, 0};
    CHECK(mcl_canvas_create(40, 30, bg, &c, err, sizeof err) == MCL_OK && c, "create: %s", err);
    if (!c) return;
    CHECK(same(mcl_canvas_get(c, 0, 0), bg, 0) && same(mcl_canvas_get(c, 39, 29), bg, 0),
          "new canvas has the background colour");
    CHECK(same(mcl_canvas_get(c, 40, 0), BLACK, 0), "get outside the canvas is black");

    /* a rectangle hanging off the top-left corner */
    mcl_canvas_fill_rect(c, -5, -5, 8, 7, red);
    CHECK(same(mcl_canvas_get(c, 2, 1), red, 0) && same(mcl_canvas_get(c, 3, 1), bg, 0) &&
              same(mcl_canvas_get(c, 2, 2), bg, 0),
          "fill_rect clipped at the corner covers exactly [0,3) x [0,2)");
    mcl_canvas_fill_rect(c, INT_MAX - 2, INT_MAX - 2, INT_MAX, INT_MAX, red); /* no overflow */

    /* lines: both ends drawn, max(|dx|, |dy|) + 1 pixels, same pixels in both directions */
    mcl_canvas *d = NULL;
    mcl_canvas_create(40, 30, bg, &d, err, sizeof err);
    mcl_canvas_line(c, 3, 5, 30, 17, 1, red);
    mcl_canvas_line(d, 30, 17, 3, 5, 1, red);
    int n = 0, differ = 0;
    for (int y = 4; y < 30; y++)
        for (int x = 0; x < 40; x++) {
            n += same(mcl_canvas_get(c, x, y), red, 0);
            differ += !same(mcl_canvas_get(c, x, y), mcl_canvas_get(d, x, y), 0);
        }
    CHECK(same(mcl_canvas_get(c, 3, 5), red, 0) && same(mcl_canvas_get(c, 30, 17), red, 0),
          "line ends are drawn");
    CHECK(n == 28, "line (3,5)-(30,17) has 28 pixels (got %d)", n);
    CHECK(differ <= 2, "reversed line covers the same pixels (differ at %d)", differ);
    /* a line far beyond the canvas returns at once and draws the visible part */
    mcl_canvas_line(d, -1000000000, -1000000000, 1000000000, 1000000000, 1, red);
    CHECK(same(mcl_canvas_get(d, 25, 25), red, 0), "clipped huge diagonal passes (25,25)");
    /* dashed horizontal line: drawn and gapped */
    mcl_canvas_dashed_line(d, 0, 2, 39, 2, 1, 4, 3, red);
    int dn = 0;
    for (int x = 0; x < 40; x++) dn += same(mcl_canvas_get(d, x, 2), red, 0);
    CHECK(dn >= 20 && dn <= 26, "dashed line 4 on / 3 off over 40 px has 20..26 px (%d)", dn);
    mcl_canvas_free(d);
    d = NULL;

    /* text: width, alignment, non-ASCII as '?', clipping */
    CHECK(mcl_text_width("abc", 1) == 17 && mcl_text_width("abc", 2) == 34 &&
              mcl_text_width("", 3) == 0 && mcl_text_width(NULL, 1) == 0,
          "text widths");
    CHECK(mcl_text_width("\xc3\xa9t\xe2\x82\xac", 1) == mcl_text_width("?t?", 1),
          "a UTF-8 sequence counts as one character");
    mcl_canvas *t1 = NULL, *t2 = NULL;
    mcl_canvas_create(60, 20, WHITE, &t1, err, sizeof err);
    mcl_canvas_create(60, 20, WHITE, &t2, err, sizeof err);
    mcl_canvas_text(t1, 5, 5, "x\xc3\xa9y\x01", 1, MCL_ALIGN_LEFT, BLACK);
    mcl_canvas_text(t2, 5, 5, "x?y?", 1, MCL_ALIGN_LEFT, BLACK);
    CHECK(memcmp(t1->px, t2->px, 60 * 20 * 3) == 0, "non-ASCII and control characters draw as '?'");
    mcl_canvas_free(t2);
    /* right-aligned "H" ending at column 49: ink in column 49, none from 50 on */
    mcl_canvas *t3 = NULL;
    mcl_canvas_create(60, 20, WHITE, &t3, err, sizeof err);
    int left = mcl_canvas_text(t3, 50, 2, "HH", 1, MCL_ALIGN_RIGHT, BLACK);
    int ink49 = 0, ink50 = 0, ink_left = 0;
    for (int y = 0; y < 20; y++) {
        ink49 += same(mcl_canvas_get(t3, 49, y), BLACK, 0);
        for (int x = 50; x < 60; x++) ink50 += same(mcl_canvas_get(t3, x, y), BLACK, 0);
        ink_left += same(mcl_canvas_get(t3, left, y), BLACK, 0);
    }
    CHECK(left == 39 && ink49 > 0 && ink50 == 0 && ink_left > 0,
          "right alignment: text spans columns 39..49 (left %d, ink49 %d, ink50 %d)", left, ink49,
          ink50);
    mcl_canvas_free(t3);
    /* vertical text stays in its columns */
    mcl_canvas *t4 = NULL;
    mcl_canvas_create(30, 60, WHITE, &t4, err, sizeof err);
    mcl_canvas_text_up(t4, 10, 30, "Ab", 1, MCL_ALIGN_CENTER, BLACK);
    int outside = 0, inside = 0;
    for (int y = 0; y < 60; y++)
        for (int x = 0; x < 30; x++) {
            int k = same(mcl_canvas_get(t4, x, y), BLACK, 0);
            if (x >= 10 && x < 10 + MCL_FONT_H && y >= 30 - 6 && y <= 30 + 6) inside += k;
            else outside += k;
        }
    CHECK(inside > 10 && outside == 0, "vertical text in its box (in %d, out %d)", inside,
          outside);
    mcl_canvas_free(t4);
    /* clip rectangle */
    mcl_canvas_clip(t1, 10, 10, 5, 5);
    mcl_canvas_fill_rect(t1, 0, 0, 60, 20, red);
    mcl_canvas_unclip(t1);
    CHECK(same(mcl_canvas_get(t1, 10, 10), red, 0) && same(mcl_canvas_get(t1, 14, 14), red, 0) &&
              same(mcl_canvas_get(t1, 15, 14), WHITE, 0) &&
              same(mcl_canvas_get(t1, 9, 10), WHITE, 0),
          "drawing is limited to the clip rectangle");
    mcl_canvas_free(t1);
    mcl_canvas_free(c);
    mcl_canvas_free(NULL);

    /* bad sizes */
    mcl_canvas sentinel;
    mcl_canvas *bad = &sentinel; /* must be reset to NULL */
    mcl_status st = mcl_canvas_create(0, 10, bg, &bad, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && !bad && strstr(err, "0x10"), "0x10 canvas refused: %s", err);
    st = mcl_canvas_create(9000, 10, bg, &bad, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "8192"), "9000x10 canvas refused: %s", err);
    st = mcl_canvas_create(10, 10, bg, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && err[0], "null output pointer refused: %s", err);
    st = mcl_canvas_create(-1, -1, bg, &bad, NULL, 0);
    CHECK(st == MCL_ERR_INVALID, "errors without a message buffer do not crash");
}

/* ---- PNG writing ---- */

/* PNG round trip, and writes that fail (missing directory, file as directory, directory
 * as target) with IO errors naming the path and no temporary file left. */
static void test_png_write(void)
{
    char err[512] = "";
    mcl_canvas *c = NULL;
    mcl_rgb bg = {0, 0, 0};
    mcl_canvas_create(37, 23, bg, &c, err, sizeof err);
    if (!c) return;
    for (size_t i = 0; i < 37 * 23 * 3; i++) c->px[i] = (uint8_t)(urand() * 256.0);
    const char *p = tmp_path("round.png");
    CHECK(mcl_canvas_write_png(c, p, err, sizeof err) == MCL_OK, "write: %s", err);
    image im;
    CHECK(read_rgb(p, &im) == 0, "read back %s", p);
    if (im.px) {
        CHECK(im.w == 37 && im.h == 23, "size %dx%d", im.w, im.h);
        CHECK(memcmp(im.px, c->px, 37 * 23 * 3) == 0, "pixels round-trip exactly");
        free(im.px);
    }
    /* failures: missing directory, a file as the directory, a directory as the target */
    mcl_status st = mcl_canvas_write_png(c, "/nonexistent-metacl-dir/x.png", err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "/nonexistent-metacl-dir/x.png"),
          "missing directory: IO error naming the path: %s", err);
    const char *notdir = tmp_path("plain-file");
    FILE *f = fopen(notdir, "w");
    if (f) fclose(f);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/x.png", notdir);
    st = mcl_canvas_write_png(c, sub, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "x.png"), "file used as a directory: %s", err);
    const char *dir = tmp_path("a-directory.png");
    mkdir(dir, 0755);
    st = mcl_canvas_write_png(c, dir, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "rename"), "directory as target: rename fails: %s",
          err);
    CHECK(temp_files_left() == 0, "a failed write leaves no temporary file (%d)",
          temp_files_left());
    rmdir(dir);
    unlink(notdir);
    /* a failed write leaves an existing file untouched */
    st = mcl_canvas_write_png(c, "", err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "empty"), "empty path: %s", err);
    CHECK(mcl_canvas_write_png(NULL, p, err, sizeof err) == MCL_ERR_NULL &&
              strstr(err, "canvas"),
          "null canvas: %s", err);
    CHECK(mcl_canvas_write_png(c, NULL, err, sizeof err) == MCL_ERR_NULL && strstr(err, "path"),
          "null path: %s", err);
    mcl_canvas_free(c);
}

/* ---- heat-maps ---- */

/* The colour of a cell, sampled at its top-left inner pixel and its centre (both must
 * agree for the cell to count as that colour); returns the pixel at +1,+1. */
static int cell_is(const image *im, const mcl_heatmap_geom *g, int panel, int r, int c,
                   mcl_rgb want, int tol)
{
    int x, y;
    mcl_heatmap_cell_xy(g, panel, r, c, &x, &y);
    int k = g->cell > 2 ? 1 : 0;
    return same(pix(im, x + k, y + k), want, tol) &&
           same(pix(im, x + g->cell - 1 - k, y + g->cell - 1 - k), want, tol);
}

/* Single heat-maps: the accuracy matrix (colours of max / min / middle / NaN cells, the
 * colour bar, ink of title and labels, annotations), the diverging scale, symmetric
 * autoscale, a big matrix, bad input. */
static void test_heatmap(void)
{
    char err[512] = "";
    /* an accuracy matrix R[i][j] of 5 tasks: lower triangle learned, upper not yet seen */
    enum { T = 5 };
    float R[T * T];
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++)
            R[i * T + j] = j <= i ? (float)(0.95 - 0.06 * (i - j) - 0.02 * j)
                                  : (float)(0.2 + 0.01 * j);
    R[1 * T + 3] = NAN;        /* a missing measurement */
    R[4 * T + 4] = 1.0f;       /* the maximum */
    R[0 * T + 4] = 0.0f;       /* the minimum */
    R[2 * T + 3] = 0.5f;       /* the middle */
    const char *rl[T] = {"after task 1", "after task 2", "after task 3", "after task 4",
                         "after task 5"};
    const char *cl[T] = {"task 1", "task 2", "task 3", "task 4", "task 5"};
    const char *title = "Accuracy R[i][j] (5 tasks)";
    const char *p = tmp_path("heatmap.png");
    mcl_status st = mcl_plot_heatmap(p, title, R, T, T, rl, cl, 0.0f, 0.0f, 0, err, sizeof err);
    CHECK(st == MCL_OK, "heatmap: %s", err);
    mcl_heatmap_geom g;
    CHECK(mcl_heatmap_geometry(title, T, T, rl, cl, &g, err, sizeof err) == MCL_OK, "geometry: %s",
          err);
    image im;
    if (read_rgb(p, &im) == 0) {
        CHECK(im.w == g.width && im.h == g.height, "heatmap size %dx%d = geometry %dx%d", im.w,
              im.h, g.width, g.height);
        mcl_rgb cmax = mcl_cmap_color(MCL_CMAP_VIRIDIS, 1.0);
        mcl_rgb cmin = mcl_cmap_color(MCL_CMAP_VIRIDIS, 0.0);
        mcl_rgb cmid = mcl_cmap_color(MCL_CMAP_VIRIDIS, 0.5);
        mcl_rgb grey = {MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY};
        CHECK(cell_is(&im, &g, 0, 4, 4, cmax, 0), "max cell has the max colour");
        CHECK(cell_is(&im, &g, 0, 0, 4, cmin, 0), "min cell has the min colour");
        CHECK(cell_is(&im, &g, 0, 2, 3, cmid, 1), "0.5 cell has the middle colour");
        CHECK(cell_is(&im, &g, 0, 1, 3, grey, 0), "NaN cell is grey");
        /* the deliberately wrong expectations must be caught */
        CHECK(!cell_is(&im, &g, 0, 0, 4, cmax, 8), "min cell does NOT have the max colour");
        CHECK(!cell_is(&im, &g, 0, 1, 3, cmin, 8), "NaN cell does NOT have the min colour");
        CHECK(!same(cmax, cmin, 30) && !same(cmin, grey, 30) && !same(cmax, grey, 30),
              "max, min and NaN colours are far apart");
        /* the colour bar: max colour on top, min at the bottom */
        CHECK(same(pix(&im, g.bar_x + g.bar_w / 2, g.bar_y), cmax, 0) &&
                  same(pix(&im, g.bar_x + g.bar_w / 2, g.bar_y + g.bar_h - 1), cmin, 0),
              "colour bar runs from the max colour (top) to the min colour (bottom)");
        /* labels: title ink, row-label ink left of the cells, bar labels right of the bar */
        CHECK(count_px(&im, 0, 0, im.w, g.title_h, WHITE, 0) > 50, "title has ink");
        CHECK(count_px(&im, 0, g.y0, g.x0 - 2, g.y0 + T * g.cell, WHITE, 0) > 100,
              "row labels have ink");
        CHECK(count_px(&im, g.bar_x + g.bar_w + 2, g.bar_y - 10, im.w, g.bar_y + g.bar_h + 10,
                       WHITE, 0) > 30,
              "colour bar labels have ink");
        /* without annotations every cell is uniform */
        int x, y, nonuni = 0;
        mcl_heatmap_cell_xy(&g, 0, 3, 1, &x, &y);
        nonuni = count_px(&im, x, y, x + g.cell, y + g.cell, pix(&im, x, y), 0);
        CHECK(nonuni == 0, "un-annotated cell is one colour (%d other pixels)", nonuni);
        free(im.px);
    } else {
        CHECK(0, "read back %s", p);
    }
    keep_example("heatmap.png");

    /* annotated: text in the cells, dark on the bright max cell, light on the dark min cell */
    p = tmp_path("heatmap-annotated.png");
    st = mcl_plot_heatmap(p, title, R, T, T, rl, cl, 0.0f, 1.0f, 1, err, sizeof err);
    CHECK(st == MCL_OK, "annotated heatmap: %s", err);
    if (read_rgb(p, &im) == 0) {
        int x, y;
        mcl_heatmap_cell_xy(&g, 0, 4, 4, &x, &y);
        int dark = count_px(&im, x, y, x + g.cell, y + g.cell, BLACK, 1);
        mcl_heatmap_cell_xy(&g, 0, 0, 4, &x, &y);
        int light = count_px(&im, x, y, x + g.cell, y + g.cell, WHITE, 1);
        mcl_heatmap_cell_xy(&g, 0, 1, 3, &x, &y);
        int nan_text = count_px(&im, x, y, x + g.cell, y + g.cell, pix(&im, x, y), 0);
        CHECK(dark > 20 && light > 20, "values printed in the cells (dark %d, light %d)", dark,
              light);
        CHECK(nan_text == 0, "no value printed in the NaN cell");
        free(im.px);
    }
    keep_example("heatmap-annotated.png");

    /* explicit symmetric scale: diverging map, 0 is the middle, out-of-range clamps */
    float v[4] = {-1.0f, 0.0f, 3.0f, -0.5f};
    p = tmp_path("heatmap-div.png");
    st = mcl_plot_heatmap(p, NULL, v, 2, 2, NULL, NULL, -1.0f, 1.0f, 0, err, sizeof err);
    CHECK(st == MCL_OK, "diverging heatmap: %s", err);
    mcl_heatmap_geometry(NULL, 2, 2, NULL, NULL, &g, err, sizeof err);
    if (read_rgb(p, &im) == 0) {
        CHECK(cell_is(&im, &g, 0, 0, 0, mcl_cmap_color(MCL_CMAP_DIVERGING, 0.0), 0) &&
                  cell_is(&im, &g, 0, 0, 1, mcl_cmap_color(MCL_CMAP_DIVERGING, 0.5), 0) &&
                  cell_is(&im, &g, 0, 1, 0, mcl_cmap_color(MCL_CMAP_DIVERGING, 1.0), 0) &&
                  cell_is(&im, &g, 0, 1, 1, mcl_cmap_color(MCL_CMAP_DIVERGING, 0.25), 1),
              "diverging scale: -1 blue end, 0 middle, 3 clamped to the red end, -0.5 at 1/4");
        free(im.px);
    }
    /* autoscale with both signs is symmetric: [-2, 2], so -0.5 sits at t = 0.375 */
    float v2[3] = {-0.5f, 2.0f, 1.0f};
    p = tmp_path("heatmap-auto.png");
    st = mcl_plot_heatmap(p, "auto", v2, 1, 3, NULL, NULL, 0.5f, 0.5f, 1, err, sizeof err);
    mcl_heatmap_geometry("auto", 1, 3, NULL, NULL, &g, err, sizeof err);
    if (st == MCL_OK && read_rgb(p, &im) == 0) {
        CHECK(cell_is(&im, &g, 0, 0, 0, mcl_cmap_color(MCL_CMAP_DIVERGING, 0.375), 1) &&
                  cell_is(&im, &g, 0, 0, 1, mcl_cmap_color(MCL_CMAP_DIVERGING, 1.0), 0),
              "mixed-sign autoscale is symmetric around 0");
        free(im.px);
    } else {
        CHECK(0, "auto heatmap: %s", err);
    }
    /* a big matrix: 1-pixel cells, no labels overflow */
    float *big = malloc(sizeof *big * 600 * 700);
    if (big) {
        for (int i = 0; i < 600 * 700; i++) big[i] = (float)urand();
        st = mcl_plot_heatmap(tmp_path("big.png"), "600 x 700", big, 600, 700, NULL, NULL, 0.0f,
                              0.0f, 1, err, sizeof err);
        CHECK(st == MCL_OK, "600x700 heatmap: %s", err);
        free(big);
    }

    /* bad input */
    st = mcl_plot_heatmap(NULL, NULL, R, T, T, NULL, NULL, 0, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "path"), "null path: %s", err);
    st = mcl_plot_heatmap(p, NULL, NULL, T, T, NULL, NULL, 0, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "values"), "null values: %s", err);
    st = mcl_plot_heatmap(p, NULL, R, 0, T, NULL, NULL, 0, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "0 rows"), "0 rows: %s", err);
    st = mcl_plot_heatmap(p, NULL, R, T, -3, NULL, NULL, 0, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "-3 cols"), "-3 cols: %s", err);
    st = mcl_plot_heatmap(p, NULL, R, 5000, 2, NULL, NULL, 0, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "4096"), "5000 rows: %s", err);
    st = mcl_plot_heatmap(p, NULL, R, T, T, NULL, NULL, 1.0f, 0.0f, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "vmin"), "vmin > vmax: %s", err);
    st = mcl_plot_heatmap(p, NULL, R, T, T, NULL, NULL, NAN, 1.0f, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "finite"), "NaN vmin: %s", err);
    st = mcl_plot_heatmap("/nonexistent-metacl-dir/h.png", NULL, R, T, T, NULL, NULL, 0, 0, 0,
                          err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "/nonexistent-metacl-dir/h.png"),
          "unwritable path: %s", err);
    st = mcl_heatmap_geometry(NULL, 2, 2, NULL, NULL, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_NULL, "null geometry: %s", err);
}

/* A 5 x 4 grid of SRWM-like panels (16x16 and 16x4) on one scale, and bad input. */
static void test_heatmap_grid(void)
{
    char err[512] = "";
    /* 5 time steps x (W_y 16x16, W_q 16x16, W_k 16x16, w_b 16x4) */
    enum { NP = 20 };
    int rows[NP], cols[NP];
    float *vals[NP];
    char names[NP][32];
    const char *titles[NP];
    static const char *const mats[4] = {"W_y", "W_q", "W_k", "w_b"};
    for (int p = 0; p < NP; p++) {
        rows[p] = 16;
        cols[p] = p % 4 == 3 ? 4 : 16;
        vals[p] = malloc(sizeof(float) * (size_t)(rows[p] * cols[p]));
        for (int i = 0; i < rows[p] * cols[p]; i++)
            vals[p][i] = (float)((urand() - 0.5) * (0.2 + 0.2 * (p / 4)));
        snprintf(names[p], sizeof names[p], "%s t=%d", mats[p % 4], 1 + 10 * (p / 4));
        titles[p] = names[p];
    }
    vals[5][3 * 16 + 7] = 2.0f;   /* the global maximum */
    vals[10][0] = -2.0f;          /* the global minimum */
    vals[7][15 * 4 + 3] = NAN;    /* a NaN in a 16x4 panel */
    const char *title = "SRWM head 0: W_y, W_q, W_k, w_b over time";
    const char *p = tmp_path("heatmap-grid.png");
    const float *const *cv = (const float *const *)vals;
    mcl_status st = mcl_plot_heatmap_grid(p, title, NP, cv, rows, cols, titles, 4, 0.0f, 0.0f,
                                          err, sizeof err);
    CHECK(st == MCL_OK, "grid: %s", err);
    mcl_heatmap_geom g;
    CHECK(mcl_heatmap_grid_geometry(title, NP, rows, cols, titles, 4, &g, err, sizeof err) ==
              MCL_OK,
          "grid geometry: %s", err);
    image im;
    if (read_rgb(p, &im) == 0) {
        CHECK(im.w == g.width && im.h == g.height, "grid size %dx%d = geometry %dx%d", im.w,
              im.h, g.width, g.height);
        mcl_rgb top = mcl_cmap_color(MCL_CMAP_DIVERGING, 1.0);
        mcl_rgb bottom = mcl_cmap_color(MCL_CMAP_DIVERGING, 0.0);
        mcl_rgb grey = {MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY};
        CHECK(cell_is(&im, &g, 5, 3, 7, top, 0), "global max cell (panel 5) has the top colour");
        CHECK(cell_is(&im, &g, 10, 0, 0, bottom, 0),
              "global min cell (panel 10) has the bottom colour");
        CHECK(cell_is(&im, &g, 7, 15, 3, grey, 0), "NaN cell of a 16x4 panel is grey");
        CHECK(!cell_is(&im, &g, 10, 0, 0, top, 8), "min cell does NOT have the top colour");
        /* shared scale: panel 0 (|v| <= 0.1 of a +-2 scale) has no cell near either end, which
         * a per-panel scale would give it */
        int ends = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++)
                ends += cell_is(&im, &g, 0, r, c, top, 40) + cell_is(&im, &g, 0, r, c, bottom, 40);
        CHECK(ends == 0, "panel 0 uses the shared scale (%d cells at an end)", ends);
        /* each cell of panel 12 has the colour of its value on the shared [-2, 2] scale */
        int wrong = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++) {
                double t = (vals[12][r * 16 + c] + 2.0) / 4.0;
                wrong += !cell_is(&im, &g, 12, r, c, mcl_cmap_color(MCL_CMAP_DIVERGING, t), 1);
            }
        CHECK(wrong == 0, "panel 12 cells match the shared scale (%d wrong)", wrong);
        /* 16x4 panel: the slot beyond its 4 columns is background */
        int x, y;
        mcl_heatmap_cell_xy(&g, 3, 0, 5, &x, &y);
        CHECK(same(pix(&im, x + 1, y + 1), WHITE, 0), "nothing drawn right of a 16x4 panel");
        /* titles: figure title and the panel titles above each panel */
        CHECK(count_px(&im, 0, 0, im.w, g.title_h, WHITE, 0) > 100, "title has ink");
        mcl_heatmap_cell_xy(&g, 6, 0, 0, &x, &y);
        CHECK(count_px(&im, x, y - 1 - mcl_text_height(g.panel_title_scale) - 3, x + g.slot_w,
                       y - 2, WHITE, 0) > 20,
              "panel 6 has a title");
        free(im.px);
    } else {
        CHECK(0, "read back %s", p);
    }
    keep_example("heatmap-grid.png");

    /* bad input */
    st = mcl_plot_heatmap_grid(p, NULL, 0, cv, rows, cols, NULL, 4, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "0 panels"), "0 panels: %s", err);
    st = mcl_plot_heatmap_grid(p, NULL, NP, cv, rows, cols, NULL, 0, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "panels_per_row"), "0 per row: %s", err);
    st = mcl_plot_heatmap_grid(p, NULL, NP, NULL, rows, cols, NULL, 4, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "values"), "null values: %s", err);
    st = mcl_plot_heatmap_grid(p, NULL, NP, cv, NULL, cols, NULL, 4, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "rows"), "null rows: %s", err);
    float *keep = vals[4];
    vals[4] = NULL;
    st = mcl_plot_heatmap_grid(p, NULL, NP, cv, rows, cols, NULL, 4, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "panel 4"), "null panel values: %s", err);
    vals[4] = keep;
    cols[2] = 0;
    st = mcl_plot_heatmap_grid(p, NULL, NP, cv, rows, cols, NULL, 4, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "panel 2"), "panel with 0 cols: %s", err);
    cols[2] = 16;
    int r2[2] = {4096, 4096}, c2[2] = {4096, 4096};
    const float *dummy[2] = {vals[0], vals[1]}; /* never read: the size check comes first */
    st = mcl_plot_heatmap_grid(p, NULL, 2, dummy, r2, c2, NULL, 2, 0, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "over the limit"), "too large a figure: %s", err);
    CHECK(temp_files_left() == 0, "no temporary files after the grid errors");
    for (int i = 0; i < NP; i++) free(vals[i]);
}

/* ---- line plots ---- */

/* Nice ticks: steps of 1, 2, 5 x 10^k, ends, degenerate ranges, no -0. */
static void test_ticks(void)
{
    double t[32];
    int n = mcl_nice_ticks(0.0, 1.0, 5, t, 32);
    CHECK(n == 6 && t[0] == 0.0 && fabs(t[5] - 1.0) < 1e-12 && fabs(t[1] - 0.2) < 1e-12,
          "ticks of [0, 1]: 0, 0.2, ..., 1 (n %d)", n);
    n = mcl_nice_ticks(-3.3, 7.0, 5, t, 32);
    CHECK(n == 5 && t[0] == -2.0 && t[4] == 6.0, "ticks of [-3.3, 7]: -2..6 by 2 (n %d)", n);
    n = mcl_nice_ticks(0.0, 97.0, 5, t, 32);
    CHECK(n == 5 && t[1] == 20.0, "ticks of [0, 97]: step 20 (n %d, %g)", n, n > 1 ? t[1] : 0);
    n = mcl_nice_ticks(1000.0, 1000.003, 5, t, 32);
    int nice = n >= 3 && n <= 8;
    for (int i = 1; i < n; i++) {
        double step = t[i] - t[i - 1];
        double m = step / pow(10.0, floor(log10(step) + 1e-9));
        nice = nice && (fabs(m - 1) < 1e-6 || fabs(m - 2) < 1e-6 || fabs(m - 5) < 1e-6);
    }
    CHECK(nice, "narrow range near 1000: 3..8 ticks 1/2/5 x 10^k apart (n %d)", n);
    CHECK(mcl_nice_ticks(1.0, 1.0, 5, t, 32) == 0 && mcl_nice_ticks(0.0, INFINITY, 5, t, 32) == 0 &&
              mcl_nice_ticks(2.0, 1.0, 5, t, 32) == 0 && mcl_nice_ticks(0, 1, 5, NULL, 3) == 0,
          "no ticks for empty, infinite or reversed ranges");
    CHECK(mcl_nice_ticks(0.0, 1.0, 5, t, 3) == 3, "max_ticks is respected");
    n = mcl_nice_ticks(-1.0, 1.0, 5, t, 32);
    int negzero = 0;
    for (int i = 0; i < n; i++) negzero += t[i] == 0.0 && signbit(t[i]);
    CHECK(negzero == 0, "no -0 tick");
}

/* Is there a pixel of colour col within +-d rows of (x, y)? */
static int near_col(const image *im, int x, int y, int d, mcl_rgb col)
{
    for (int k = -d; k <= d; k++)
        if (same(pix(im, x, y + k), col, 0)) return 1;
    return 0;
}

/* Line plots: points and segments on the pixels the axes mapping gives, a NaN breaking a
 * series, the dashed reference line, legend and labels; edge cases; bad input. */
static void test_lines(void)
{
    char err[512] = "";
    enum { N = 11 };
    double x[N], ya[N], yb[N];
    for (int i = 0; i < N; i++) {
        x[i] = i;
        ya[i] = i;
        yb[i] = 10 - i;
    }
    yb[5] = NAN; /* breaks series b */
    mcl_series s[2] = {{"y = x", x, ya, N}, {"y = 10 - x (gap at 5)", x, yb, N}};
    mcl_plot_axes a;
    const char *p = tmp_path("lines.png");
    mcl_status st = mcl_plot_lines_ref(p, "Two lines and a chance level", "step", "value", 2, s,
                                       2.5, "chance", &a, err, sizeof err);
    CHECK(st == MCL_OK, "lines: %s", err);
    CHECK(a.xmin < 0.0 && a.xmin > -1.0 && a.xmax > 10.0 && a.xmax < 11.0 && a.ymin < 0.0 &&
              a.ymax > 10.0,
          "axes cover the data with a small margin: x [%g, %g], y [%g, %g]", a.xmin, a.xmax,
          a.ymin, a.ymax);
    CHECK(mcl_axes_px(&a, a.xmin) == a.left && mcl_axes_px(&a, a.xmax) == a.right &&
              mcl_axes_py(&a, a.ymin) == a.bottom && mcl_axes_py(&a, a.ymax) == a.top,
          "axes mapping puts the range on the plot area's edges");
    image im;
    if (read_rgb(p, &im) == 0) {
        CHECK(im.w == a.width && im.h == a.height, "lines size %dx%d = axes %dx%d", im.w, im.h,
              a.width, a.height);
        mcl_rgb ca = mcl_plot_series_color(0), cb = mcl_plot_series_color(1);
        mcl_rgb cref = {MCL_PLOT_REF_GRAY, MCL_PLOT_REF_GRAY, MCL_PLOT_REF_GRAY};
        CHECK(!same(ca, cb, 40), "series colours differ");
        int on_a = 0, on_b = 0, mid_a = 0;
        for (int i = 0; i < N; i++) {
            if (i != 5) { /* the lines cross at (5, 5), where b is not drawn anyway */
                on_a += same(pix(&im, mcl_axes_px(&a, x[i]), mcl_axes_py(&a, ya[i])), ca, 0);
                on_b += same(pix(&im, mcl_axes_px(&a, x[i]), mcl_axes_py(&a, yb[i])), cb, 0);
            }
            if (i + 1 < N) { /* y = x passes between the points too */
                double xm = i + 0.5;
                mid_a += near_col(&im, mcl_axes_px(&a, xm), mcl_axes_py(&a, xm), 2, ca);
            }
        }
        CHECK(on_a == N - 1, "series a's points on their pixels (%d of %d)", on_a, N - 1);
        CHECK(on_b == N - 1, "series b's points on their pixels (%d of %d)", on_b, N - 1);
        CHECK(mid_a == N - 1, "series a's line between the points (%d of %d)", mid_a, N - 1);
        /* the NaN breaks b: nothing of b's colour where its line would cross x = 4.5..5.5 */
        int gap = 0;
        for (double xq = 4.3; xq <= 5.7; xq += 0.1)
            gap += near_col(&im, mcl_axes_px(&a, xq), mcl_axes_py(&a, 10 - xq), 3, cb);
        CHECK(gap == 0, "NaN point breaks series b (%d columns drawn)", gap);
        /* and a wrong expectation is caught: b is NOT on y = x away from the crossing */
        CHECK(!same(pix(&im, mcl_axes_px(&a, 1.0), mcl_axes_py(&a, 1.0)), cb, 0),
              "series b's colour is NOT on y = x at x = 1");
        /* dashed reference line at y = 2.5: drawn over much of the width, with gaps */
        int yr = mcl_axes_py(&a, 2.5), on = 0;
        for (int xx = a.left; xx <= a.right; xx++) on += same(pix(&im, xx, yr), cref, 0);
        int wpx = a.right - a.left + 1;
        CHECK(on > wpx / 3 && on < wpx * 9 / 10, "dashed reference line: %d of %d px", on, wpx);
        /* title ink above the plot area; legend right of it; tick labels below it */
        CHECK(count_px(&im, a.left, 0, a.right, a.top - 12, WHITE, 0) > 100, "title has ink");
        CHECK(count_px(&im, a.right + 2, a.top, im.w, a.bottom, ca, 1) > 20 &&
                  count_px(&im, a.right + 2, a.top, im.w, a.bottom, cref, 1) > 10,
              "legend shows series a and the reference line");
        CHECK(count_px(&im, a.left, a.bottom + 8, a.right, im.h, WHITE, 0) > 100,
              "x tick labels and x label have ink");
        CHECK(count_px(&im, 0, a.top, a.left - 8, a.bottom, WHITE, 0) > 100,
              "y tick labels and y label have ink");
        free(im.px);
    } else {
        CHECK(0, "read back %s", p);
    }
    keep_example("lines.png");

    /* a learning-curve example: noisy decreasing loss, 3 runs, chance level */
    enum { M = 200 };
    double st_x[M], l0[M], l1[M], l2[M];
    for (int i = 0; i < M; i++) {
        st_x[i] = 50.0 * i;
        l0[i] = 2.3 * exp(-i / 40.0) + 0.1 + 0.05 * urand();
        l1[i] = 2.3 * exp(-i / 70.0) + 0.2 + 0.05 * urand();
        l2[i] = i % 37 == 36 ? NAN : 2.3 * exp(-i / 25.0) + 0.3 + 0.08 * urand();
    }
    mcl_series lc[3] = {{"ACL (SRWM)", st_x, l0, M}, {"online transformer", st_x, l1, M},
                        {"Sparse-MetaNet (gaps = NaN)", st_x, l2, M}};
    st = mcl_plot_lines_ref(tmp_path("learning-curve.png"), "Meta-training loss", "step",
                            "cross-entropy", 3, lc, log(10.0), "chance: ln 10", NULL, err,
                            sizeof err);
    CHECK(st == MCL_OK, "learning curve: %s", err);
    keep_example("learning-curve.png");

    /* edge cases that must still draw: one point, all NaN, flat data, no names */
    double one_x = 3.0, one_y = 7.0, nan_y[2] = {NAN, NAN}, two_x[2] = {1, 2}, flat[2] = {4, 4};
    mcl_series e1 = {NULL, &one_x, &one_y, 1}, e2 = {NULL, two_x, nan_y, 2},
               e3 = {NULL, two_x, flat, 2}, e4 = {NULL, NULL, NULL, 0};
    mcl_series es[4] = {e1, e2, e3, e4};
    st = mcl_plot_lines_ref(tmp_path("edge.png"), NULL, NULL, NULL, 4, es, NAN, NULL, &a, err,
                            sizeof err);
    CHECK(st == MCL_OK, "edge-case series: %s", err);
    if (st == MCL_OK && read_rgb(tmp_path("edge.png"), &im) == 0) {
        CHECK(same(pix(&im, mcl_axes_px(&a, 3.0), mcl_axes_py(&a, 7.0)),
                   mcl_plot_series_color(0), 0),
              "a lone point is drawn");
        free(im.px);
    }
    st = mcl_plot_lines(tmp_path("allnan.png"), "nothing", "x", "y", 1, &e2, err, sizeof err);
    CHECK(st == MCL_OK, "all-NaN series draws empty axes: %s", err);

    /* bad input */
    st = mcl_plot_lines(p, NULL, NULL, NULL, 0, s, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "0 series"), "0 series: %s", err);
    st = mcl_plot_lines(p, NULL, NULL, NULL, 2, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "series"), "null series: %s", err);
    st = mcl_plot_lines(NULL, NULL, NULL, NULL, 2, s, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "path"), "null path: %s", err);
    mcl_series bad = {"bad", x, ya, -1};
    st = mcl_plot_lines(p, NULL, NULL, NULL, 1, &bad, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "n = -1"), "negative n: %s", err);
    bad.n = 3;
    bad.x = NULL;
    st = mcl_plot_lines(p, NULL, NULL, NULL, 1, &bad, err, sizeof err);
    CHECK(st == MCL_ERR_NULL && strstr(err, "null x"), "null x: %s", err);
    double hx[2] = {-1e308, 1e308}, hy[2] = {0, 1};
    mcl_series huge = {"huge", hx, hy, 2};
    st = mcl_plot_lines(p, NULL, NULL, NULL, 1, &huge, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "range"), "overflowing range: %s", err);
    st = mcl_plot_lines_ref(p, NULL, NULL, NULL, 2, s, INFINITY, NULL, NULL, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && strstr(err, "reference"), "infinite reference: %s", err);
    st = mcl_plot_lines("/nonexistent-metacl-dir/l.png", NULL, NULL, NULL, 2, s, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "/nonexistent-metacl-dir/l.png"),
          "unwritable path: %s", err);
    CHECK(mcl_plot_lines(p, NULL, NULL, NULL, 0, s, NULL, 0) == MCL_ERR_INVALID,
          "errors without a message buffer do not crash");
}

/* A figure of every printable character, for looking at the font. */
static void font_sheet(void)
{
    char err[256] = "";
    mcl_canvas *c = NULL;
    if (mcl_canvas_create(16 * 6 * 3 + 20, 6 * 11 * 3 + 20, WHITE, &c, err, sizeof err) != MCL_OK)
        return;
    char line[17];
    for (int b = 0; b < 6; b++) {
        for (int k = 0; k < 16; k++) {
            int ch = 32 + b * 16 + k;
            line[k] = (char)(ch < 127 ? ch : ' ');
        }
        line[16] = 0;
        mcl_canvas_text(c, 10, 10 + b * 33, line, 3, MCL_ALIGN_LEFT, BLACK);
    }
    CHECK(mcl_canvas_write_png(c, tmp_path("font.png"), err, sizeof err) == MCL_OK,
          "font sheet: %s", err);
    keep_example("font.png");
    mcl_canvas_free(c);
}

/* Run everything in a temporary directory, then check nothing temporary is left. */
int main(void)
{
    tu_begin("test-plot", SEED);
    snprintf(g_dir, sizeof g_dir, "test-plot.tmp.%ld", (long)getpid());
    if (mkdir(g_dir, 0755) != 0) {
        fprintf(stderr, "test-plot: cannot create %s in the current directory\n", g_dir);
        return 1;
    }
    test_font();
    test_canvas();
    test_png_write();
    test_heatmap();
    test_heatmap_grid();
    test_ticks();
    test_lines();
    font_sheet();
    CHECK(temp_files_left() == 0, "no temporary files left by the writer");
    CHECK(tu_rm_rf(g_dir) == 0, "remove %s", g_dir);
    return tu_summary();
}
