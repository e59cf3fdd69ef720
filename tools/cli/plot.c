/* plot.c — the figures of plot.h, drawn with cairo.
 *
 * Sections: error text and formats; the figure (a cairo surface rendering into memory, then
 * one atomic write); text (sanitized UTF-8, the toy API with "sans-serif"); colour maps; nice
 * ticks; heat-maps (scale, layout, drawing); line plots. Layouts are computed by functions that
 * the drawing code and the public geometry queries share, so what a caller is told about a
 * figure is what was drawn. All layout numbers are whole units, so cell edges fall on pixel
 * boundaries in the PNG. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "plot.h"
#include "png_io.h"
#include "util.h"

#include <cairo.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- error text and formats ---- */

#define set_err(err, len, ...) ((void)mcl_errbuf((err), (len), MCL_OK, __VA_ARGS__))

mcl_plot_format mcl_plot_format_of(const char *path)
{
    if (!path) return MCL_PLOT_UNKNOWN;
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) return MCL_PLOT_UNKNOWN;
    if (!strcasecmp(dot, ".png")) return MCL_PLOT_PNG;
    if (!strcasecmp(dot, ".svg")) return MCL_PLOT_SVG;
    if (!strcasecmp(dot, ".pdf")) return MCL_PLOT_PDF;
    return MCL_PLOT_UNKNOWN;
}

mcl_status mcl_plot_check_path(const char *path, char *err, size_t err_len)
{
    if (!path || !path[0]) {
        set_err(err, err_len, "figure: no output file name");
        return MCL_ERR_NULL;
    }
    if (mcl_plot_format_of(path) != MCL_PLOT_UNKNOWN) return MCL_OK;
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (dot && (!slash || dot > slash + 1) && dot != path)
        set_err(err, err_len, "%s: unknown figure format '%s' (use .png, .svg or .pdf)", path, dot);
    else
        set_err(err, err_len, "%s: no figure format: the file name must end in .png, .svg or .pdf",
                path);
    return MCL_ERR_INVALID;
}

/* ---- fixed colours, fonts and sizes ---- */

#define PAD 14
#define GAP 26            /* between panels */
#define F_TITLE 17.0
#define F_PANEL 14.0
#define F_AXIS 13.0
#define F_TICK 12.0
#define F_ANNOT 13.0
#define F_LEGEND 13.0
#define TICK_LEN 5
#define BAR_W 16
#define LINES_W 720        /* line plot: plot area */
#define LINES_H 420
#define MAX_TICKS 32
#define FONT_FACE "sans-serif"
#define PI 3.14159265358979323846

typedef struct rgbf {
    double r, g, b;
} rgbf;
static const rgbf C_TEXT = {0.10, 0.10, 0.10};
static const rgbf C_FRAME = {0.35, 0.35, 0.35};
static const rgbf C_GRID = {0.90, 0.90, 0.90};
static const rgbf C_MARK = {0.45, 0.45, 0.45};

static rgbf to_f(mcl_rgb c)
{
    rgbf f = {c.r / 255.0, c.g / 255.0, c.b / 255.0};
    return f;
}
static void set_col(cairo_t *cr, rgbf c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }
static int imax(int a, int b) { return a > b ? a : b; }

/* ---- the figure: a surface rendering into memory ---- */

typedef struct membuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} membuf;

static cairo_status_t mem_write(void *closure, const unsigned char *data, unsigned int len)
{
    membuf *b = closure;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->n + len) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return CAIRO_STATUS_WRITE_ERROR;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    return CAIRO_STATUS_SUCCESS;
}

typedef struct figure {
    mcl_plot_format fmt;
    cairo_surface_t *s;
    cairo_t *cr;
    membuf buf;
} figure;

/* A white w x h figure for path's format. */
static mcl_status fig_begin(figure *f, const char *path, int w, int h, char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    mcl_status rc = mcl_plot_check_path(path, err, err_len);
    if (rc != MCL_OK) return rc;
    if (w < 1 || h < 1 || w > MCL_PLOT_MAX_SIDE || h > MCL_PLOT_MAX_SIDE) {
        set_err(err, err_len, "%s: figure size %dx%d is outside 1..%d per side", path, w, h,
                MCL_PLOT_MAX_SIDE);
        return MCL_ERR_INVALID;
    }
    f->fmt = mcl_plot_format_of(path);
    if (f->fmt == MCL_PLOT_PNG)
        f->s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    else if (f->fmt == MCL_PLOT_SVG)
        f->s = cairo_svg_surface_create_for_stream(mem_write, &f->buf, 0.75 * w, 0.75 * h);
    else
        f->s = cairo_pdf_surface_create_for_stream(mem_write, &f->buf, 0.75 * w, 0.75 * h);
    f->cr = cairo_create(f->s);
    /* Cairo's scan converters longjmp through a frame they have not set up when an
     * allocation fails in the middle of a stroke or fill (a SIGSEGV under `ulimit -v`), so the
     * drawing must not be the one to run out of memory: it starts only when a reserve well
     * beyond what it allocates (4 MiB and 8 bytes a pixel) can be had, else the figure fails
     * here with a status. */
    void *reserve = malloc(((size_t)4 << 20) + (size_t)8 * (size_t)w * (size_t)h);
    free(reserve);
    if (!reserve && cairo_status(f->cr) == CAIRO_STATUS_SUCCESS) {
        set_err(err, err_len, "%s: out of memory: not enough left to draw a %dx%d figure", path, w, h);
        cairo_destroy(f->cr);
        cairo_surface_destroy(f->s);
        f->cr = NULL;
        f->s = NULL;
        return MCL_ERR_OOM;
    }
    if (cairo_status(f->cr) != CAIRO_STATUS_SUCCESS) {
        set_err(err, err_len, "%s: cairo: %s", path, cairo_status_to_string(cairo_status(f->cr)));
        cairo_destroy(f->cr);
        cairo_surface_destroy(f->s);
        f->cr = NULL;
        f->s = NULL;
        return MCL_ERR_OOM;
    }
    if (f->fmt != MCL_PLOT_PNG) cairo_scale(f->cr, 0.75, 0.75);
    cairo_set_source_rgb(f->cr, 1, 1, 1);
    cairo_paint(f->cr);
    cairo_select_font_face(f->cr, FONT_FACE, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    return MCL_OK;
}

/* A PNG of the image surface s through metacl's own encoder (src/data/png_io.c, written
 * atomically): cairo's PNG writer longjmps through a frame it has not set up when libpng runs
 * out of memory (a SIGSEGV under `ulimit -v`); ours fails with a status. RGB24 pixels are
 * native-endian 0x00RRGGBB words. */
static mcl_status write_png_surface(cairo_surface_t *s, const char *path, char *err, size_t err_len)
{
    cairo_surface_flush(s);
    const unsigned char *d = cairo_image_surface_get_data(s);
    const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    uint8_t *rgb = d ? malloc((size_t)w * (size_t)h * 3) : NULL;
    if (!rgb) {
        set_err(err, err_len, "%s: out of memory encoding the figure", path);
        return MCL_ERR_OOM;
    }
    for (int y = 0; y < h; y++) {
        const uint32_t *row = (const uint32_t *)(const void *)(d + (size_t)y * (size_t)stride);
        uint8_t *o = rgb + (size_t)y * (size_t)w * 3;
        for (int x = 0; x < w; x++) {
            o[3 * x] = (uint8_t)(row[x] >> 16);
            o[3 * x + 1] = (uint8_t)(row[x] >> 8);
            o[3 * x + 2] = (uint8_t)row[x];
        }
    }
    mcl_status rc = mcl_png_write(path, rgb, w, h, 3, err, err_len);
    free(rgb);
    return rc;
}

/* Finish the drawing, encode, write atomically; frees everything either way. A drawing call
 * that failed (out of memory) leaves the context in an error state that every later call
 * keeps: its status is checked here, before anything is encoded. */
static mcl_status fig_end(figure *f, const char *path, char *err, size_t err_len)
{
    mcl_status rc = MCL_OK;
    cairo_status_t cs = cairo_status(f->cr);
    cairo_destroy(f->cr);
    if (cs == CAIRO_STATUS_SUCCESS && f->fmt == MCL_PLOT_PNG) {
        cs = cairo_surface_status(f->s);
        if (cs == CAIRO_STATUS_SUCCESS) {
            rc = write_png_surface(f->s, path, err, err_len);
            cairo_surface_destroy(f->s);
            memset(f, 0, sizeof *f);
            return rc;
        }
    }
    if (cs == CAIRO_STATUS_SUCCESS) {
        cairo_surface_finish(f->s);
        cs = cairo_surface_status(f->s);
    }
    cairo_surface_destroy(f->s);
    if (f->buf.oom) {
        set_err(err, err_len, "%s: out of memory encoding the figure", path);
        rc = MCL_ERR_OOM;
    } else if (cs != CAIRO_STATUS_SUCCESS) {
        set_err(err, err_len, "%s: cairo: %s", path, cairo_status_to_string(cs));
        rc = MCL_ERR_IO;
    } else {
        rc = mcl_write_file_atomic(path, f->buf.p, f->buf.n, err, err_len);
    }
    free(f->buf.p);
    memset(f, 0, sizeof *f);
    return rc;
}

/* A context for measuring text during layout (1x1 surface); NULL on failure. */
static cairo_t *measure_ctx(void)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(s);
    cairo_surface_destroy(s); /* the context keeps a reference */
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        cairo_destroy(cr);
        return NULL;
    }
    return cr;
}

