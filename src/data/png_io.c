/* png_io.c — PNG to 8-bit gray and back with libpng. See png_io.h.
 *
 * libpng reports errors by calling our error function, which records the message and
 * longjmps back to the setjmp in read_inner()/write_inner(). Everything those functions
 * allocate lives in a state struct owned by the caller, so nothing depends on local
 * variables after the longjmp, and the caller frees whatever was allocated. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "png_io.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>

#include "util.h"

/* a message into the caller's error buffer (status.h) */
#define set_err(err, len, ...) ((void)mcl_errbuf((err), (len), MCL_OK, __VA_ARGS__))

typedef struct png_state {
    jmp_buf jb;
    char msg[256];        /* libpng's error message */
    char warn[160];       /* its last warning (often the reason behind the error) */
    const char *name;
    /* input */
    FILE *f;
    const uint8_t *mem;
    size_t mem_n, mem_pos;
    size_t max_pixels;
    /* libpng objects and our allocations */
    png_structp png;
    png_infop info;
    uint8_t *rgba;        /* decoded rows, channels × w × h */
    png_bytep *rows;
    uint8_t *gray;
    int w, h;
    mcl_status status;    /* for errors we raise ourselves */
    /* output */
    const uint8_t *wpx;   /* rows of w * wch bytes */
    int wch;              /* 1 gray, 3 RGB */
} png_state;

static void on_error(png_structp png, png_const_charp msg)
{
    png_state *st = png_get_error_ptr(png);
    snprintf(st->msg, sizeof st->msg, "%s", msg ? msg : "libpng error");
    longjmp(st->jb, 1);
}

/* Warnings (e.g. a bad CRC in an ancillary chunk, which is then skipped) are not errors;
 * the last one is kept, as it often explains a following error ("Image width exceeds user
 * limit" before "Invalid IHDR data"). */
static void on_warning(png_structp png, png_const_charp msg)
{
    png_state *st = png_get_error_ptr(png);
    if (st) snprintf(st->warn, sizeof st->warn, "%s", msg ? msg : "");
}

/* libpng's own allocations (chunk buffers, zlib state, row buffers) go through this cap:
 * libpng allocates an ancillary chunk's declared length before reading it (and version 1.6
 * does not always check that length against the chunk limits), so a 300-byte file claiming
 * a 700 MB pCAL chunk would otherwise cost a 700 MB allocation. A refused allocation is an
 * ordinary libpng error (or a skipped ancillary chunk). Image pixels are allocated by us. */
#define LIBPNG_ALLOC_MAX ((png_alloc_size_t)1 << 24)

static png_voidp capped_malloc(png_structp png, png_alloc_size_t n)
{
    (void)png;
    return n <= LIBPNG_ALLOC_MAX ? malloc(n) : NULL;
}

static void capped_free(png_structp png, png_voidp p)
{
    (void)png;
    free(p);
}

static void mem_read(png_structp png, png_bytep dst, png_size_t n)
{
    png_state *st = png_get_io_ptr(png);
    if (n > st->mem_n - st->mem_pos) png_error(png, "unexpected end of data (truncated PNG)");
    memcpy(dst, st->mem + st->mem_pos, n);
    st->mem_pos += n;
}

static void file_read(png_structp png, png_bytep dst, png_size_t n)
{
    png_state *st = png_get_io_ptr(png);
    if (fread(dst, 1, n, st->f) != n)
        png_error(png, ferror(st->f) ? "read error" : "unexpected end of file (truncated PNG)");
}

static int read_inner(png_state *st)
{
    if (setjmp(st->jb)) return -1;
    png_structp png = st->png;
    png_infop info = st->info;
    if (st->f)
        png_set_read_fn(png, st, file_read);
    else
        png_set_read_fn(png, st, mem_read);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, MCL_PNG_MAX_SIDE, MCL_PNG_MAX_SIDE);
    /* Ancillary chunks: libpng allocates a chunk's declared length before reading it, so a
     * short file claiming a 2 GB sCAL chunk would cost a 2 GB allocation; cap the size of
     * any non-image chunk (libpng then rejects longer ones) and how many are kept. */
    png_set_chunk_malloc_max(png, (png_alloc_size_t)1 << 23);
    png_set_chunk_cache_max(png, 256);
    png_read_info(png, info);
    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0, interlace = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    if ((size_t)w * (size_t)h > st->max_pixels) {
        snprintf(st->msg, sizeof st->msg, "image %ux%u has more than the limit of %zu pixels",
                 (unsigned)w, (unsigned)h, st->max_pixels);
        st->status = MCL_ERR_FORMAT;
        return -1;
    }
    /* normalize to 8-bit gray / gray+alpha / RGB / RGBA */
    png_set_expand(png); /* palette -> RGB, low-bit gray -> 8 bits, tRNS -> alpha */
