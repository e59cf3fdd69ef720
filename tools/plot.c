/* plot.c — the RGB canvas, the PNG writer and the figures of plot.h.
 *
 * Sections: error text; canvas and drawing; text; PNG writing (libpng, atomic, following
 * data/png_io.c); colour maps; nice ticks; heat-maps (scale, layout, drawing); line plots.
 * Layouts are computed by functions that the drawing code and the public geometry queries
 * share, so what a caller is told about a figure is what was drawn. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "plot.h"
#include "png_io.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- error text ---- */

/* A message into the caller's buffer (status.h). */
#define set_err(err, len, ...) ((void)mcl_errbuf((err), (len), MCL_OK, __VA_ARGS__))

/* ---- fixed colours and sizes of the figures ---- */

static const mcl_rgb C_WHITE = {255, 255, 255};
static const mcl_rgb C_BLACK = {0, 0, 0};
static const mcl_rgb C_TEXT = {20, 20, 20};
static const mcl_rgb C_FRAME = {70, 70, 70};
static const mcl_rgb C_GRID = {228, 228, 228};
static const mcl_rgb C_REF = {MCL_PLOT_REF_GRAY, MCL_PLOT_REF_GRAY, MCL_PLOT_REF_GRAY};

#define PAD 8           /* outer margin of every figure */
#define TITLE_SCALE 2   /* font scale of figure titles */
#define BAR_W 16        /* colour bar width */
#define BAR_LABEL_CHARS 9 /* longest colour bar label ("%.3g": -1.23e-05) */
#define LINES_PLOT_W 720 /* line plot: plot area size */
#define LINES_PLOT_H 420
#define LINES_SCALE 2   /* line plot: tick labels, axis labels, legend */
#define MAX_TICKS 32
#define LABEL_GAP 6     /* least space between neighbouring column labels, times the scale */

/* ---- canvas ---- */

/* Allocate a w x h canvas filled with bg; sides are checked against MCL_CANVAS_MAX_SIDE. */
mcl_status mcl_canvas_create(int w, int h, mcl_rgb bg, mcl_canvas **out, char *err,
                             size_t err_len)
{
    if (!out) {
        set_err(err, err_len, "canvas: null output pointer");
        return MCL_ERR_NULL;
    }
    *out = NULL;
    if (w < 1 || h < 1 || w > MCL_CANVAS_MAX_SIDE || h > MCL_CANVAS_MAX_SIDE) {
        set_err(err, err_len, "canvas: size %dx%d is outside 1..%d per side", w, h,
                MCL_CANVAS_MAX_SIDE);
        return MCL_ERR_INVALID;
    }
    mcl_canvas *c = malloc(sizeof *c);
    uint8_t *px = malloc((size_t)w * (size_t)h * 3u);
    if (!c || !px) {
        free(c);
        free(px);
        set_err(err, err_len, "canvas: out of memory for %dx%d pixels", w, h);
        return MCL_ERR_OOM;
    }
    size_t n = (size_t)w * (size_t)h;
    for (size_t i = 0; i < n; i++) {
        px[3 * i] = bg.r;
        px[3 * i + 1] = bg.g;
        px[3 * i + 2] = bg.b;
    }
    c->w = w;
    c->h = h;
    c->px = px;
    mcl_canvas_unclip(c);
    *out = c;
    return MCL_OK;
}

/* Free the pixels and the canvas. */
void mcl_canvas_free(mcl_canvas *c)
{
    if (!c) return;
    free(c->px);
    free(c);
}

/* Clip rectangle = the given one intersected with the canvas (64-bit sums: no overflow). */
void mcl_canvas_clip(mcl_canvas *c, int x, int y, int w, int h)
{
    if (!c) return;
    long long x1 = (long long)x + (w > 0 ? w : 0), y1 = (long long)y + (h > 0 ? h : 0);
    c->clip_x0 = x < 0 ? 0 : (x > c->w ? c->w : x);
    c->clip_y0 = y < 0 ? 0 : (y > c->h ? c->h : y);
    c->clip_x1 = (int)(x1 < c->clip_x0 ? c->clip_x0 : (x1 > c->w ? c->w : x1));
    c->clip_y1 = (int)(y1 < c->clip_y0 ? c->clip_y0 : (y1 > c->h ? c->h : y1));
}

/* Clip rectangle = the whole canvas. */
void mcl_canvas_unclip(mcl_canvas *c)
{
    if (!c) return;
    c->clip_x0 = c->clip_y0 = 0;
    c->clip_x1 = c->w;
    c->clip_y1 = c->h;
}

/* Read one pixel; black outside the canvas (the clip rectangle does not apply). */
mcl_rgb mcl_canvas_get(const mcl_canvas *c, int x, int y)
{
    mcl_rgb col = {0, 0, 0};
    if (!c || x < 0 || y < 0 || x >= c->w || y >= c->h) return col;
    const uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3u;
    col.r = p[0];
    col.g = p[1];
    col.b = p[2];
    return col;
}

/* Write one pixel if it lies inside the clip rectangle. */
void mcl_canvas_set(mcl_canvas *c, int x, int y, mcl_rgb col)
{
    if (!c || x < c->clip_x0 || y < c->clip_y0 || x >= c->clip_x1 || y >= c->clip_y1) return;
    uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3u;
    p[0] = col.r;
    p[1] = col.g;
    p[2] = col.b;
}

/* The rectangle is intersected with the clip rectangle in 64-bit arithmetic first. */
void mcl_canvas_fill_rect(mcl_canvas *c, int x, int y, int w, int h, mcl_rgb col)
{
    if (!c || w <= 0 || h <= 0) return;
    long long x0 = x, y0 = y, x1 = (long long)x + w, y1 = (long long)y + h;
    if (x0 < c->clip_x0) x0 = c->clip_x0;
    if (y0 < c->clip_y0) y0 = c->clip_y0;
    if (x1 > c->clip_x1) x1 = c->clip_x1;
    if (y1 > c->clip_y1) y1 = c->clip_y1;
    for (long long yy = y0; yy < y1; yy++) {
        uint8_t *p = c->px + ((size_t)yy * (size_t)c->w + (size_t)x0) * 3u;
        for (long long xx = x0; xx < x1; xx++, p += 3) {
            p[0] = col.r;
            p[1] = col.g;
            p[2] = col.b;
        }
    }
}

/* Four 1-pixel rectangles along the inside of the w x h rectangle at (x, y). */
void mcl_canvas_frame(mcl_canvas *c, int x, int y, int w, int h, mcl_rgb col)
{
    if (w <= 0 || h <= 0) return;
    mcl_canvas_fill_rect(c, x, y, w, 1, col);
    mcl_canvas_fill_rect(c, x, y + h - 1, w, 1, col);
    mcl_canvas_fill_rect(c, x, y, 1, h, col);
    mcl_canvas_fill_rect(c, x + w - 1, y, 1, h, col);
}

/* Liang-Barsky: clip the segment to [xmin, xmax] x [ymin, ymax]; 0 when nothing is left.
 * Ends already inside are kept exactly, so short lines on the canvas are never altered. */