/* ---- text ---- */

/* Copy s into buf as valid UTF-8: each malformed sequence and each control character becomes
 * '?'; truncated (at a character boundary) when longer than the buffer. */
static const char *clean_utf8(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p && o + 5 < len) {
        unsigned c = *p;
        int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = n > 0;
        for (int k = 1; ok && k < n; k++) ok = (p[k] & 0xC0u) == 0x80u;
        if (ok && n == 2) ok = c >= 0xC2u;
        if (ok && n == 3) {
            unsigned cp = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
            ok = cp >= 0x800u && (cp < 0xD800u || cp > 0xDFFFu);
        }
        if (ok && n == 4) {
            unsigned cp = ((c & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
                          (p[3] & 0x3Fu);
            ok = cp >= 0x10000u && cp <= 0x10FFFFu;
        }
        if (!ok || (n == 1 && (c < 32u || c == 127u))) {
            buf[o++] = '?';
            p++;
            while ((*p & 0xC0u) == 0x80u) p++;
            continue;
        }
        memcpy(buf + o, p, (size_t)n);
        o += (size_t)n;
        p += n;
    }
    buf[o] = 0;
    return buf;
}

static void font(cairo_t *cr, double size, int bold)
{
    cairo_select_font_face(cr, FONT_FACE, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

/* Advance width of text in the current font. */
static double text_w(cairo_t *cr, const char *text)
{
    char b[512];
    cairo_text_extents_t e;
    cairo_text_extents(cr, clean_utf8(text, b, sizeof b), &e);
    return e.x_advance;
}

/* Width of text at a size (normal or bold), rounded up to whole units. */
static int text_wi(cairo_t *cr, const char *text, double size, int bold)
{
    if (!text || !text[0]) return 0;
    font(cr, size, bold);
    return (int)ceil(text_w(cr, text));
}

/* Line height of a font size (ascent + descent of the face, rounded up). */
static int line_h(double size) { return (int)ceil(size * 1.25); }

typedef enum halign { H_LEFT, H_CENTER, H_RIGHT } halign;

/* Draw text in the current font with its vertical middle (of the capitals) at y and
 * horizontally aligned on x. */
static void text_at(cairo_t *cr, double x, double y, const char *text, halign a)
{
    if (!text || !text[0]) return;
    char b[512];
    clean_utf8(text, b, sizeof b);
    cairo_text_extents_t e;
    cairo_text_extents(cr, b, &e);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double cap = fe.ascent * 0.72; /* about the cap height of sans faces */
    double left = a == H_LEFT ? x : a == H_CENTER ? x - e.x_advance / 2 : x - e.x_advance;
    cairo_move_to(cr, left, y + cap / 2);
    cairo_show_text(cr, b);
    cairo_new_path(cr);
}

/* The same, rotated to read bottom to top, centred on (x, y) along the text. */
static void text_up(cairo_t *cr, double x, double y, const char *text)
{
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, -PI / 2);
    text_at(cr, 0, 0, text, H_CENTER);
    cairo_restore(cr);
}

/* ---- colour maps ---- */

/* Viridis: 11 anchors at t = 0, 0.1, ..., 1 (matplotlib's values), linearly interpolated. */
static const uint8_t RAMP_VIRIDIS[11][3] = {
    {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},
    {42, 120, 142}, {33, 145, 140}, {34, 168, 132}, {68, 191, 112},
    {122, 209, 81}, {189, 223, 38}, {253, 231, 37},
};

/* Diverging: blue -> near-white (t = 0.5) -> red (ColorBrewer RdBu, reversed). */
static const uint8_t RAMP_DIVERGING[9][3] = {
    {33, 102, 172},  {67, 147, 195},  {146, 197, 222}, {209, 229, 240}, {247, 247, 247},
    {253, 219, 199}, {244, 165, 130}, {214, 96, 77},   {178, 24, 43},
};

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

/* The usual categorical ten (tab10), then hues spaced by the golden ratio. */
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

static double nice_step(double range, int target)
{
    double raw = range / target;
    if (!(raw > 0.0) || !isfinite(raw)) return 0.0;
    double p = pow(10.0, floor(log10(raw)));
    double m = raw / p;
    double nice = m < 1.5 ? 1.0 : (m < 3.5 ? 2.0 : (m < 7.5 ? 5.0 : 10.0));
    return nice * p;
}

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

/* Tick labels of one axis with the same, sufficient precision. */
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

typedef struct ticks {
    int n;
    double v[MAX_TICKS];
    char label[MAX_TICKS][40];
} ticks;

static void make_ticks(ticks *t, double lo, double hi, int target)
{
    t->n = mcl_nice_ticks(lo, hi, target, t->v, MAX_TICKS);
    double step = t->n > 1 ? t->v[1] - t->v[0] : (hi > lo ? hi - lo : 1.0), amax = 0.0;
    for (int i = 0; i < t->n; i++) amax = fmax(amax, fabs(t->v[i]));
    for (int i = 0; i < t->n; i++) format_tick(t->label[i], sizeof t->label[i], t->v[i], step, amax);
}

/* ---- heat-maps: scale ---- */

typedef struct hm_scale {
    double lo, hi;
    mcl_cmap map;
} hm_scale;

/* Resolve the colour scale (plot.h) over the panels [p0, p1). */
static void resolve_scale(float vmin, float vmax, const mcl_heatmap_panel *pn, int p0, int p1,
                          hm_scale *s)
{
    double lo = vmin, hi = vmax;
    if (vmin == vmax) {
        lo = INFINITY;
        hi = -INFINITY;
        for (int p = p0; p < p1; p++) {
            size_t n = (size_t)pn[p].rows * (size_t)pn[p].cols;
            for (size_t i = 0; i < n; i++) {
                double v = pn[p].values[i];
                if (!isfinite(v)) continue;
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
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
}

static mcl_rgb value_color(const hm_scale *s, double v)
{
    if (isnan(v)) return mcl_cmap_color(s->map, NAN);
    return mcl_cmap_color(s->map, (v - s->lo) / (s->hi - s->lo));
}

/* ---- heat-maps: layout ---- */

typedef struct hm_layout {
    mcl_heatmap_geom g;
    int maxr, maxc;
    int title_h, ptitle_h, tick_h, axis_h;
    int rtw;        /* widest row tick label */
    int row_step, col_step; /* tick label thinning */
    int annot;      /* 0 none, else annotation font size x 10 */
    int bar_lw;     /* widest colour bar tick label */
    int shift;      /* panels moved right to centre them under a wide title */
    double mul;
    int dec;
    hm_scale scale[MCL_PLOT_MAX_PANELS];
    ticks bar_ticks[MCL_PLOT_MAX_PANELS > 64 ? 64 : MCL_PLOT_MAX_PANELS];
} hm_layout;

static void tick_label(char *buf, size_t n, const char *const *labels, int i, int base)
{
    if (labels) snprintf(buf, n, "%s", labels[i] ? labels[i] : "");
    else snprintf(buf, n, "%d", i + base);
}

/* The value text and the error text of a cell. */
static void annot_text(const hm_layout *L, float v, const float *e, char *vb, size_t vn, char *eb,
                       size_t en)
{
    snprintf(vb, vn, "%.*f", L->dec, (double)v * L->mul);
    eb[0] = 0;
    if (e && isfinite(*e)) snprintf(eb, en, "\xC2\xB1 %.*f", L->dec, (double)*e * L->mul);
}

static mcl_status hm_validate(const mcl_heatmap_spec *sp, int n, const mcl_heatmap_panel *pn,
                              char *err, size_t err_len)
{
    if (!sp || !pn) {
        set_err(err, err_len, "heatmap: null %s", !sp ? "spec" : "panels");
        return MCL_ERR_NULL;
    }
    if (n < 1 || n > MCL_PLOT_MAX_PANELS) {
        set_err(err, err_len, "heatmap: %d panels is outside 1..%d", n, MCL_PLOT_MAX_PANELS);
        return MCL_ERR_INVALID;
    }
    if (isnan(sp->vmin) || isnan(sp->vmax) || isinf(sp->vmin) || isinf(sp->vmax)) {
        set_err(err, err_len, "heatmap: vmin/vmax must be finite (got %g, %g)", (double)sp->vmin,
                (double)sp->vmax);
        return MCL_ERR_INVALID;
    }
    if (sp->vmin > sp->vmax) {
        set_err(err, err_len, "heatmap: vmin %g is above vmax %g", (double)sp->vmin,
                (double)sp->vmax);
        return MCL_ERR_INVALID;
    }
    for (int p = 0; p < n; p++) {
        if (!pn[p].values) {
            set_err(err, err_len, "heatmap: null values for panel %d", p);
            return MCL_ERR_NULL;
        }
        if (pn[p].rows < 1 || pn[p].cols < 1 || pn[p].rows > MCL_PLOT_MAX_CELLS ||
            pn[p].cols > MCL_PLOT_MAX_CELLS) {
            set_err(err, err_len, "heatmap: panel %d is %dx%d; rows and columns must be 1..%d", p,
                    pn[p].rows, pn[p].cols, MCL_PLOT_MAX_CELLS);
            return MCL_ERR_INVALID;
        }
    }
    return MCL_OK;
}

/* Why this function is long (~135 lines): it is the heat-maps' whole layout in one place
 * (tick labels, the cell size, one slot per panel, the scales, the right margin), shared by
 * the drawing and by the public geometry queries so that both see the same numbers; each
 * step sizes what the next one places. */
static mcl_status hm_compute(const mcl_heatmap_spec *sp, int n, const mcl_heatmap_panel *pn,
                             hm_layout *L, char *err, size_t err_len)
{
    mcl_status rc = hm_validate(sp, n, pn, err, err_len);
    if (rc != MCL_OK) return rc;
    cairo_t *cr = measure_ctx();
    if (!cr) {
        set_err(err, err_len, "heatmap: cairo: out of memory");
        return MCL_ERR_OOM;
    }
    mcl_heatmap_geom *g = &L->g;
    memset(g, 0, sizeof *g);
    int ppr = sp->panels_per_row > 0 && sp->panels_per_row < n ? sp->panels_per_row : n;
    int nrows = (n + ppr - 1) / ppr;
    g->n_panels = n;
    g->panels_per_row = ppr;
    g->n_rows = nrows;
    L->maxr = L->maxc = 0;
    int has_ptitle = 0;
    for (int p = 0; p < n; p++) {
        L->maxr = imax(L->maxr, pn[p].rows);
        L->maxc = imax(L->maxc, pn[p].cols);
        if (pn[p].title && pn[p].title[0]) has_ptitle = 1;
    }
    L->title_h = sp->title && sp->title[0] ? line_h(F_TITLE) + 10 : 0;
    L->ptitle_h = has_ptitle ? line_h(F_PANEL) + 6 : 0;
    L->tick_h = line_h(F_TICK);
    L->axis_h = line_h(F_AXIS);
    L->mul = sp->annot_mul != 0.0 ? sp->annot_mul : 1.0;
    L->dec = sp->annot_decimals >= 0 ? (sp->annot_decimals > 6 ? 6 : sp->annot_decimals) : 2;
    char b[256], e[64];
    /* row tick labels */
    L->rtw = 0;
    for (int i = 0; i < L->maxr; i++) {
        tick_label(b, sizeof b, sp->row_labels, i, sp->index_base);
        L->rtw = imax(L->rtw, text_wi(cr, b, F_TICK, 0));
    }
    int ctw = 0;
    for (int i = 0; i < L->maxc; i++) {
        tick_label(b, sizeof b, sp->col_labels, i, sp->index_base);
        ctw = imax(ctw, text_wi(cr, b, F_TICK, 0));
    }
    /* the cell: automatic, or as asked; annotated cells grow to fit their text */
    int cell = sp->cell > 0 ? sp->cell : (int)lround(fmin(40.0, fmax(4.0, 256.0 / imax(L->maxr, L->maxc))));
    L->annot = 0;
    int has_err = 0;
    if (sp->annotate) {
        int vw = 0, ew = 0;
        for (int p = 0; p < n; p++)
            for (int i = 0; i < pn[p].rows * pn[p].cols; i++) {
                if (!isfinite(pn[p].values[i])) continue;
                annot_text(L, pn[p].values[i], pn[p].errors ? pn[p].errors + i : NULL, b, sizeof b,
                           e, sizeof e);
                vw = imax(vw, text_wi(cr, b, F_ANNOT, 0));
                if (e[0]) {
                    has_err = 1;
                    ew = imax(ew, text_wi(cr, e, F_ANNOT - 2, 0));
                }
            }
        int need_w = imax(vw, ew) + 10, need_h = (has_err ? 2 : 1) * line_h(F_ANNOT) + 8;
        if (sp->cell <= 0) {
            cell = imax(cell, imax(need_w, need_h));
            /* the axis titles fit along the matrix */
            int xl = text_wi(cr, sp->xlabel, F_AXIS, 0), yl = text_wi(cr, sp->ylabel, F_AXIS, 0);
            cell = imax(cell, (xl + 8 + L->maxc - 1) / L->maxc);
            cell = imax(cell, (yl + 8 + L->maxr - 1) / L->maxr);
            if (cell > 96) cell = 96;
        }
        if (cell >= need_w && cell >= need_h) L->annot = 1;
    }
    g->cell = cell;
    L->row_step = imax(1, (int)ceil((L->tick_h + 1.0) / cell));
    L->col_step = imax(1, (int)ceil((ctw + 6.0) / cell));
    /* one slot per panel: row ticks, the matrix, column ticks, the x title */
    int yl_w = sp->ylabel && sp->ylabel[0] ? L->axis_h + 6 : 0;
    int grid_w = L->maxc * cell, grid_h = L->maxr * cell;
    int slot_w = L->rtw + TICK_LEN + 4 + grid_w + GAP;
    int xl_w = text_wi(cr, sp->xlabel, F_AXIS, 0);
    slot_w = imax(slot_w, L->rtw + TICK_LEN + 4 + xl_w + GAP);
    for (int p = 0; p < n; p++)
        slot_w = imax(slot_w, L->rtw + TICK_LEN + 4 + text_wi(cr, pn[p].title, F_PANEL, 1) + GAP);
    int slot_h = L->ptitle_h + grid_h + TICK_LEN + 3 + L->tick_h +
                 (sp->xlabel && sp->xlabel[0] ? L->axis_h + 4 : 0) + GAP;
    g->slot_w = slot_w;
    g->slot_h = slot_h;
    g->x0 = PAD + yl_w + L->rtw + TICK_LEN + 4;
    g->y0 = PAD + L->title_h + L->ptitle_h;
    /* scales: one, or one per row of panels */
    int nscale = sp->per_row_scale ? nrows : 1;
    if (nscale > 64) {
        cairo_destroy(cr);
        set_err(err, err_len, "heatmap: %d rows of panels with a scale each (at most 64)", nscale);
        return MCL_ERR_INVALID;
    }
    L->bar_lw = 0;
    L->shift = 0;
    for (int k = 0; k < nscale; k++) {
        int p0 = sp->per_row_scale ? k * ppr : 0;
        int p1 = sp->per_row_scale ? imax(p0, (k + 1) * ppr < n ? (k + 1) * ppr : n) : n;
        resolve_scale(sp->vmin, sp->vmax, pn, p0, p1, &L->scale[k]);
        ticks *t = &L->bar_ticks[k];
        /* the bar is labelled in the printed unit (value * annot_mul) */
        make_ticks(t, L->scale[k].lo * L->mul, L->scale[k].hi * L->mul, 5);
        for (int i = 0; i < t->n; i++) t->v[i] /= L->mul;
        font(cr, F_TICK, 0);
        for (int i = 0; i < t->n; i++) L->bar_lw = imax(L->bar_lw, (int)ceil(text_w(cr, t->label[i])));
    }
    g->scale_lo = L->scale[0].lo;
    g->scale_hi = L->scale[0].hi;
    g->bar_x = g->x0 + (ppr - 1) * slot_w + grid_w + 18;
    /* the x title or a panel title may reach further right than the matrix */
    g->bar_x = fmax(g->bar_x, g->x0 + (ppr - 1) * slot_w + slot_w - GAP - L->rtw - TICK_LEN - 4 + 10);
    g->bar_w = BAR_W;
    g->bar_y = g->y0;
    g->bar_h = sp->per_row_scale ? grid_h : (nrows - 1) * slot_h + grid_h;
    int bl_w = 0;
    if (sp->bar_label && sp->bar_label[0]) bl_w = L->axis_h + 8;
    if (sp->row_bar_labels) bl_w = L->axis_h + 8;
    g->width = (int)g->bar_x + BAR_W + TICK_LEN + 4 + L->bar_lw + bl_w + PAD;
    int tw = text_wi(cr, sp->title, F_TITLE, 1) + 2 * PAD;
    if (tw > g->width) { /* a title wider than the panels: centre the panels under it */
        int shift = (tw - g->width) / 2;
        g->x0 += shift;
        g->bar_x += shift;
        L->shift = shift;
        g->width = tw;
    }
    g->height = (int)g->y0 - L->ptitle_h + nrows * slot_h - GAP + PAD;
    cairo_destroy(cr);
    if (g->width > MCL_PLOT_MAX_SIDE || g->height > MCL_PLOT_MAX_SIDE) {
        set_err(err, err_len, "heatmap: the figure would be %dx%d (at most %d per side)", g->width,
                g->height, MCL_PLOT_MAX_SIDE);
        return MCL_ERR_INVALID;
    }
    return MCL_OK;
}

mcl_status mcl_heatmap_layout(const mcl_heatmap_spec *spec, int n_panels,
                              const mcl_heatmap_panel *panels, mcl_heatmap_geom *g, char *err,
                              size_t err_len)
{
    if (!g) {
        set_err(err, err_len, "heatmap: null geometry");
        return MCL_ERR_NULL;
    }
    hm_layout *L = malloc(sizeof *L);
    if (!L) {
        set_err(err, err_len, "heatmap: out of memory");
        return MCL_ERR_OOM;
    }
    mcl_status rc = hm_compute(spec, n_panels, panels, L, err, err_len);
    if (rc == MCL_OK) *g = L->g;
    free(L);
    return rc;
}

void mcl_heatmap_cell_xy(const mcl_heatmap_geom *g, int panel, int r, int c, double *x, double *y)
{
    int ppr = g->panels_per_row > 0 ? g->panels_per_row : 1;
    *x = g->x0 + (panel % ppr) * g->slot_w + c * g->cell;
    *y = g->y0 + (panel / ppr) * g->slot_h + r * g->cell;
}

/* ---- heat-maps: drawing ---- */

static void draw_bar(cairo_t *cr, const hm_layout *L, int k, double y, double h, const char *label)
{
    const mcl_heatmap_geom *g = &L->g;
    const hm_scale *s = &L->scale[k];
    /* the ramp: one row per unit, top = vmax */
    int ih = (int)h;
    for (int i = 0; i < ih; i++) {
        double t = ih > 1 ? 1.0 - (double)i / (ih - 1) : 1.0;
        set_col(cr, to_f(mcl_cmap_color(s->map, t)));
        cairo_rectangle(cr, g->bar_x, y + i, g->bar_w, 1);
        cairo_fill(cr);
    }
    set_col(cr, C_FRAME);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, g->bar_x - 0.5, y - 0.5, g->bar_w + 1, h + 1);
    cairo_stroke(cr);
    const ticks *t = &L->bar_ticks[k];
    font(cr, F_TICK, 0);
    for (int i = 0; i < t->n; i++) {
        double ty = y + (h - 1) * (1.0 - (t->v[i] - s->lo) / (s->hi - s->lo)) + 0.5;
        ty = floor(ty) + 0.5;
        set_col(cr, C_FRAME);
        cairo_move_to(cr, g->bar_x + g->bar_w, ty);
        cairo_line_to(cr, g->bar_x + g->bar_w + TICK_LEN, ty);
        cairo_stroke(cr);
        set_col(cr, C_TEXT);
        text_at(cr, g->bar_x + g->bar_w + TICK_LEN + 3, ty, t->label[i], H_LEFT);
    }
    if (label && label[0]) {
        font(cr, F_AXIS, 0);
        set_col(cr, C_TEXT);
        text_up(cr, g->bar_x + g->bar_w + TICK_LEN + 4 + L->bar_lw + 6 + L->axis_h / 2.0,
                y + h / 2, label);
    }
}

static void draw_panel(cairo_t *cr, const hm_layout *L, const mcl_heatmap_spec *sp,
                       const mcl_heatmap_panel *pn, int p, const hm_scale *s)
{
    const mcl_heatmap_geom *g = &L->g;
    double x0, y0;
    mcl_heatmap_cell_xy(g, p, 0, 0, &x0, &y0);
    double cell = g->cell, gw = pn->cols * cell, gh = pn->rows * cell;
    for (int r = 0; r < pn->rows; r++)
        for (int c = 0; c < pn->cols; c++) {
            set_col(cr, to_f(value_color(s, pn->values[(size_t)r * (size_t)pn->cols + (size_t)c])));
            cairo_rectangle(cr, x0 + c * cell, y0 + r * cell, cell, cell);
            cairo_fill(cr);
        }
    if (L->annot && cell >= 24) { /* thin white lines between large cells */
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_set_line_width(cr, 1);
        for (int r = 1; r < pn->rows; r++) {
            cairo_move_to(cr, x0, y0 + r * cell + 0.5);
            cairo_line_to(cr, x0 + gw, y0 + r * cell + 0.5);
        }
        for (int c = 1; c < pn->cols; c++) {
            cairo_move_to(cr, x0 + c * cell + 0.5, y0);
            cairo_line_to(cr, x0 + c * cell + 0.5, y0 + gh);
        }
        cairo_stroke(cr);
    }
    set_col(cr, C_FRAME);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, x0 - 0.5, y0 - 0.5, gw + 1, gh + 1);
    cairo_stroke(cr);
    char b[256], e[64];
    /* tick marks and labels */
    font(cr, F_TICK, 0);
    for (int r = 0; r < pn->rows; r += L->row_step) {
        double y = y0 + (r + 0.5) * cell;
        set_col(cr, C_FRAME);
        cairo_move_to(cr, x0 - 1, floor(y) + 0.5);
        cairo_line_to(cr, x0 - 1 - TICK_LEN, floor(y) + 0.5);
        cairo_stroke(cr);
        set_col(cr, C_TEXT);
        tick_label(b, sizeof b, sp->row_labels, r, sp->index_base);
        text_at(cr, x0 - 1 - TICK_LEN - 3, y, b, H_RIGHT);
    }
    for (int c = 0; c < pn->cols; c += L->col_step) {
        double x = x0 + (c + 0.5) * cell;
        set_col(cr, C_FRAME);
        cairo_move_to(cr, floor(x) + 0.5, y0 + gh + 1);
        cairo_line_to(cr, floor(x) + 0.5, y0 + gh + 1 + TICK_LEN);
        cairo_stroke(cr);
        set_col(cr, C_TEXT);
        tick_label(b, sizeof b, sp->col_labels, c, sp->index_base);
        text_at(cr, x, y0 + gh + TICK_LEN + 3 + L->tick_h / 2.0, b, H_CENTER);
    }
    /* axis titles: x under every panel, y left of the first panel of a row */
    if (sp->xlabel && sp->xlabel[0]) {
        font(cr, F_AXIS, 0);
        set_col(cr, C_TEXT);
        double gx = x0 + fmax(gw, 0) / 2;
        double xl = text_w(cr, sp->xlabel);
        double lo = x0 - L->rtw - TICK_LEN - 4;
        if (gx - xl / 2 < lo) gx = lo + xl / 2;
        text_at(cr, gx, y0 + gh + TICK_LEN + 3 + L->tick_h + 4 + L->axis_h / 2.0, sp->xlabel,
                H_CENTER);
    }
    if (sp->ylabel && sp->ylabel[0] && p % g->panels_per_row == 0) {
        font(cr, F_AXIS, 0);
        set_col(cr, C_TEXT);
        text_up(cr, PAD + L->shift + L->axis_h / 2.0, y0 + gh / 2, sp->ylabel);
    }
    if (pn->title && pn->title[0]) {
        font(cr, F_PANEL, 1);
        set_col(cr, C_TEXT);
        double tw = text_w(cr, pn->title), cx = x0 + gw / 2;
        double lo = x0 - L->rtw - TICK_LEN - 4;
        if (cx - tw / 2 < lo) cx = lo + tw / 2;
        text_at(cr, cx, y0 - L->ptitle_h / 2.0 - 1, pn->title, H_CENTER);
    }
    /* values in the cells */
    if (L->annot) {
        int two = 0;
        for (int i = 0; i < pn->rows * pn->cols && !two; i++)
            two = pn->errors && isfinite(pn->errors[i]) && isfinite(pn->values[i]);
        double lh = line_h(F_ANNOT);
        for (int r = 0; r < pn->rows; r++)
            for (int c = 0; c < pn->cols; c++) {
                size_t i = (size_t)r * (size_t)pn->cols + (size_t)c;
                float v = pn->values[i];
                if (!isfinite(v)) continue;
                annot_text(L, v, pn->errors ? pn->errors + i : NULL, b, sizeof b, e, sizeof e);
                mcl_rgb bg = value_color(s, v);
                double lum = 0.299 * bg.r + 0.587 * bg.g + 0.114 * bg.b;
                if (lum < 140) cairo_set_source_rgb(cr, 1, 1, 1);
                else set_col(cr, C_TEXT);
                double cx = x0 + (c + 0.5) * cell, cy = y0 + (r + 0.5) * cell;
                font(cr, F_ANNOT, 1);
                if (two && e[0]) {
                    text_at(cr, cx, cy - lh / 2 + 1, b, H_CENTER);
                    font(cr, F_ANNOT - 2, 0);
                    text_at(cr, cx, cy + lh / 2 - 1, e, H_CENTER);
                } else {
                    text_at(cr, cx, cy, b, H_CENTER);
                }
            }
    }
}

mcl_status mcl_plot_heatmaps(const char *path, const mcl_heatmap_spec *spec, int n_panels,
                             const mcl_heatmap_panel *panels, char *err, size_t err_len)
{
    mcl_status rc = mcl_plot_check_path(path, err, err_len);
    if (rc != MCL_OK) return rc;
    hm_layout *L = malloc(sizeof *L);
    if (!L) {
        set_err(err, err_len, "heatmap: out of memory");
        return MCL_ERR_OOM;
    }
    rc = hm_compute(spec, n_panels, panels, L, err, err_len);
    figure f;
    if (rc == MCL_OK) rc = fig_begin(&f, path, L->g.width, L->g.height, err, err_len);
    if (rc != MCL_OK) {
        free(L);
        return rc;
    }
    cairo_t *cr = f.cr;
    const mcl_heatmap_geom *g = &L->g;
    if (spec->title && spec->title[0]) {
        font(cr, F_TITLE, 1);
        set_col(cr, C_TEXT);
        text_at(cr, g->width / 2.0, PAD + line_h(F_TITLE) / 2.0, spec->title, H_CENTER);
    }
    for (int p = 0; p < n_panels; p++) {
        int k = spec->per_row_scale ? p / g->panels_per_row : 0;
        draw_panel(cr, L, spec, &panels[p], p, &L->scale[k]);
    }
    if (spec->per_row_scale) {
        for (int k = 0; k < g->n_rows; k++) {
            int rows = 0;
            for (int p = k * g->panels_per_row; p < n_panels && p < (k + 1) * g->panels_per_row; p++)
                rows = imax(rows, panels[p].rows);
            const char *bl = spec->row_bar_labels && spec->row_bar_labels[k] ? spec->row_bar_labels[k]
                                                                           : spec->bar_label;
            draw_bar(cr, L, k, g->bar_y + k * g->slot_h, rows * g->cell, bl);
        }
    } else {
        draw_bar(cr, L, 0, g->bar_y, g->bar_h, spec->bar_label);
    }
    free(L);
    return fig_end(&f, path, err, err_len);
}

mcl_status mcl_plot_heatmap(const char *path, const char *title, const float *values, int rows,
                            int cols, const char *const *row_labels,
                            const char *const *col_labels, float vmin, float vmax,
                            int annotate, char *err, size_t err_len)
{
    mcl_heatmap_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.title = title;
    sp.row_labels = row_labels;
    sp.col_labels = col_labels;
    sp.vmin = vmin;
    sp.vmax = vmax;
    sp.annotate = annotate;
    sp.annot_decimals = 2;
    mcl_heatmap_panel pn = {NULL, values, NULL, rows, cols};
    return mcl_plot_heatmaps(path, &sp, 1, &pn, err, err_len);
}

/* ---- line plots ---- */

static double map_px(double v, double lo, double hi, double p0, double p1)
{
    double p = p0 + (v - lo) / (hi - lo) * (p1 - p0);
    if (!(p > -1e6)) p = -1e6; /* also NaN */
    if (p > 1e6) p = 1e6;
    return p;
}

double mcl_axes_px(const mcl_plot_axes *a, double x) { return map_px(x, a->xmin, a->xmax, a->left, a->right); }
double mcl_axes_py(const mcl_plot_axes *a, double y) { return map_px(y, a->ymin, a->ymax, a->bottom, a->top); }

void mcl_moving_average(const double *y, int n, int window, double *out)
{
    if (window < 1) window = 1;
    int h = window / 2;
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i])) {
            out[i] = NAN;
            continue;
        }
        double s = 0.0;
        int k = 0;
        for (int j = i; j >= 0 && j >= i - h && isfinite(y[j]); j--, k++) s += y[j];
        for (int j = i + 1; j < n && j <= i + (window - 1 - h) && isfinite(y[j]); j++, k++) s += y[j];
        out[i] = s / k;
    }
}

