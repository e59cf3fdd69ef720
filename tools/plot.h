/* plot.h — PNG figures without a plotting library: an RGB canvas with lines, rectangles and
 * bitmap text, and three figures built on it (libpng and zlib only).
 *
 *   mcl_plot_heatmap       one matrix as coloured cells, with labels, a colour bar and
 *                          optional values printed in the cells (the continual-learning
 *                          accuracy matrix R[i][j]: row "after task i", column "task j");
 *   mcl_plot_heatmap_grid  several matrices side by side on one colour scale (the SRWM
 *                          sub-matrices W_y, W_q, W_k, w_b of a head over time);
 *   mcl_plot_lines         curves y(x) on axes with "nice" ticks, a legend and an optional
 *                          dashed reference level (learning curves, chance level).
 *
 * Every figure function returns a status (status.h), writes a message into the caller's
 * buffer `err` (`err_len` bytes; NULL/0 = no message) on failure, never exits, and writes the
 * PNG atomically: a temporary file in the same directory, fsync, rename; on failure the
 * temporary file is removed and an existing file at `path` is left untouched.
 *
 * Colours. Heat-maps map v to t = (v - vmin) / (vmax - vmin), clamped to [0, 1]. When
 * vmin < 0 < vmax the map is the diverging blue-white-red ramp (MCL_CMAP_DIVERGING), otherwise
 * the viridis-like ramp (MCL_CMAP_VIRIDIS). vmin == vmax asks for autoscaling over the finite
 * values: [min, max], made symmetric ([-m, m], m = max |v|) when the values have both signs,
 * widened by 0.5 each way when all values are equal, and [0, 1] when no value is finite.
 * NaN cells are grey (MCL_PLOT_NAN_GRAY in all three channels); +-Inf are clamped to the ends.
 *
 * Geometry. The layouts are deterministic functions of the inputs, exposed (mcl_heatmap_*
 * geometry, mcl_plot_axes) so callers and tests can find a cell or a data point in the image.
 */
#ifndef MCL_PLOT_H
#define MCL_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits: a canvas side, heat-map rows/columns, panels of a grid, series of a line plot. */
#define MCL_CANVAS_MAX_SIDE 8192
#define MCL_PLOT_MAX_CELLS 4096
#define MCL_PLOT_MAX_PANELS 1024
#define MCL_PLOT_MAX_SERIES 256

/* The grey of NaN heat-map cells and of a line plot's reference line (R = G = B). */
#define MCL_PLOT_NAN_GRAY 160
#define MCL_PLOT_REF_GRAY 60

/* ---- the font (plot_font.c) ---- */

/* Glyphs are MCL_FONT_W x MCL_FONT_H pixels (rows 0..6 above and on the baseline, rows 7..8
 * descenders), advanced by MCL_FONT_ADVANCE pixels, all times the text's scale. */
#define MCL_FONT_W 5
#define MCL_FONT_H 9
#define MCL_FONT_ADVANCE 6

/* 1 when the glyph of character ch has ink at column x, row y (0 outside the glyph).
 * Characters outside printable ASCII (32..126) use the glyph of '?'. */
int mcl_font_pixel(int ch, int x, int y);

/* ---- the canvas ---- */

typedef struct mcl_rgb {
    uint8_t r, g, b;
} mcl_rgb;

/* An RGB image: px holds w*h*3 bytes, row-major, top row first, R G B per pixel. Drawing is
 * limited to the clip rectangle [clip_x0, clip_x1) x [clip_y0, clip_y1) (the whole canvas
 * unless mcl_canvas_clip changed it); nothing drawn outside it, and drawing never fails. */
typedef struct mcl_canvas {
    int w, h;
    uint8_t *px;
    int clip_x0, clip_y0, clip_x1, clip_y1;
} mcl_canvas;

typedef enum mcl_align { MCL_ALIGN_LEFT = 0, MCL_ALIGN_CENTER, MCL_ALIGN_RIGHT } mcl_align;

/* A new w x h canvas filled with bg into *out (sides 1..MCL_CANVAS_MAX_SIDE). */
mcl_status mcl_canvas_create(int w, int h, mcl_rgb bg, mcl_canvas **out, char *err,
                             size_t err_len);