static int clip_segment(double *x0, double *y0, double *x1, double *y1, double xmin,
                        double ymin, double xmax, double ymax)
{
    double dx = *x1 - *x0, dy = *y1 - *y0;
    double p[4] = {-dx, dx, -dy, dy};
    double q[4] = {*x0 - xmin, xmax - *x0, *y0 - ymin, ymax - *y0};
    double t0 = 0.0, t1 = 1.0;
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0.0) {
            if (q[i] < 0.0) return 0;
            continue;
        }
        double t = q[i] / p[i];
        if (p[i] < 0.0) {
            if (t > t1) return 0;
            if (t > t0) t0 = t;
        } else {
            if (t < t0) return 0;
            if (t < t1) t1 = t;
        }
    }
    double ox = *x0, oy = *y0;
    if (t1 < 1.0) {
        *x1 = ox + t1 * dx;
        *y1 = oy + t1 * dy;
    }
    if (t0 > 0.0) {
        *x0 = ox + t0 * dx;
        *y0 = oy + t0 * dy;
    }
    return 1;
}

/* Bresenham from (x0, y0) to (x1, y1), stamping a width x width square at each step; with
 * dash > 0 only the steps whose index modulo (dash + gap) is below dash are stamped. The
 * segment is first clipped to the clip rectangle (grown by the width), so even far-off
 * coordinates cost no more than the visible part. */
static void stroke(mcl_canvas *c, int x0, int y0, int x1, int y1, int width, int dash, int gap,
                   mcl_rgb col)
{
    if (!c) return;
    if (width < 1) width = 1;
    if (width > 64) width = 64;
    if (dash > 0 && gap < 0) gap = 0;
    double fx0 = x0, fy0 = y0, fx1 = x1, fy1 = y1;
    if (!clip_segment(&fx0, &fy0, &fx1, &fy1, (double)c->clip_x0 - width,
                      (double)c->clip_y0 - width, (double)c->clip_x1 + width,
                      (double)c->clip_y1 + width))
        return;
    int ax = (int)lround(fx0), ay = (int)lround(fy0);
    int bx = (int)lround(fx1), by = (int)lround(fy1);
    int dx = abs(bx - ax), sx = ax < bx ? 1 : -1;
    int dy = -abs(by - ay), sy = ay < by ? 1 : -1;
    int e = dx + dy, off = (width - 1) / 2;
    long step = 0;
    for (;;) {
        if (dash <= 0 || step % (dash + gap) < dash)
            mcl_canvas_fill_rect(c, ax - off, ay - off, width, width, col);
        if (ax == bx && ay == by) break;
        int e2 = 2 * e;
        if (e2 >= dy) {
            e += dy;
            ax += sx;
        }
        if (e2 <= dx) {
            e += dx;
            ay += sy;
        }
        step++;
    }
}

/* A solid line: stroke() without dashes. */
void mcl_canvas_line(mcl_canvas *c, int x0, int y0, int x1, int y1, int width, mcl_rgb col)
{
    stroke(c, x0, y0, x1, y1, width, 0, 0, col);
}

/* A dashed line: stroke() with dash >= 1. */
void mcl_canvas_dashed_line(mcl_canvas *c, int x0, int y0, int x1, int y1, int width,
                            int dash, int gap, mcl_rgb col)
{
    stroke(c, x0, y0, x1, y1, width, dash > 0 ? dash : 1, gap, col);
}

/* ---- text ---- */

#define TEXT_MAX_CHARS (1 << 20) /* longer strings are measured as this long */

/* Font scales are 1..64. */
static int clamp_scale(int scale)
{
    return scale < 1 ? 1 : (scale > 64 ? 64 : scale);
}

/* The next character to draw from *p, advancing *p; 0 at the end. Printable ASCII is itself;
 * a UTF-8 sequence (lead byte and its continuation bytes), a stray continuation byte, a
 * control character or DEL is one '?'. */
static int next_char(const unsigned char **p)
{
    unsigned ch = **p;
    if (ch == 0) return 0;
    (*p)++;
    if (ch < 0x80u) return (ch >= 32u && ch < 127u) ? (int)ch : '?';
    if (ch >= 0xC0u)
        for (int k = 0; k < 3 && (**p & 0xC0u) == 0x80u; k++) (*p)++;
    return '?';
}

/* Number of characters next_char yields for s (at most TEXT_MAX_CHARS). */
static int text_chars(const char *s)
{
    if (!s) return 0;
    const unsigned char *p = (const unsigned char *)s;
    int n = 0;
    while (n < TEXT_MAX_CHARS && next_char(&p)) n++;
    return n;
}

/* n characters take n advances minus the blank column after the last glyph. */
int mcl_text_width(const char *text, int scale)
{
    int s = clamp_scale(scale), n = text_chars(text);
    return n ? n * MCL_FONT_ADVANCE * s - s : 0;
}

/* The full glyph height, descenders included. */
int mcl_text_height(int scale)
{
    return MCL_FONT_H * clamp_scale(scale);
}

/* Draw glyph ch with its top-left at (x, y), upright, each font pixel an s x s block. */
static void draw_glyph(mcl_canvas *c, int ch, int x, int y, int s, mcl_rgb col)
{
    for (int gy = 0; gy < MCL_FONT_H; gy++)
        for (int gx = 0; gx < MCL_FONT_W; gx++)
            if (mcl_font_pixel(ch, gx, gy))
                mcl_canvas_fill_rect(c, x + gx * s, y + gy * s, s, s, col);
}

/* Horizontal text: find the left edge from the alignment, then one glyph per advance,
 * stopping at the clip rectangle's right edge. */
int mcl_canvas_text(mcl_canvas *c, int x, int y, const char *text, int scale,
                    mcl_align align, mcl_rgb col)
{
    int s = clamp_scale(scale), w = mcl_text_width(text, s);
    int left = align == MCL_ALIGN_CENTER ? x - w / 2 : (align == MCL_ALIGN_RIGHT ? x - w : x);
    if (!c || !text) return left;
    const unsigned char *p = (const unsigned char *)text;
    long pen = left;
    int ch;
    while ((ch = next_char(&p)) != 0 && pen < c->clip_x1) {
        if (pen + MCL_FONT_W * s > c->clip_x0 && ch != ' ') draw_glyph(c, ch, (int)pen, y, s, col);
        pen += MCL_FONT_ADVANCE * s;
    }
    return left;
}

/* Vertical text (rotated 90 degrees counter-clockwise): text-space point (u along the
 * text, v down from the glyph top) lands on canvas pixel (x + v, start - u). */