/* The edges of a band at y of half-width b (b >= 0):
 *     lo = y - b, raised to 0 with spec->band_floor0;  hi = y + b, lowered to spec->band_ceil
 * with spec->band_ceil_on (never past y itself: a point outside the limits keeps its line). */
static void band_edges(const mcl_lines_spec *spec, double y, double b, double *lo, double *hi)
{
    *lo = y - b;
    *hi = y + b;
    if (spec && spec->band_floor0 && b > 0) *lo = fmin(y, fmax(0.0, *lo));
    if (spec && spec->band_ceil_on && b > 0) *hi = fmax(y, fmin(spec->band_ceil, *hi));
}

/* Range of one coordinate over all series (plus `extra` when finite), widened when empty or
 * flat, plus a 4% margin each way; -1 when it overflows. bands (y only; NULL: none): the bands'
 * edges as band_edges clips them. */
static int axis_range(const mcl_series *series, int n_series, int use_y, const double *extra,
                      int n_extra, const mcl_lines_spec *bands, double *lo_out, double *hi_out)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            double b = use_y && series[s].band && isfinite(series[s].band[i]) ? fabs(series[s].band[i]) : 0.0;
            double vlo, vhi;
            if (use_y) band_edges(bands, y, b, &vlo, &vhi);
            else vlo = vhi = x;
            if (vlo < lo) lo = vlo;
            if (vhi > hi) hi = vhi;
        }
    for (int i = 0; i < n_extra; i++)
        if (isfinite(extra[i])) {
            if (extra[i] < lo) lo = extra[i];
            if (extra[i] > hi) hi = extra[i];
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

static mcl_status check_series(int n_series, const mcl_series *series, char *err, size_t err_len)
{
    if (n_series < 1 || n_series > MCL_PLOT_MAX_SERIES) {
        set_err(err, err_len, "lines: %d series is outside 1..%d", n_series, MCL_PLOT_MAX_SERIES);
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
            set_err(err, err_len, "lines: series %d has a null %s array", s, !series[s].x ? "x" : "y");
            return MCL_ERR_NULL;
        }
    }
    return MCL_OK;
}