/* Free a canvas (NULL is fine). */
void mcl_canvas_free(mcl_canvas *c);

/* Restrict drawing to the rectangle at (x, y) of size w x h (intersected with the canvas);
 * mcl_canvas_unclip restores the whole canvas. */
void mcl_canvas_clip(mcl_canvas *c, int x, int y, int w, int h);
void mcl_canvas_unclip(mcl_canvas *c);

/* The colour at (x, y); black outside the canvas. */
mcl_rgb mcl_canvas_get(const mcl_canvas *c, int x, int y);
/* Set one pixel (clipped). */
void mcl_canvas_set(mcl_canvas *c, int x, int y, mcl_rgb col);
/* Fill the w x h rectangle whose top-left pixel is (x, y). */
void mcl_canvas_fill_rect(mcl_canvas *c, int x, int y, int w, int h, mcl_rgb col);
/* A 1-pixel outline just inside the w x h rectangle at (x, y). */
void mcl_canvas_frame(mcl_canvas *c, int x, int y, int w, int h, mcl_rgb col);
/* A straight line from (x0, y0) to (x1, y1), both ends included, any direction; `width`
 * pixels thick (a width x width square stamped along the Bresenham path; < 1 means 1). */
void mcl_canvas_line(mcl_canvas *c, int x0, int y0, int x1, int y1, int width, mcl_rgb col);
/* The same, dashed: `dash` pixels drawn, `gap` pixels skipped, along the path. */
void mcl_canvas_dashed_line(mcl_canvas *c, int x0, int y0, int x1, int y1, int width,
                            int dash, int gap, mcl_rgb col);

/* Width and height in pixels of `text` drawn at `scale` (1..64; out of range is clamped).
 * Each UTF-8 sequence, control or other non-printable byte counts as one '?'. */
int mcl_text_width(const char *text, int scale);
int mcl_text_height(int scale);
/* Draw `text` with its top at row y, starting at column x (MCL_ALIGN_LEFT), centred on
 * column x (MCL_ALIGN_CENTER) or ending at column x - 1 (MCL_ALIGN_RIGHT). Non-ASCII
 * characters are drawn as '?'. Returns the column of the text's left edge. */
int mcl_canvas_text(mcl_canvas *c, int x, int y, const char *text, int scale,
                    mcl_align align, mcl_rgb col);
/* The same rotated 90 degrees counter-clockwise (read bottom to top): the glyph tops face
 * column x (the text occupies columns x .. x + height - 1); the text starts at row y and
 * runs up (LEFT), is centred on row y (CENTER) or ends at row y + 1 (RIGHT). */
void mcl_canvas_text_up(mcl_canvas *c, int x, int y, const char *text, int scale,
                        mcl_align align, mcl_rgb col);

/* Write the canvas as an 8-bit RGB PNG, atomically (see the top of this file). */
mcl_status mcl_canvas_write_png(const mcl_canvas *c, const char *path, char *err,
                                size_t err_len);

/* ---- colours ---- */

typedef enum mcl_cmap { MCL_CMAP_VIRIDIS = 0, MCL_CMAP_DIVERGING } mcl_cmap;

/* The colour of t in [0, 1] (clamped; NaN gives the NaN grey). */
mcl_rgb mcl_cmap_color(mcl_cmap map, double t);
/* The colour of series i of a line plot (10 distinct colours, then generated hues). */
mcl_rgb mcl_plot_series_color(int i);

/* ---- heat-maps ---- */

/* Where a heat-map figure puts things. Cells are `cell` x `cell` pixels. Panel p (0 for a
 * single heat-map) has its cell (0, 0) at x0 + (p % panels_per_row) * slot_w,
 * y0 + (p / panels_per_row) * slot_h (see mcl_heatmap_cell_xy). The colour bar's top row
 * has the vmax colour and its bottom row the vmin colour. Rows [0, title_h) hold the title. */