#ifdef PNG_READ_SCALE_16_TO_8_SUPPORTED
    png_set_scale_16(png);
#else
    png_set_strip_16(png);
#endif
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int ch = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (ch < 1 || ch > 4 || rowbytes != (size_t)w * (size_t)ch) {
        snprintf(st->msg, sizeof st->msg, "unexpected pixel layout after conversion");
        st->status = MCL_ERR_FORMAT;
        return -1;
    }
    st->rgba = malloc(rowbytes * h);
    st->rows = malloc(sizeof *st->rows * h);
    st->gray = malloc((size_t)w * h);
    if (!st->rgba || !st->rows || !st->gray) {
        snprintf(st->msg, sizeof st->msg, "out of memory for a %ux%u image", (unsigned)w,
                 (unsigned)h);
        st->status = MCL_ERR_OOM;
        return -1;
    }
    for (png_uint_32 y = 0; y < h; y++) st->rows[y] = st->rgba + rowbytes * y;
    png_read_image(png, st->rows);
    png_read_end(png, NULL); /* checks the chunks after the image data up to IEND */
    size_t np = (size_t)w * h;
    const uint8_t *s = st->rgba;
    for (size_t i = 0; i < np; i++, s += ch) {
        unsigned v, a = 255;
        if (ch <= 2) {
            v = s[0];
            if (ch == 2) a = s[1];
        } else {
            v = (299u * s[0] + 587u * s[1] + 114u * s[2] + 500u) / 1000u;
            if (ch == 4) a = s[3];
        }
        if (a != 255) v = (v * a + 127u) / 255u;
        st->gray[i] = (uint8_t)v;
    }
    st->w = (int)w;
    st->h = (int)h;
    return 0;
}

static mcl_status read_common(png_state *st, uint8_t **gray, int *w, int *h, char *err,
                              size_t len)
{
    mcl_status rc = MCL_OK;
    st->status = MCL_OK;
    st->png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, st, on_error, on_warning, NULL,
                                       capped_malloc, capped_free);
    if (st->png) st->info = png_create_info_struct(st->png);
    if (!st->png || !st->info) {
        set_err(err, len, "%s: out of memory starting libpng", st->name);
        rc = MCL_ERR_OOM;
    } else if (read_inner(st) != 0) {
        rc = st->status != MCL_OK ? st->status : MCL_ERR_FORMAT;
        if (st->warn[0] && st->status == MCL_OK)
            set_err(err, len, "%s: bad PNG: %s (%s)", st->name, st->msg, st->warn);
        else
            set_err(err, len, "%s: bad PNG: %s", st->name, st->msg);
    } else {
        *gray = st->gray;
        *w = st->w;
        *h = st->h;
        st->gray = NULL;
    }
    if (st->png) png_destroy_read_struct(&st->png, st->info ? &st->info : NULL, NULL);
    free(st->rgba);
    free(st->rows);
    free(st->gray);
    return rc;
}

mcl_status mcl_png_read_mem(const void *buf, size_t n, const char *name, size_t max_pixels,
                            uint8_t **gray, int *w, int *h, char *err, size_t len)
{
    if (!name) name = "<memory>";
    if ((!buf && n) || !gray || !w || !h) {
        set_err(err, len, "%s: null argument", name);
        return MCL_ERR_NULL;
    }
    *gray = NULL;
    *w = *h = 0;
    if (n == 0) {
        set_err(err, len, "%s: empty file (not a PNG)", name);
        return MCL_ERR_FORMAT;
    }
    if (n < 8 || png_sig_cmp((png_const_bytep)buf, 0, 8) != 0) {
        set_err(err, len, "%s: not a PNG file (bad signature)", name);
        return MCL_ERR_FORMAT;
    }
    png_state st;
    memset(&st, 0, sizeof st);
    st.name = name;
    st.mem = buf;
    st.mem_n = n;
    st.mem_pos = 8;
    st.max_pixels = max_pixels ? max_pixels : MCL_PNG_MAX_PIXELS;
    return read_common(&st, gray, w, h, err, len);
}

