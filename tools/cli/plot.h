/* plot.h — report figures drawn with cairo (anti-aliased shapes, real fonts through
 * fontconfig, the cairo "toy" text API with the "sans-serif" face). CLI-only code: linked
 * into libmetacl-cli, never into libmetacl.
 *
 *   mcl_plot_heatmaps  matrices side by side as coloured cells, with tick labels, axis
 *                      titles, panel titles, values (optionally "mean ± std") in the cells and
 *                      either ONE colour bar shared by every panel or one colour bar per row
 *                      of panels (the accuracy matrices R[i][j] of several models; the SRWM
 *                      changes dW = W_t - W_0, one row per sub-matrix);
 *   mcl_plot_lines_ex  curves y(x) on axes with "nice" ticks and a legend, optional moving
 *                      average smoothing (the raw curve stays, faint), a dashed reference level
 *                      (chance) and labelled vertical markers (curriculum stage boundaries).
 *
 * Output format by the file name's extension (case-insensitive): .png (RGB, 1 unit = 1
 * pixel), .svg or .pdf (vector, 1 unit = 0.75 pt, i.e. the PNG's size at 96 dpi). Any other
 * extension is refused (MCL_ERR_INVALID, the message names the accepted ones) before anything
 * is drawn or written.
 *
 * Every figure function returns a status (status.h), writes a message into the caller's
 * buffer `err` (`err_len` bytes; NULL/0 = no message) on failure and never exits. The figure
 * is rendered in memory and written with mcl_write_file_atomic (util.h): a temporary file
 * next to the target, fsync, rename; on failure no temporary file is left and an existing
 * file at `path` is untouched.
 *
 * Colours. Heat-maps map v to t = (v - vmin) / (vmax - vmin), clamped to [0, 1]. When
 * vmin < 0 < vmax the map is the diverging blue-white-red ramp (MCL_CMAP_DIVERGING), otherwise
 * viridis (MCL_CMAP_VIRIDIS). vmin == vmax asks for autoscaling over the finite values (of all
 * panels sharing the scale): [min, max], made symmetric ([-m, m], m = max |v|) when the values
 * have both signs, widened by 0.5 each way when all values are equal, [0, 1] when no value is
 * finite. NaN cells are light grey (MCL_PLOT_NAN_GRAY in all three channels) and carry no
 * text; +-Inf are clamped to the ends.
 *
 * Geometry. Layouts are deterministic functions of the inputs and the font metrics; the
 * positions of cells and plotted points are exposed (mcl_heatmap_layout, mcl_plot_axes) so
 * callers and tests can find them in the PNG.
 */
#ifndef MCL_PLOT_H
#define MCL_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits: a figure side (units), heat-map rows/columns, panels, series of a line plot. */
#define MCL_PLOT_MAX_SIDE 8192
#define MCL_PLOT_MAX_CELLS 4096
#define MCL_PLOT_MAX_PANELS 1024
#define MCL_PLOT_MAX_SERIES 256
#define MCL_PLOT_MAX_MARKERS 64

/* The grey of NaN heat-map cells and of a line plot's reference line (R = G = B). */
#define MCL_PLOT_NAN_GRAY 222
#define MCL_PLOT_REF_GRAY 60

/* ---- output formats ---- */

typedef enum mcl_plot_format {
    MCL_PLOT_UNKNOWN = -1,
    MCL_PLOT_PNG = 0,
    MCL_PLOT_SVG,
    MCL_PLOT_PDF
} mcl_plot_format;

/* The format named by path's extension (.png, .svg, .pdf; any case); MCL_PLOT_UNKNOWN else. */
mcl_plot_format mcl_plot_format_of(const char *path);

/* MCL_OK when path has an accepted extension; otherwise MCL_ERR_INVALID (MCL_ERR_NULL for
 * NULL) and a message "PATH: unknown figure format '.EXT' (use .png, .svg or .pdf)". */
mcl_status mcl_plot_check_path(const char *path, char *err, size_t err_len);

/* ---- colours ---- */