/* A polyline through the finite points (a non-finite point breaks it); a lone finite point
 * becomes a dot. */
static void draw_curve(cairo_t *cr, const mcl_plot_axes *a, const double *x, const double *y,
                       int n, double width)
{
    int have_prev = 0;
    cairo_set_line_width(cr, width);
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) {
            have_prev = 0;
            continue;
        }
        double px = mcl_axes_px(a, x[i]), py = mcl_axes_py(a, y[i]);
        int next_ok = i + 1 < n && isfinite(x[i + 1]) && isfinite(y[i + 1]);
        if (!have_prev && !next_ok) {
            cairo_stroke(cr);
            cairo_arc(cr, px, py, width + 1.0, 0, 2 * PI);
            cairo_fill(cr);
        } else if (have_prev) {
            cairo_line_to(cr, px, py);
        } else {
            cairo_move_to(cr, px, py);
        }
        have_prev = 1;
    }
    cairo_stroke(cr);
}

static void legend_sample(cairo_t *cr, double x, double y, rgbf col, int dashed, double width)
{
    set_col(cr, col);
    cairo_set_line_width(cr, width);
    if (dashed) {
        double d[2] = {7, 4};
        cairo_set_dash(cr, d, 2, 0);
    }
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x + 28, y);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
}

/* The band y ± band of a series, one filled polygon per run of finite points, its edges
 * clipped as spec says (band_edges: not below 0 with band_floor0, not above band_ceil). */
