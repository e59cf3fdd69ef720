/* util.h — the engine's small utility layer (internal): files written atomically, mkdir -p,
 * whole-file reads, a monotonic clock. Data loaders, checkpoints, run directories and the
 * CLI all use these, so a file is written the same careful way everywhere.
 */
#ifndef MCL_UTIL_H
#define MCL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

/* mkdir -p: every missing directory of path (mode 0755); an existing non-directory is an
 * error. */
mcl_status mcl_mkdir_p(const char *path, char *err, size_t len);

/* Temporary name for an atomic write of `path` (path + ".tmp.<pid>.<n>"); 0 on success. */
int mcl_tmp_name(const char *path, char *tmp, size_t len);

/* Create the temporary file of an atomic write of `path`: a name of mcl_tmp_name opened with
 * O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC (mode 0644), so nothing already there is followed
 * or opened: a symlink, a FIFO or a file planted at that name is skipped and the next name
 * tried (up to 100). *fd and tmp (tmp_len bytes) receive the file and its name. */
mcl_status mcl_tmp_create(const char *path, char *tmp, size_t tmp_len, int *fd, char *err,
                          size_t len);

/* Write n bytes to path atomically: a temporary file next to it (mcl_tmp_create), fsync of
 * the file, rename, fsync of the directory; on any failure the temporary is removed and an
 * existing file at path is left as it was. Every file metacl writes goes through this or
 * mcl_atomic_open (tests/test-atomic-writes.sh holds the tree to it). */
mcl_status mcl_write_file_atomic(const char *path, const void *data, size_t n, char *err,
                                 size_t len);

/* The same for a file written as a stdio stream: mcl_atomic_open gives a stream on a new
 * temporary file; mcl_atomic_commit flushes, fsyncs and closes it and renames it to its path
 * (on any failure, including an earlier write error of the stream, the temporary is removed
 * and the error says why); mcl_atomic_abort closes and removes it. */
typedef struct mcl_atomic_file {
    FILE *f;
    char path[4096];
    char tmp[4200];
} mcl_atomic_file;
mcl_status mcl_atomic_open(mcl_atomic_file *af, const char *path, char *err, size_t len);
mcl_status mcl_atomic_commit(mcl_atomic_file *af, char *err, size_t len);
void mcl_atomic_abort(mcl_atomic_file *af);

/* A log written line by line (log.txt, metrics.csv), which cannot be replaced atomically:
 * opened for appending (truncate: emptied first) with O_NOFOLLOW and O_NONBLOCK, so a symlink
 * is not followed and a FIFO cannot block, and refused unless it is a regular file. *f is a
 * stdio stream (fclose it). */
mcl_status mcl_fopen_append(const char *path, int truncate, FILE **f, char *err, size_t len);

/* fsync the directory holding `path` (after a rename into it); 0 ok, -1 (errno set). */
int mcl_fsync_parent_dir(const char *path);

/* Read a whole text file of at most max bytes into a malloc'd NUL-terminated buffer. A file
 * larger than max (MCL_ERR_INVALID), one holding a NUL byte (MCL_ERR_INVALID: not text) or an
 * unreadable one (MCL_ERR_IO) is refused with "<path>: ..." in err. */
mcl_status mcl_read_text_file(const char *path, size_t max, char **out, char *err, size_t len);

/* Open an existing file for reading that must be a regular file: opened with O_NONBLOCK (a
 * FIFO does not block the open), then fstat'd; a FIFO, socket, device or directory is refused
 * with "<path>: is not a regular file" (MCL_ERR_IO) before anything is read. flags are added to
 * O_RDONLY (e.g. O_CLOEXEC); O_NONBLOCK is cleared again once the file is known to be regular.
 * *fd receives the descriptor (close it), *size (may be NULL) the file's size in bytes. */
mcl_status mcl_open_regular(const char *path, int flags, int *fd, uint64_t *size, char *err,
                            size_t len);

/* The same as a stdio stream opened "rb" (*f; fclose it). */
mcl_status mcl_fopen_regular(const char *path, FILE **f, uint64_t *size, char *err, size_t len);

/* A size in bytes: digits with an optional K, M, G or T suffix (powers of 1024; a trailing
 * "B"/"iB" is accepted: 512M, 2GiB). 0 on success, -1 if s is not such a size or overflows. */
int mcl_parse_size(const char *s, uint64_t *out);

/* Memory budget in bytes for what one process may allocate for a model: the limit set with
 * mcl_set_memory_limit (the CLI's --memory-limit), else $METACL_MEMORY_LIMIT (a size as
 * mcl_parse_size reads it), else half the physical memory. */
uint64_t mcl_memory_budget(void);

/* Set (bytes > 0) or clear (0) the process-wide limit that mcl_memory_budget returns first. */
void mcl_set_memory_limit(uint64_t bytes);

/* A byte count computed in double (estimates sum in double) as a uint64_t, saturating. */
uint64_t mcl_budget_bytes(double bytes);

/* "512 B", "3.2 KiB", "12.0 MiB", "2.50 GiB", "1.2 TiB": a size for a message (buf of >= 32). */
const char *mcl_fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* MCL_OK when `bytes` fits in mcl_memory_budget(); else MCL_ERR_OOM with a message naming
 * `what`, both sizes and how to raise the budget. Nothing is allocated. */
mcl_status mcl_check_budget(uint64_t bytes, const char *what, char *err, size_t len);

/* The lock of a directory that one process writes (a run directory): an exclusive fcntl
 * write lock on DIR/.metacl.lock (created mode 0644, O_NOFOLLOW), which holds the PID of its
 * holder as text. The kernel releases it when the process ends, however it ends (kill -9
 * leaves no stale lock). Returns MCL_OK with *fd the lock's descriptor (keep it open while
 * writing; mcl_dir_unlock), MCL_ERR_STATE when another process holds it ("DIR is in use by
 * another metacl process (PID N) ..."), MCL_ERR_IO when the file cannot be made. */
mcl_status mcl_dir_lock(const char *dir, int *fd, char *err, size_t len);

/* Release a lock of mcl_dir_lock (fd < 0: nothing); with remove, its file is unlinked first
 * (a run directory being removed). */
void mcl_dir_unlock(const char *dir, int fd, int remove);

/* Temporary directories that a signal must not leave behind (`data prepare`'s work
 * directories): mcl_tmpdir_guard registers one (at most 8 at a time; 0 ok, -1 full or too
 * long), mcl_tmpdir_unguard drops it (before the caller removes or renames it). With
 * mcl_tmpdir_guard_signals installed (the CLI does it for `data prepare`), SIGINT, SIGTERM and
 * SIGHUP remove every registered directory (`rm -rf` in a child: the handler stays
 * async-signal-safe) and then end the process by the signal, as its default action would.
 * kill -9 cannot be caught: the next run sweeps what a dead process left (mcl_text_sweep). */
int mcl_tmpdir_guard(const char *path);
void mcl_tmpdir_unguard(const char *path);
void mcl_tmpdir_guard_signals(void);

/* Seconds on a monotonic clock. */
double mcl_now_s(void);

#endif
