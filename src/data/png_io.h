/* png_io.h — PNG read into 8-bit gray, and 8-bit gray PNG write (internal to the data code).
 *
 * Reading accepts any valid PNG (libpng): palette, gray 1/2/4/8/16-bit, gray+alpha, RGB,
 * RGBA, 16-bit, interlaced. Conversion to one 8-bit gray channel:
 *   - 16-bit samples are scaled to 8 bits with rounding;
 *   - colour: luma Y = (299 R + 587 G + 114 B) / 1000, rounded (ITU-R BT.601 weights, on
 *     the stored, gamma-encoded values);
 *   - alpha (an alpha channel, or tRNS transparency): composited over black (0 = background),
 *     v = round(v × a / 255).
 * Errors (not a PNG, bad CRC, truncated data, size over the limit, ...) come back as a
 * status and a message naming the file; libpng errors never abort the process.
 */
#ifndef MCL_PNG_IO_H
#define MCL_PNG_IO_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Default limits of mcl_png_read: each side and the pixel count. */
#define MCL_PNG_MAX_SIDE 16384
#define MCL_PNG_MAX_PIXELS ((size_t)1 << 26)

/* Read a PNG file into a malloc'd w×h gray buffer (*gray, free() it). max_pixels limits
 * w×h (0 = MCL_PNG_MAX_PIXELS); each side is limited to MCL_PNG_MAX_SIDE. */
mcl_status mcl_png_read(const char *path, size_t max_pixels, uint8_t **gray, int *w, int *h,
                        char *err, size_t len);

/* The same from memory; `name` is used in messages (NULL = "<memory>"). */
mcl_status mcl_png_read_mem(const void *buf, size_t n, const char *name, size_t max_pixels,
                            uint8_t **gray, int *w, int *h, char *err, size_t len);

/* Write a w×h 8-bit PNG atomically (temporary file in the same directory, fflush + fsync,
 * then rename; on failure the temporary file is removed): channels 1 (gray, w bytes per row)
 * or 3 (RGB, 3w bytes per row). */
mcl_status mcl_png_write(const char *path, const uint8_t *px, int w, int h, int channels,
                         char *err, size_t len);
/* mcl_png_write with channels = 1. */
mcl_status mcl_png_write_gray(const char *path, const uint8_t *gray, int w, int h, char *err,
                              size_t len);

#endif