static void draw_band(cairo_t *cr, const mcl_plot_axes *a, const mcl_series *se, rgbf col,
                      const mcl_lines_spec *spec)
{
    double lo, hi;
    cairo_set_source_rgba(cr, col.r, col.g, col.b, 0.18);
    int i = 0;
    while (i < se->n) {
        while (i < se->n && !(isfinite(se->x[i]) && isfinite(se->y[i]) && isfinite(se->band[i]))) i++;
        int j = i;
        while (j < se->n && isfinite(se->x[j]) && isfinite(se->y[j]) && isfinite(se->band[j])) j++;
        if (j - i >= 2) {
            for (int k = i; k < j; k++) {
                band_edges(spec, se->y[k], fabs(se->band[k]), &lo, &hi);
                double px = mcl_axes_px(a, se->x[k]), py = mcl_axes_py(a, hi);
                if (k == i) cairo_move_to(cr, px, py);
                else cairo_line_to(cr, px, py);
            }
            for (int k = j - 1; k >= i; k--) {
                band_edges(spec, se->y[k], fabs(se->band[k]), &lo, &hi);
                cairo_line_to(cr, mcl_axes_px(a, se->x[k]), mcl_axes_py(a, lo));
            }
            cairo_close_path(cr);
            cairo_fill(cr);
        }
        i = j;
    }
}