typedef struct mcl_rgb {
    uint8_t r, g, b;
} mcl_rgb;

typedef enum mcl_cmap { MCL_CMAP_VIRIDIS = 0, MCL_CMAP_DIVERGING } mcl_cmap;

/* The colour of t in [0, 1] (clamped; NaN gives the NaN grey). */
mcl_rgb mcl_cmap_color(mcl_cmap map, double t);
/* The colour of series i of a line plot (10 distinct colours, then generated hues). */
mcl_rgb mcl_plot_series_color(int i);

/* Up to max_ticks "nice" tick values (1, 2 or 5 times a power of ten apart, about `target`
 * of them) inside [lo, hi], ascending, into ticks; returns how many (0 if the range is not
 * finite and increasing). */
int mcl_nice_ticks(double lo, double hi, int target, double *ticks, int max_ticks);

/* ---- heat-maps ---- */

/* One matrix: rows x cols values, row-major; errors (NULL = none) has the same shape and is
 * printed as "± e" under the value when the figure annotates. */
typedef struct mcl_heatmap_panel {
    const char *title; /* above the panel; NULL = none */
    const float *values;
    const float *errors;
    int rows, cols;
} mcl_heatmap_panel;

typedef struct mcl_heatmap_spec {
    const char *title;              /* figure title; NULL = none */
    const char *xlabel, *ylabel;    /* axis titles (columns / rows); NULL = none */
    const char *const *row_labels;  /* tick labels shared by all panels; NULL = indices */
    const char *const *col_labels;
    int index_base;                 /* first index when labels are NULL (0 or 1) */
    const char *bar_label;          /* beside the colour bar(s); NULL = none */
    const char *const *row_bar_labels; /* per_row_scale: one per row of panels (NULL = bar_label) */
    float vmin, vmax;               /* vmin == vmax: autoscale (per row with per_row_scale) */
    int per_row_scale;              /* 0: one scale and bar for the figure; 1: one per row */
    int panels_per_row;             /* <= 0: all panels in one row */
    int annotate;                   /* print each finite value (and error) when it fits */
    double annot_mul;               /* printed value = value * annot_mul (0 means 1) */
    int annot_decimals;             /* decimals of printed values (negative means 2) */
    int cell;                       /* cell side in units; 0 = automatic */
} mcl_heatmap_spec;

/* Where a heat-map figure puts things (units: PNG pixels). Cell (r, c) of panel p has its
 * top-left corner at x0 + (p % panels_per_row) * slot_w + c * cell,
 * y0 + (p / panels_per_row) * slot_h + r * cell. Colour bar k (k = 0 when shared, else the row
 * of panels) spans [bar_x, bar_x + bar_w) x [bar_y + k * slot_h, ... + bar_h); its top has the
 * vmax colour and its bottom the vmin colour. scale_lo/hi: the resolved scale of bar 0. */
typedef struct mcl_heatmap_geom {
    int width, height;
    int n_panels, panels_per_row, n_rows;
    double cell, x0, y0, slot_w, slot_h;
    double bar_x, bar_y, bar_w, bar_h;
    double scale_lo, scale_hi;
} mcl_heatmap_geom;

/* The layout mcl_plot_heatmaps uses (validates the arguments like it). */
mcl_status mcl_heatmap_layout(const mcl_heatmap_spec *spec, int n_panels,
                              const mcl_heatmap_panel *panels, mcl_heatmap_geom *g, char *err,
                              size_t err_len);
/* Top-left corner of cell (r, c) of panel p. */
void mcl_heatmap_cell_xy(const mcl_heatmap_geom *g, int panel, int r, int c, double *x,
                         double *y);

/* Draw n_panels (1..MCL_PLOT_MAX_PANELS) matrices into path (format by extension). */
mcl_status mcl_plot_heatmaps(const char *path, const mcl_heatmap_spec *spec, int n_panels,
                             const mcl_heatmap_panel *panels, char *err, size_t err_len);