typedef struct mcl_heatmap_geom {
    int width, height;
    int title_h;
    int cell;
    int n_panels, panels_per_row;
    int x0, y0;
    int slot_w, slot_h;
    int bar_x, bar_y, bar_w, bar_h;
    int label_scale;       /* font scale of row/column labels and colour bar labels */
    int panel_title_scale; /* font scale of the panel titles (grid) */
} mcl_heatmap_geom;

/* The layout mcl_plot_heatmap uses for these arguments. */
mcl_status mcl_heatmap_geometry(const char *title, int rows, int cols,
                                const char *const *row_labels,
                                const char *const *col_labels, mcl_heatmap_geom *g, char *err,
                                size_t err_len);
/* The layout mcl_plot_heatmap_grid uses for these arguments. */
mcl_status mcl_heatmap_grid_geometry(const char *title, int n_panels, const int *rows,
                                     const int *cols,
                                     const char *const *panel_titles, int panels_per_row,
                                     mcl_heatmap_geom *g, char *err, size_t err_len);
/* Top-left pixel of cell (r, c) of panel p. */
void mcl_heatmap_cell_xy(const mcl_heatmap_geom *g, int panel, int r, int c, int *x, int *y);

/* values: rows x cols, row-major. Labels (NULL = row/column numbers; a NULL entry = no label)
 * are thinned out when they do not fit. vmin == vmax: autoscale. annotate != 0 prints each
 * finite value with 2 decimals in its cell when every value's text fits in a cell. */
mcl_status mcl_plot_heatmap(const char *path, const char *title, const float *values, int rows,
                            int cols, const char *const *row_labels,
                            const char *const *col_labels, float vmin, float vmax,
                            int annotate, char *err, size_t err_len);

/* n_panels heat-maps (values[p]: rows[p] x cols[p], row-major), panels_per_row (>= 1) to a
 * row, sharing one colour scale and colour bar; panel_titles may be NULL (or hold NULLs). */
mcl_status mcl_plot_heatmap_grid(const char *path, const char *title, int n_panels,
                                 const float *const *values, const int *rows, const int *cols,
                                 const char *const *panel_titles, int panels_per_row,
                                 float vmin, float vmax, char *err, size_t err_len);

/* ---- line plots ---- */

/* One curve: n points (x[i], y[i]); a point with a non-finite coordinate is skipped and
 * breaks the line. name NULL = "series <i>". */
typedef struct mcl_series {
    const char *name;
    const double *x;
    const double *y;
    int n;
} mcl_series;

/* Where a line plot maps data: x = xmin at pixel column `left`, xmax at `right`; y = ymin at
 * row `bottom`, ymax at row `top` (all inclusive). width x height is the canvas. */
typedef struct mcl_plot_axes {
    int width, height;
    int left, top, right, bottom;
    double xmin, xmax, ymin, ymax;
} mcl_plot_axes;

/* The pixel column of x and the pixel row of y (rounded; far-off values are clamped to
 * +-1e6 pixels so they stay representable). */
int mcl_axes_px(const mcl_plot_axes *a, double x);
int mcl_axes_py(const mcl_plot_axes *a, double y);

/* Up to max_ticks "nice" tick values (1, 2 or 5 times a power of ten apart, about `target`
 * of them) inside [lo, hi], ascending, into ticks; returns how many (0 if the range is not
 * finite and increasing). */
int mcl_nice_ticks(double lo, double hi, int target, double *ticks, int max_ticks);

/* n_series curves (1..MCL_PLOT_MAX_SERIES) on autoscaled axes (the finite points' range plus
 * a 4% margin each way), ~5 labelled ticks per axis, a legend. Labels may be NULL. */
mcl_status mcl_plot_lines(const char *path, const char *title, const char *xlabel,
                          const char *ylabel, int n_series, const mcl_series *series, char *err,
                          size_t err_len);

/* The same with a dashed horizontal reference line at y = ref_y (NaN = none; included in the
 * y range) named ref_label in the legend (NULL = "reference"); when axes_out is not NULL it
 * receives the mapping used. */
mcl_status mcl_plot_lines_ref(const char *path, const char *title, const char *xlabel,
                              const char *ylabel, int n_series, const mcl_series *series,
                              double ref_y, const char *ref_label, mcl_plot_axes *axes_out,
                              char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