void mcl_canvas_text_up(mcl_canvas *c, int x, int y, const char *text, int scale,
                        mcl_align align, mcl_rgb col)
{
    if (!c || !text) return;
    int s = clamp_scale(scale), w = mcl_text_width(text, s);
    /* `start` is the bottom row of the first character; the text runs up to start - w + 1 */
    long start = align == MCL_ALIGN_CENTER ? (long)y + w / 2
                                           : (align == MCL_ALIGN_RIGHT ? (long)y + w : y);
    const unsigned char *p = (const unsigned char *)text;
    long pen = 0; /* distance along the text from its start */
    int ch;
    while ((ch = next_char(&p)) != 0 && start - pen >= c->clip_y0) {
        if (ch != ' ')
            for (int gy = 0; gy < MCL_FONT_H; gy++)
                for (int gx = 0; gx < MCL_FONT_W; gx++)
                    if (mcl_font_pixel(ch, gx, gy)) {
                        long u = pen + (long)gx * s; /* along the text */
                        mcl_canvas_fill_rect(c, x + gy * s, (int)(start - u - s + 1), s, s,
                                             col);
                    }
        pen += MCL_FONT_ADVANCE * s;
    }
}

/* ---- PNG writing ---- */

/* Atomic write through the data layer's PNG writer (png_io.c), as RGB. */
mcl_status mcl_canvas_write_png(const mcl_canvas *c, const char *path, char *err,
                                size_t err_len)
{
    if (!c || !path || !c->px) {
        set_err(err, err_len, "png write: null %s", !path ? "path" : "canvas");
        return MCL_ERR_NULL;
    }
    if (c->w < 1 || c->h < 1 || c->w > MCL_CANVAS_MAX_SIDE || c->h > MCL_CANVAS_MAX_SIDE) {
        set_err(err, err_len, "%s: cannot write a %dx%d canvas (sides 1..%d)", path, c->w, c->h,
                MCL_CANVAS_MAX_SIDE);
        return MCL_ERR_INVALID;
    }
    return mcl_png_write(path, c->px, c->w, c->h, 3, err, err_len);
}

/* ---- colour maps ---- */

/* Viridis-like ramp: dark purple -> blue -> teal -> green -> yellow, monotonically rising in
 * lightness; 11 anchors at t = 0, 0.1, ..., 1 (matplotlib's viridis at those points),
 * linearly interpolated. */
static const uint8_t RAMP_VIRIDIS[11][3] = {
    {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},
    {42, 120, 142}, {33, 145, 140}, {34, 168, 132}, {68, 191, 112},
    {122, 209, 81}, {189, 223, 38}, {253, 231, 37},
};

/* Diverging ramp: blue -> near-white (t = 0.5) -> red, symmetric in lightness; 9 anchors
 * (ColorBrewer's RdBu, reversed so that low is blue). */
static const uint8_t RAMP_DIVERGING[9][3] = {
    {33, 102, 172},  {67, 147, 195},  {146, 197, 222}, {209, 229, 240}, {247, 247, 247},
    {253, 219, 199}, {244, 165, 130}, {214, 96, 77},   {178, 24, 43},
};

/* Piecewise-linear interpolation of n anchors at t in [0, 1]; t = 1 is exactly the last. */
static mcl_rgb ramp(const uint8_t (*a)[3], int n, double t)
{
    double pos = t * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1) i = n - 2;
    if (i < 0) i = 0;
    double f = pos - i;
    mcl_rgb col;
    col.r = (uint8_t)lround(a[i][0] + (a[i + 1][0] - a[i][0]) * f);
    col.g = (uint8_t)lround(a[i][1] + (a[i + 1][1] - a[i][1]) * f);
    col.b = (uint8_t)lround(a[i][2] + (a[i + 1][2] - a[i][2]) * f);
    return col;
}

/* Clamp t to [0, 1] and interpolate the chosen ramp; NaN is the NaN grey. */
mcl_rgb mcl_cmap_color(mcl_cmap map, double t)
{
    if (isnan(t)) {
        mcl_rgb g = {MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY, MCL_PLOT_NAN_GRAY};
        return g;
    }
    if (t < 0.0) t = 0.0;
    if (t > 1.0) t = 1.0;
    if (map == MCL_CMAP_DIVERGING) return ramp(RAMP_DIVERGING, 9, t);
    return ramp(RAMP_VIRIDIS, 11, t);
}

/* HSV (h, s, v in [0, 1]) to RGB. */
static mcl_rgb hsv(double h, double s, double v)
{
    double hh = (h - floor(h)) * 6.0;
    int i = (int)hh % 6;
    double f = hh - floor(hh);
    double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    double r = v, g = t, b = p;
    switch (i) {
    case 1: r = q; g = v; b = p; break;
    case 2: r = p; g = v; b = t; break;
    case 3: r = p; g = q; b = v; break;
    case 4: r = t; g = p; b = v; break;
    case 5: r = v; g = p; b = q; break;
    default: break;
    }
    mcl_rgb col = {(uint8_t)lround(r * 255), (uint8_t)lround(g * 255), (uint8_t)lround(b * 255)};
    return col;
}

/* Ten well-separated colours (blue, orange, green, red, purple, brown, pink, grey, olive,
 * cyan: the usual categorical set), then hues spaced by the golden ratio. */
