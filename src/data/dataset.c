/* dataset.c — image sets in memory: prepared sets, user data (IDX, PNG folders), arrays;
 * and the prepared-set writer. See dataset.h, prepared.h and dataset_io.h. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "dataset.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_io.h"
#include "idx.h"
#include "png_io.h"
#include "prepared.h"
#include "sha256.h"
#include "text.h"

#define PIX (MCL_IMG * MCL_IMG)
#define MAX_SIDE 65536 /* largest user image side accepted (IDX) */
#define MAX_LABEL ((1 << 24) - 1) /* largest label of a user data set: the class count
                                     (max label + 1) stays far from INT32_MAX */

/* a message into the caller's error buffer (status.h) */
#define set_err(err, len, ...) ((void)mcl_errbuf((err), (len), MCL_OK, __VA_ARGS__))

static void copy_str(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

/* $METACL_DATA; else ./data/cache when that directory exists (a source tree); else the XDG
 * user data directory $XDG_DATA_HOME/metacl ($XDG_DATA_HOME only when absolute, as the XDG
 * Base Directory spec says), default $HOME/.local/share/metacl. Computed on every call (the
 * environment may change); the result lives in a static buffer until the next call. */
const char *mcl_data_dir_default(void)
{
    static char xdg[4096];
    const char *e = getenv("METACL_DATA");
    if (e && *e) return e;
    struct stat st;
    if (stat("data/cache", &st) == 0 && S_ISDIR(st.st_mode)) return "data/cache";
    const char *x = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int n = -1;
    if (x && x[0] == '/')
        n = snprintf(xdg, sizeof xdg, "%s/metacl", x);
    else if (home && *home)
        n = snprintf(xdg, sizeof xdg, "%s/.local/share/metacl", home);
    /* no usable home directory (or a path too long): none, rather than a data/cache made in
     * whatever the working directory is (MCL_NO_DATA_DIR says what to do) */
    return n > 0 && (size_t)n < sizeof xdg ? xdg : NULL;
}

/* ---------------------------------------------------------------------------------------
 * Pixel statistics and the 32×32 fitting rule
 * ------------------------------------------------------------------------------------- */

int64_t mcl_pixel_stats(const uint8_t *images, int64_t n, int64_t pixels, const uint8_t *keep,
                        double *mean, double *std)
{
    /* exact integer sums: per image at most 2^24·pixels·255², far from 2^64 overall for
     * any set that fits in memory */
    uint64_t s1 = 0, s2 = 0;
    int64_t used = 0;
    uint64_t hist[256] = {0};
    for (int64_t i = 0; i < n; i++) {
        if (keep && !keep[i]) continue;
        const uint8_t *p = images + i * pixels;
        for (int64_t k = 0; k < pixels; k++) hist[p[k]]++;
        used++;
    }
    for (unsigned v = 0; v < 256; v++) {
        s1 += hist[v] * v;
        s2 += hist[v] * v * v;
    }
    double cnt = (double)used * (double)pixels;
    double m = cnt > 0 ? (double)s1 / cnt : 0.0;
    double var = cnt > 0 ? (double)s2 / cnt - m * m : 0.0;
    if (var < 0) var = 0;
    if (mean) *mean = m / 255.0;
    if (std) *std = sqrt(var) / 255.0;
    return used;
}

/* Area resize h×w -> nh×nw: output pixel (oy, ox) covers source rows [oy·h/nh, (oy+1)·h/nh)
 * and columns likewise; in units of 1/nh (1/nw) of a source pixel the overlaps are integers,
 * so the weighted mean is computed exactly and rounded once. */
static void area_resize(const uint8_t *src, int h, int w, uint8_t *dst, int nh, int nw)
{
    int64_t hs[MCL_IMG]; /* per output column: weighted sum of the current source row */
    int64_t acc[MCL_IMG * MCL_IMG];
    memset(acc, 0, sizeof acc);
    for (int y = 0; y < h; y++) {
        const uint8_t *row = src + (size_t)y * (size_t)w;
        for (int ox = 0; ox < nw; ox++) {
            /* columns [ox·w, (ox+1)·w) in units of 1/nw; source column x covers
             * [x·nw, (x+1)·nw) */
            int64_t lo = (int64_t)ox * w, hi = lo + w, s = 0;
            for (int64_t x = lo / nw; x < w && x * nw < hi; x++) {
                int64_t a = x * nw > lo ? x * nw : lo;
                int64_t b = (x + 1) * nw < hi ? (x + 1) * nw : hi;
                s += (b - a) * row[x];
            }
            hs[ox] = s;
        }
        /* rows: output row oy covers [oy·h, (oy+1)·h) in units of 1/nh; source row y covers
         * [y·nh, (y+1)·nh) */
        int64_t ylo = (int64_t)y * nh, yhi = ylo + nh;
        for (int64_t oy = ylo / h; oy < nh && oy * h < yhi; oy++) {
            int64_t a = oy * h > ylo ? oy * h : ylo;
            int64_t b = (oy + 1) * h < yhi ? (oy + 1) * h : yhi;
            if (b <= a) continue;
            for (int ox = 0; ox < nw; ox++) acc[oy * MCL_IMG + ox] += (b - a) * hs[ox];
        }
    }
    int64_t tot = (int64_t)h * w;
    for (int oy = 0; oy < nh; oy++)
        for (int ox = 0; ox < nw; ox++) {
            int64_t v = (acc[oy * MCL_IMG + ox] + tot / 2) / tot;
            dst[oy * nw + ox] = (uint8_t)(v > 255 ? 255 : v);
        }
}

void mcl_image_fit32(const uint8_t *src, int h, int w, uint8_t *out)
{
    memset(out, 0, PIX);
    if (!src || h < 1 || w < 1) return;
    uint8_t tmp[PIX];
    const uint8_t *img = src;
    int ih = h, iw = w;
    if (h > MCL_IMG || w > MCL_IMG) {
        int64_t L = h > w ? h : w;
        int nh = (int)(((int64_t)h * MCL_IMG + L / 2) / L);
        int nw = (int)(((int64_t)w * MCL_IMG + L / 2) / L);
        if (nh < 1) nh = 1;
        if (nw < 1) nw = 1;
        if (nh > MCL_IMG) nh = MCL_IMG;
        if (nw > MCL_IMG) nw = MCL_IMG;
        area_resize(src, h, w, tmp, nh, nw);
        img = tmp;
        ih = nh;
        iw = nw;
    }
    int oy = (MCL_IMG - ih) / 2, ox = (MCL_IMG - iw) / 2;
    for (int y = 0; y < ih; y++)
        memcpy(out + (size_t)(oy + y) * MCL_IMG + ox, img + (size_t)y * (size_t)iw, (size_t)iw);
}

void mcl_image_to_side(const uint8_t *canvas, int content, int side, uint8_t *out)
{
    if (!canvas || !out || side < 1 || side > MCL_IMG) return;
    if (side == MCL_IMG) {
        memcpy(out, canvas, PIX);
        return;
    }
    const int c = content < 1 || content > MCL_IMG ? MCL_IMG : content, o = (MCL_IMG - c) / 2;
    uint8_t box[PIX];
    for (int y = 0; y < c; y++) memcpy(box + y * c, canvas + (o + y) * MCL_IMG + o, (size_t)c);
    if (c <= side) {
        const int d = (side - c) / 2;
        memset(out, 0, (size_t)side * (size_t)side);
        for (int y = 0; y < c; y++) memcpy(out + (d + y) * side + d, box + y * c, (size_t)c);
    } else {
        area_resize(box, c, c, out, side, side);
    }
}

/* ---------------------------------------------------------------------------------------
 * Views of a prepared set (fmnist-val)
 * ------------------------------------------------------------------------------------- */

const char *mcl_dataset_prepared_name(const char *name)
{
    return name && strcmp(name, MCL_FMNIST_VAL_NAME) == 0 ? "fmnist" : name;
}

mcl_status mcl_dataset_view_splits(const char *name, const int32_t *labels, uint8_t *split,
                                   int64_t n, int n_classes, char *err, size_t len)
{
    if (!name || strcmp(name, MCL_FMNIST_VAL_NAME) != 0) return MCL_OK;
    if (!labels || !split || n_classes < 1) {
        set_err(err, len, "%s: the example split of fmnist is missing (split.idx); run: metacl "
                "data prepare fmnist", name);
        return MCL_ERR_FORMAT;
    }
    int64_t *left = malloc(sizeof *left * (size_t)n_classes), *have = calloc((size_t)n_classes, sizeof *have);
    if (!left || !have) {
        free(left);
        free(have);
        set_err(err, len, "%s: out of memory", name);
        return MCL_ERR_OOM;
    }
    for (int c = 0; c < n_classes; c++) left[c] = MCL_FMNIST_VAL_PER_CLASS;
    for (int64_t i = 0; i < n; i++)
        if (split[i] == MCL_SPLIT_TRAIN && labels[i] >= 0 && labels[i] < n_classes) have[labels[i]]++;
    mcl_status st = MCL_OK;
    for (int c = 0; c < n_classes && st == MCL_OK; c++)
        if (have[c] <= MCL_FMNIST_VAL_PER_CLASS) {
            set_err(err, len, "%s: class %d has %lld training images; holding %d out needs more", name, c,
                    (long long)have[c], MCL_FMNIST_VAL_PER_CLASS);
            st = MCL_ERR_FORMAT;
        }
    /* the last MCL_FMNIST_VAL_PER_CLASS training images of each class, in file order */
    for (int64_t i = n - 1; i >= 0 && st == MCL_OK; i--)
        if (split[i] == MCL_SPLIT_TRAIN && labels[i] >= 0 && labels[i] < n_classes && left[labels[i]] > 0) {
            left[labels[i]]--;
            split[i] = MCL_SPLIT_VAL;
        }
    free(left);
    free(have);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * Dataset objects and the class index
 * ------------------------------------------------------------------------------------- */

void mcl_dataset_free(mcl_dataset *ds)
{
    if (!ds) return;
    free(ds->images);
    free(ds->labels);
    free(ds->class_ids);
    free(ds->class_start);
    free(ds->class_index);
    free(ds);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int mcl_dataset_class_pos(const mcl_dataset *ds, int32_t c)
{
    if (!ds || !ds->class_ids) return -1;
    int lo = 0, hi = ds->n_classes - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (ds->class_ids[mid] == c) return mid;
        if (ds->class_ids[mid] < c)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* class_ids, n_classes, class_start, class_index from labels (all >= 0). If
 * n_classes_total is 0 it becomes max label + 1. */
static mcl_status build_index(mcl_dataset *ds, char *err, size_t len)
{
    int64_t n = ds->n;
    int32_t *sorted = malloc(sizeof *sorted * (size_t)(n ? n : 1));
    if (!sorted) goto oom;
    memcpy(sorted, ds->labels, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_i32);
    int64_t nc = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || sorted[i] != sorted[i - 1]) sorted[nc++] = sorted[i];
    ds->n_classes = (int)nc;
    ds->class_ids = malloc(sizeof *ds->class_ids * (size_t)(nc ? nc : 1));
    ds->class_start = calloc((size_t)nc + 1, sizeof *ds->class_start);
    ds->class_index = malloc(sizeof *ds->class_index * (size_t)(n ? n : 1));
    if (!ds->class_ids || !ds->class_start || !ds->class_index) {
        free(sorted);
        goto oom;
    }
    memcpy(ds->class_ids, sorted, sizeof *sorted * (size_t)nc);
    free(sorted);
    if (ds->n_classes_total == 0) ds->n_classes_total = nc ? ds->class_ids[nc - 1] + 1 : 0;
    for (int64_t i = 0; i < n; i++) ds->class_start[mcl_dataset_class_pos(ds, ds->labels[i]) + 1]++;
    for (int64_t c = 0; c < nc; c++) ds->class_start[c + 1] += ds->class_start[c];
    int64_t *fill = malloc(sizeof *fill * (size_t)(nc ? nc : 1));
    if (!fill) goto oom;
    memcpy(fill, ds->class_start, sizeof *fill * (size_t)nc);
    for (int64_t i = 0; i < n; i++) ds->class_index[fill[mcl_dataset_class_pos(ds, ds->labels[i])]++] = i;
    free(fill);
    return MCL_OK;
oom:
    set_err(err, len, "%s: out of memory building the class index", ds->name);
    return MCL_ERR_OOM;
}

static mcl_dataset *ds_new(const char *name, int64_t n)
{
    mcl_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) return NULL;
    copy_str(ds->name, sizeof ds->name, name);
    ds->n = n;
    ds->content_side = MCL_IMG;
    ds->images = malloc((size_t)(n ? n : 1) * PIX);
    ds->labels = malloc(sizeof *ds->labels * (size_t)(n ? n : 1));
    if (!ds->images || !ds->labels) {
        mcl_dataset_free(ds);
        return NULL;
    }
    return ds;
}

/* Labels >= 0, stats over everything, class index. Frees ds on error. */
static mcl_status finish_user(mcl_dataset *ds, mcl_dataset **out, char *err, size_t len)
{
    for (int64_t i = 0; i < ds->n; i++)
        if (ds->labels[i] < 0 || ds->labels[i] > MAX_LABEL) {
            set_err(err, len, "%s: label %d of image %lld is %s (labels are 0..%d)", ds->name,
                    (int)ds->labels[i], (long long)i,
                    ds->labels[i] < 0 ? "negative" : "out of range", MAX_LABEL);
            mcl_dataset_free(ds);
            return MCL_ERR_FORMAT;
        }
    double m, s;
    mcl_pixel_stats(ds->images, ds->n, PIX, NULL, &m, &s);
    ds->mean = (float)m;
    ds->std = (float)s;
    mcl_status st = build_index(ds, err, len);
    if (st != MCL_OK) {
        mcl_dataset_free(ds);
        return st;
    }
    *out = ds;
    return MCL_OK;
}

mcl_status mcl_dataset_from_arrays(const char *name, const uint8_t *images, const int32_t *labels,
                                   int64_t n, mcl_dataset **out, char *err, size_t len)
{
    if (!out) {
        set_err(err, len, "dataset: null argument");
        return MCL_ERR_NULL;
    }
    *out = NULL;
    if (n < 0 || (n > 0 && (!images || !labels))) {
        set_err(err, len, "%s: %s", name ? name : "dataset",
                n < 0 ? "negative image count" : "null images or labels");
        return n < 0 ? MCL_ERR_INVALID : MCL_ERR_NULL;
    }
    if (n > ((int64_t)1 << 40) / PIX) {
        set_err(err, len, "%s: %lld images is too many", name ? name : "dataset", (long long)n);
        return MCL_ERR_INVALID;
    }
    mcl_dataset *ds = ds_new(name ? name : "arrays", n);
    if (!ds) {
        set_err(err, len, "%s: out of memory for %lld images", name ? name : "dataset",
                (long long)n);
        return MCL_ERR_OOM;
    }
    if (n) {
        memcpy(ds->images, images, (size_t)n * PIX);
        memcpy(ds->labels, labels, sizeof *labels * (size_t)n);
    }
    return finish_user(ds, out, err, len);
}

/* ---------------------------------------------------------------------------------------
 * User data: idx:IMAGES,LABELS
 * ------------------------------------------------------------------------------------- */

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fmt_path(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return r < 0 || (size_t)r >= cap ? -1 : 0;
}

static int join(char *out, size_t cap, const char *dir, const char *file)
{
    return fmt_path(out, cap, "%s/%s", dir, file);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

static mcl_status load_idx_pair(const char *spec, mcl_dataset **out, char *err, size_t len)
{
    /* split IMAGES,LABELS at the first comma whose left part is an existing file (paths
     * may contain commas), else at the first comma */
    const char *comma = NULL;
    for (const char *c = strchr(spec, ','); c; c = strchr(c + 1, ',')) {
        if (!comma) comma = c;
        char left[4096];
        size_t k = (size_t)(c - spec);
        if (k < sizeof left) {
            memcpy(left, spec, k);
            left[k] = '\0';
            if (is_file(left)) {
                comma = c;
                break;
            }
        }
    }
    if (!comma || comma == spec || !comma[1]) {
        set_err(err, len, "idx:%s: expected idx:IMAGES,LABELS (two IDX files)", spec);
        return MCL_ERR_INVALID;
    }
    size_t k = (size_t)(comma - spec);
    char *ipath = malloc(k + 1);
    if (!ipath) {
        set_err(err, len, "out of memory");
        return MCL_ERR_OOM;
    }
    memcpy(ipath, spec, k);
    ipath[k] = '\0';
    const char *lpath = comma + 1;
    mcl_idx im, lb;
    memset(&lb, 0, sizeof lb);
    mcl_dataset *ds = NULL;
    mcl_status st = mcl_idx_read(ipath, 0, &im, err, len);
    if (st == MCL_OK) st = mcl_idx_read(lpath, 0, &lb, err, len);
    if (st == MCL_OK) {
        if (im.type != MCL_IDX_UBYTE || im.ndim != 3) {
            set_err(err, len,
                    "%s: images must be an IDX ubyte N x H x W array (magic 0x00000803), "
                    "the file holds %s with %d dimension%s",
                    ipath, im.type == MCL_IDX_UBYTE ? "ubyte" : "int32", im.ndim,
                    im.ndim == 1 ? "" : "s");
            st = MCL_ERR_FORMAT;
        } else if (im.dims[1] > MAX_SIDE || im.dims[2] > MAX_SIDE) {
            set_err(err, len, "%s: images are %lldx%lld; at most %d pixels per side", ipath,
                    (long long)im.dims[1], (long long)im.dims[2], MAX_SIDE);
            st = MCL_ERR_FORMAT;
        } else if (lb.ndim != 1) {
            set_err(err, len,
                    "%s: labels must be a 1-D IDX array (magic 0x00000801 or 0x00000C01), the "
                    "file has %d dimensions",
                    lpath, lb.ndim);
            st = MCL_ERR_FORMAT;
        } else if (lb.dims[0] != im.dims[0]) {
            set_err(err, len, "%s: %lld labels for %lld images in %s", lpath,
                    (long long)lb.dims[0], (long long)im.dims[0], ipath);
            st = MCL_ERR_FORMAT;
        }
    }
    if (st == MCL_OK) {
        int64_t n = im.dims[0];
        int h = (int)im.dims[1], w = (int)im.dims[2];
        ds = ds_new(base_name(ipath), n);
        if (!ds) {
            set_err(err, len, "%s: out of memory for %lld images", ipath, (long long)n);
            st = MCL_ERR_OOM;
        } else {
            const uint8_t *src = im.data;
            for (int64_t i = 0; i < n; i++)
                mcl_image_fit32(src + (size_t)i * (size_t)h * (size_t)w, h, w,
                                ds->images + (size_t)i * PIX);
            for (int64_t i = 0; i < n; i++) {
                int32_t v = lb.type == MCL_IDX_UBYTE ? ((const uint8_t *)lb.data)[i]
                                                     : ((const int32_t *)lb.data)[i];
                if (v < 0 || v > MAX_LABEL) {
                    set_err(err, len, "%s: label %lld is %s (%d; labels are 0..%d)", lpath,
                            (long long)i, v < 0 ? "negative" : "out of range", (int)v, MAX_LABEL);
                    st = MCL_ERR_FORMAT;
                    break;
                }
                ds->labels[i] = v;
            }
        }
    }
    mcl_idx_free(&im);
    mcl_idx_free(&lb);
    free(ipath);
    if (st != MCL_OK) {
        mcl_dataset_free(ds);
        return st;
    }
    return finish_user(ds, out, err, len);
}

/* ---------------------------------------------------------------------------------------
 * User data: pngdir:DIR
 * ------------------------------------------------------------------------------------- */

typedef struct strlist {
    char **v;
    int n, cap;
} strlist;

static void strlist_free(strlist *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int strlist_add(strlist *l, const char *s)
{
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 16;
        char **nv = realloc(l->v, sizeof *nv * (size_t)nc);
        if (!nv) return -1;
        l->v = nv;
        l->cap = nc;
    }
    size_t k = strlen(s);
    char *d = malloc(k + 1);
    if (!d) return -1;
    memcpy(d, s, k + 1);
    l->v[l->n++] = d;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with_png(const char *s)
{
    size_t k = strlen(s);
    if (k < 5) return 0;
    const char *e = s + k - 4;
    return e[0] == '.' && tolower((unsigned char)e[1]) == 'p' &&
           tolower((unsigned char)e[2]) == 'n' && tolower((unsigned char)e[3]) == 'g';
}

/* Sorted entries of dir (no hidden ones): want_dirs = 1 sub-folders, 0 .png files. */
static mcl_status list_dir(const char *dir, int want_dirs, strlist *out, char *err, size_t len)
{
    DIR *d = opendir(dir);
    if (!d) {
        set_err(err, len, "%s: cannot open folder: %s", dir, strerror(errno));
        return MCL_ERR_IO;
    }
    struct dirent *e;
    char path[4096];
    mcl_status st = MCL_OK;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (join(path, sizeof path, dir, e->d_name) != 0) continue;
        int keep = want_dirs ? is_dir(path) : (ends_with_png(e->d_name) && is_file(path));
        if (keep && strlist_add(out, e->d_name) != 0) {
            set_err(err, len, "%s: out of memory listing the folder", dir);
            st = MCL_ERR_OOM;
            break;
        }
    }
    closedir(d);
    if (st == MCL_OK && out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
    return st;
}

static mcl_status load_pngdir(const char *dir, mcl_dataset **out, char *err, size_t len)
{
    if (!*dir) {
        set_err(err, len, "pngdir: expected pngdir:DIR (a folder with one sub-folder per class)");
        return MCL_ERR_INVALID;
    }
    if (!is_dir(dir)) {
        set_err(err, len, "%s: %s", dir,
                access(dir, F_OK) == 0 ? "not a folder" : "no such folder");
        return MCL_ERR_IO;
    }
    strlist classes = {0}, files = {0};
    mcl_status st = list_dir(dir, 1, &classes, err, len);
    if (st == MCL_OK && classes.n == 0) {
        set_err(err, len, "%s: no class sub-folders (expected one sub-folder of PNG files per "
                "class)", dir);
        st = MCL_ERR_FORMAT;
    }
    /* first pass: count images */
    int64_t n = 0;
    int64_t *per = NULL;
    if (st == MCL_OK) {
        per = calloc((size_t)classes.n, sizeof *per);
        if (!per) {
            set_err(err, len, "out of memory");
            st = MCL_ERR_OOM;
        }
    }
    char path[4096];
    for (int c = 0; st == MCL_OK && c < classes.n; c++) {
        join(path, sizeof path, dir, classes.v[c]);
        strlist_free(&files);
        st = list_dir(path, 0, &files, err, len);
        if (st == MCL_OK && files.n == 0) {
            set_err(err, len, "%s: class folder has no .png files", path);
            st = MCL_ERR_FORMAT;
        }
        per[c] = files.n;
        n += files.n;
    }
    mcl_dataset *ds = NULL;
    if (st == MCL_OK) {
        ds = ds_new(base_name(dir), n);
        if (!ds) {
            set_err(err, len, "%s: out of memory for %lld images", dir, (long long)n);
            st = MCL_ERR_OOM;
        }
    }
    int64_t i = 0;
    for (int c = 0; st == MCL_OK && c < classes.n; c++) {
        char cdir[4096];
        join(cdir, sizeof cdir, dir, classes.v[c]);
        strlist_free(&files);
        st = list_dir(cdir, 0, &files, err, len);
        if (st == MCL_OK && files.n != per[c]) {
            set_err(err, len, "%s: folder changed while reading", cdir);
            st = MCL_ERR_IO;
        }
        for (int f = 0; st == MCL_OK && f < files.n; f++) {
            join(path, sizeof path, cdir, files.v[f]);
            uint8_t *g = NULL;
            int w = 0, h = 0;
            st = mcl_png_read(path, 0, &g, &w, &h, err, len);
            if (st != MCL_OK) break;
            mcl_image_fit32(g, h, w, ds->images + (size_t)i * PIX);
            free(g);
            ds->labels[i++] = c;
        }
    }
    strlist_free(&classes);
    strlist_free(&files);
    free(per);
    if (st != MCL_OK) {
        mcl_dataset_free(ds);
        return st;
    }
    return finish_user(ds, out, err, len);
}

/* ---------------------------------------------------------------------------------------
 * Prepared sets: reading
 * ------------------------------------------------------------------------------------- */

static int valid_name(const char *name)
{
    size_t k = strlen(name);
    if (k == 0 || k > 63 || name[0] == '.') return 0;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-') return 0;
    }
    return 1;
}

mcl_status mcl_prepared_dir(const char *data_dir, const char *name, char *dir, size_t dlen,
                            char *err, size_t len)
{
    if (!name || !dir) {
        set_err(err, len, "data set: null argument");
        return MCL_ERR_NULL;
    }
    if (!valid_name(name)) {
        set_err(err, len,
                "'%s' is not a data set name (letters, digits, '.', '_', '-'; at most 63) "
                "nor user data (idx:IMAGES,LABELS or pngdir:DIR)",
                name);
        return MCL_ERR_INVALID;
    }
    if (!data_dir || !*data_dir) data_dir = mcl_data_dir_default();
    if (!data_dir) {
        set_err(err, len, "%s", MCL_NO_DATA_DIR);
        return MCL_ERR_INVALID;
    }
    /* room left for "/<file>" of the set's files */
    if (fmt_path(dir, dlen, "%s/%s", data_dir, name) != 0 || strlen(dir) + 32 >= dlen) {
        set_err(err, len, "%s/%s: path too long", data_dir, name);
        return MCL_ERR_INVALID;
    }
    return MCL_OK;
}


int mcl_prepared_exists(const char *dir)
{
    char p[4096];
    return join(p, sizeof p, dir, "meta.txt") == 0 && is_file(p);
}

/* Read a small text file (at most max bytes) into a NUL-terminated malloc'd buffer. */
static mcl_status read_text(const char *path, size_t max, char **out, size_t *n, char *err,
                            size_t len)
{
    *out = NULL;
    FILE *f = NULL;
    mcl_status ost = mcl_fopen_regular(path, &f, NULL, err, len);
    if (ost != MCL_OK) return ost;
    size_t cap = 4096, k = 0;
    char *b = malloc(cap);
    mcl_status st = MCL_OK;
    while (b) {
        if (k + 1 >= cap) {
            if (cap > max) {
                set_err(err, len, "%s: larger than %zu bytes", path, max);
                st = MCL_ERR_FORMAT;
                break;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) break;
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + k, 1, cap - 1 - k, f);
        k += got;
        if (got == 0) break;
    }
    if (!b) {
        fclose(f);
        set_err(err, len, "%s: out of memory", path);
        return MCL_ERR_OOM;
    }
    if (st == MCL_OK && ferror(f)) {
        set_err(err, len, "%s: read error", path);
        st = MCL_ERR_IO;
    }
    fclose(f);
    if (st != MCL_OK) {
        free(b);
        return st;
    }
    b[k] = '\0';
    if (memchr(b, '\0', k)) {
        free(b);
        set_err(err, len, "%s: contains NUL bytes (not a text file)", path);
        return MCL_ERR_FORMAT;
    }
    *out = b;
    if (n) *n = k;
    return MCL_OK;
}

static int parse_i64(const char *s, int64_t *v)
{
    if (!*s) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end || errno) return -1;
    *v = x;
    return 0;
}

mcl_status mcl_prepared_read_meta(const char *dir, mcl_prepared_meta *m, char *err, size_t len)
{
    char path[4096];
    if (join(path, sizeof path, dir, "meta.txt") != 0) {
        set_err(err, len, "%s: path too long", dir);
        return MCL_ERR_INVALID;
    }
    memset(m, 0, sizeof *m);
    m->n = -1;
    m->classes = -1;
    m->mean = NAN;
    m->std = NAN;
    char *txt;
    mcl_status st = read_text(path, 1 << 16, &txt, NULL, err, len);
    if (st != MCL_OK) return st;
    int lineno = 0;
    char *save = NULL;
    for (char *line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t k = strlen(line);
        if (k && line[k - 1] == '\r') line[--k] = '\0';
        if (!k || line[0] == '#') continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            set_err(err, len, "%s:%d: expected key=value", path, lineno);
            st = MCL_ERR_FORMAT;
            break;
        }
        *eq = '\0';
        const char *key = line, *val = eq + 1;
        int64_t v = 0;
        int bad = 0;
        if (strcmp(key, "format") == 0) {
            bad = parse_i64(val, &v) || v < 0 || v > 1000;
            m->format = (int)v;
        } else if (strcmp(key, "name") == 0) {
            copy_str(m->name, sizeof m->name, val);
        } else if (strcmp(key, "source") == 0) {
            copy_str(m->source, sizeof m->source, val);
        } else if (strcmp(key, "licence") == 0) {
            copy_str(m->licence, sizeof m->licence, val);
        } else if (strcmp(key, "split") == 0) {
            copy_str(m->split, sizeof m->split, val);
        } else if (strcmp(key, "n") == 0) {
            bad = parse_i64(val, &v) || v < 1;
            m->n = v;
        } else if (strcmp(key, "classes") == 0) {
            bad = parse_i64(val, &v) || v < 1 || v > (1 << 20);
            m->classes = (int)v;
        } else if (strcmp(key, "seed") == 0) {
            char *end;
            errno = 0;
            unsigned long long u = strtoull(val, &end, 10);
            bad = !*val || *end || errno;
            m->seed = u;
        } else if (strcmp(key, "instances") == 0) {
            bad = parse_i64(val, &v) || v < 0 || v > (1 << 24);
            m->instances = (int)v;
        } else if (strcmp(key, "mean") == 0 || strcmp(key, "std") == 0) {
            char *end;
            double d = strtod(val, &end);
            bad = !*val || *end || !(d >= 0 && d <= 1);
            if (key[0] == 'm')
                m->mean = (float)d;
            else
                m->std = (float)d;
        } /* other keys: ignored (forward compatible) */
        if (bad) {
            set_err(err, len, "%s:%d: bad value '%s' for %s", path, lineno, val, key);
            st = MCL_ERR_FORMAT;
            break;
        }
    }
    free(txt);
    if (st != MCL_OK) return st;
    const char *missing = m->format == 0 ? "format" : m->n < 0 ? "n" : m->classes < 0 ? "classes"
                          : isnan(m->mean) ? "mean" : isnan(m->std) ? "std" : NULL;
    if (missing) {
        set_err(err, len, "%s: no %s= line (incomplete or foreign meta.txt)", path, missing);
        return MCL_ERR_FORMAT;
    }
    if (m->format != 1) {
        set_err(err, len, "%s: format=%d is not supported (this metacl reads format 1); "
                "prepare the set again", path, m->format);
        return MCL_ERR_FORMAT;
    }
    return MCL_OK;
}

static const char *split_word(mcl_split s)
{
    switch (s) {
    case MCL_SPLIT_TRAIN: return "train";
    case MCL_SPLIT_VAL: return "val";
    case MCL_SPLIT_TEST: return "test";
    default: return "all";
    }
}

mcl_status mcl_prepared_read_classes(const char *dir, int n_classes, mcl_class_info **out,
                                     char *err, size_t len)
{
    *out = NULL;
    char path[4096];
    if (join(path, sizeof path, dir, "classes.txt") != 0) {
        set_err(err, len, "%s: path too long", dir);
        return MCL_ERR_INVALID;
    }
    char *txt;
    mcl_status st = read_text(path, (size_t)1 << 28, &txt, NULL, err, len);
    if (st != MCL_OK) return st;
    mcl_class_info *ci = calloc((size_t)n_classes, sizeof *ci);
    if (!ci) {
        free(txt);
        set_err(err, len, "%s: out of memory", path);
        return MCL_ERR_OOM;
    }
    int c = 0;
    char *p = txt;
    while (*p && st == MCL_OK) {
        char *nl = strchr(p, '\n');
        if (!nl) {
            set_err(err, len, "%s:%d: last line has no newline (truncated file?)", path, c + 1);
            st = MCL_ERR_FORMAT;
            break;
        }
        *nl = '\0';
        if (c >= n_classes) {
            set_err(err, len, "%s: more than the %d classes meta.txt lists", path, n_classes);
            st = MCL_ERR_FORMAT;
            break;
        }
        char *t1 = strchr(p, '\t');
        char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        int64_t id = -1;
        if (!t1 || !t2) {
            set_err(err, len, "%s:%d: expected <id>TAB<train|val|test|all>TAB<text>", path, c + 1);
            st = MCL_ERR_FORMAT;
            break;
        }
        *t1 = *t2 = '\0';
        if (parse_i64(p, &id) || id != c) {
            set_err(err, len, "%s:%d: class id '%s', expected %d", path, c + 1, p, c);
            st = MCL_ERR_FORMAT;
            break;
        }
        const char *sw = t1 + 1;
        mcl_split sp;
        if (strcmp(sw, "train") == 0) sp = MCL_SPLIT_TRAIN;
        else if (strcmp(sw, "val") == 0) sp = MCL_SPLIT_VAL;
        else if (strcmp(sw, "test") == 0) sp = MCL_SPLIT_TEST;
        else if (strcmp(sw, "all") == 0) sp = MCL_SPLIT_ALL;
        else {
            set_err(err, len, "%s:%d: split '%s' (expected train, val, test or all)", path,
                    c + 1, sw);
            st = MCL_ERR_FORMAT;
            break;
        }
        ci[c].split = sp;
        copy_str(ci[c].text, sizeof ci[c].text, t2 + 1);
        c++;
        p = nl + 1;
    }
    free(txt);
    if (st == MCL_OK && c != n_classes) {
        set_err(err, len, "%s: %d classes, meta.txt says %d", path, c, n_classes);
        st = MCL_ERR_FORMAT;
    }
    if (st != MCL_OK) {
        free(ci);
        return st;
    }
    *out = ci;
    return MCL_OK;
}

mcl_status mcl_prepared_read_split(const char *dir, int64_t n, uint8_t **out, char *err,
                                   size_t len)
{
    *out = NULL;
    char path[4096];
    if (join(path, sizeof path, dir, "split.idx") != 0) {
        set_err(err, len, "%s: path too long", dir);
        return MCL_ERR_INVALID;
    }
    if (access(path, F_OK) != 0) return MCL_OK;
    mcl_idx x;
    mcl_status st = mcl_idx_read(path, 0, &x, err, len);
    if (st != MCL_OK) return st;
    st = mcl_idx_expect(&x, path, "split entries", MCL_IDX_UBYTE, 1, n, err, len);
    if (st == MCL_OK) {
        const uint8_t *v = x.data;
        for (int64_t i = 0; i < n; i++)
            if (v[i] < 1 || v[i] > 3) {
                set_err(err, len, "%s: entry %lld is %d (expected 1 train, 2 val, 3 test)", path,
                        (long long)i, v[i]);
                st = MCL_ERR_FORMAT;
                break;
            }
    }
    if (st != MCL_OK) {
        mcl_idx_free(&x);
        return st;
    }
    *out = x.data; /* ownership moves to the caller */
    return MCL_OK;
}

/* DIR/meta.txt is not a file: not prepared (it does not exist), or it cannot be seen (a
 * directory on the way that this user may not search: EACCES), which preparing again would
 * not fix. */
static mcl_status not_prepared(const char *name, const char *data_dir, const char *dir,
                               char *err, size_t len)
{
    int dflt = !data_dir || !*data_dir;
    char meta[4096];
    struct stat sb;
    if (join(meta, sizeof meta, dir, "meta.txt") == 0 && stat(meta, &sb) != 0 && errno != ENOENT &&
        errno != ENOTDIR) {
        set_err(err, len, "data set '%s' cannot be read: %s: %s (check the permissions of the data "
                "directory %s)", name, meta, strerror(errno), dflt ? "(the default)" : data_dir);
        return MCL_ERR_IO;
    }
    set_err(err, len,
            "data set '%s' is not prepared (%s/meta.txt not found); run: metacl data prepare "
            "%s%s%s",
            name, dir, name, dflt ? "" : " --data-dir ", dflt ? "" : data_dir);
    return MCL_ERR_IO;
}

/* name: a prepared set, or a view of one (mcl_dataset_prepared_name: fmnist-val) */
static mcl_status load_prepared(const char *name, const char *data_dir, mcl_split split,
                                mcl_dataset **out, char *err, size_t len)
{
    char dir[4096], path[4096];
    const char *base = mcl_dataset_prepared_name(name);
    const int view = strcmp(base, name) != 0;
    mcl_status st = mcl_prepared_dir(data_dir, base, dir, sizeof dir, err, len);
    if (st != MCL_OK) return st;
    if (!mcl_prepared_exists(dir)) return not_prepared(base, data_dir, dir, err, len);
    if (mcl_text_is_corpus(dir)) {
        set_err(err, len, "%s is a text corpus, not an image set (text.h; metacl data info %s)",
                dir, name);
        return MCL_ERR_INVALID;
    }
    mcl_prepared_meta m;
    st = mcl_prepared_read_meta(dir, &m, err, len);
    if (st != MCL_OK) return st;
    mcl_idx im, lb;
    memset(&im, 0, sizeof im);
    memset(&lb, 0, sizeof lb);
    mcl_class_info *ci = NULL;
    uint8_t *sp = NULL;
    mcl_dataset *ds = NULL;
    join(path, sizeof path, dir, "images.idx");
    st = mcl_idx_read(path, 0, &im, err, len);
    if (st == MCL_OK) st = mcl_idx_expect(&im, path, "images", MCL_IDX_UBYTE, 3, m.n, err, len);
    if (st == MCL_OK && (im.dims[1] != MCL_IMG || im.dims[2] != MCL_IMG)) {
        set_err(err, len, "%s: images are %lldx%lld, a prepared set has 32x32", path,
                (long long)im.dims[1], (long long)im.dims[2]);
        st = MCL_ERR_FORMAT;
    }
    if (st == MCL_OK) {
        join(path, sizeof path, dir, "labels.idx");
        st = mcl_idx_read(path, 0, &lb, err, len);
        if (st == MCL_OK)
            st = mcl_idx_expect(&lb, path, "labels", MCL_IDX_INT32, 1, m.n, err, len);
    }
    if (st == MCL_OK) {
        const int32_t *l = lb.data;
        for (int64_t i = 0; i < m.n; i++)
            if (l[i] < 0 || l[i] >= m.classes) {
                set_err(err, len, "%s: label %lld is %d, outside 0..%d", path, (long long)i,
                        (int)l[i], m.classes - 1);
                st = MCL_ERR_FORMAT;
                break;
            }
    }
    if (st == MCL_OK) st = mcl_prepared_read_classes(dir, m.classes, &ci, err, len);
    if (st == MCL_OK) st = mcl_prepared_read_split(dir, m.n, &sp, err, len);
    if (st == MCL_OK && view)
        st = mcl_dataset_view_splits(name, lb.data, sp, m.n, m.classes, err, len);
    /* select the split: per example when split.idx exists, else per class; a class marked
     * "all" belongs to ALL and TRAIN (as user data) */
    int64_t keep_n = 0;
    uint8_t *keep = NULL;
    if (st == MCL_OK) {
        keep = malloc((size_t)m.n);
        if (!keep) {
            set_err(err, len, "%s: out of memory", dir);
            st = MCL_ERR_OOM;
        }
    }
    if (st == MCL_OK) {
        const int32_t *l = lb.data;
        for (int64_t i = 0; i < m.n; i++) {
            int k;
            if (split == MCL_SPLIT_ALL)
                k = 1;
            else if (sp)
                k = sp[i] == (uint8_t)split;
            else
                k = ci[l[i]].split == split ||
                    (ci[l[i]].split == MCL_SPLIT_ALL && split == MCL_SPLIT_TRAIN);
            keep[i] = (uint8_t)k;
            keep_n += k;
        }
        if (keep_n == 0) {
            set_err(err, len, "data set '%s' (%s) has no images in the %s split", name, dir,
                    split_word(split));
            st = MCL_ERR_INVALID;
        }
    }
    if (st == MCL_OK) {
        ds = ds_new(name, keep_n);
        if (!ds) {
            set_err(err, len, "%s: out of memory for %lld images", dir, (long long)keep_n);
            st = MCL_ERR_OOM;
        }
    }
    if (st == MCL_OK) {
        const uint8_t *src = im.data;
        const int32_t *l = lb.data;
        int64_t j = 0;
        for (int64_t i = 0; i < m.n; i++)
            if (keep[i]) {
                memcpy(ds->images + (size_t)j * PIX, src + (size_t)i * PIX, PIX);
                ds->labels[j++] = l[i];
            }
        ds->n_classes_total = m.classes;
        ds->mean = m.mean;
        ds->std = m.std;
        if (view) { /* the statistics of the view's own train split (the held-out images
                       are not in them) */
            for (int64_t i = 0; i < m.n; i++) keep[i] = sp[i] == MCL_SPLIT_TRAIN;
            double mu, sd;
            mcl_pixel_stats(src, m.n, PIX, keep, &mu, &sd);
            ds->mean = (float)mu;
            ds->std = (float)sd;
        }
        if (strcmp(base, "fmnist") == 0) ds->content_side = MCL_FMNIST_SIDE;
        st = build_index(ds, err, len);
    }
    free(keep);
    free(ci);
    free(sp);
    mcl_idx_free(&im);
    mcl_idx_free(&lb);
    if (st != MCL_OK) {
        mcl_dataset_free(ds);
        return st;
    }
    *out = ds;
    return MCL_OK;
}

mcl_status mcl_dataset_load(const char *spec, const char *data_dir, mcl_split split,
                            mcl_dataset **out, char *err, size_t len)
{
    if (!out) {
        set_err(err, len, "dataset: null argument");
        return MCL_ERR_NULL;
    }
    *out = NULL;
    if (!spec || !*spec) {
        set_err(err, len, "no data set given (a name such as fmnist, or idx:IMAGES,LABELS, or "
                "pngdir:DIR)");
        return MCL_ERR_INVALID;
    }
    if (split < MCL_SPLIT_ALL || split > MCL_SPLIT_TEST) {
        set_err(err, len, "%s: invalid split %d", spec, (int)split);
        return MCL_ERR_INVALID;
    }
    int is_idx = strncmp(spec, "idx:", 4) == 0, is_png = strncmp(spec, "pngdir:", 7) == 0;
    if (is_idx || is_png) {
        if (split != MCL_SPLIT_ALL && split != MCL_SPLIT_TRAIN) {
            set_err(err, len, "%s: user data has no %s split (use all or train)", spec,
                    split_word(split));
            return MCL_ERR_INVALID;
        }
        return is_idx ? load_idx_pair(spec + 4, out, err, len)
                      : load_pngdir(spec + 7, out, err, len);
    }
    return load_prepared(spec, data_dir, split, out, err, len);
}

/* ---------------------------------------------------------------------------------------
 * Prepared sets: writing and verifying
 * ------------------------------------------------------------------------------------- */

/* A growable text buffer. */
typedef struct tbuf {
    char *s;
    size_t n, cap;
    int oom;
} tbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void tb_printf(tbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int r = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (r < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->n + (size_t)r < b->cap) {
            b->n += (size_t)r;
            return;
        }
        size_t nc = b->cap ? b->cap : 1024;
        while (nc <= b->n + (size_t)r) nc *= 2;
        char *ns = realloc(b->s, nc);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
}

/* A single-line value: tabs and line breaks become spaces. */
static void clean_line(char *dst, size_t cap, const char *s)
{
    copy_str(dst, cap, s);
    for (char *p = dst; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
}

mcl_status mcl_prepared_write(const char *data_dir, const mcl_prepared *p, char *err, size_t len)
{
    if (!p || !p->name || !p->images || !p->labels || !p->classes) {
        set_err(err, len, "prepared write: null argument");
        return MCL_ERR_NULL;
    }
    if (p->n < 1 || p->n > (int64_t)UINT32_MAX || p->n > (int64_t)(MCL_IDX_MAX_BYTES / PIX)) {
        set_err(err, len, "%s: cannot write %lld images", p->name, (long long)p->n);
        return MCL_ERR_INVALID;
    }
    if (p->n_classes < 1) {
        set_err(err, len, "%s: no classes", p->name);
        return MCL_ERR_INVALID;
    }
    for (int64_t i = 0; i < p->n; i++) {
        if (p->labels[i] < 0 || p->labels[i] >= p->n_classes) {
            set_err(err, len, "%s: label %lld is %d, outside 0..%d", p->name, (long long)i,
                    (int)p->labels[i], p->n_classes - 1);
            return MCL_ERR_INVALID;
        }
        if (p->example_split && (p->example_split[i] < 1 || p->example_split[i] > 3)) {
            set_err(err, len, "%s: example %lld has split %d (1 train, 2 val, 3 test)",
                    p->name, (long long)i, p->example_split[i]);
            return MCL_ERR_INVALID;
        }
    }
    char dir[4096], path[4096];
    mcl_status st = mcl_prepared_dir(data_dir, p->name, dir, sizeof dir, err, len);
    if (st != MCL_OK) return st;
    st = mcl_mkdir_p(dir, err, len);
    if (st != MCL_OK) return st;
    /* the set is incomplete until meta.txt is written again */
    join(path, sizeof path, dir, "meta.txt");
    if (unlink(path) != 0 && errno != ENOENT) {
        set_err(err, len, "%s: cannot remove: %s", path, strerror(errno));
        return MCL_ERR_IO;
    }

    /* statistics over the train split: train examples, or meta-train classes, or all */
    uint8_t *keep = malloc((size_t)p->n);
    if (!keep) {
        set_err(err, len, "%s: out of memory", p->name);
        return MCL_ERR_OOM;
    }
    int64_t nk = 0;
    for (int64_t i = 0; i < p->n; i++) {
        keep[i] = (uint8_t)(p->example_split ? p->example_split[i] == 1
                                             : p->classes[p->labels[i]].split == MCL_SPLIT_TRAIN);
        nk += keep[i];
    }
    double mean, sd;
    mcl_pixel_stats(p->images, p->n, PIX, nk ? keep : NULL, &mean, &sd);
    free(keep);

    const char *files[5];
    int nf = 0;
    char hex[5][65];
    int64_t d3[3] = {p->n, MCL_IMG, MCL_IMG};
    join(path, sizeof path, dir, "images.idx");
    st = mcl_idx_write(path, MCL_IDX_UBYTE, 3, d3, p->images, 0, err, len);
    if (st != MCL_OK) return st;
    files[nf++] = "images.idx";
    join(path, sizeof path, dir, "labels.idx");
    st = mcl_idx_write(path, MCL_IDX_INT32, 1, d3, p->labels, 0, err, len);
    if (st != MCL_OK) return st;
    files[nf++] = "labels.idx";
    join(path, sizeof path, dir, "split.idx");
    if (p->example_split) {
        st = mcl_idx_write(path, MCL_IDX_UBYTE, 1, d3, p->example_split, 0, err, len);
        if (st != MCL_OK) return st;
        files[nf++] = "split.idx";
    } else if (unlink(path) != 0 && errno != ENOENT) { /* a stale one from an earlier run */
        set_err(err, len, "%s: cannot remove: %s", path, strerror(errno));
        return MCL_ERR_IO;
    }
    tbuf cls = {0};
    for (int c = 0; c < p->n_classes; c++) {
        char text[64];
        clean_line(text, sizeof text, p->classes[c].text);
        tb_printf(&cls, "%d\t%s\t%s\n", c, split_word(p->classes[c].split), text);
    }
    if (cls.oom) {
        free(cls.s);
        set_err(err, len, "%s: out of memory", p->name);
        return MCL_ERR_OOM;
    }
    join(path, sizeof path, dir, "classes.txt");
    st = mcl_write_file_atomic(path, cls.s, cls.n, err, len);
    free(cls.s);
    if (st != MCL_OK) return st;
    files[nf++] = "classes.txt";
    for (int f = 0; f < nf; f++) {
        join(path, sizeof path, dir, files[f]);
        st = mcl_sha256_file(path, hex[f], err, len);
        if (st != MCL_OK) return st;
    }
    /* meta.txt: built in memory, hashed, written last */
    char name[64], source[256], licence[128];
    clean_line(name, sizeof name, p->name);
    clean_line(source, sizeof source, p->source ? p->source : "unknown");
    clean_line(licence, sizeof licence, p->licence ? p->licence : "unknown");
    tbuf meta = {0};
    tb_printf(&meta,
              "format=1\nname=%s\nsource=%s\nlicence=%s\nn=%lld\nclasses=%d\nsplit=%s\n"
              "mean=%.6f\nstd=%.6f\nseed=%llu\ninstances=%d\n",
              name, source, licence, (long long)p->n, p->n_classes,
              p->example_split ? "example" : "class", mean, sd, (unsigned long long)p->seed,
              p->instances);
    if (meta.oom) {
        free(meta.s);
        set_err(err, len, "%s: out of memory", p->name);
        return MCL_ERR_OOM;
    }
    mcl_sha256_buf_hex(meta.s, meta.n, hex[nf]);
    files[nf++] = "meta.txt";
    tbuf sums = {0};
    for (int f = 0; f < nf; f++) tb_printf(&sums, "%s  %s\n", hex[f], files[f]);
    if (sums.oom) {
        free(meta.s);
        free(sums.s);
        set_err(err, len, "%s: out of memory", p->name);
        return MCL_ERR_OOM;
    }
    join(path, sizeof path, dir, "SHA256SUMS");
    st = mcl_write_file_atomic(path, sums.s, sums.n, err, len);
    free(sums.s);
    if (st == MCL_OK) {
        join(path, sizeof path, dir, "meta.txt");
        st = mcl_write_file_atomic(path, meta.s, meta.n, err, len);
    }
    free(meta.s);
    return st;
}

static int is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
}

mcl_status mcl_prepared_verify(const char *dir, mcl_sum_entry **entries, int *n_entries,
                               char *err, size_t len)
{
    if (!dir || !entries || !n_entries) {
        set_err(err, len, "verify: null argument");
        return MCL_ERR_NULL;
    }
    *entries = NULL;
    *n_entries = 0;
    char path[4096];
    if (join(path, sizeof path, dir, "SHA256SUMS") != 0) {
        set_err(err, len, "%s: path too long", dir);
        return MCL_ERR_INVALID;
    }
    char *txt;
    mcl_status st = read_text(path, 1 << 16, &txt, NULL, err, len);
    if (st != MCL_OK) return st;
    int cap = 8, n = 0, lineno = 0;
    mcl_sum_entry *e = calloc((size_t)cap, sizeof *e);
    if (!e) {
        free(txt);
        set_err(err, len, "%s: out of memory", path);
        return MCL_ERR_OOM;
    }
    char *save = NULL;
    for (char *line = strtok_r(txt, "\n", &save); line && st == MCL_OK;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t k = strlen(line);
        if (k && line[k - 1] == '\r') line[--k] = '\0';
        if (!k) continue;
        /* "<64 hex>  <file>" (or " *<file>", the binary marker of sha256sum) */
        if (k < 67 || !is_hex64(line) || line[64] != ' ' || (line[65] != ' ' && line[65] != '*')) {
            set_err(err, len, "%s:%d: expected '<64 hex digits>  <file>'", path, lineno);
            st = MCL_ERR_FORMAT;
            break;
        }
        const char *file = line + 66;
        if (strchr(file, '/') || file[0] == '.' || strlen(file) >= sizeof e->file) {
            set_err(err, len, "%s:%d: '%s' is not a file of the set", path, lineno, file);
            st = MCL_ERR_FORMAT;
            break;
        }
        if (n == cap) {
            mcl_sum_entry *ne = realloc(e, sizeof *e * (size_t)cap * 2);
            if (!ne) {
                set_err(err, len, "%s: out of memory", path);
                st = MCL_ERR_OOM;
                break;
            }
            e = ne;
            cap *= 2;
        }
        memset(&e[n], 0, sizeof e[n]);
        copy_str(e[n].file, sizeof e[n].file, file);
        memcpy(e[n].want, line, 64);
        e[n].want[64] = '\0';
        for (int i = 0; i < 64; i++) e[n].want[i] = (char)tolower((unsigned char)e[n].want[i]);
        n++;
    }
    free(txt);
    if (st != MCL_OK) {
        free(e);
        return st;
    }
    char first[512] = "";
    for (int i = 0; i < n; i++) {
        char fp[4096], ferr[256];
        join(fp, sizeof fp, dir, e[i].file);
        if (mcl_sha256_file(fp, e[i].got, ferr, sizeof ferr) != MCL_OK) {
            e[i].got[0] = '\0';
            if (!first[0]) set_err(first, sizeof first, "%s", ferr);
        } else {
            e[i].ok = strcmp(e[i].got, e[i].want) == 0;
            if (!e[i].ok && !first[0])
                set_err(first, sizeof first,
                         "%s: SHA-256 mismatch: %.16s... now, SHA256SUMS says %.16s... "
                         "(the file changed since it was prepared)",
                         fp, e[i].got, e[i].want);
        }
    }
    static const char *const required[] = {"images.idx", "labels.idx", "classes.txt",
                                           "meta.txt"};
    for (size_t r = 0; r < sizeof required / sizeof *required && !first[0]; r++) {
        int found = 0;
        for (int i = 0; i < n; i++) found |= strcmp(e[i].file, required[r]) == 0;
        if (!found) set_err(first, sizeof first, "%s: does not list %s", path, required[r]);
    }
    *entries = e;
    *n_entries = n;
    if (first[0]) {
        set_err(err, len, "%s", first);
        return MCL_ERR_FORMAT;
    }
    return MCL_OK;
}