/* Why this function is long (~230 lines): it is one cairo drawing in the order the figure is
 * laid out (checks, data range and nice ticks, the legend's size, the plot area, grid and
 * labels, the clipped data, the legend), and each step uses the geometry the ones before it
 * computed; cut into pieces it would pass a dozen layout values between them. The heat-maps'
 * layout, which callers query, is the separate hm_compute. */
mcl_status mcl_plot_lines_ex(const char *path, const mcl_lines_spec *spec, int n_series,
                             const mcl_series *series, mcl_plot_axes *axes_out, char *err,
                             size_t err_len)
{
    mcl_status rc = mcl_plot_check_path(path, err, err_len);
    if (rc != MCL_OK) return rc;
    if (!spec) {
        set_err(err, err_len, "lines: null spec");
        return MCL_ERR_NULL;
    }
    rc = check_series(n_series, series, err, err_len);
    if (rc != MCL_OK) return rc;
    if (isinf(spec->ref_y)) {
        set_err(err, err_len, "lines: reference level is infinite");
        return MCL_ERR_INVALID;
    }
    if (spec->band_ceil_on && !isfinite(spec->band_ceil)) {
        set_err(err, err_len, "lines: the bands' ceiling is not finite");
        return MCL_ERR_INVALID;
    }
    int nm = spec->n_markers, nseg = spec->n_ref_segments;
    if (nm < 0 || nm > MCL_PLOT_MAX_MARKERS || (nm > 0 && !spec->marker_x)) {
        set_err(err, err_len, "lines: %d markers (0..%d, with positions)", nm, MCL_PLOT_MAX_MARKERS);
        return MCL_ERR_INVALID;
    }
    if (nseg < 0 || nseg > MCL_PLOT_MAX_MARKERS + 1 ||
        (nseg > 0 && (!spec->ref_seg_x0 || !spec->ref_seg_x1 || !spec->ref_seg_y))) {
        set_err(err, err_len, "lines: %d reference segments (0..%d, with positions)", nseg,
                MCL_PLOT_MAX_MARKERS + 1);
        return MCL_ERR_INVALID;
    }
    double ys_extra[MCL_PLOT_MAX_MARKERS + 2];
    ys_extra[0] = spec->ref_y;
    for (int i = 0; i < nseg; i++) {
        if (!isfinite(spec->ref_seg_y[i]) || !isfinite(spec->ref_seg_x0[i]) || !isfinite(spec->ref_seg_x1[i])) {
            set_err(err, err_len, "lines: reference segment %d is not finite", i);
            return MCL_ERR_INVALID;
        }
        ys_extra[1 + i] = spec->ref_seg_y[i];
    }
    mcl_plot_axes a;
    memset(&a, 0, sizeof a);
    if (axis_range(series, n_series, 0, spec->marker_x, nm, NULL, &a.xmin, &a.xmax) != 0 ||
        axis_range(series, n_series, 1, ys_extra, 1 + nseg, spec, &a.ymin, &a.ymax) != 0) {
        set_err(err, err_len, "lines: the data span too large a range to plot");
        return MCL_ERR_INVALID;
    }
    cairo_t *m = measure_ctx();
    if (!m) {
        set_err(err, err_len, "lines: cairo: out of memory");
        return MCL_ERR_OOM;
    }
    ticks xt, yt;
    make_ticks(&xt, a.xmin, a.xmax, 6);
    make_ticks(&yt, a.ymin, a.ymax, 6);
    int ytw = 0, xlast = 0;
    font(m, F_TICK, 0);
    for (int i = 0; i < yt.n; i++) ytw = imax(ytw, (int)ceil(text_w(m, yt.label[i])));
    if (xt.n) xlast = (int)ceil(text_w(m, xt.label[xt.n - 1]));
    /* legend */
    char nb[32];
    int name_w = 0, has_ref = !isnan(spec->ref_y) || nseg > 0, smooth = spec->smooth > 1;
    const char *rname = spec->ref_label ? spec->ref_label : "reference";
    for (int s = 0; s < n_series; s++) {
        snprintf(nb, sizeof nb, "series %d", s);
        name_w = imax(name_w, text_wi(m, series[s].name ? series[s].name : nb, F_LEGEND, 0));
    }
    if (has_ref) name_w = imax(name_w, text_wi(m, rname, F_LEGEND, 0));
    char sm_note[64] = "";
    if (smooth) {
        snprintf(sm_note, sizeof sm_note, "moving average of %d", spec->smooth);
        name_w = imax(name_w, text_wi(m, sm_note, F_TICK, 0) - 36);
    }
    if (name_w > 600) name_w = 600;
    int th = line_h(F_TICK), ah = line_h(F_AXIS), lh = line_h(F_LEGEND) + 6;
    int title_h = spec->title && spec->title[0] ? line_h(F_TITLE) + 12 : 0;
    int ylabel_w = spec->ylabel && spec->ylabel[0] ? ah + 8 : 0;
    a.left = PAD + ylabel_w + ytw + TICK_LEN + 6;
    a.top = PAD + title_h + th / 2;
    a.right = a.left + LINES_W;
    a.bottom = a.top + LINES_H;
    int legend_x = (int)a.right + imax(24, xlast / 2 + 8);
    a.width = legend_x + 36 + name_w + PAD;
    a.width = imax(a.width, text_wi(m, spec->title, F_TITLE, 1) + 2 * PAD);
    int n_leg = n_series + has_ref + (smooth ? 1 : 0);
    a.height = (int)a.bottom + TICK_LEN + 4 + th + (spec->xlabel && spec->xlabel[0] ? ah + 6 : 0) + PAD;
    a.height = imax(a.height, (int)a.top + n_leg * lh + PAD);
    cairo_destroy(m);
    figure f;
    rc = fig_begin(&f, path, a.width, a.height, err, err_len);
    if (rc != MCL_OK) return rc;
    cairo_t *cr = f.cr;
    if (title_h) {
        font(cr, F_TITLE, 1);
        set_col(cr, C_TEXT);
        /* centred over the plot area, moved right as far as a long title needs to start inside
         * the figure (the figure is at least the title's width, above) */
        const double half_tw = text_w(cr, spec->title) / 2.0;
        double cx = fmax((a.left + a.right) / 2, PAD + half_tw);
        cx = fmin(cx, a.width - PAD - half_tw);
        text_at(cr, cx, PAD + line_h(F_TITLE) / 2.0, spec->title, H_CENTER);
    }
    /* grid, ticks, labels */
    cairo_set_line_width(cr, 1);
    font(cr, F_TICK, 0);
    for (int i = 0; i < xt.n; i++) {
        double x = floor(mcl_axes_px(&a, xt.v[i])) + 0.5;
        set_col(cr, C_GRID);
        cairo_move_to(cr, x, a.top);
        cairo_line_to(cr, x, a.bottom);
        cairo_stroke(cr);
        set_col(cr, C_FRAME);
        cairo_move_to(cr, x, a.bottom);
        cairo_line_to(cr, x, a.bottom + TICK_LEN);
        cairo_stroke(cr);
        set_col(cr, C_TEXT);
        text_at(cr, x, a.bottom + TICK_LEN + 3 + th / 2.0, xt.label[i], H_CENTER);
    }
    for (int i = 0; i < yt.n; i++) {
        double y = floor(mcl_axes_py(&a, yt.v[i])) + 0.5;
        set_col(cr, C_GRID);
        cairo_move_to(cr, a.left, y);
        cairo_line_to(cr, a.right, y);
        cairo_stroke(cr);
        set_col(cr, C_FRAME);
        cairo_move_to(cr, a.left, y);
        cairo_line_to(cr, a.left - TICK_LEN, y);
        cairo_stroke(cr);
        set_col(cr, C_TEXT);
        text_at(cr, a.left - TICK_LEN - 4, y, yt.label[i], H_RIGHT);
    }
    set_col(cr, C_FRAME);
    cairo_rectangle(cr, a.left - 0.5, a.top - 0.5, a.right - a.left + 1, a.bottom - a.top + 1);
    cairo_stroke(cr);
    font(cr, F_AXIS, 0);
    set_col(cr, C_TEXT);
    if (spec->xlabel && spec->xlabel[0])
        text_at(cr, (a.left + a.right) / 2, a.bottom + TICK_LEN + 4 + th + 4 + ah / 2.0, spec->xlabel,
                H_CENTER);
    if (ylabel_w) text_up(cr, PAD + ah / 2.0, (a.top + a.bottom) / 2, spec->ylabel);
    /* the data, clipped to the plot area */
    cairo_save(cr);
    cairo_rectangle(cr, a.left, a.top, a.right - a.left, a.bottom - a.top);
    cairo_clip(cr);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    for (int i = 0; i < nm; i++) {
        double x = floor(mcl_axes_px(&a, spec->marker_x[i])) + 0.5;
        double d[2] = {2, 3};
        set_col(cr, C_MARK);
        cairo_set_line_width(cr, 1);
        cairo_set_dash(cr, d, 2, 0);
        cairo_move_to(cr, x, a.top);
        cairo_line_to(cr, x, a.bottom);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        if (spec->marker_labels && spec->marker_labels[i]) {
            font(cr, F_TICK, 0);
            text_at(cr, x + 4, a.top + 4 + th / 2.0, spec->marker_labels[i], H_LEFT);
        }
    }
    if (has_ref) {
        double d[2] = {7, 4};
        cairo_set_source_rgb(cr, MCL_PLOT_REF_GRAY / 255.0, MCL_PLOT_REF_GRAY / 255.0,
                             MCL_PLOT_REF_GRAY / 255.0);
        cairo_set_line_width(cr, 1.5);
        cairo_set_dash(cr, d, 2, 0);
        if (!isnan(spec->ref_y)) {
            double y = mcl_axes_py(&a, spec->ref_y);
            cairo_move_to(cr, a.left, y);
            cairo_line_to(cr, a.right, y);
        }
        for (int i = 0; i < nseg; i++) { /* a level over a part of the x range */
            double y = mcl_axes_py(&a, spec->ref_seg_y[i]);
            double x0 = fmax(a.left, fmin(a.right, mcl_axes_px(&a, spec->ref_seg_x0[i])));
            double x1 = fmax(a.left, fmin(a.right, mcl_axes_px(&a, spec->ref_seg_x1[i])));
            cairo_move_to(cr, x0, y);
            cairo_line_to(cr, x1, y);
        }
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
    for (int s = 0; s < n_series; s++) { /* the bands first, under every line */
        const mcl_series *se = &series[s];
        if (se->band) draw_band(cr, &a, se, to_f(mcl_plot_series_color(s)), spec);
    }
    for (int s = 0; s < n_series; s++) {
        rgbf col = to_f(mcl_plot_series_color(s));
        const mcl_series *se = &series[s];
        if (smooth && se->n > 0) {
            double *sm = malloc((size_t)se->n * sizeof *sm);
            if (!sm) {
                cairo_restore(cr);
                set_err(err, err_len, "lines: out of memory");
                cairo_destroy(f.cr);
                cairo_surface_destroy(f.s);
                free(f.buf.p);
                return MCL_ERR_OOM;
            }
            mcl_moving_average(se->y, se->n, spec->smooth, sm);
            cairo_set_source_rgba(cr, col.r, col.g, col.b, 0.28);
            draw_curve(cr, &a, se->x, se->y, se->n, 1.0);
            set_col(cr, col);
            draw_curve(cr, &a, se->x, sm, se->n, 2.2);
            free(sm);
        } else {
            set_col(cr, col);
            draw_curve(cr, &a, se->x, se->y, se->n, 1.8);
        }
    }
    cairo_restore(cr);
    /* legend, right of the plot area */
    double ly = a.top + 6 + lh / 2.0;
    for (int s = 0; s < n_series && ly < a.height; s++, ly += lh) {
        snprintf(nb, sizeof nb, "series %d", s);
        legend_sample(cr, legend_x, ly, to_f(mcl_plot_series_color(s)), 0, smooth ? 2.2 : 1.8);
        font(cr, F_LEGEND, 0);
        set_col(cr, C_TEXT);
        text_at(cr, legend_x + 36, ly, series[s].name ? series[s].name : nb, H_LEFT);
    }
    if (has_ref) {
        rgbf g = {MCL_PLOT_REF_GRAY / 255.0, MCL_PLOT_REF_GRAY / 255.0, MCL_PLOT_REF_GRAY / 255.0};
        legend_sample(cr, legend_x, ly, g, 1, 1.5);
        font(cr, F_LEGEND, 0);
        set_col(cr, C_TEXT);
        text_at(cr, legend_x + 36, ly, rname, H_LEFT);
        ly += lh;
    }
    if (smooth) {
        font(cr, F_TICK, 0);
        set_col(cr, C_MARK);
        text_at(cr, legend_x, ly, sm_note, H_LEFT);
    }
    if (axes_out) *axes_out = a;
    return fig_end(&f, path, err, err_len);
}

mcl_status mcl_plot_lines_ref(const char *path, const char *title, const char *xlabel,
                              const char *ylabel, int n_series, const mcl_series *series,
                              double ref_y, const char *ref_label, mcl_plot_axes *axes_out,
                              char *err, size_t err_len)
{
    mcl_lines_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.title = title;
    sp.xlabel = xlabel;
    sp.ylabel = ylabel;
    sp.ref_y = ref_y;
    sp.ref_label = ref_label;
    return mcl_plot_lines_ex(path, &sp, n_series, series, axes_out, err, err_len);
}

mcl_status mcl_plot_lines(const char *path, const char *title, const char *xlabel,
                          const char *ylabel, int n_series, const mcl_series *series, char *err,
                          size_t err_len)
{
    return mcl_plot_lines_ref(path, title, xlabel, ylabel, n_series, series, NAN, NULL, NULL, err,
                              err_len);
}
