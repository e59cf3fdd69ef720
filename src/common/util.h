/* util.h — the engine's small utility layer (internal): files written atomically, mkdir -p,
 * whole-file reads, a monotonic clock. Data loaders, checkpoints, run directories and the
 * CLI all use these, so a file is written the same careful way everywhere.
 */
#ifndef MCL_UTIL_H
#define MCL_UTIL_H

#include <stddef.h>

#include "status.h"

/* mkdir -p: every missing directory of path (mode 0755); an existing non-directory is an
 * error. */
mcl_status mcl_mkdir_p(const char *path, char *err, size_t len);

/* Temporary name for an atomic write of `path` (path + ".tmp.<pid>.<n>"); 0 on success. */
int mcl_tmp_name(const char *path, char *tmp, size_t len);

/* Write n bytes to path atomically: a temporary file next to it (O_EXCL), fsync of the file,
 * rename, fsync of the directory; on any failure the temporary is removed and an existing
 * file at path is left as it was. */
mcl_status mcl_write_file_atomic(const char *path, const void *data, size_t n, char *err,
                                 size_t len);

/* fsync the directory holding `path` (after a rename into it); 0 ok, -1 (errno set). */
int mcl_fsync_parent_dir(const char *path);

/* Read a whole text file of at most max bytes into a malloc'd NUL-terminated buffer. A file
 * larger than max (MCL_ERR_INVALID), one holding a NUL byte (MCL_ERR_INVALID: not text) or an
 * unreadable one (MCL_ERR_IO) is refused with "<path>: ..." in err. */
mcl_status mcl_read_text_file(const char *path, size_t max, char **out, char *err, size_t len);

/* Seconds on a monotonic clock. */
double mcl_now_s(void);

#endif