/* One matrix with a colour bar: mcl_plot_heatmaps with one panel. */
mcl_status mcl_plot_heatmap(const char *path, const char *title, const float *values, int rows,
                            int cols, const char *const *row_labels,
                            const char *const *col_labels, float vmin, float vmax,
                            int annotate, char *err, size_t err_len);

/* ---- line plots ---- */

/* One curve: n points (x[i], y[i]); a point with a non-finite coordinate is skipped and
 * breaks the line. name NULL = "series <i>". */
typedef struct mcl_series {
    const char *name;
    const double *x;
    const double *y;
    int n;
    /* optional: a shaded band from y[i] - band[i] to y[i] + band[i] (e.g. one standard
     * deviation) in the series' colour, under the line; NULL = none */
    const double *band;
} mcl_series;

typedef struct mcl_lines_spec {
    const char *title, *xlabel, *ylabel; /* NULL = none */
    double ref_y;            /* dashed horizontal reference level; NaN = none */
    const char *ref_label;   /* its legend entry (NULL = "reference") */
    int smooth;              /* > 1: also draw the centred moving average over `smooth`
                              * points (bold), the raw curve faint; 0/1: raw curves only */
    int n_markers;           /* vertical dotted lines at marker_x[i] (0..MCL_PLOT_MAX_MARKERS) */
    const double *marker_x;
    const char *const *marker_labels; /* written at the top of each marker; NULL = none */
    /* dashed reference levels over parts of the x range (e.g. each curriculum stage's chance
     * level): segment i at y ref_seg_y[i] from x ref_seg_x0[i] to ref_seg_x1[i], drawn like
     * ref_y and under its legend entry (0..MCL_PLOT_MAX_MARKERS + 1 segments) */
    int n_ref_segments;
    const double *ref_seg_x0, *ref_seg_x1, *ref_seg_y;
    int band_floor0;         /* 1: every band's lower edge is max(0, y - band) (counts, rates) */
    int band_ceil_on;        /* 1: every band's upper edge is min(band_ceil, y + band) */
    double band_ceil;        /* that ceiling: 100 for percentages, 1 for fractions (an accuracy's
                              * interval can reach past it; what cannot happen is not drawn,
                              * and the figure's title or caption says the band is clipped) */
} mcl_lines_spec;

/* Where a line plot maps data: x = xmin at column `left`, xmax at `right`; y = ymin at row
 * `bottom`, ymax at row `top`. width x height is the figure (units). */
typedef struct mcl_plot_axes {
    int width, height;
    double left, top, right, bottom;
    double xmin, xmax, ymin, ymax;
} mcl_plot_axes;

/* The x coordinate of data x and the y coordinate of data y (clamped to +-1e6). */
double mcl_axes_px(const mcl_plot_axes *a, double x);
double mcl_axes_py(const mcl_plot_axes *a, double y);

/* The centred moving average of y over windows of `window` points (shrinking at the ends;
 * a non-finite value ends a segment: averages never cross it and it stays NaN) into out. */
void mcl_moving_average(const double *y, int n, int window, double *out);

/* n_series curves (1..MCL_PLOT_MAX_SERIES) on autoscaled axes (the finite points' range,
 * the reference level included, plus a 4% margin each way), ~6 labelled ticks per axis, a
 * legend right of the plot. axes_out (may be NULL) receives the mapping used. */
mcl_status mcl_plot_lines_ex(const char *path, const mcl_lines_spec *spec, int n_series,
                             const mcl_series *series, mcl_plot_axes *axes_out, char *err,
                             size_t err_len);

/* Shorthands: no smoothing, no markers; with (ref_y not NaN) or without a reference. */
mcl_status mcl_plot_lines_ref(const char *path, const char *title, const char *xlabel,
                              const char *ylabel, int n_series, const mcl_series *series,
                              double ref_y, const char *ref_label, mcl_plot_axes *axes_out,
                              char *err, size_t err_len);
mcl_status mcl_plot_lines(const char *path, const char *title, const char *xlabel,
                          const char *ylabel, int n_series, const mcl_series *series, char *err,
                          size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