mcl_rgb mcl_plot_series_color(int i)
{
    static const mcl_rgb base[10] = {
        {31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
        {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},
    };
    if (i >= 0 && i < 10) return base[i];
    if (i < 0) i = -i;
    return hsv(0.07 + 0.618033988749895 * i, 0.75, 0.78);
}

/* ---- ticks ---- */

/* The "nice" step (1, 2 or 5 x 10^k) nearest to range / target; 0 if there is none. */
static double nice_step(double range, int target)
{
    double raw = range / target;
    if (!(raw > 0.0) || !isfinite(raw)) return 0.0;
    double p = pow(10.0, floor(log10(raw)));
    double m = raw / p;
    double nice = m < 1.5 ? 1.0 : (m < 3.5 ? 2.0 : (m < 7.5 ? 5.0 : 10.0));
    return nice * p;
}

/* Multiples of nice_step(hi - lo, target) inside [lo, hi] (with a 1e-9 step tolerance at
 * the ends, so rounding does not drop an end tick). */
int mcl_nice_ticks(double lo, double hi, int target, double *ticks, int max_ticks)
{
    if (!ticks || max_ticks < 1 || target < 1 || !isfinite(lo) || !isfinite(hi) || !(hi > lo))
        return 0;
    double step = nice_step(hi - lo, target);
    if (!(step > 0.0) || !isfinite(step)) return 0;
    double k0 = ceil(lo / step - 1e-9), k1 = floor(hi / step + 1e-9);
    int n = 0;
    for (double k = k0; k <= k1 && n < max_ticks; k += 1.0) {
        double v = k * step;
        if (fabs(v) < step * 1e-9) v = 0.0; /* no "-0" */
        ticks[n++] = v;
    }
    return n;
}

/* Format tick v of a series with spacing `step` and largest magnitude `amax` so that all
 * labels have the same, sufficient precision: fixed decimals for ordinary ranges, %g with
 * enough significant digits for tiny steps or huge values. */
static void format_tick(char *buf, size_t n, double v, double step, double amax)
{
    int k = (int)floor(log10(step) + 1e-9);
    if (step >= 1e-4 && amax < 1e7) {
        snprintf(buf, n, "%.*f", k < 0 ? -k : 0, v);
    } else {
        int prec = amax > 0.0 ? (int)floor(log10(amax)) - k + 1 : 1;
        if (prec < 1) prec = 1;
        if (prec > 17) prec = 17;
        snprintf(buf, n, "%.*g", prec, v);
    }
}

/* ---- heat-maps: scale ---- */

typedef struct hm_scale {
    double lo, hi;
    mcl_cmap map;
} hm_scale;

/* Resolve the colour scale (see plot.h) over n arrays of counts[p] values. */
static mcl_status resolve_scale(const char *who, float vmin, float vmax,
                                const float *const *vals, const size_t *counts, int n,
                                hm_scale *s, char *err, size_t err_len)
{
    if (isnan(vmin) || isnan(vmax) || isinf(vmin) || isinf(vmax)) {
        set_err(err, err_len, "%s: vmin/vmax must be finite (got %g, %g)", who, (double)vmin,
                (double)vmax);
        return MCL_ERR_INVALID;
    }
    if (vmin > vmax) {
        set_err(err, err_len, "%s: vmin %g is above vmax %g", who, (double)vmin, (double)vmax);
        return MCL_ERR_INVALID;
    }
    double lo = vmin, hi = vmax;
    if (vmin == vmax) {
        lo = INFINITY;
        hi = -INFINITY;
        for (int p = 0; p < n; p++)
            for (size_t i = 0; i < counts[p]; i++) {
                double v = vals[p][i];
                if (!isfinite(v)) continue;
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
        if (lo > hi) {
            lo = 0.0;
            hi = 1.0;
        } else if (lo == hi) {
            lo -= 0.5;
            hi += 0.5;
        } else if (lo < 0.0 && hi > 0.0) {
            double m = -lo > hi ? -lo : hi;
            lo = -m;
            hi = m;
        }
    }
    s->lo = lo;
    s->hi = hi;
    s->map = (lo < 0.0 && hi > 0.0) ? MCL_CMAP_DIVERGING : MCL_CMAP_VIRIDIS;
    return MCL_OK;
}

/* The colour of value v on scale s. */
static mcl_rgb value_color(const hm_scale *s, double v)
{
    if (isnan(v)) return mcl_cmap_color(s->map, NAN);
    return mcl_cmap_color(s->map, (v - s->lo) / (s->hi - s->lo));
}

/* ---- heat-maps: layout ---- */

/* Room right of the colour bar for its labels: 7 characters at the label scale, and at
 * least the longest label (BAR_LABEL_CHARS) at scale 1, the scale longer labels fall back
 * to (draw_colorbar). */
static int bar_label_room(int ls)
{
    int a = 7 * MCL_FONT_ADVANCE * ls, b = BAR_LABEL_CHARS * MCL_FONT_ADVANCE;
    return a > b ? a : b;
}

/* Rows taken by a figure title (whether or not there is one, so layouts do not depend on
 * it). */
static int title_height(void)
{
    return PAD + mcl_text_height(TITLE_SCALE) + PAD;
}

/* Width of the widest label; labels NULL = the numbers 0..n-1. */
static int max_label_width(const char *const *labels, int n, int scale)
{
    int w = 0;
    char buf[16];
    for (int i = 0; i < n; i++) {
        const char *t = labels ? labels[i] : buf;
        if (!labels) snprintf(buf, sizeof buf, "%d", i);
        int tw = mcl_text_width(t, scale);
        if (tw > w) w = tw;
    }
    return w;
}

/* The larger of two ints. */
static int imax(int a, int b)
{
    return a > b ? a : b;
}

/* Fail when a figure would exceed the canvas limit. */
static mcl_status check_size(const char *who, long long w, long long h, char *err,
                             size_t err_len)
{
    if (w > MCL_CANVAS_MAX_SIDE || h > MCL_CANVAS_MAX_SIDE) {
        set_err(err, err_len, "%s: the figure would be %lldx%lld pixels, over the limit of %d "
                "per side", who, w, h, MCL_CANVAS_MAX_SIDE);
        return MCL_ERR_INVALID;
    }
    return MCL_OK;
}

/* Check a heat-map's row and column counts. */
static mcl_status check_dims(const char *who, int rows, int cols, char *err, size_t err_len)
{
    if (rows < 1 || cols < 1 || rows > MCL_PLOT_MAX_CELLS || cols > MCL_PLOT_MAX_CELLS) {
        set_err(err, err_len, "%s: %d rows x %d cols is outside 1..%d per side", who, rows, cols,
                MCL_PLOT_MAX_CELLS);
        return MCL_ERR_INVALID;
    }
    return MCL_OK;
}

/* Single heat-map: cells of 512 / max(rows, cols) pixels (1..64, or up to 96 so that short
 * column labels fit); row labels on the left,
 * column labels below, the colour bar on the right; everything centred under a title that
 * may be wider than the rest. */
mcl_status mcl_heatmap_geometry(const char *title, int rows, int cols,
                                const char *const *row_labels, const char *const *col_labels,
                                mcl_heatmap_geom *g, char *err, size_t err_len)
{
    const char *who = "heatmap";
    if (!g) {
        set_err(err, err_len, "%s: null geometry pointer", who);
        return MCL_ERR_NULL;
    }
    memset(g, 0, sizeof *g);
    mcl_status rc = check_dims(who, rows, cols, err, err_len);
    if (rc != MCL_OK) return rc;
    int big = imax(rows, cols);
    int cell = 512 / big;
    cell = cell < 1 ? 1 : (cell > 64 ? 64 : cell);
    int ls = cell >= 20 ? 2 : 1;
    /* cells of a small matrix grow (up to 96 px) so that its column labels fit side by side;
     * otherwise draw_labels thins them out */
    int need = max_label_width(col_labels, cols, ls) + LABEL_GAP * ls;
    if (ls == 2 && need > cell && need <= 96 && (long long)need * big <= 1024) cell = need;
    int rw = max_label_width(row_labels, rows, ls);
    long long left = PAD + rw + 6 + 1;
    long long grid_w = (long long)cols * cell, grid_h = (long long)rows * cell;
    long long bar_x = left + grid_w + 1 + 16;
    long long content_w = bar_x + BAR_W + 1 + 6 + bar_label_room(ls) + PAD;
    long long title_w = (long long)mcl_text_width(title, TITLE_SCALE) + 2 * PAD;
    long long shift = title_w > content_w ? (title_w - content_w) / 2 : 0;
    long long width = content_w > title_w ? content_w : title_w;
    int th = title_height();
    long long below = 1 + 6 + mcl_text_height(ls) + PAD; /* column labels */
    long long bar_h = grid_h > 100 ? grid_h : 100;
    long long height = th + (grid_h + below > bar_h + mcl_text_height(ls) + PAD
                                 ? grid_h + below
                                 : bar_h + mcl_text_height(ls) + PAD);
    rc = check_size(who, width, height, err, err_len);
    if (rc != MCL_OK) return rc;
    g->width = (int)width;
    g->height = (int)height;
    g->title_h = th;
    g->cell = cell;
    g->n_panels = 1;
    g->panels_per_row = 1;
    g->x0 = (int)(left + shift);
    g->y0 = th;
    g->slot_w = (int)grid_w;
    g->slot_h = (int)grid_h;
    g->bar_x = (int)(bar_x + shift);
    g->bar_y = th;
    g->bar_w = BAR_W;
    g->bar_h = (int)bar_h;
    g->label_scale = ls;
    g->panel_title_scale = ls;
    return MCL_OK;
}

/* Panel-title scale of a grid: 2 when every title fits over a panel at 2, else 1. */
static int panel_title_scale(const char *const *titles, int n, int panel_w)
{
    if (!titles) return 1;
    for (int p = 0; p < n; p++)
        if (mcl_text_width(titles[p], 2) > panel_w) return 1;
    return 2;
}

/* Grid of heat-maps: uniform slots sized by the largest panel; cells of
 * min(1280 / (panels_per_row * max cols), 960 / (panel rows * max rows)) pixels (1..48);
 * panel titles above the panels; one colour bar on the right. */
mcl_status mcl_heatmap_grid_geometry(const char *title, int n_panels, const int *rows,
                                     const int *cols, const char *const *panel_titles,
                                     int panels_per_row, mcl_heatmap_geom *g, char *err,
                                     size_t err_len)
{
    const char *who = "heatmap grid";
    if (!g || !rows || !cols) {
        set_err(err, err_len, "%s: null %s", who,
                !g ? "geometry pointer" : (!rows ? "rows" : "cols"));
        return MCL_ERR_NULL;
    }
    memset(g, 0, sizeof *g);
    if (n_panels < 1 || n_panels > MCL_PLOT_MAX_PANELS) {
        set_err(err, err_len, "%s: %d panels is outside 1..%d", who, n_panels,
                MCL_PLOT_MAX_PANELS);
        return MCL_ERR_INVALID;
    }
    if (panels_per_row < 1) {
        set_err(err, err_len, "%s: panels_per_row is %d (must be >= 1)", who, panels_per_row);
        return MCL_ERR_INVALID;
    }
    int rmax = 0, cmax = 0;
    for (int p = 0; p < n_panels; p++) {
        if (rows[p] < 1 || cols[p] < 1 || rows[p] > MCL_PLOT_MAX_CELLS ||
            cols[p] > MCL_PLOT_MAX_CELLS) {
            set_err(err, err_len, "%s: panel %d is %d rows x %d cols, outside 1..%d per side",
                    who, p, rows[p], cols[p], MCL_PLOT_MAX_CELLS);
            return MCL_ERR_INVALID;
        }
        rmax = imax(rmax, rows[p]);
        cmax = imax(cmax, cols[p]);
    }
    int ppr = panels_per_row < n_panels ? panels_per_row : n_panels;
    int nrow = (n_panels + ppr - 1) / ppr;
    long long cw = 1280 / ((long long)ppr * cmax), ch = 960 / ((long long)nrow * rmax);
    long long cell = cw < ch ? cw : ch;
    cell = cell < 1 ? 1 : (cell > 48 ? 48 : cell);
    long long panel_w = cmax * cell, panel_h = rmax * cell;
    int pts = panel_title_scale(panel_titles, n_panels, (int)panel_w);
    int tw = panel_titles ? max_label_width(panel_titles, n_panels, pts) : 0;
    long long pth = panel_titles ? mcl_text_height(pts) + 4 : 0;
    long long slot_w = (panel_w > tw ? panel_w : tw) + 16;
    long long slot_h = pth + panel_h + 14;
    long long x0 = PAD + 1, th = title_height();
    long long y0 = th + pth;
    /* the colour bar follows the right edge of the widest column of panels */
    long long right = 0;
    for (int p = 0; p < n_panels; p++) {
        long long own = panel_titles ? mcl_text_width(panel_titles[p], pts) : 0;
        long long e = (p % ppr) * slot_w + (cols[p] * cell > own ? cols[p] * cell : own);
        if (e > right) right = e;
    }
    long long bar_x = x0 + right + 1 + 24;
    long long area_h = nrow * slot_h - 14 - pth;
    long long bar_h = area_h < 100 ? 100 : (area_h > 600 ? 600 : area_h);
    int ls = 1 + (cell >= 8);
    long long content_w = bar_x + BAR_W + 1 + 6 + bar_label_room(ls) + PAD;
    long long title_w = (long long)mcl_text_width(title, TITLE_SCALE) + 2 * PAD;
    long long shift = title_w > content_w ? (title_w - content_w) / 2 : 0;
    long long width = content_w > title_w ? content_w : title_w;
    long long h1 = th + nrow * slot_h + PAD, h2 = y0 + bar_h + mcl_text_height(ls) + PAD;
    long long height = h1 > h2 ? h1 : h2;
    mcl_status rc = check_size(who, width, height, err, err_len);
    if (rc != MCL_OK) return rc;
    g->width = (int)width;
    g->height = (int)height;
    g->title_h = (int)th;
    g->cell = (int)cell;
    g->n_panels = n_panels;
    g->panels_per_row = ppr;
    g->x0 = (int)(x0 + shift);
    g->y0 = (int)y0;
    g->slot_w = (int)slot_w;
    g->slot_h = (int)slot_h;
    g->bar_x = (int)(bar_x + shift);
    g->bar_y = (int)y0;
    g->bar_w = BAR_W;
    g->bar_h = (int)bar_h;
    g->label_scale = ls;
    g->panel_title_scale = pts;
    return MCL_OK;
}

/* Panel origin from its slot (row-major over panels_per_row), then the cell offset. */
void mcl_heatmap_cell_xy(const mcl_heatmap_geom *g, int panel, int r, int c, int *x, int *y)
{
    int ppr = g->panels_per_row > 0 ? g->panels_per_row : 1;
    if (x) *x = g->x0 + (panel % ppr) * g->slot_w + c * g->cell;
    if (y) *y = g->y0 + (panel / ppr) * g->slot_h + r * g->cell;
}

/* ---- heat-maps: drawing ---- */

/* Black or white, whichever reads better on `bg` (by its luma). */
static mcl_rgb text_on(mcl_rgb bg)
{
    int y = (299 * bg.r + 587 * bg.g + 114 * bg.b) / 1000;
    return y > 140 ? C_BLACK : C_WHITE;
}

/* The cells of one panel and a frame just outside them. */
static void draw_cells(mcl_canvas *cv, const mcl_heatmap_geom *g, int panel,
                       const float *values, int rows, int cols, const hm_scale *s)
{
    int x0, y0;
    mcl_heatmap_cell_xy(g, panel, 0, 0, &x0, &y0);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            mcl_canvas_fill_rect(cv, x0 + c * g->cell, y0 + r * g->cell, g->cell, g->cell,
                                 value_color(s, values[(size_t)r * (size_t)cols + (size_t)c]));
    mcl_canvas_frame(cv, x0 - 1, y0 - 1, cols * g->cell + 2, rows * g->cell + 2, C_FRAME);
}

/* The colour bar (top row = hi, bottom row = lo), its frame, and hi / middle / lo labels. */
static void draw_colorbar(mcl_canvas *cv, const mcl_heatmap_geom *g, const hm_scale *s)
{
    for (int i = 0; i < g->bar_h; i++) {
        double t = g->bar_h > 1 ? 1.0 - (double)i / (g->bar_h - 1) : 1.0;
        mcl_canvas_fill_rect(cv, g->bar_x, g->bar_y + i, g->bar_w, 1, mcl_cmap_color(s->map, t));
    }
    mcl_canvas_frame(cv, g->bar_x - 1, g->bar_y - 1, g->bar_w + 2, g->bar_h + 2, C_FRAME);
    int ls = g->label_scale;
    int lx = g->bar_x + g->bar_w + 1 + 6;
    double vals[3] = {s->hi, 0.5 * (s->lo + s->hi), s->lo};
    int ys[3] = {g->bar_y, g->bar_y + g->bar_h / 2, g->bar_y + g->bar_h - 1};
    for (int k = 0; k < 3; k++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%.3g", fabs(vals[k]) < 1e-12 * (s->hi - s->lo) ? 0.0 : vals[k]);
        mcl_canvas_fill_rect(cv, g->bar_x + g->bar_w + 1, ys[k], 4, 1, C_FRAME); /* tick */
        int sc = mcl_text_width(buf, ls) <= bar_label_room(ls) ? ls : 1;
        mcl_canvas_text(cv, lx, ys[k] - 7 * sc / 2, buf, sc, MCL_ALIGN_LEFT, C_TEXT);
    }
}

/* The title, centred on the canvas. */
static void draw_title(mcl_canvas *cv, const char *title)
{
    if (title && title[0])
        mcl_canvas_text(cv, cv->w / 2, PAD, title, TITLE_SCALE, MCL_ALIGN_CENTER, C_TEXT);
}

/* Label i: labels[i] ("" for NULL), or the number i when labels is NULL. */
static const char *label_at(const char *const *labels, int i, char *buf, size_t n)
{
    if (labels) return labels[i] ? labels[i] : "";
    snprintf(buf, n, "%d", i);
    return buf;
}

/* The smallest of 1, 2, 5, 10, 20, 50, 100, ... that is >= k: label strides that read well
 * (every 5th, every 10th row, ...). */
static int nice_stride(int k)
{
    static const int m[3] = {1, 2, 5};
    for (long p = 1; p <= 100000000L; p *= 10)
        for (int i = 0; i < 3; i++)
            if (m[i] * p >= k) return (int)(m[i] * p);
    return k;
}

/* Row labels (right-aligned left of the cells) and column labels (centred below them),
 * every k-th one (k from nice_stride) when they would not fit next to each other. */
static void draw_labels(mcl_canvas *cv, const mcl_heatmap_geom *g, int rows, int cols,
                        const char *const *row_labels, const char *const *col_labels)
{
    int ls = g->label_scale, cap = 7 * ls, cell = g->cell;
    char buf[16];
    int rstep = nice_stride((cap + 3 + cell - 1) / cell);
    for (int r = 0; r < rows; r += rstep) {
        int y = g->y0 + r * cell + (cell - cap) / 2;
        mcl_canvas_text(cv, g->x0 - 1 - 5, y, label_at(row_labels, r, buf, sizeof buf), ls,
                        MCL_ALIGN_RIGHT, C_TEXT);
    }
    int cw = max_label_width(col_labels, cols, ls) + LABEL_GAP * ls;
    int cstep = nice_stride((cw + cell - 1) / cell);
    for (int c = 0; c < cols; c += cstep) {
        int x = g->x0 + c * cell + cell / 2;
        mcl_canvas_text(cv, x, g->y0 + rows * cell + 1 + 5,
                        label_at(col_labels, c, buf, sizeof buf), ls, MCL_ALIGN_CENTER, C_TEXT);
    }
}

/* Each finite value with 2 decimals in its cell, at the largest scale (2 or 1) at which
 * every value's text fits with a 2-pixel margin; nothing when even scale 1 does not fit. */
static void draw_annotations(mcl_canvas *cv, const mcl_heatmap_geom *g, const float *values,
                             int rows, int cols, const hm_scale *s)
{
    size_t n = (size_t)rows * (size_t)cols;
    int widest = 0;
    char buf[64];
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(values[i])) continue;
        snprintf(buf, sizeof buf, "%.2f", (double)values[i]);
        int w = mcl_text_width(buf, 1);
        if (w > widest) widest = w;
    }
    int scale = 0;
    for (int sc = 2; sc >= 1 && !scale; sc--)
        if (widest * sc + 4 <= g->cell && 7 * sc + 4 <= g->cell) scale = sc;
    if (!scale) return;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float v = values[(size_t)r * (size_t)cols + (size_t)c];
            if (!isfinite(v)) continue;
            snprintf(buf, sizeof buf, "%.2f", (double)v);
            int x, y;
            mcl_heatmap_cell_xy(g, 0, r, c, &x, &y);
            mcl_canvas_text(cv, x + g->cell / 2, y + (g->cell - 7 * scale) / 2, buf, scale,
                            MCL_ALIGN_CENTER, text_on(value_color(s, v)));
        }
}