mcl_status mcl_png_read(const char *path, size_t max_pixels, uint8_t **gray, int *w, int *h,
                        char *err, size_t len)
{
    if (!path || !gray || !w || !h) {
        set_err(err, len, "png: null argument");
        return MCL_ERR_NULL;
    }
    *gray = NULL;
    *w = *h = 0;
    FILE *f = NULL;
    mcl_status ost = mcl_fopen_regular(path, &f, NULL, err, len); /* no FIFO, no device */
    if (ost != MCL_OK) return ost;
    uint8_t sig[8];
    size_t got = fread(sig, 1, 8, f);
    if (got == 0 && ferror(f)) {
        set_err(err, len, "%s: read error: %s", path, strerror(errno));
        fclose(f);
        return MCL_ERR_IO;
    }
    if (got == 0) {
        set_err(err, len, "%s: empty file (not a PNG)", path);
        fclose(f);
        return MCL_ERR_FORMAT;
    }
    if (got < 8 || png_sig_cmp(sig, 0, 8) != 0) {
        set_err(err, len, "%s: not a PNG file (bad signature)", path);
        fclose(f);
        return MCL_ERR_FORMAT;
    }
    png_state st;
    memset(&st, 0, sizeof st);
    st.name = path;
    st.f = f;
    st.max_pixels = max_pixels ? max_pixels : MCL_PNG_MAX_PIXELS;
    mcl_status rc = read_common(&st, gray, w, h, err, len);
    fclose(f);
    return rc;
}

/* ---- writing ---- */

static int write_inner(png_state *st)
{
    if (setjmp(st->jb)) return -1;
    png_structp png = st->png;
    png_init_io(png, st->f);
    png_set_IHDR(png, st->info, (png_uint_32)st->w, (png_uint_32)st->h, 8,
                 st->wch == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, st->info);
    const size_t row = (size_t)st->w * (size_t)st->wch;
    for (int y = 0; y < st->h; y++) png_write_row(png, (png_const_bytep)(st->wpx + (size_t)y * row));
    png_write_end(png, NULL);
    return 0;
}

mcl_status mcl_png_write_gray(const char *path, const uint8_t *gray, int w, int h, char *err,
                              size_t len)
{
    return mcl_png_write(path, gray, w, h, 1, err, len);
}

mcl_status mcl_png_write(const char *path, const uint8_t *px, int w, int h, int channels,
                         char *err, size_t len)
{
    if (!path || !px) {
        set_err(err, len, "png write: null argument");
        return MCL_ERR_NULL;
    }
    if (!path[0]) {
        set_err(err, len, "png write: empty path");
        return MCL_ERR_INVALID;
    }
    if (channels != 1 && channels != 3) {
        set_err(err, len, "%s: cannot write %d channels (1 gray or 3 RGB)", path, channels);
        return MCL_ERR_INVALID;
    }
    if (w < 1 || h < 1 || w > MCL_PNG_MAX_SIDE || h > MCL_PNG_MAX_SIDE) {
        set_err(err, len, "%s: cannot write a %dx%d image (sides 1..%d)", path, w, h,
                MCL_PNG_MAX_SIDE);
        return MCL_ERR_INVALID;
    }
    char tmp[4200];
    int fd;
    mcl_status cst = mcl_tmp_create(path, tmp, sizeof tmp, &fd, err, len);
    if (cst != MCL_OK) return cst;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        set_err(err, len, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return MCL_ERR_IO;
    }
    png_state st;
    memset(&st, 0, sizeof st);
    st.name = path;
    st.f = f;
    st.wpx = px;
    st.wch = channels;
    st.w = w;
    st.h = h;
    mcl_status rc = MCL_OK;
    st.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
    if (st.png) st.info = png_create_info_struct(st.png);
    if (!st.png || !st.info) {
        set_err(err, len, "%s: out of memory starting libpng", path);
        rc = MCL_ERR_OOM;
    } else if (write_inner(&st) != 0) {
        set_err(err, len, "%s: PNG write failed: %s", path, st.msg);
        rc = MCL_ERR_IO;
    }
    if (st.png) png_destroy_write_struct(&st.png, st.info ? &st.info : NULL);
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
        if (rc == MCL_OK) set_err(err, len, "%s: write failed: %s", path, strerror(errno));
        if (rc == MCL_OK) rc = MCL_ERR_IO;
    }
    if (fclose(f) != 0 && rc == MCL_OK) {
        set_err(err, len, "%s: write failed: %s", path, strerror(errno));
        rc = MCL_ERR_IO;
    }
    if (rc == MCL_OK && rename(tmp, path) != 0) {
        set_err(err, len, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        rc = MCL_ERR_IO;
    }
    if (rc != MCL_OK) unlink(tmp);
    return rc;
}