/* Validate, lay out (mcl_heatmap_geometry), resolve the scale, draw title, cells, labels,
 * annotations and colour bar, and write the PNG. */
mcl_status mcl_plot_heatmap(const char *path, const char *title, const float *values, int rows,
                            int cols, const char *const *row_labels,
                            const char *const *col_labels, float vmin, float vmax,
                            int annotate, char *err, size_t err_len)
{
    const char *who = "heatmap";
    if (!path || !values) {
        set_err(err, err_len, "%s: null %s", who, !path ? "path" : "values");
        return MCL_ERR_NULL;
    }
    mcl_heatmap_geom g;
    mcl_status rc = mcl_heatmap_geometry(title, rows, cols, row_labels, col_labels, &g, err,
                                         err_len);
    if (rc != MCL_OK) return rc;
    hm_scale s;
    size_t count = (size_t)rows * (size_t)cols;
    rc = resolve_scale(who, vmin, vmax, &values, &count, 1, &s, err, err_len);
    if (rc != MCL_OK) return rc;
    mcl_canvas *cv = NULL;
    rc = mcl_canvas_create(g.width, g.height, C_WHITE, &cv, err, err_len);
    if (rc != MCL_OK) return rc;
    draw_title(cv, title);
    draw_cells(cv, &g, 0, values, rows, cols, &s);
    draw_labels(cv, &g, rows, cols, row_labels, col_labels);
    if (annotate) draw_annotations(cv, &g, values, rows, cols, &s);
    draw_colorbar(cv, &g, &s);
    rc = mcl_canvas_write_png(cv, path, err, err_len);
    mcl_canvas_free(cv);
    return rc;
}

/* Validate, lay out (mcl_heatmap_grid_geometry), resolve one scale over all panels, draw
 * the title, each panel with its title, the colour bar, and write the PNG. */
mcl_status mcl_plot_heatmap_grid(const char *path, const char *title, int n_panels,
                                 const float *const *values, const int *rows, const int *cols,
                                 const char *const *panel_titles, int panels_per_row,
                                 float vmin, float vmax, char *err, size_t err_len)
{
    const char *who = "heatmap grid";
    if (!path || !values) {
        set_err(err, err_len, "%s: null %s", who, !path ? "path" : "values");
        return MCL_ERR_NULL;
    }
    mcl_heatmap_geom g;
    mcl_status rc = mcl_heatmap_grid_geometry(title, n_panels, rows, cols, panel_titles,
                                              panels_per_row, &g, err, err_len);
    if (rc != MCL_OK) return rc;
    size_t *counts = malloc(sizeof *counts * (size_t)n_panels);
    if (!counts) {
        set_err(err, err_len, "%s: out of memory", who);
        return MCL_ERR_OOM;
    }
    for (int p = 0; p < n_panels; p++) {
        if (!values[p]) {
            set_err(err, err_len, "%s: null values for panel %d", who, p);
            free(counts);
            return MCL_ERR_NULL;
        }
        counts[p] = (size_t)rows[p] * (size_t)cols[p];
    }
    hm_scale s;
    rc = resolve_scale(who, vmin, vmax, values, counts, n_panels, &s, err, err_len);
    free(counts);
    if (rc != MCL_OK) return rc;
    mcl_canvas *cv = NULL;
    rc = mcl_canvas_create(g.width, g.height, C_WHITE, &cv, err, err_len);
    if (rc != MCL_OK) return rc;
    draw_title(cv, title);
    int pts = g.panel_title_scale;
    for (int p = 0; p < n_panels; p++) {
        draw_cells(cv, &g, p, values[p], rows[p], cols[p], &s);
        if (panel_titles && panel_titles[p]) {
            int x, y;
            mcl_heatmap_cell_xy(&g, p, 0, 0, &x, &y);
            mcl_canvas_text(cv, x, y - mcl_text_height(pts) - 3, panel_titles[p], pts,
                            MCL_ALIGN_LEFT, C_TEXT);
        }
    }
    draw_colorbar(cv, &g, &s);
    rc = mcl_canvas_write_png(cv, path, err, err_len);
    mcl_canvas_free(cv);
    return rc;
}

/* ---- line plots ---- */

/* Map v from [lo, hi] onto pixels [p0, p1] (p1 may be below p0), rounded, kept within
 * +-1e6 so that the conversion to int is always defined. */
static int map_px(double v, double lo, double hi, int p0, int p1)
{
    double f = (v - lo) / (hi - lo);
    double p = p0 + f * (p1 - p0);
    if (!(p > -1e6)) p = -1e6; /* also NaN */
    if (p > 1e6) p = 1e6;
    return (int)lround(p);
}

/* Data x to pixel column. */
int mcl_axes_px(const mcl_plot_axes *a, double x)
{
    return map_px(x, a->xmin, a->xmax, a->left, a->right);
}

/* Data y to pixel row (rows grow downwards: ymin is at the bottom). */
int mcl_axes_py(const mcl_plot_axes *a, double y)
{
    return map_px(y, a->ymin, a->ymax, a->bottom, a->top);
}

/* Range of the finite values of one coordinate over all series (plus `extra` when finite),
 * widened when empty or flat, plus a 4% margin each way; -1 when it overflows. */
static int axis_range(const mcl_series *series, int n_series, int use_y, double extra,
                      double *lo_out, double *hi_out)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            double v = use_y ? y : x;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    if (isfinite(extra)) {
        if (extra < lo) lo = extra;
        if (extra > hi) hi = extra;
    }
    if (lo > hi) {
        lo = 0.0;
        hi = 1.0;
    } else if (lo == hi) {
        double d = lo != 0.0 ? fabs(lo) * 0.1 : 1.0;
        lo -= d;
        hi += d;
    }
    double m = 0.04 * (hi - lo);
    lo -= m;
    hi += m;
    if (!isfinite(hi - lo) || !(hi > lo)) return -1;
    *lo_out = lo;
    *hi_out = hi;
    return 0;
}

/* Validate the series of a line plot. */
static mcl_status check_series(int n_series, const mcl_series *series, char *err,
                               size_t err_len)
{
    if (n_series < 1 || n_series > MCL_PLOT_MAX_SERIES) {
        set_err(err, err_len, "lines: %d series is outside 1..%d", n_series,
                MCL_PLOT_MAX_SERIES);
        return MCL_ERR_INVALID;
    }
    if (!series) {
        set_err(err, err_len, "lines: null series array");
        return MCL_ERR_NULL;
    }
    for (int s = 0; s < n_series; s++) {
        if (series[s].n < 0) {
            set_err(err, err_len, "lines: series %d has n = %d points", s, series[s].n);
            return MCL_ERR_INVALID;
        }
        if (series[s].n > 0 && (!series[s].x || !series[s].y)) {
            set_err(err, err_len, "lines: series %d has a null %s array", s,
                    !series[s].x ? "x" : "y");
            return MCL_ERR_NULL;
        }
    }
    return MCL_OK;
}

/* One legend entry: a line sample (dashed for the reference) and its name. */
static void legend_entry(mcl_canvas *cv, int x, int y, const char *name, mcl_rgb col,
                         int dashed)
{
    int cap = 7 * LINES_SCALE, mid = y + cap / 2;
    if (dashed)
        mcl_canvas_dashed_line(cv, x, mid, x + 27, mid, 2, 8, 5, col);
    else
        mcl_canvas_line(cv, x, mid, x + 27, mid, 3, col);
    mcl_canvas_text(cv, x + 36, y, name, LINES_SCALE, MCL_ALIGN_LEFT, C_TEXT);
}

/* One series: segments between consecutive finite points, a small square for a finite
 * point with no finite neighbour (it would be invisible otherwise). */
static void draw_series(mcl_canvas *cv, const mcl_plot_axes *a, const mcl_series *s,
                        mcl_rgb col)
{
    int have_prev = 0, px = 0, py = 0;
    for (int i = 0; i < s->n; i++) {
        int ok = isfinite(s->x[i]) && isfinite(s->y[i]);
        if (!ok) {
            have_prev = 0;
            continue;
        }
        int x = mcl_axes_px(a, s->x[i]), y = mcl_axes_py(a, s->y[i]);
        if (have_prev) mcl_canvas_line(cv, px, py, x, y, 2, col);
        int next_ok = i + 1 < s->n && isfinite(s->x[i + 1]) && isfinite(s->y[i + 1]);
        if (!have_prev && !next_ok) mcl_canvas_fill_rect(cv, x - 2, y - 2, 5, 5, col);
        have_prev = 1;
        px = x;
        py = y;
    }
}

/* Validate; ranges and ticks; the layout (the left margin fits the widest y tick label,
 * the legend sits right of the plot area); then grid, ticks, labels, frame, the reference
 * line and the series (clipped to the plot area), the legend; write the PNG. */
mcl_status mcl_plot_lines_ref(const char *path, const char *title, const char *xlabel,
                              const char *ylabel, int n_series, const mcl_series *series,
                              double ref_y, const char *ref_label, mcl_plot_axes *axes_out,
                              char *err, size_t err_len)
{
    if (!path) {
        set_err(err, err_len, "lines: null path");
        return MCL_ERR_NULL;
    }
    mcl_status rc = check_series(n_series, series, err, err_len);
    if (rc != MCL_OK) return rc;
    if (isinf(ref_y)) {
        set_err(err, err_len, "lines: reference level is infinite");
        return MCL_ERR_INVALID;
    }
    mcl_plot_axes a;
    memset(&a, 0, sizeof a);
    if (axis_range(series, n_series, 0, NAN, &a.xmin, &a.xmax) != 0 ||
        axis_range(series, n_series, 1, ref_y, &a.ymin, &a.ymax) != 0) {
        set_err(err, err_len, "lines: the data span too large a range to plot");
        return MCL_ERR_INVALID;
    }
    /* ticks and their labels first: the left margin depends on the widest y label */
    double xt[MAX_TICKS], yt[MAX_TICKS];
    int nx = mcl_nice_ticks(a.xmin, a.xmax, 5, xt, MAX_TICKS);
    int ny = mcl_nice_ticks(a.ymin, a.ymax, 5, yt, MAX_TICKS);
    char xl[MAX_TICKS][40], yl[MAX_TICKS][40];
    double xstep = nx > 1 ? xt[1] - xt[0] : 1.0, ystep = ny > 1 ? yt[1] - yt[0] : 1.0;
    double xamax = 0.0, yamax = 0.0;
    for (int i = 0; i < nx; i++) xamax = fmax(xamax, fabs(xt[i]));
    for (int i = 0; i < ny; i++) yamax = fmax(yamax, fabs(yt[i]));
    int ytw = 0;
    for (int i = 0; i < nx; i++) format_tick(xl[i], sizeof xl[i], xt[i], xstep, xamax);
    for (int i = 0; i < ny; i++) {
        format_tick(yl[i], sizeof yl[i], yt[i], ystep, yamax);
        ytw = imax(ytw, mcl_text_width(yl[i], LINES_SCALE));
    }
    /* legend width: the widest name */
    int name_w = 0;
    char nbuf[32];
    for (int s = 0; s < n_series; s++) {
        snprintf(nbuf, sizeof nbuf, "series %d", s);
        name_w = imax(name_w, mcl_text_width(series[s].name ? series[s].name : nbuf, LINES_SCALE));
    }
    int has_ref = !isnan(ref_y);
    const char *rname = ref_label ? ref_label : "reference";
    if (has_ref) name_w = imax(name_w, mcl_text_width(rname, LINES_SCALE));
    if (name_w > 600) name_w = 600;
    int th = mcl_text_height(LINES_SCALE);
    int ylabel_w = ylabel && ylabel[0] ? th + 10 : 0;
    a.left = PAD + ylabel_w + ytw + 6 + 6;
    a.top = title_height() + th / 2;
    a.right = a.left + LINES_PLOT_W - 1;
    a.bottom = a.top + LINES_PLOT_H - 1;
    int legend_x = a.right + 1 + 24;
    a.width = legend_x + 36 + name_w + PAD;
    int title_w = mcl_text_width(title, TITLE_SCALE) + 2 * PAD;
    if (title_w > a.width) a.width = title_w > MCL_CANVAS_MAX_SIDE ? MCL_CANVAS_MAX_SIDE : title_w;
    a.height = a.bottom + 1 + 6 + 6 + th + (xlabel && xlabel[0] ? 10 + th : 0) + PAD;

    mcl_canvas *cv = NULL;
    rc = mcl_canvas_create(a.width, a.height, C_WHITE, &cv, err, err_len);
    if (rc != MCL_OK) return rc;
    draw_title(cv, title);
    int cap = 7 * LINES_SCALE;
    /* grid lines, ticks and tick labels */
    for (int i = 0; i < nx; i++) {
        int x = mcl_axes_px(&a, xt[i]);
        mcl_canvas_fill_rect(cv, x, a.top, 1, a.bottom - a.top + 1, C_GRID);
        mcl_canvas_fill_rect(cv, x, a.bottom + 1, 1, 6, C_FRAME);
        mcl_canvas_text(cv, x + 1, a.bottom + 1 + 6 + 4, xl[i], LINES_SCALE, MCL_ALIGN_CENTER,
                        C_TEXT);
    }
    for (int i = 0; i < ny; i++) {
        int y = mcl_axes_py(&a, yt[i]);
        mcl_canvas_fill_rect(cv, a.left, y, a.right - a.left + 1, 1, C_GRID);
        mcl_canvas_fill_rect(cv, a.left - 1 - 6, y, 6, 1, C_FRAME);
        mcl_canvas_text(cv, a.left - 1 - 6 - 4, y - cap / 2, yl[i], LINES_SCALE, MCL_ALIGN_RIGHT,
                        C_TEXT);
    }
    mcl_canvas_frame(cv, a.left - 1, a.top - 1, a.right - a.left + 3, a.bottom - a.top + 3,
                     C_FRAME);
    /* axis labels */
    if (xlabel && xlabel[0])
        mcl_canvas_text(cv, (a.left + a.right) / 2, a.bottom + 1 + 6 + 4 + th + 8, xlabel,
                        LINES_SCALE, MCL_ALIGN_CENTER, C_TEXT);
    if (ylabel && ylabel[0])
        mcl_canvas_text_up(cv, PAD, (a.top + a.bottom) / 2, ylabel, LINES_SCALE,
                           MCL_ALIGN_CENTER, C_TEXT);
    /* data, clipped to the plot area */
    mcl_canvas_clip(cv, a.left, a.top, a.right - a.left + 1, a.bottom - a.top + 1);
    if (has_ref) {
        int y = mcl_axes_py(&a, ref_y);
        mcl_canvas_dashed_line(cv, a.left, y, a.right, y, 2, 8, 5, C_REF);
    }
    for (int s = 0; s < n_series; s++)
        draw_series(cv, &a, &series[s], mcl_plot_series_color(s));
    mcl_canvas_unclip(cv);
    /* legend, right of the plot area */
    int ly = a.top + 4, row_h = th + 6;
    for (int s = 0; s < n_series && ly + th <= a.height; s++, ly += row_h) {
        snprintf(nbuf, sizeof nbuf, "series %d", s);
        legend_entry(cv, legend_x, ly, series[s].name ? series[s].name : nbuf,
                     mcl_plot_series_color(s), 0);
    }
    if (has_ref) legend_entry(cv, legend_x, ly, rname, C_REF, 1);

    if (axes_out) *axes_out = a;
    rc = mcl_canvas_write_png(cv, path, err, err_len);
    mcl_canvas_free(cv);
    return rc;
}

/* mcl_plot_lines_ref without a reference line. */
mcl_status mcl_plot_lines(const char *path, const char *title, const char *xlabel,
                          const char *ylabel, int n_series, const mcl_series *series, char *err,
                          size_t err_len)
{
    return mcl_plot_lines_ref(path, title, xlabel, ylabel, n_series, series, NAN, NULL, NULL,
                              err, err_len);
}
